//! Recovery: what the next session in a working directory does with the commits a killed
//! process left in its `.xcsh/apply-journal/`, before any tool runs.
//!
//! A commit without a whole journal never renamed anything: its staged files are removed. A
//! commit with one is finished when every change is either done or can still be made (its new
//! content is there, and its target is as the commit found it); otherwise the changes already
//! made are undone. Each file is told by its identity (inode), recorded in the journal, so a
//! file someone changed since is neither overwritten nor removed: such a commit is left in
//! place and reported as stuck.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::fsops::{self, identity_at};
use super::journal::{self, Entry, Exclusive, Intent, Journal, JournalPlace};
use super::journal::{INTENT_FILE, JOURNAL_FILE};

/// One interrupted commit found by [`recover`], and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recovered {
    /// The commit's directory in the journal.
    pub journal: PathBuf,
    /// What recovery did.
    pub outcome: RecoveryOutcome,
    /// How many changes the commit had journaled (0 when it had not decided).
    pub changes: usize,
    /// The files the commit was changing (targets, and both names of a rename).
    pub files: Vec<PathBuf>,
}

/// What [`recover`] did with one interrupted commit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecoveryOutcome {
    /// It had not decided (no whole journal): nothing had changed; its staged files are gone.
    Discarded,
    /// Its remaining changes were made: the tree is as previewed.
    Completed,
    /// The changes it had made were undone: the tree is as it was.
    Undone,
    /// Neither could be done safely (a file was changed by someone since, or a journal of an
    /// unknown format); the journal is left in place for a person to look at.
    Stuck {
        /// Why, naming the files.
        reason: String,
    },
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.changes;
        match &self.outcome {
            RecoveryOutcome::Discarded => write!(
                f,
                "an interrupted apply had changed nothing; its temporary files were removed"
            ),
            RecoveryOutcome::Completed => write!(
                f,
                "an interrupted apply of {n} file change(s) was completed: the files are as previewed"
            ),
            RecoveryOutcome::Undone => write!(
                f,
                "an interrupted apply of {n} file change(s) was undone: the files are as they were"
            ),
            RecoveryOutcome::Stuck { reason } => write!(
                f,
                "an interrupted apply in {} could be neither completed nor undone: {reason}; it \
                 was left as it is",
                self.journal.display()
            ),
        }
    }
}

/// Finish or undo every interrupted commit in `working_dir`'s `.xcsh/apply-journal/` (see the
/// module). Cheap when there is none (one `stat`). While a commit runs in that directory
/// (another session applying now) nothing is touched, and an empty list comes back.
pub fn recover(working_dir: &Path) -> io::Result<Vec<Recovered>> {
    let place = match JournalPlace::enter_exclusive(working_dir)? {
        Exclusive::Absent | Exclusive::Busy => return Ok(Vec::new()),
        Exclusive::Entered(place) => place,
    };
    let mut recovered = Vec::new();
    for dir in place.commits()? {
        recovered.push(recover_commit(&dir));
    }
    place.leave();
    Ok(recovered)
}

/// Where each journal entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Done,
    /// Not done, and can still be made.
    ToDo,
    /// Neither: its files are not what the journal recorded.
    Lost,
}

fn recover_commit(dir: &Path) -> Recovered {
    let Some(journal) = journal::read::<Journal>(dir, JOURNAL_FILE) else {
        // Undecided: nothing was renamed. Its files outside `dir` are named in the intent.
        let intent: Intent = journal::read(dir, INTENT_FILE).unwrap_or_default();
        for path in &intent.outside {
            let _ = fs::remove_file(path);
        }
        let _ = fs::remove_dir_all(dir);
        return Recovered {
            journal: dir.to_path_buf(),
            outcome: RecoveryOutcome::Discarded,
            changes: 0,
            files: Vec::new(),
        };
    };
    let files = journal.entries.iter().flat_map(subjects).collect();
    let outcome = if journal.format == journal::FORMAT {
        settle(&journal.entries)
    } else {
        RecoveryOutcome::Stuck {
            reason: format!(
                "its journal was written by {} in format {}, which this version cannot read",
                journal.written_by, journal.format
            ),
        }
    };
    if !matches!(outcome, RecoveryOutcome::Stuck { .. }) {
        sync_dirs(&journal.entries);
        // The journal first: from here on only leftovers remain, removable as a whole.
        let _ = fs::remove_file(dir.join(JOURNAL_FILE));
        for entry in &journal.entries {
            for path in outside(entry, dir) {
                let _ = fs::remove_file(path);
            }
        }
        let _ = fs::remove_dir_all(dir);
    }
    Recovered {
        journal: dir.to_path_buf(),
        outcome,
        changes: journal.entries.len(),
        files,
    }
}

