//! Every process a plugin process starts ends with it: the plugin process runs inside a PID
//! namespace of its own, whose end the kernel enforces on every process in it.
//!
//! Why a PID namespace, and not a process group, a subreaper or a cgroup: a process group is
//! left by any program that calls `setsid` (and `exec`'s programs each lead one); a subreaper
//! gets orphans back but loses them to the real init the moment it dies, which is exactly when
//! they must end (the host killed with `SIGKILL`); cgroups need a delegated hierarchy that an
//! ordinary user often does not have. When a PID namespace's init ends, the kernel kills every
//! process in it, whatever it did to detach.
//!
//! A process cannot start threads once its children go into another PID namespace than its
//! own, so the plugin process itself must be inside; and a namespace's init ignores signals it
//! has no handler for (an `abort` would not end it), so the plugin process is not the init
//! either. At start, while it has one thread, `xcsh-plugin-host` becomes three processes:
//! - the **stand-in** (the process the host started and knows): it waits, and ends as the
//!   plugin process ended (its exit status, or killed by the same signal), so the host reports
//!   a crash as before;
//! - the namespace's **init**: it reaps orphans, and when the plugin process ends it reports
//!   how to the stand-in and exits, which ends the namespace;
//! - the **plugin process**, which goes on to load the plugin.
//!
//! Each dies with its parent (`PR_SET_PDEATHSIG`), so killing the stand-in (a timeout, a
//! cancel, an idle stop) or the host (any way, `SIGKILL` included) ends the namespace.
//! Creating the namespace needs `CAP_SYS_ADMIN`, or else a user namespace (mapping the user
//! to itself), which most kernels give ordinary users; where neither is allowed the plugin
//! process runs as before and reports that its programs are ended only through its process
//! group.

use std::os::fd::{AsRawFd, OwnedFd};

/// Move this process's future into a new PID namespace, as the module docs say. Returns in
/// the plugin process only: `true` when it is contained, `false` when no namespace could be
/// made (then nothing was forked). Call while the process has a single thread, before the
/// sandbox, with the death signal already armed.
pub(crate) fn contain_programs() -> bool {
    if !new_pid_namespace() {
        return false;
    }
    let Ok((report_read, report_write)) = rustix::pipe::pipe() else {
        return false;
    };
    // SAFETY: this process has a single thread (the caller's contract), so the child is a
    // complete copy of it; both sides go on as ordinary single-threaded processes.
    match unsafe { libc::fork() } {
        -1 => false,
        0 => {
            // The namespace's init (PID 1).
            drop(report_read);
            run_init(report_write)
        }
        init => {
            drop(report_write);
            stand_in(init, report_read)
        }
    }
}

/// Unshare the PID namespace for this process's children, directly (root) or inside a new
/// user namespace that maps the user and group to themselves.
fn new_pid_namespace() -> bool {
    // SAFETY: `unshare` changes only this process's namespaces; it has one thread (required
    // by CLONE_NEWUSER).
    if unsafe { libc::unshare(libc::CLONE_NEWPID) } == 0 {
        return true;
    }
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    // SAFETY: as above.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID) } != 0 {
        return false;
    }
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).is_ok()
        && std::fs::write("/proc/self/setgroups", "deny").is_ok()
        && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).is_ok()
}

/// The init: start the plugin process (which returns to load the plugin), then reap until it
/// ends, report its wait status, and exit (ending the namespace).
fn run_init(report: OwnedFd) -> bool {
    // SAFETY: still single-threaded (a fresh fork of a single-threaded process).
    let plugin = unsafe { libc::fork() };
    if plugin == 0 {
        drop(report);
        // The plugin process dies with the init, and the init is PID 1 of the namespace.
        // SAFETY: plain prctl/getppid on this process.
        let orphaned = unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 || libc::getppid() != 1
        };
        if orphaned {
            // SAFETY: ends this process without running the parent's exit handlers.
            unsafe { libc::_exit(2) };
        }
        return true;
    }
    // SAFETY: plain prctl on this process; the init dies with the stand-in.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    close_all_but(report.as_raw_fd());
    let mut status = 0;
    if plugin > 0 {
        loop {
            let mut reaped_status = 0;
            // SAFETY: waits for any child of this process; the status is written to a local.
            let reaped = unsafe { libc::waitpid(-1, &mut reaped_status, 0) };
            if reaped == plugin {
                status = reaped_status;
                break;
            }
            if reaped < 0
                && rustix::io::Errno::from_raw_os_error(errno()) == rustix::io::Errno::CHILD
            {
                break;
            }
        }
    } else {
        status = 2 << 8; // exited with status 2: the plugin process could not start
    }
    let _ = rustix::io::write(&report, &status.to_ne_bytes());
    // SAFETY: ends the init (and with it the namespace) without the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

/// The stand-in: wait for the init, then end as the plugin process ended.
fn stand_in(init: libc::pid_t, report: OwnedFd) -> bool {
    close_all_but(report.as_raw_fd());
    let mut init_status = 0;
    loop {
        // SAFETY: waits for the init, this process's only child.
        let reaped = unsafe { libc::waitpid(init, &mut init_status, 0) };
        if reaped == init || (reaped < 0 && errno() != libc::EINTR) {
            break;
        }
    }
    let mut bytes = [0u8; 4];
    let status = match rustix::io::read(&report, &mut bytes) {
        Ok(4) => i32::from_ne_bytes(bytes),
        // The init was killed before it could report: end as it ended.
        _ => init_status,
    };
    end_as(status)
}

/// Exit with `status`'s code, or die of its signal (default action, no core dump).
fn end_as(status: i32) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: resets this process's disposition of `signal` to the default, unblocks it
        // and sends it to this process; nothing of Rust's state is used afterwards.
        unsafe {
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal)
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        2
    };
    // SAFETY: ends this process without the exit handlers of the process it was forked from.
    unsafe { libc::_exit(code) }
}

/// Close every descriptor but `keep` (the stand-in and the init hold no copy of the plugin
/// process's socket or pipes, so the host sees them close when the plugin process ends).
fn close_all_but(keep: i32) {
    let keep = u32::try_from(keep).unwrap_or(0);
    // SAFETY: `close_range` closes descriptors of this process only; none of them is used by
    // this process afterwards but `keep`.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
