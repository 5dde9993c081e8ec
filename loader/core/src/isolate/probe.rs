//! A library is first opened where its crash hurts nobody: before a host `dlopen`s a plugin
//! file in its own process for the first time, a throwaway `xcsh-plugin-host --probe` loads
//! it and runs the ABI and layout checks (which read data the file carries), under the same
//! sandbox as a plugin process, and reports. A file that crashes, hangs or fails there is a
//! load error naming it and the cause; the host never maps it.
//!
//! Why: `dlopen` trusts the file. A header byte changed by a cut download or a bad disk can
//! make glibc's loader fault (or assert and `_exit`) inside the host, and abi_stable's layout
//! check indexes the plugin's own layout tables, which a damaged file can make it panic on.
//! The checks before `dlopen` (`loading::preflight`) catch what they can name; this catches the
//! rest, whatever it is.
//!
//! The verdict is not remembered here: a file that passed is loaded, and its successful
//! layout check is cached on the file's identity as before (`loading::open`), which is what a
//! warm start reads to skip both the probe and the check. A changed file has another
//! identity, so it is probed again. The library's constructors run twice, once in the probe.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::protocol::{ChildMessage, FrameReader, PROTOCOL_VERSION};
use crate::loading::{LoadError, LoadErrorKind};
use crate::sys::sandbox::SandboxPolicy;
use crate::sys::spawn;

/// How long a probe may take: loading and checking a library takes milliseconds.
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(20);

/// How long a probe that answered (or whose plugin process ended) may take to exit.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Why a probe did not pass.
#[derive(Debug)]
enum Verdict {
    /// No probe could run (no `xcsh-plugin-host` to start, or one that never got to the
    /// library): the file is loaded without one, and a warning says so.
    NotRun,
    /// The file failed there: the load error names it and the cause.
    Failed(LoadError),
}

/// The probe loading takes (`loading::open::Probe`): a throwaway sandboxed process run by
/// `host`, found as for process isolation when `None`.
pub(crate) struct ProcessProbe {
    pub(crate) host: Option<std::path::PathBuf>,
}

impl crate::loading::Probe for ProcessProbe {
    /// Load `path` (its checked content, `descriptor`) in the throwaway process, and say
    /// whether it failed there.
    fn probe(&self, path: &Path, descriptor: &std::fs::File) -> Result<(), LoadError> {
        let host = match super::find_plugin_host(self.host.as_ref()) {
            Ok(host) => host,
            Err(why) => {
                not_run(path, why);
                return Ok(());
            }
        };
        match run(path, descriptor, &host) {
            Ok(()) | Err(Verdict::NotRun) => Ok(()),
            Err(Verdict::Failed(error)) => Err(error),
        }
    }
}

/// Warn that `path` is loaded without a probe, and why; [`Verdict::NotRun`].
fn not_run(path: &Path, why: impl std::fmt::Display) -> Verdict {
    tracing::warn!(
        "{} is loaded without a probe first, so a damaged file could crash this process: {why}",
        path.display()
    );
    Verdict::NotRun
}

