//! Windows: the link is a pair of anonymous pipes on the child's standard input and output
//! (its standard error stays the host's log of it), the plugin a file handle it inherits
//! (`--plugin-fd H`), and the child runs in a Job Object of its own.
//!
//! The job is what contains it: `KILL_ON_JOB_CLOSE` ends the child and everything it started
//! when the host closes the job's handle, which happens when the host reaps it and when the
//! host itself dies, however it dies (the kernel closes a dead process's handles); a timeout
//! or a cancel terminates the whole job; its memory limit is the policy's; and
//! `DIE_ON_UNHANDLED_EXCEPTION` makes a crash end the process at once instead of waiting on
//! an error-report dialog. A child is put in its job before it loads anything: it waits for
//! one byte the host writes only once the job holds it ([`Handover::started`]).
//!
//! The host's writes go through a thread of their own ([`TimedWriter`]): a pipe has no write
//! timeout, and a child that stops reading must not block a caller's thread for good.

use std::fs::File;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use windows_sys::Win32::Foundation::{SetHandleInformation, HANDLE, HANDLE_FLAG_INHERIT};
use windows_sys::Win32::System::Console::{
    GetStdHandle, SetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
};
use windows_sys::Win32::System::Diagnostics::Debug::{
    SetErrorMode, SEM_FAILCRITICALERRORS, SEM_NOGPFAULTERRORBOX,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOB_OBJECT_LIMIT_PROCESS_MEMORY,
};

/// The host's reading end of the link (the child's standard output).
pub(crate) type HostRead = PipeReader;
/// The host's writing end (the child's standard input), written by a thread of its own.
pub(crate) type HostWrite = TimedWriter;
/// The child's reading end (its standard input).
pub type ChildRead = File;
/// The child's writing end (its standard output, which its own prints no longer reach).
pub type ChildWrite = File;

/// `CreateProcess`'s flag for a console process with a console of its own and no window.
const CREATE_NO_WINDOW: u32 = 0x0800_0000;

/// The byte that lets a child go on once its job holds it.
const RELEASE: u8 = b'!';

/// What the host keeps until the child has started: the writing end, to release the child.
pub(crate) struct Handover {
    release: PipeWriter,
    plugin: RawHandle,
}

/// Make the link (two pipes) and prepare `command`: its standard input and output are the
/// link, and `plugin` is inherited (named by `--plugin-fd`). A write that blocks longer than
/// `write_limit` fails (the child stopped reading).
pub(crate) fn hand_over(
    command: &mut std::process::Command,
    plugin: &File,
    write_limit: Duration,
) -> std::io::Result<((HostRead, HostWrite), Handover)> {
    let (child_reads, host_writes) = std::io::pipe()?;
    let (host_reads, child_writes) = std::io::pipe()?;
    let release = host_writes.try_clone()?;
    let raw = plugin.as_raw_handle();
    set_inheritable(raw, true)?;
    // A console of its own with no window (`CREATE_NO_WINDOW`), as `setsid` on Unix: nothing
    // it runs can prompt on the user's console, and a Ctrl-C there reaches the host only.
    std::os::windows::process::CommandExt::creation_flags(command, CREATE_NO_WINDOW);
    command
        .arg("--socket")
        .arg("0")
        .arg("--plugin-fd")
        .arg((raw as usize).to_string())
        .stdin(Stdio::from(child_reads))
        .stdout(Stdio::from(child_writes));
    Ok((
        (host_reads, TimedWriter::new(host_writes, write_limit)?),
        Handover {
            release,
            plugin: raw,
        },
    ))
}

/// What names a started child to [`Handover::started`]: its process handle.
pub(crate) type ChildId = RawHandle;

/// The process handle of a child started by tokio.
pub(crate) fn tokio_child_id(child: &tokio::process::Child) -> Option<ChildId> {
    child.raw_handle()
}

/// The process handle of a child started by std.
pub(crate) fn std_child_id(child: &std::process::Child) -> Option<ChildId> {
    Some(child.as_raw_handle())
}

/// A pipe has no read timeout: a probe's deadline is kept by killing the child instead.
pub(crate) fn set_read_limit(_reader: &HostRead, _limit: Duration) -> std::io::Result<()> {
    Ok(())
}