/// Complete the commit if every change is done or can be made; undo the done ones otherwise.
fn settle(entries: &[Entry]) -> RecoveryOutcome {
    let states: Vec<State> = entries.iter().map(state).collect();
    if !states.contains(&State::Lost) {
        let mut done = states.clone();
        let mut failure = None;
        for (index, entry) in entries.iter().enumerate() {
            if done[index] == State::ToDo {
                match entry.make() {
                    Ok(()) => done[index] = State::Done,
                    Err(e) => {
                        failure = Some(format!("{}: {e}", name(entry)));
                        break;
                    }
                }
            }
        }
        let Some(failure) = failure else {
            return RecoveryOutcome::Completed;
        };
        return undo_all(entries, &done, Some(failure));
    }
    let lost: Vec<String> = entries
        .iter()
        .zip(&states)
        .filter(|(_, s)| **s == State::Lost)
        .map(|(e, _)| name(e))
        .collect();
    undo_all(
        entries,
        &states,
        Some(format!("changed since: {}", lost.join(", "))),
    )
}

/// Undo every done change, newest first.
fn undo_all(entries: &[Entry], states: &[State], cause: Option<String>) -> RecoveryOutcome {
    let mut failed = Vec::new();
    for (entry, state) in entries.iter().zip(states).rev() {
        if *state == State::Done {
            if let Err(e) = entry.undo() {
                failed.push(format!("{}: {e}", name(entry)));
            }
        }
    }
    if failed.is_empty() {
        // Everything the commit did is undone; a file someone changed since (what made the
        // commit unfinishable) was never touched.
        return RecoveryOutcome::Undone;
    }
    RecoveryOutcome::Stuck {
        reason: format!(
            "{}could not undo {}",
            cause.map(|c| format!("{c}; ")).unwrap_or_default(),
            failed.join("; ")
        ),
    }
}

fn state(entry: &Entry) -> State {
    match entry {
        Entry::Write {
            target,
            temp,
            new,
            old,
            ..
        } => {
            let at_target = identity_at(target);
            if at_target == Some(*new) {
                State::Done
            } else if identity_at(temp) == Some(*new) && at_target == *old {
                State::ToDo
            } else {
                State::Lost
            }
        }
        Entry::Rename { from, to, file } => {
            let (at_from, at_to) = (identity_at(from), identity_at(to));
            if at_to == Some(*file) {
                State::Done
            } else if at_from == Some(*file) && at_to.is_none() {
                State::ToDo
            } else {
                State::Lost
            }
        }
        Entry::Remove {
            target,
            backup,
            file,
        } => {
            if identity_at(backup) == Some(*file) {
                State::Done
            } else if identity_at(target) == Some(*file) {
                State::ToDo
            } else {
                State::Lost
            }
        }
    }
}

fn name(entry: &Entry) -> String {
    match entry {
        Entry::Write { target, .. } | Entry::Remove { target, .. } => target.display().to_string(),
        Entry::Rename { from, to, .. } => format!("{} -> {}", from.display(), to.display()),
    }
}

fn subjects(entry: &Entry) -> Vec<PathBuf> {
    match entry {
        Entry::Write { target, .. } | Entry::Remove { target, .. } => vec![target.clone()],
        Entry::Rename { from, to, .. } => vec![from.clone(), to.clone()],
    }
}

/// The entry's staged files outside the commit's directory `dir` (targets on another
/// filesystem).
fn outside<'a>(entry: &'a Entry, dir: &Path) -> Vec<&'a PathBuf> {
    let staged = match entry {
        Entry::Write { temp, backup, .. } => vec![temp, backup],
        Entry::Remove { backup, .. } => vec![backup],
        Entry::Rename { .. } => vec![],
    };
    staged.into_iter().filter(|p| !p.starts_with(dir)).collect()
}

fn sync_dirs(entries: &[Entry]) {
    let mut dirs: Vec<PathBuf> = entries
        .iter()
        .flat_map(subjects)
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    for dir in dirs {
        let _ = fsops::sync_dir(&dir);
    }
}
