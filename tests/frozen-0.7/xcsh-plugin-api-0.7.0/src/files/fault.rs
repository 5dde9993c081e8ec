//! Crash injection, for tests that show what a crash at each step of a commit leaves and what
//! recovery makes of it. Two ways in:
//!
//! - [`CRASH_AT_ENV`] in a process's environment aborts that process (no cleanup runs, like a
//!   `SIGKILL`) right after step N of its first commit that reaches N;
//! - [`simulate_crash_at`] stops the next commit in one working directory after step N,
//!   in-process: the commit returns [`CommitError::SimulatedCrash`] and leaves the disk as a
//!   killed process would (what `testing::PluginTest::crash_commit_at` uses).
//!
//! Steps are counted from 1: each temporary file written, the temporary files synced, the
//! journal written, each rename, the directories synced, the journal removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use super::CommitError;

/// Set to a step number N, the process aborts right after step N of a commit (for
/// fault-injection tests; see the module of [`FileChanges`](super::FileChanges)). It prints
/// the step on stderr first.
pub const CRASH_AT_ENV: &str = "XCSH_TEST_CRASH_COMMIT_AT";

static SIMULATED: Mutex<Vec<(PathBuf, u32)>> = Mutex::new(Vec::new());

/// Make the next commit whose working directory is `working_dir` stop dead after step `step`
/// (counted from 1), leaving the disk as a crash there would; it fails with
/// [`CommitError::SimulatedCrash`]. A commit with fewer steps completes normally (and the
/// request is used up), which is how a test knows it has tried every step.
pub fn simulate_crash_at(working_dir: &Path, step: u32) {
    let mut armed = crate::sync::lock(&SIMULATED);
    armed.retain(|(dir, _)| dir != working_dir);
    armed.push((working_dir.to_path_buf(), step));
}

/// One commit's crash point, if any, and its step count.
pub(super) struct Faults {
    crash_at: Option<u32>,
    simulate: bool,
    steps: AtomicU32,
    crashed: AtomicBool,
    /// The step the simulated crash happened at, for the threads that stop after it.
    crash_step: OnceLock<String>,
}

impl Faults {
    pub fn for_commit(root: &Path) -> Faults {
        let simulated = {
            let mut armed = crate::sync::lock(&SIMULATED);
            let found = armed.iter().position(|(dir, _)| dir == root);
            found.map(|at| armed.remove(at).1)
        };
        let from_env = std::env::var(CRASH_AT_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok());
        Faults {
            crash_at: simulated.or(from_env),
            simulate: simulated.is_some(),
            steps: AtomicU32::new(0),
            crashed: AtomicBool::new(false),
            crash_step: OnceLock::new(),
        }
    }

    /// Step `what` is done: crash here if this is the chosen step (or, simulated, if the
    /// crash already happened on another thread).
    pub fn step(&self, what: impl FnOnce() -> String) -> Result<(), CommitError> {
        let Some(crash_at) = self.crash_at else {
            return Ok(());
        };
        if self.crashed.load(Ordering::SeqCst) {
            return Err(CommitError::SimulatedCrash {
                step: crash_at,
                what: self.crash_step.get().cloned().unwrap_or_default(),
            });
        }
        let step = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        if step != crash_at {
            return Ok(());
        }
        let what = what();
        if !self.simulate {
            eprintln!("{CRASH_AT_ENV}: aborting after commit step {step} ({what})");
            std::process::abort();
        }
        let _ = self.crash_step.set(what.clone());
        self.crashed.store(true, Ordering::SeqCst);
        Err(CommitError::SimulatedCrash { step, what })
    }

    /// Whether a simulated crash happened (the commit then leaves the disk alone).
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }
}