/// The probe with `host` found; `Err` when it did not pass.
fn run(path: &Path, descriptor: &std::fs::File, host: &Path) -> Result<(), Verdict> {
    let fail =
        |cause: String| Verdict::Failed(LoadError::new(path, LoadErrorKind::ProbeFailed { cause }));
    let not_started =
        |cause: String| not_run(path, format!("cannot start {}: {cause}", host.display()));
    let scratch = tempfile::Builder::new()
        .prefix("xcsh-probe-")
        .tempdir()
        .map_err(|e| not_started(e.to_string()))?;
    let policy = SandboxPolicy {
        writable: vec![scratch.path().to_owned()],
        readable: path
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .chain([host.to_owned()])
            .collect(),
        deny_network: true,
        memory_limit: Some(crate::sys::sandbox::DEFAULT_MEMORY_LIMIT),
        max_open_files: Some(crate::sys::sandbox::DEFAULT_MAX_OPEN_FILES),
        ..SandboxPolicy::default()
    };
    let policy_json = serde_json::to_string(&policy).map_err(|e| not_started(e.to_string()))?;
    let mut command = Command::new(host);
    command
        .env_clear()
        .envs(policy.environment())
        .envs(
            crate::sys::sandbox::TEMP_VARIABLES
                .iter()
                .map(|name| (name, scratch.path())),
        )
        .env("XCSH_PLUGIN_HOST_PARENT", std::process::id().to_string())
        .arg("--protocol")
        .arg(PROTOCOL_VERSION.to_string())
        .arg("--path")
        .arg(path)
        .arg("--cwd")
        .arg(scratch.path())
        .arg("--sandbox")
        .arg(policy_json)
        .arg("--probe")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let ((ours, _writer), handover) = spawn::hand_over(&mut command, descriptor, PROBE_LIMIT)
        .map_err(|e| not_started(e.to_string()))?;
    spawn::set_read_limit(&ours, PROBE_LIMIT).map_err(|e| not_started(e.to_string()))?;
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| not_started(e.to_string()))?;
    let containment = match handover.started(spawn::std_child_id(&child), policy.memory_limit) {
        Ok(containment) => std::sync::Arc::new(containment),
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(not_started(error.to_string()));
        }
    };
    // The deadline where reads cannot time out (Windows' pipes): the child and what it started
    // are ended, which ends the read.
    let (answered, deadline) = std::sync::mpsc::channel::<()>();
    let watched = std::sync::Arc::clone(&containment);
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = deadline.recv_timeout(PROBE_LIMIT)
        {
            watched.end_all();
        }
    });
    let stderr = child.stderr.take();
    let reading = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text);
        }
        text
    });
    let mut reader = FrameReader::new(ours);
    let started_probing = matches!(reader.next::<ChildMessage>(), Ok(ChildMessage::Probing));
    let verdict = if started_probing {
        reader.next::<ChildMessage>()
    } else {
        Ok(ChildMessage::Probing)
    };
    drop(answered);
    // The child exits right after its verdict, or, when its plugin process crashed, as soon
    // as it has passed on how; one still there after that is killed.
    let ended_by = Instant::now() + EXIT_GRACE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() > ended_by || started.elapsed() > PROBE_LIMIT => {
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(_) => break None,
        }
    };
    // Whatever it started ends with it.
    containment.end_all();
    let printed = reading.join().unwrap_or_default();
    match verdict {
        // It never got to the library: not a plugin host that runs here (another build or
        // architecture), or no sandbox could be set up. Loaded without a probe, as with none.
        _ if !started_probing => {
            let how = status.map_or_else(|| "ended".to_owned(), spawn::describe_exit);
            let said = last_words(&printed).map(|line| format!(" ({line})"));
            Err(not_run(
                path,
                format!(
                    "{} {how} before it loaded anything{}",
                    host.display(),
                    said.unwrap_or_default()
                ),
            ))
        }
        Ok(ChildMessage::Probed { error: None }) => Ok(()),
        Ok(ChildMessage::Probed { error: Some(kind) }) => {
            Err(Verdict::Failed(LoadError::new(path, kind)))
        }
        // The sandbox could not be set up, or the plugin host is another build.
        Ok(ChildMessage::LoadFailed { kind }) => Err(Verdict::Failed(LoadError::new(path, kind))),
        Ok(_) => Err(fail("answered out of turn".to_owned())),
        Err(_) if started.elapsed() >= PROBE_LIMIT => Err(fail(format!(
            "did not finish within {}s",
            PROBE_LIMIT.as_secs()
        ))),
        Err(_) => {
            let how = status.map_or_else(|| "ended".to_owned(), spawn::describe_exit);
            // Its last words (a panic's message, the dynamic loader's assertion), not a note
            // about backtraces.
            let said = last_words(&printed)
                .map(|line| format!(" ({line})"))
                .unwrap_or_default();
            Err(fail(format!("ended: {how}{said}")))
        }
    }
}

/// A process's last words on stderr (a panic's message, the dynamic loader's assertion), not
/// a note about backtraces.
fn last_words(printed: &str) -> Option<&str> {
    printed
        .lines()
        .map(str::trim)
        .rev()
        .find(|line| !line.is_empty() && !line.starts_with("note:"))
}
