//! Running a program from a tool: [`ToolContext::exec`] (docs/guide/src/exec.md), the
//! native counterpart of the TypeScript runtime's `pi.exec`.
//!
//! The program runs where the plugin runs: in a plugin process it inherits that process's
//! sandbox (reads, writes, environment, network), in process it runs as the host does. What
//! the author does not have to get right, this module does:
//! - the program is the leader of a process group of its own, and every way its call ends (a
//!   timeout, the call's cancellation, the program's own exit) ends the whole group, so `sh -c
//!   'sleep 100 &'` leaves nothing behind;
//! - it gets an empty standard input unless given one, so it cannot wait for a keyboard;
//! - its output is read as it comes, kept up to a cap ([`DEFAULT_MAX_OUTPUT`] per stream) and
//!   drained past it (`truncated` says so): a program printing gigabytes costs no memory;
//! - at most [`MAX_RUNNING_PROGRAMS`] of one plugin run at once; more wait for a place.
//!
//! The leader is reaped only after its group was signalled (`waitid(WNOWAIT)` first), so the
//! group's id can never name another process's group by then.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::host::{HostReply, HostRequest};
use crate::{PluginError, ToolContext};

/// What each of a program's output streams keeps: 8 MiB. The rest is read and dropped, and
/// [`ExecOutput::truncated`] is set. [`ExecOptions::max_output`] changes it.
pub const DEFAULT_MAX_OUTPUT: usize = 8 << 20;

/// How many programs one plugin runs at once; an `exec` past it waits for a place (and still
/// ends with its call's cancellation or its timeout). `RLIMIT_NPROC` would not do: it does not
/// bind root, and counts every process of the user.
pub const MAX_RUNNING_PROGRAMS: usize = 64;

/// How often a running program's call is checked for cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// After the program ended, how long a process that escaped its group (and holds its output
/// open) may keep `exec` waiting for the rest of the output.
const OUTPUT_GRACE: Duration = Duration::from_millis(200);

/// How to run a program: [`ExecOptions::new`] and the builder methods.
///
/// ```
/// use std::time::Duration;
/// use xcsh_plugin_api::ExecOptions;
/// let options = ExecOptions::new()
///     .cwd("crates/core")
///     .timeout(Duration::from_secs(30))
///     .env("GIT_PAGER", "cat")
///     .stdin("input text");
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// The working directory, relative to the session's (the default).
    pub cwd: Option<PathBuf>,
    /// How long the program may run; then its group is killed and `killed` set. `None`: until
    /// the call ends.
    pub timeout: Option<Duration>,
    /// What the program reads on its standard input; `None`: an empty one.
    pub stdin: Option<Vec<u8>>,
    /// Variables set for the program, over the plugin's own environment.
    pub env: Vec<(OsString, OsString)>,
    /// What each output stream keeps ([`DEFAULT_MAX_OUTPUT`] when `None`).
    pub max_output: Option<usize>,
}

impl ExecOptions {
    /// The defaults: the session's directory, no timeout, empty input, no extra variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run in `dir` (relative to the session's directory).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Kill the program (and its group) after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Give the program this standard input.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Set a variable for the program.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Keep at most `bytes` of each output stream.
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = Some(bytes);
        self
    }
}

/// What a program did: `{stdout, stderr, code, killed, truncated}`, as `pi.exec` answers, and
/// the signal that ended it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutput {
    /// Its standard output (at most the cap).
    #[serde(default)]
    pub stdout: Vec<u8>,
    /// Its standard error (at most the cap).
    #[serde(default)]
    pub stderr: Vec<u8>,
    /// Its exit status; `None` when a signal ended it.
    #[serde(default)]
    pub code: Option<i32>,
    /// The signal that ended it (`SIGKILL`, `SIGSEGV`), when one did.
    #[serde(default)]
    pub signal: Option<String>,
    /// Whether `exec` killed it: its timeout passed, or its call was cancelled.
    #[serde(default)]
    pub killed: bool,
    /// Whether output past the cap was dropped.
    #[serde(default)]
    pub truncated: bool,
}

