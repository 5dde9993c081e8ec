//! Unix: the link is one end of a `socketpair` the child inherits (`--socket N`), the plugin
//! a descriptor it inherits (`--plugin-fd M`); everything else of ours is close-on-exec.
//!
//! Dying with the parent, by platform: on Linux the kernel sends the child `SIGKILL` when its
//! parent dies (`PR_SET_PDEATHSIG`, armed between `fork` and `exec`). macOS has no such call:
//! the child watches its parent with a kqueue (`EVFILT_PROC`, `NOTE_EXIT`) on a thread of
//! its own and kills its own process group when the event fires ([`die_with_parent`]).
//! Either way the child also ends when its link to the host closes (the protocol reader sees
//! the end of the socket), which covers a host that is still alive but let go of it.

use std::fs::File;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::time::Duration;

use rustix::io::FdFlags;
use rustix::process::Signal;

/// The host's reading end of the link to a child.
pub(crate) type HostRead = UnixStream;
/// The host's writing end (a clone of the same socket, with a write timeout).
pub(crate) type HostWrite = UnixStream;
/// The child's ends of the link.
pub type ChildRead = UnixStream;
/// The child's writing end (a clone of its socket).
pub type ChildWrite = UnixStream;

/// What the child is handed until it has started: its end of the socketpair (the caller
/// holds the plugin's descriptor itself).
pub(crate) struct Handover {
    child_end: UnixStream,
}

/// Make the link to a child and prepare `command` to hand it its end and `plugin`: stdin
/// empty, `--socket` and `--plugin-fd` named, the child in a session of its own that dies
/// with this process ([`inherit_and_die_with_parent`]). A write that blocks longer than
/// `write_limit` fails (the child stopped reading).
pub(crate) fn hand_over(
    command: &mut std::process::Command,
    plugin: &File,
    write_limit: Duration,
) -> std::io::Result<((HostRead, HostWrite), Handover)> {
    let (parent_end, child_end) = UnixStream::pair()?;
    let writer = parent_end.try_clone()?;
    writer.set_write_timeout(Some(write_limit))?;
    let socket_fd = child_end.as_raw_fd();
    let plugin_fd = plugin.as_raw_fd();
    command
        .arg("--socket")
        .arg(socket_fd.to_string())
        .arg("--plugin-fd")
        .arg(plugin_fd.to_string())
        .stdin(Stdio::null());
    inherit_and_die_with_parent(command, [socket_fd, plugin_fd], std::process::id());
    Ok(((parent_end, writer), Handover { child_end }))
}

/// What names a started child to [`Handover::started`]: its process id.
pub(crate) type ChildId = u32;

/// The process id of a child started by tokio (none once it was reaped).
pub(crate) fn tokio_child_id(child: &tokio::process::Child) -> Option<ChildId> {
    child.id()
}

/// The process id of a child started by std.
pub(crate) fn std_child_id(child: &std::process::Child) -> Option<ChildId> {
    Some(child.id())
}

/// The host's reading end with a read timeout (a probe's deadline).
pub(crate) fn set_read_limit(reader: &HostRead, limit: Duration) -> std::io::Result<()> {
    reader.set_read_timeout(Some(limit))
}

impl Handover {
    /// The child was started: our copy of its end goes (so its end is seen when it exits).
    /// The memory limit is the child's own to set (`RLIMIT_AS`, from its sandbox policy).
    pub(crate) fn started(
        self,
        child_pid: Option<ChildId>,
        _memory_limit: Option<u64>,
    ) -> std::io::Result<Containment> {
        drop(self.child_end);
        Ok(Containment { group: child_pid })
    }
}

/// What ends a child and everything it started: its process group (it leads one since
/// `setsid`).
pub(crate) struct Containment {
    group: Option<u32>,
}

impl Containment {
    /// Kill the child's process group: what it started and left in its group ends with it,
    /// where no PID namespace already did that.
    pub(crate) fn end_all(&self) {
        let pid = self
            .group
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw);
        if let Some(pid) = pid {
            let _ = rustix::process::kill_process_group(pid, Signal::KILL);
        }
    }
}

/// The child's ends of the link: the socket it inherited as `--socket N`.
pub fn take_link(raw: i64) -> std::io::Result<(ChildRead, ChildWrite)> {
    let raw = RawFd::try_from(raw).map_err(std::io::Error::other)?;
    let stream = UnixStream::from(take_inherited(raw)?);
    let writer = stream.try_clone()?;
    Ok((stream, writer))
}

/// The plugin file the child inherited as `--plugin-fd M`.
pub fn take_plugin(raw: i64) -> std::io::Result<File> {
    let raw = RawFd::try_from(raw).map_err(std::io::Error::other)?;
    Ok(File::from(take_inherited(raw)?))
}