impl Handover {
    /// The child was started as `process`: put it in a job of its own (limits above, and the
    /// memory limit when given), then let it go on.
    pub(crate) fn started(
        mut self,
        process: Option<RawHandle>,
        memory_limit: Option<u64>,
    ) -> std::io::Result<Containment> {
        // Inheritable only for the spawn: no later child gets the plugin file.
        let _ = set_inheritable(self.plugin, false);
        let process = process.ok_or_else(|| std::io::Error::other("the child has no handle"))?;
        let job = Job::new(memory_limit)?;
        job.assign(process)?;
        self.release.write_all(&[RELEASE])?;
        Ok(Containment { job })
    }
}

/// What ends a child and everything it started: its job.
pub(crate) struct Containment {
    job: Job,
}

impl Containment {
    /// Terminate every process in the job.
    pub(crate) fn end_all(&self) {
        self.job.terminate();
    }
}

/// A Job Object, closed (and so every process in it killed) when dropped.
struct Job(OwnedHandle);

impl Job {
    fn new(memory_limit: Option<u64>) -> std::io::Result<Job> {
        // SAFETY: both arguments may be null (default security, no name); the call returns a
        // new handle or null, checked below, owned by nothing else.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a valid handle just returned to us, closed only by this owner.
        let job = Job(unsafe { OwnedHandle::from_raw_handle(raw) });
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags =
            JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
        if let Some(limit) = memory_limit {
            limits.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_PROCESS_MEMORY;
            limits.ProcessMemoryLimit = usize::try_from(limit).unwrap_or(usize::MAX);
        }
        let size = u32::try_from(std::mem::size_of_val(&limits)).unwrap_or(u32::MAX);
        // SAFETY: the job handle is valid; the information class is the extended limits, and
        // the pointer and size are those of a live `JOBOBJECT_EXTENDED_LIMIT_INFORMATION`.
        let set = unsafe {
            SetInformationJobObject(
                job.handle(),
                JobObjectExtendedLimitInformation,
                std::ptr::from_ref(&limits).cast(),
                size,
            )
        };
        if set == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(job)
    }

    fn handle(&self) -> HANDLE {
        self.0.as_raw_handle()
    }

