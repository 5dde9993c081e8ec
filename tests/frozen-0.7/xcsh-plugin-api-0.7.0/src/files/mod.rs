//! Staged file changes, committed all or nothing: what an `apply` that touches several files
//! uses so that an interruption (an error, a cancellation, a signal, a crash, a power loss)
//! never leaves the project half changed or littered.
//!
//! A [`FileChanges`] collects writes, renames and removals; [`FileChanges::commit`] then
//! checks them all against the disk, writes every new content to a temporary file in the
//! project's own `.xcsh/apply-journal/` (never beside the sources), makes those durable,
//! records the whole change in a journal there, and only then renames, so:
//!
//! - **Stopped by an error**: the changes already made are undone, every temporary file is
//!   removed, and the tree is as it was; the commit fails with the cause.
//! - **Cancelled** (the future dropped: the host cancelled the call, on a signal, an MCP
//!   cancellation, an abort) at any moment before its result is taken: the commit stops at
//!   its next step and undoes what it did, renames included, before the drop returns. So a
//!   commit that reports success changed every file, and one whose result nobody received
//!   changed none.
//! - **Killed** (`SIGKILL`, a crash, a power loss): the journal stays. The next session in that
//!   working directory (every `xcsh-loader` session runs [`recover`] before any tool) finishes
//!   the recorded renames when every new file is durable, or undoes those already done
//!   otherwise, then removes everything the journal names. It never touches a file the
//!   journal does not name, and it identifies each file by its inode, so a file changed by
//!   someone since is left alone.
//!
//! ```
//! use xcsh_plugin_api::files::FileChanges;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("xcsh-files-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # std::fs::write(dir.join("draft.md"), "old")?;
//! let mut changes = FileChanges::new(&dir); // the session's working directory
//! changes.write("notes.md", "new notes").rename("draft.md", "final.md");
//! let committed = changes.commit_blocking()?; // or `.commit().await` in async code
//! assert_eq!((committed.written, committed.renamed), (1, 1));
//! assert_eq!(std::fs::read_to_string(dir.join("notes.md"))?, "new notes");
//! assert!(!dir.join(".xcsh").exists(), "nothing left behind");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```
//!
//! Cost: one temporary file per write, synced in a batch (their writeback is started as each
//! is written, so the syncs mostly find their data on disk), three syncs for the journal, one
//! rename per change (on Linux an atomic exchange, which keeps the old content for an undo
//! without copying it), a sync of each touched directory, and the removal of the old contents.

mod commit;
mod fault;
pub(crate) mod fsops;
mod journal;
mod recover;

use std::path::{Path, PathBuf};

pub use fault::{simulate_crash_at, CRASH_AT_ENV};
pub use recover::{recover, Recovered, RecoveryOutcome};

/// The project's directory (under the working directory) for the journals of applies in
/// progress: `.xcsh/apply-journal`. Empty, it is removed.
pub const JOURNAL_DIR: &str = ".xcsh/apply-journal";

/// A set of file changes, staged, then committed as a whole by [`FileChanges::commit`].
///
/// Relative paths are taken from the working directory given to [`FileChanges::new`]. No path
/// may be the subject of two changes. Nothing touches the disk before `commit`.
#[derive(Debug, Clone)]
pub struct FileChanges {
    root: PathBuf,
    changes: Vec<Change>,
}

/// One staged change.
#[derive(Debug, Clone)]
enum Change {
    Write {
        path: PathBuf,
        content: Vec<u8>,
        /// The metadata the caller read the file with ([`FileChanges::write_if_unchanged`]).
        seen: Option<Box<std::fs::Metadata>>,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Remove {
        path: PathBuf,
    },
}

/// What a successful [`FileChanges::commit`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Committed {
    /// Files written (created or replaced).
    pub written: usize,
    /// Files renamed.
    pub renamed: usize,
    /// Files removed.
    pub removed: usize,
}