impl ExecOutput {
    /// Whether it exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Its standard output as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Its standard error as text (invalid UTF-8 replaced).
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// One `exec` as a test harness sees it ([`PluginTest::with_programs`](crate::testing)):
/// what would have run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecRequest {
    /// The program, as given.
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// The working directory, resolved.
    pub cwd: PathBuf,
    /// Its standard input, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<Vec<u8>>,
    /// The variables set for it.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// Its timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ToolContext {
    /// Run `program` with `args` and wait for it: the one-line way to wrap `git`, `cargo` or a
    /// formatter (see the [module docs](crate::exec) for what it takes care of). A plain
    /// [`std::process::Command`] works too, under the same sandbox, but leaves the rest to you.
    ///
    /// ```no_run
    /// # use xcsh_plugin_api::{ExecOptions, PluginError, ToolContext};
    /// # async fn status(ctx: &ToolContext) -> Result<String, PluginError> {
    /// let status = ctx.exec("git", ["status", "--porcelain"], ExecOptions::new()).await?;
    /// if !status.success() {
    ///     return Err(PluginError::new(format!("git failed: {}", status.stderr_text())));
    /// }
    /// Ok(status.stdout_text())
    /// # }
    /// ```
    ///
    /// # Errors
    /// `command not found: {program}`; a working directory that does not exist or lies outside
    /// what the plugin may write; a timeout of zero; a call already cancelled. A program that
    /// fails is not an error: see [`ExecOutput::code`].
    pub async fn exec<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        options: ExecOptions,
    ) -> Result<ExecOutput, PluginError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let program = program.as_ref().to_owned();
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let name = program.to_string_lossy().into_owned();
        self.check_live()?;
        if self.is_cancelled() {
            return Err(PluginError::new(format!(
                "the call was cancelled; {name} was not started"
            )));
        }
        if options.timeout == Some(Duration::ZERO) {
            return Err(PluginError::new(format!(
                "the timeout of {name} is zero: give it a positive duration, or none"
            )));
        }
        let cwd = self.resolve_path(options.cwd.as_deref().unwrap_or(Path::new(".")));
        let cwd = std::fs::canonicalize(&cwd).map_err(|error| {
            PluginError::new(format!("cannot run {name} in {}: {error}", cwd.display()))
        })?;
        if let Some(writable) = &self.facts().writable {
            if !writable.iter().any(|dir| cwd.starts_with(dir)) {
                let list: Vec<String> = writable.iter().map(|d| d.display().to_string()).collect();
                return Err(PluginError::new(format!(
                    "cannot run {name} in {}: it is outside what this plugin may write ({})",
                    cwd.display(),
                    list.join(", ")
                )));
            }
        }
        if self.facts().runs_programs {
            return self.exec_by_host(&name, &args, cwd, options).await;
        }
        let _place = running_place(self).await?;
        let started = Instant::now();
        let running = Running::start(&program, &args, &cwd, &options)?;
        let deadline = options.timeout.map(|timeout| started + timeout);
        running.finish(self, deadline).await
    }

    /// A host that runs programs itself (a test harness's script): ask it.
    async fn exec_by_host(
        &self,
        name: &str,
        args: &[OsString],
        cwd: PathBuf,
        options: ExecOptions,
    ) -> Result<ExecOutput, PluginError> {
        let text = |s: &OsStr| s.to_string_lossy().into_owned();
        let request = ExecRequest {
            program: name.to_owned(),
            args: args.iter().map(|a| text(a)).collect(),
            cwd,
            stdin: options.stdin,
            env: options
                .env
                .iter()
                .map(|(k, v)| (text(k), text(v)))
                .collect(),
            timeout_ms: options
                .timeout
                .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        };
        match self.host_request(HostRequest::Exec { request }).await? {
            HostReply::Exec { output } => Ok(output),
            other => Err(PluginError::new(format!(
                "the host answered an exec with {other:?}, not a program's output"
            ))),
        }
    }
}

