//! Giving freed heap memory back to the operating system after plugin processes were stopped.
//!
//! Why: each plugin process costs the host a few allocations of its own while it runs (its
//! reader's frame buffer, the handshake's definitions, channels), made on the isolation
//! runtime's and the reader's threads, so in glibc's per-thread arenas. When an idle process
//! is stopped they are freed, but glibc keeps freed pages of a non-main arena resident unless
//! the arena's top can shrink: an MCP session that started and stopped 50 plugin processes kept
//! about 4 MiB more than before any call. `malloc_trim(0)` returns every arena's free pages
//! (glibc 2.8 and later), so a session left idle goes back to what it was before.
//!
//! The trim runs once the stops of a burst have settled (every [`SETTLE`] while stops keep
//! coming, and once more after the grace period, for a child that had to be killed), on the
//! isolation runtime; it costs well under a millisecond for the few MiB involved.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after the latest stop the freed memory is given back.
const SETTLE: Duration = Duration::from_millis(250);

/// When the latest stop happened.
static LAST_STOP: Mutex<Option<Instant>> = Mutex::new(None);
/// Whether a trim task is scheduled.
static SCHEDULED: AtomicBool = AtomicBool::new(false);

/// Note that a plugin process was stopped: its memory in this process is given back to the
/// operating system once the stops have settled. `grace`: how long a stopped child may take
/// before it is killed (its host-side buffers are freed by then).
pub(crate) fn release_after_stop(runtime: &tokio::runtime::Runtime, grace: Duration) {
    *xcsh_plugin_api::__private::lock(&LAST_STOP) = Some(Instant::now());
    if SCHEDULED.swap(true, Ordering::SeqCst) {
        return;
    }
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(SETTLE).await;
            let quiet = xcsh_plugin_api::__private::lock(&LAST_STOP)
                .map_or(Duration::MAX, |at| at.elapsed());
            if quiet < SETTLE {
                continue;
            }
            trim();
            if quiet >= grace + SETTLE {
                SCHEDULED.store(false, Ordering::SeqCst);
                return;
            }
        }
    });
}

/// Return free heap pages to the operating system (glibc's `malloc_trim`); nothing elsewhere.
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks and releases glibc's own free lists, under its arena
    // locks; it takes no pointer from us and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