/// Prepare `command` so that the child starts a session of its own (no controlling terminal:
/// nothing it runs can prompt on the user's terminal, and a Ctrl-C there reaches the host
/// only) and, between `fork` and `exec`: the descriptors in `inherit` lose close-on-exec
/// (everything else of ours keeps it and is closed by `exec`), the child is sent `SIGKILL`
/// when its parent dies, it exits at once if its parent is already no longer `parent` (it
/// died before the death signal was armed).
fn inherit_and_die_with_parent(
    command: &mut std::process::Command,
    inherit: [RawFd; 2],
    parent: u32,
) {
    let hook = move || -> std::io::Result<()> {
        for raw in inherit {
            // SAFETY: `raw` is a descriptor the parent owns and keeps open across the spawn
            // (the caller holds it until `spawn` returns), so it is open in the forked child.
            let fd = unsafe { BorrowedFd::borrow_raw(raw) };
            rustix::io::fcntl_setfd(fd, FdFlags::empty())?;
        }
        rustix::process::setsid()?;
        #[cfg(target_os = "linux")]
        rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
        let still_ours = rustix::process::getppid()
            .is_some_and(|pid| u32::try_from(pid.as_raw_nonzero().get()) == Ok(parent));
        if !still_ours {
            return Err(std::io::Error::other(
                "the parent exited before the child started",
            ));
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before `exec`, where only async-signal-safe
    // calls are allowed. It makes raw syscalls through rustix (`fcntl(F_SETFD)`, `setsid`,
    // on Linux `prctl(PR_SET_PDEATHSIG)`, `getppid`), which take no locks and allocate nothing;
    // `std::io::Error::other` on the error path allocates, but std documents that an error
    // returned from `pre_exec` is only reported, and glibc's malloc is fork-safe for the
    // forking thread's own use. No state shared with the parent is touched.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(command, hook);
    }
}

/// Whether this process's parent is still `parent` (the child's own check at start).
pub fn parent_is(parent: u32) -> bool {
    rustix::process::getppid()
        .is_some_and(|pid| u32::try_from(pid.as_raw_nonzero().get()) == Ok(parent))
}

/// Mark `fd` close-on-exec again (the child does it for the descriptors it inherited, so a
/// process the plugin starts does not inherit them).
fn set_cloexec(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, FdFlags::CLOEXEC)?)
}

/// Arm the death signal in the child itself too (harmless if `pre_exec` already did).
#[cfg(target_os = "linux")]
pub fn die_with_parent(_parent: u32) -> std::io::Result<()> {
    Ok(rustix::process::set_parent_process_death_signal(Some(
        Signal::KILL,
    ))?)
}

/// Watch `parent` with a kqueue and kill this process's group (this process, which leads it
/// since `setsid`, and whatever it started that stayed in it) when it exits. Fails when
/// `parent` is already gone (`ESRCH` on registering the watch): the caller then exits.
#[cfg(target_os = "macos")]
pub fn die_with_parent(parent: u32) -> std::io::Result<()> {
    use rustix::event::kqueue::{kevent, kqueue, Event, EventFilter, EventFlags, ProcessEvents};
    let pid = i32::try_from(parent)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| std::io::Error::other(format!("{parent} is not a process id")))?;
    let queue = kqueue()?;
    let watch = Event::new(
        EventFilter::Proc {
            pid,
            flags: ProcessEvents::EXIT,
        },
        EventFlags::ADD | EventFlags::ONESHOT,
        std::ptr::null_mut(),
    );
    let mut fired: Vec<Event> = Vec::with_capacity(1);
    // SAFETY: `kevent`'s contract is that descriptors named by the events stay valid while
    // the queue lives; a process filter names a process id, not a descriptor. A zero timeout
    // only registers the watch (and reports an exit that already happened).
    unsafe {
        kevent(
            &queue,
            &[watch],
            &mut fired,
            Some(std::time::Duration::ZERO),
        )?
    };
    if !fired.is_empty() {
        return Err(std::io::Error::other("the parent exited"));
    }
    std::thread::Builder::new()
        .name("parent-watch".to_owned())
        .spawn(move || loop {
            let mut fired: Vec<Event> = Vec::with_capacity(1);
            // SAFETY: as above; the queue is owned by this thread for its whole life.
            match unsafe { kevent(&queue, &[], &mut fired, None) } {
                Err(rustix::io::Errno::INTR) => continue,
                // Fired, or the queue broke (which leaves nothing to watch with): end as
                // Linux's death signal would.
                _ => {
                    let _ = rustix::process::kill_current_process_group(Signal::KILL);
                    std::process::abort();
                }
            }
        })?;
    Ok(())
}

/// How a child ended, for messages: `killed by SIGSEGV`, `exited with status 7`.
pub(crate) fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        if signal == Signal::BUS.as_raw() {
            // What a process gets when a file it maps is truncated under it: for a plugin,
            // almost always its library overwritten in place.
            return "killed by SIGBUS (a file it maps shrank while it ran: was the plugin \
                    library overwritten in place? Replace it by renaming a new file over it, as \
                    cargo does)"
                .to_owned();
        }
        return format!("killed by {}", xcsh_plugin_api::exec::signal_name(signal));
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "ended".to_owned(),
    }
}

/// Take ownership of descriptor `raw`, inherited from the parent that started this process
/// (`xcsh-plugin-host --socket N --plugin-fd M`), and make it close-on-exec again.
fn take_inherited(raw: RawFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    if raw < 3 {
        return Err(std::io::Error::other(format!(
            "descriptor {raw} is a standard stream"
        )));
    }
    // SAFETY: only used to check that `raw` is open before taking it; the borrow ends before
    // the descriptor is owned below.
    let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
    rustix::io::fcntl_getfd(borrowed)?;
    set_cloexec(borrowed)?;
    // SAFETY: `raw` is open (checked above) and was inherited from the parent for this very
    // use; the child's startup takes each inherited number exactly once, before any other
    // code of this process could have opened (and so own) a descriptor with that number.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}