/// Wait for one of the plugin's [`MAX_RUNNING_PROGRAMS`] places, or the call's end.
async fn running_place(
    ctx: &ToolContext,
) -> Result<tokio::sync::OwnedSemaphorePermit, PluginError> {
    static PLACES: std::sync::OnceLock<Arc<tokio::sync::Semaphore>> = std::sync::OnceLock::new();
    let places = Arc::clone(
        PLACES.get_or_init(|| Arc::new(tokio::sync::Semaphore::new(MAX_RUNNING_PROGRAMS))),
    );
    let acquire = places.acquire_owned();
    tokio::pin!(acquire);
    loop {
        tokio::select! {
            permit = &mut acquire => {
                return permit.map_err(|e| PluginError::new(format!("no place to run a program: {e}")));
            }
            () = tokio::time::sleep(CANCEL_POLL) => {
                if ctx.is_cancelled() {
                    return Err(PluginError::new(
                        "the call was cancelled while its program waited for a place to run",
                    ));
                }
            }
        }
    }
}

/// A started program: its group, and the threads reading its output and waiting for it.
struct Running {
    group: Arc<Group>,
    status: tokio::sync::oneshot::Receiver<std::io::Result<std::process::ExitStatus>>,
    stdout: Captured,
    stderr: Captured,
}

impl Running {
    fn start(
        program: &OsStr,
        args: &[OsString],
        cwd: &Path,
        options: &ExecOptions,
    ) -> Result<Self, PluginError> {
        let name = program.to_string_lossy();
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .stdin(if options.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command.spawn().map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => PluginError::new(format!("command not found: {name}")),
            _ => PluginError::new(format!("cannot start {name}: {error}")),
        })?;
        if let (Some(input), Some(mut pipe)) = (options.stdin.clone(), child.stdin.take()) {
            // A program that does not read its input must not block `exec`: written aside.
            std::thread::spawn(move || {
                let _ = std::io::Write::write_all(&mut pipe, &input);
            });
        }
        let cap = options.max_output.unwrap_or(DEFAULT_MAX_OUTPUT);
        let stdout = read_capped(child.stdout.take(), cap);
        let stderr = read_capped(child.stderr.take(), cap);
        let group = Arc::new(Group::new(child.id()));
        let (sender, status) = tokio::sync::oneshot::channel();
        let waiter = Arc::clone(&group);
        std::thread::spawn(move || {
            let _ = sender.send(waiter.wait(child));
        });
        Ok(Self {
            group,
            status,
            stdout,
            stderr,
        })
    }

    async fn finish(
        mut self,
        ctx: &ToolContext,
        deadline: Option<Instant>,
    ) -> Result<ExecOutput, PluginError> {
        // A call that is dropped (its host stopped waiting) ends its program too.
        let _kill_on_drop = KillOnDrop(Arc::clone(&self.group));
        let mut killed = false;
        let status = loop {
            tokio::select! {
                status = &mut self.status => break status,
                () = tokio::time::sleep(CANCEL_POLL) => {
                    let late = deadline.is_some_and(|deadline| Instant::now() >= deadline);
                    if !killed && (late || ctx.is_cancelled()) {
                        killed = true;
                        self.group.kill();
                    }
                }
            }
        };
        let status = status
            .map_err(|_| PluginError::new("the program's waiting thread ended"))?
            .map_err(|e| PluginError::new(format!("cannot wait for the program: {e}")))?;
        let grace = tokio::time::Instant::now() + OUTPUT_GRACE;
        let (stdout, cut_out) = self.stdout.take_by(grace).await;
        let (stderr, cut_err) = self.stderr.take_by(grace).await;
        let (code, signal) = describe(status);
        Ok(ExecOutput {
            stdout,
            stderr,
            code,
            signal,
            killed,
            truncated: cut_out || cut_err,
        })
    }
}

/// One output stream being read on a thread of its own ([`read_capped`]): what it kept so
/// far, whether it dropped any, and word of its end.
struct Captured {
    kept: Arc<Mutex<(Vec<u8>, bool)>>,
    ended: tokio::sync::oneshot::Receiver<()>,
}