/// Why a [`FileChanges::commit`] changed nothing (or, rarely, undid what it had done).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitError {
    /// A change does not fit the disk as it is (a source gone, a target taken, a file changed
    /// since it was read). Nothing was changed.
    #[error("nothing was changed: {0}")]
    Conflict(String),
    /// Files changed since they were read (a write made with
    /// [`FileChanges::write_if_unchanged`]). Nothing was changed.
    #[error("nothing was changed: changed since they were read: {}", .files.join(", "))]
    Changed {
        /// The files, as given (relative to the working directory when inside it).
        files: Vec<String>,
    },
    /// Reading or writing failed before the renames. Nothing was changed.
    #[error("nothing was changed: {what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A rename failed midway; the renames already done were undone, so the tree is as it
    /// was (`undo_failed` names any file that could not be put back).
    #[error("nothing was changed: {what}: {source}; the {done} change(s) already made were undone{}", undo_note(.undo_failed))]
    RenameFailed {
        /// The rename that failed.
        what: String,
        /// The cause.
        source: std::io::Error,
        /// How many changes were done, then undone.
        done: usize,
        /// Files that could not be put back (each with why).
        undo_failed: Vec<String>,
    },
    /// The commit was cancelled: it undid whatever it had done and removed every temporary
    /// file.
    #[error("the apply was cancelled before it changed any file; nothing was written")]
    Cancelled,
    /// A simulated crash ([`simulate_crash_at`]): the commit stopped dead after step `step`
    /// and left the disk as a killed process would.
    #[error("simulated crash after step {step} ({what}); run recovery to finish or undo it")]
    SimulatedCrash {
        /// The step, counted from 1.
        step: u32,
        /// What the step was.
        what: String,
    },
}

fn undo_note(failed: &[String]) -> String {
    if failed.is_empty() {
        String::new()
    } else {
        format!(", except: {}", failed.join("; "))
    }
}

impl FileChanges {
    /// An empty set of changes for the project at `working_dir` (the session's working
    /// directory: relative paths start there, and the journal lives in its `.xcsh/`).
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        FileChanges {
            root: working_dir.into(),
            changes: Vec::new(),
        }
    }

    /// Write `content` to `path`, creating it or replacing it whole. A replaced file keeps its
    /// permissions (and its owner where the process may set it); a symbolic link keeps
    /// pointing where it did, and the file it points at is rewritten.
    pub fn write(&mut self, path: impl AsRef<Path>, content: impl Into<Vec<u8>>) -> &mut Self {
        let path = self.root.join(path);
        self.changes.push(Change::Write {
            path,
            content: content.into(),
            seen: None,
        });
        self
    }

    /// Like [`FileChanges::write`], but only if `path` still has the size and modification
    /// time of `seen` (the metadata read with the content this write was computed from);
    /// otherwise the commit writes nothing and fails with [`CommitError::Conflict`].
    pub fn write_if_unchanged(
        &mut self,
        path: impl AsRef<Path>,
        content: impl Into<Vec<u8>>,
        seen: &std::fs::Metadata,
    ) -> &mut Self {
        let path = self.root.join(path);
        self.changes.push(Change::Write {
            path,
            content: content.into(),
            seen: Some(Box::new(seen.clone())),
        });
        self
    }

    /// Rename `from` to `to` (a file or a symbolic link, renamed itself). `to` must not exist
    /// and must be on the same filesystem.
    pub fn rename(&mut self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> &mut Self {
        let (from, to) = (self.root.join(from), self.root.join(to));
        self.changes.push(Change::Rename { from, to });
        self
    }

    /// Remove the file (or symbolic link) `path`.
    pub fn remove(&mut self, path: impl AsRef<Path>) -> &mut Self {
        let path = self.root.join(path);
        self.changes.push(Change::Remove { path });
        self
    }

    /// How many changes are staged.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// Whether nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Commit every change, or none: see the [module](self) for what an interruption leaves.
    ///
    /// The work runs on a thread of its own. Dropping the returned future cancels the commit:
    /// it stops at its next step and undoes whatever it did (renames included), and the drop
    /// returns only when the disk is settled, as it was.
    pub fn commit(self) -> commit::CommitFuture {
        commit::CommitFuture::start(self)
    }

    /// [`FileChanges::commit`] on the calling thread, for code that is not async.
    pub fn commit_blocking(self) -> Result<Committed, CommitError> {
        commit::run(self, &commit::Cancel::never())
    }
}

#[cfg(test)]
mod tests;
