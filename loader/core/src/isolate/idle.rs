//! The stop policy for idle plugin processes: a plugin process that has had nothing to do
//! for the plugin's idle time (no running call, no running apply or reject, no pending action
//! of its own) is stopped cleanly, and the plugin's next call starts a new one.
//!
//! Why: an agent session runs for hours, and most of its plugins are called a few times.
//! Keeping each one's process (a few MiB, a reader thread, two pipes) for the whole session
//! costs memory for nothing; the definitions cache made a restart cheap (a spawn and a
//! handshake, a few milliseconds).
//!
//! What "nothing to do" means is what holds the process's [`Connection`]: every running call
//! and every pending action it pushed (until it is applied, rejected or dropped) keeps a handle
//! on it, so a process is only stopped when the plugin's own handle is the last one, and has
//! been for the idle time ([`Connection::idle_for`]). A plugin that asked to be kept alive
//! (`CustomToolApi::keep_alive(true)`) is not stopped while it asks.
//!
//! A stop is the host's decision, never a crash: the connection is retired first
//! ([`Connection::retire`]), so its end does not count towards disabling the plugin, and its
//! last handle is dropped, which asks the child to exit and kills it after the grace period
//! (the reaper then reaps it).

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::connection::{background, Connection};
use super::plugin::IsolatedPlugin;

/// How often a process that is busy (or kept alive) is looked at again: its idle time only
/// starts when its last use ends, so the next look is then at most this late.
const BUSY_RECHECK: Duration = Duration::from_secs(1);

/// What [`IsolatedPlugin::stop_if_idle`] found.
pub(super) enum IdleCheck {
    /// It was stopped.
    Stopped,
    /// In use, kept alive, or not idle long enough yet.
    Busy,
    /// That process is no longer the plugin's current one (it ended, or a newer one runs).
    Gone,
}

/// Watch `connection`, the current process of `plugin`, and stop it once it has been idle for
/// `after` (on the isolation runtime; the task ends with the process or the plugin).
pub(super) fn watch(plugin: Weak<IsolatedPlugin>, connection: &Arc<Connection>, after: Duration) {
    let Ok(runtime) = background() else {
        return;
    };
    let connection = Arc::downgrade(connection);
    runtime.spawn(async move {
        loop {
            let wait = {
                let Some(connection) = connection.upgrade() else {
                    return;
                };
                if connection.is_finished() {
                    return;
                }
                after.saturating_sub(connection.idle_for())
            };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
                continue;
            }
            let checked = match plugin.upgrade() {
                Some(plugin) => plugin.stop_if_idle(&connection, after).await,
                None => return,
            };
            match checked {
                IdleCheck::Stopped | IdleCheck::Gone => return,
                IdleCheck::Busy => tokio::time::sleep(after.min(BUSY_RECHECK)).await,
            }
        }
    });
}

/// `duration` as a person reads it in a log line: `300ms`, `30s`, `5m`.
pub(super) fn human(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis > 0 && millis.is_multiple_of(60_000) {
        format!("{}m", millis / 60_000)
    } else if millis > 0 && millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{millis}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_written_on_the_command_line() {
        assert_eq!(human(Duration::from_millis(300)), "300ms");
        assert_eq!(human(Duration::from_secs(30)), "30s");
        assert_eq!(human(Duration::from_secs(300)), "5m");
        assert_eq!(human(Duration::from_millis(1500)), "1500ms");
    }
}