    fn assign(&self, process: RawHandle) -> std::io::Result<()> {
        // SAFETY: both handles are valid: the job is ours, `process` is the child's handle,
        // which its `Child` keeps open while the caller holds it.
        if unsafe { AssignProcessToJobObject(self.handle(), process) } == 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    fn terminate(&self) {
        // SAFETY: the job handle is valid for as long as `self` lives.
        unsafe { TerminateJobObject(self.handle(), 1) };
    }
}

/// Set or clear whether `handle` is inherited by processes started from now on.
fn set_inheritable(handle: RawHandle, inherit: bool) -> std::io::Result<()> {
    let flags = if inherit { HANDLE_FLAG_INHERIT } else { 0 };
    // SAFETY: `handle` is open (its owner is borrowed by the caller or it is one of this
    // process's standard handles); only its inheritance flag changes.
    if unsafe { SetHandleInformation(handle, HANDLE_FLAG_INHERIT, flags) } == 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The host's writing end: each write is handed to a thread of its own, and given up on
/// (with `TimedOut`) when it has not completed within the limit. A write given up on leaves
/// the writer unusable: the host then kills the child.
pub(crate) struct TimedWriter {
    writes: mpsc::SyncSender<Vec<u8>>,
    done: mpsc::Receiver<std::io::Result<()>>,
    limit: Duration,
    stuck: bool,
}

impl TimedWriter {
    fn new(mut pipe: PipeWriter, limit: Duration) -> std::io::Result<TimedWriter> {
        let (writes, pending) = mpsc::sync_channel::<Vec<u8>>(0);
        let (finished, done) = mpsc::channel();
        std::thread::Builder::new()
            .name("xcsh-plugin-writer".to_owned())
            .spawn(move || {
                for bytes in pending {
                    if finished.send(pipe.write_all(&bytes)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(TimedWriter {
            writes,
            done,
            limit,
            stuck: false,
        })
    }
}

impl Write for TimedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let timed_out = || std::io::Error::from(std::io::ErrorKind::TimedOut);
        if self.stuck {
            return Err(timed_out());
        }
        self.writes
            .send(buf.to_vec())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        match self.done.recv_timeout(self.limit) {
            Ok(result) => result.map(|()| buf.len()),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.stuck = true;
                Err(timed_out())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// In the child: its ends of the link (its standard input and output). Its standard output
/// is pointed at its standard error from now on (a plugin's prints must not break the
/// frames), neither end is inherited by what the plugin starts, and it waits until the host
/// has put it in its job.
pub fn take_link(_raw: i64) -> std::io::Result<(ChildRead, ChildWrite)> {
    // A crash ends the process at once, with no dialog (the job says the same).
    // SAFETY: only changes this process's error mode flags.
    unsafe { SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX) };
    let input = std_handle(STD_INPUT_HANDLE)?;
    let output = std_handle(STD_OUTPUT_HANDLE)?;
    let error = std_handle(STD_ERROR_HANDLE)?;
    set_inheritable(input, false)?;
    set_inheritable(output, false)?;
    // SAFETY: the handles are this process's standard handles (valid, checked above);
    // only which handle each standard slot names changes.
    unsafe {
        SetStdHandle(STD_OUTPUT_HANDLE, error);
        SetStdHandle(STD_INPUT_HANDLE, std::ptr::null_mut());
    }
    // SAFETY: the two handles were inherited for this use and are no longer named by any
    // standard slot (changed above), so these `File`s are their only owners.
    let (mut reader, writer) =
        unsafe { (File::from_raw_handle(input), File::from_raw_handle(output)) };
    let mut byte = [0u8];
    reader.read_exact(&mut byte)?;
    if byte[0] != RELEASE {
        return Err(std::io::Error::other(
            "the host did not release this process",
        ));
    }
    Ok((reader, writer))
}

fn std_handle(which: windows_sys::Win32::System::Console::STD_HANDLE) -> std::io::Result<HANDLE> {
    // SAFETY: no preconditions; the result is checked.
    let handle = unsafe { GetStdHandle(which) };
    if handle.is_null() || handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return Err(std::io::Error::other("a standard handle is missing"));
    }
    Ok(handle)
}

/// The plugin file the child inherited as `--plugin-fd H` (not passed on further).
pub fn take_plugin(raw: i64) -> std::io::Result<File> {
    let raw = usize::try_from(raw).map_err(std::io::Error::other)? as RawHandle;
    set_inheritable(raw, false)?;
    // SAFETY: the host made this handle inheritable for this child alone and named it on the
    // command line; the child's startup takes it exactly once.
    Ok(unsafe { File::from_raw_handle(raw) })
}

/// The job kills the child with its host: nothing to arm here.
pub fn die_with_parent(_parent: u32) -> std::io::Result<()> {
    Ok(())
}

/// The job kills the child with its host, and a dead host's pipe ends the child: no parent
/// check is needed at start.
pub fn parent_is(_parent: u32) -> bool {
    true
}

/// How a child ended, for messages: `crashed: access violation (0xC0000005)`, `exited with
/// status 7`.
pub(crate) fn describe_exit(status: std::process::ExitStatus) -> String {
    let Some(code) = status.code() else {
        return "ended".to_owned();
    };
    let code = code as u32;
    let crash = match code {
        0xC000_0005 => Some("access violation"),
        0xC000_00FD => Some("stack overflow"),
        0xC000_0409 => Some("fast fail (a Rust abort or a buffer overrun)"),
        0xC000_001D => Some("illegal instruction"),
        0xC000_0094 => Some("integer division by zero"),
        0xC000_0017 | 0xC000_012D => Some("out of memory"),
        0x8000_0003 => Some("breakpoint"),
        _ => None,
    };
    match crash {
        Some(what) => format!("crashed: {what} ({code:#010X})"),
        // `abort()` of the C runtime exits with 3.
        None if code == 3 => "aborted (exit status 3)".to_owned(),
        None => format!("exited with status {}", code as i32),
    }
}