impl Captured {
    /// The stream's output once it ended, or what it had when `grace` passed (a process outside
    /// the group holds the pipe open: what it writes later is not the program's answer), then
    /// marked truncated.
    async fn take_by(self, grace: tokio::time::Instant) -> (Vec<u8>, bool) {
        let ended = tokio::time::timeout_at(grace, self.ended).await.is_ok();
        let mut kept = crate::sync::lock(&self.kept);
        let (output, dropped) = std::mem::take(&mut *kept);
        (output, dropped || !ended)
    }
}

/// Read `pipe` to its end on a thread of its own: the first `cap` bytes kept, the rest read
/// and dropped (the flag says whether any was).
fn read_capped(pipe: Option<impl Read + Send + 'static>, cap: usize) -> Captured {
    let kept = Arc::new(Mutex::new((Vec::new(), false)));
    let (done, ended) = tokio::sync::oneshot::channel();
    let shared = Arc::clone(&kept);
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut kept = crate::sync::lock(&shared);
                        let room = cap.saturating_sub(kept.0.len());
                        kept.0.extend_from_slice(&chunk[..n.min(room)]);
                        kept.1 |= n > room;
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = done.send(());
    });
    Captured { kept, ended }
}

/// Kills the group when dropped before the program was reaped (a no-op after).
struct KillOnDrop(Arc<Group>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill();
    }
}

/// The program's process group, signalled only while its leader is not yet reaped.
struct Group {
    leader: u32,
    reaped: Mutex<bool>,
}

impl Group {
    fn new(leader: u32) -> Self {
        Self {
            leader,
            reaped: Mutex::new(false),
        }
    }

    /// Kill the whole group (the leader alone where there are no groups).
    fn kill(&self) {
        let reaped = crate::sync::lock(&self.reaped);
        if !*reaped {
            kill_group(self.leader);
        }
    }

    /// Wait for the leader to end, end the rest of its group, then reap it.
    fn wait(&self, mut child: std::process::Child) -> std::io::Result<std::process::ExitStatus> {
        wait_unreaped(self.leader);
        {
            let mut reaped = crate::sync::lock(&self.reaped);
            kill_group(self.leader);
            *reaped = true;
        }
        child.wait()
    }
}

#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn kill_group(leader: u32) {
    use rustix::process::{kill_process_group, Pid, Signal};
    if let Some(pid) = i32::try_from(leader).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, Signal::KILL);
    }
}

/// Block until the leader has ended, leaving it unreaped (so its id stays its group's).
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn wait_unreaped(leader: u32) {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let Some(pid) = i32::try_from(leader).ok().and_then(Pid::from_raw) else {
        return;
    };
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            _ => return,
        }
    }
}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
fn kill_group(_leader: u32) {}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
fn wait_unreaped(_leader: u32) {}

/// The exit code, or the name of the signal that ended the program.
fn describe(status: std::process::ExitStatus) -> (Option<i32>, Option<String>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return (None, Some(signal_name(signal)));
        }
    }
    (status.code(), None)
}

/// The name of signal number `signal` as this system numbers it (`SIGSEGV`; `SIGBUS` is 7 on
/// Linux and 10 on macOS), or `signal N` for one not named here: what
/// [`ExecOutput::signal`] holds, and what the loader's crash messages say.
///
/// ```
/// assert_eq!(xcsh_plugin_api::exec::signal_name(9), "SIGKILL");
/// assert_eq!(xcsh_plugin_api::exec::signal_name(64), "signal 64");
/// ```
#[cfg(unix)]
pub fn signal_name(signal: i32) -> String {
    use rustix::process::Signal;
    const NAMES: &[(Signal, &str)] = &[
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::TRAP, "SIGTRAP"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::ALARM, "SIGALRM"),
        (Signal::TERM, "SIGTERM"),
        (Signal::SYS, "SIGSYS"),
        (Signal::XCPU, "SIGXCPU"),
        (Signal::XFSZ, "SIGXFSZ"),
    ];
    NAMES
        .iter()
        .find(|(known, _)| known.as_raw() == signal)
        .map_or_else(
            || format!("signal {signal}"),
            |(_, name)| (*name).to_owned(),
        )
}
