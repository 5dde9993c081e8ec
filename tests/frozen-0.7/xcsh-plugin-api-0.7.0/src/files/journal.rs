//! Where an apply's journal lives and what it says.
//!
//! `<working dir>/.xcsh/apply-journal/` holds one directory per commit in progress (its
//! temporary files, the old contents it keeps for an undo, and `journal.json` once the commit
//! is decided) and a `lock` file. Commits hold the lock shared for their whole run; recovery
//! takes it exclusive, without waiting, so it never touches a commit that is still running
//! (the kernel drops a dead process's lock). Whoever finds the place empty under the exclusive
//! lock removes it, and `.xcsh/` too when a commit created it (the lock file says so), so an
//! apply leaves nothing behind.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::fsops::{self, FileId};

/// The journal's file in a commit's directory. Present and whole means the commit is decided:
/// every new content is durable, and the renames may begin (or have).
pub(super) const JOURNAL_FILE: &str = "journal.json";
/// Written before any temporary file outside the commit's directory (a target on another
/// filesystem), naming them, so that even an undecided commit's files can be found.
pub(super) const INTENT_FILE: &str = "intent.json";
const LOCK_FILE: &str = "lock";
/// In the lock file: `.xcsh/` did not exist before, so it goes with the journal directory.
const CREATED_XCSH: &str = "created .xcsh\n";
/// The journal format; a recovery leaves a journal of another format alone.
pub(super) const FORMAT: u32 = 1;

/// A commit's record: every change with the names and file identities (inode numbers) that
/// tell, after a crash, whether it was done.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Journal {
    pub format: u32,
    /// The crate and version that wrote it, for a human reading it.
    pub written_by: String,
    pub entries: Vec<Entry>,
}

/// One change as recorded. Paths are absolute.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub(super) enum Entry {
    /// `temp` (identity `new`) replaces `target` (identity `old`, absent for a new file). The
    /// old content ends at `temp` (exchanged) or at `backup` (linked), for an undo.
    Write {
        target: PathBuf,
        temp: PathBuf,
        backup: PathBuf,
        new: FileId,
        old: Option<FileId>,
    },
    /// The file `file` moves from `from` to `to`.
    Rename {
        from: PathBuf,
        to: PathBuf,
        file: FileId,
    },
    /// The file `file` at `target` moves to `backup` (removed for good once committed).
    Remove {
        target: PathBuf,
        backup: PathBuf,
        file: FileId,
    },
}

impl Entry {
    /// Make the change (a commit's rename step, or recovery completing one). A replaced
    /// file's old content is kept for an undo: exchanged to the temporary name (one atomic
    /// call), or linked to the backup name where exchange is missing.
    pub fn make(&self) -> io::Result<()> {
        match self {
            Entry::Write {
                target,
                temp,
                backup,
                old,
                ..
            } => {
                if old.is_none() {
                    return fsops::rename_noreplace(temp, target);
                }
                if fsops::exchange(temp, target)? {
                    return Ok(());
                }
                fs::hard_link(target, backup)?;
                fs::rename(temp, target)
            }
            Entry::Rename { from, to, .. } => fsops::rename_noreplace(from, to),
            Entry::Remove { target, backup, .. } => fsops::rename_noreplace(target, backup),
        }
    }

    /// Undo the change once made: the old content is at the temporary name (exchanged) or at
    /// the backup name (linked), told by its identity.
    pub fn undo(&self) -> io::Result<()> {
        match self {
            Entry::Write {
                target,
                temp,
                backup,
                old,
                ..
            } => match old {
                None => fs::remove_file(target),
                Some(old) => {
                    let source = [temp, backup]
                        .into_iter()
                        .find(|p| fsops::identity_at(p) == Some(*old))
                        .ok_or_else(|| io::Error::other("its old content is gone"))?;
                    fs::rename(source, target)
                }
            },
            Entry::Rename { from, to, .. } => fsops::rename_noreplace(to, from),
            Entry::Remove { target, backup, .. } => fsops::rename_noreplace(backup, target),
        }
    }
}

/// Files outside the commit's directory that a commit may leave (see [`INTENT_FILE`]).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Intent {
    pub outside: Vec<PathBuf>,
}

/// `.xcsh/apply-journal` of the working directory `root`.
pub(super) fn place(root: &Path) -> PathBuf {
    root.join(super::JOURNAL_DIR)
}

/// The journal directory, entered under its lock.
pub(super) struct JournalPlace {
    pub dir: PathBuf,
    lock: File,
}

/// What [`JournalPlace::enter_exclusive`] found.
pub(super) enum Exclusive {
    /// No journal directory: nothing to recover.
    Absent,
    /// A commit is running in this working directory now.
    Busy,
    Entered(JournalPlace),
}

impl JournalPlace {
    /// For a commit: create the place if needed and hold its lock shared (waiting out a
    /// recovery).
    pub fn enter_shared(root: &Path) -> io::Result<JournalPlace> {
        let xcsh = root.join(".xcsh");
        let created_xcsh = match fs::create_dir(&xcsh) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(e),
        };
        let dir = place(root);
        let mut pending_delete = 0;
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            let lock = match open_lock(&dir, created_xcsh) {
                Ok(lock) => lock,
                // Windows: the last one out removed the lock and has not closed it yet
                // (`leave`); it is gone within moments. Bounded, so that a lock file that
                // truly cannot be opened is still reported.
                Err(e)
                    if cfg!(windows)
                        && e.kind() == io::ErrorKind::PermissionDenied
                        && pending_delete < 1000 =>
                {
                    pending_delete += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    continue;
                }
                Err(e) => return Err(e),
            };
            lock.lock_shared()?;
            if still_named(&lock, &dir) {
                return Ok(JournalPlace { dir, lock });
            }
            // A recovery or a finished commit removed the place while we waited: again.
        }
    }

    /// For a recovery: the place under its exclusive lock, if it exists and no commit runs.
    pub fn enter_exclusive(root: &Path) -> io::Result<Exclusive> {
        let dir = place(root);
        if !dir.is_dir() {
            return Ok(Exclusive::Absent);
        }
        let lock = match open_lock(&dir, false) {
            Ok(lock) => lock,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Exclusive::Absent),
            // Windows: a commit is leaving the place (its lock is removed, not yet closed).
            Err(e) if cfg!(windows) && e.kind() == io::ErrorKind::PermissionDenied => {
                return Ok(Exclusive::Busy)
            }
            Err(e) => return Err(e),
        };
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(Exclusive::Busy),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        if !still_named(&lock, &dir) {
            return Ok(Exclusive::Absent);
        }
        Ok(Exclusive::Entered(JournalPlace { dir, lock }))
    }

    /// The commits' directories in the place, in name order.
    pub fn commits(&self) -> io::Result<Vec<PathBuf>> {
        JournalPlace::commits_in(&self.dir)
    }

    fn commits_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut dirs: Vec<PathBuf> = fs::read_dir(dir)?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        Ok(dirs)
    }

    /// Let go of the place; the last one out (nothing else holds the lock, no commit's
    /// directory left) removes it, and `.xcsh/` when a commit created it and it is empty.
    pub fn leave(self) {
        let JournalPlace { dir, lock } = self;
        // Ours let go first: Windows does not turn a shared lock into an exclusive one (the
        // two would stack, and the exclusive one fails against our own); whoever takes it
        // meanwhile cleans up when it leaves.
        let _ = lock.unlock();
        let exclusive = match lock.try_lock() {
            Ok(()) => true,
            Err(_) => false,
        };
        let empty = || JournalPlace::commits_in(&dir).is_ok_and(|c| c.is_empty());
        if !exclusive || !empty() {
            return;
        }
        let mut marker = String::new();
        let _ = (&lock).read_to_string(&mut marker);
        // Removed while still held, so nobody enters through it meanwhile: on Unix the name
        // goes at once; on Windows it stays until the last handle closes, and opening it
        // fails until then (`enter_shared` waits that out), so ours is closed before the
        // directory can go.
        let _ = fs::remove_file(dir.join(LOCK_FILE));
        drop(lock);
        if fs::remove_dir(&dir).is_ok() && marker == CREATED_XCSH {
            if let Some(xcsh) = dir.parent() {
                // Only if empty: anything else in `.xcsh/` is the user's.
                let _ = fs::remove_dir(xcsh);
            }
        }
    }
}

fn open_lock(dir: &Path, created_xcsh: bool) -> io::Result<File> {
    let path = dir.join(LOCK_FILE);
    match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut file) => {
            if created_xcsh {
                file.write_all(CREATED_XCSH.as_bytes())?;
            }
            // The contents are read from the start by `leave`.
            drop(file);
            OpenOptions::new().read(true).write(true).open(&path)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            OpenOptions::new().read(true).write(true).open(&path)
        }
        Err(e) => Err(e),
    }
}

/// Whether `lock` is still the file named `dir/lock` (not one removed while we waited for it).
fn still_named(lock: &File, dir: &Path) -> bool {
    let (Ok(held), Ok(named)) = (lock.metadata(), fs::metadata(dir.join(LOCK_FILE))) else {
        return false;
    };
    super::fsops::identity(&held) == super::fsops::identity(&named)
        && super::fsops::device(&held) == super::fsops::device(&named)
}

/// Write `value` as JSON to `dir/name` and make it durable (the file, then the directory).
pub(super) fn write_durably<T: Serialize>(dir: &Path, name: &str, value: &T) -> io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(io::Error::other)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(name))?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    super::fsops::sync_dir(dir)
}

/// Read `dir/name` as JSON: `None` when absent or not whole (a write cut short).
pub(super) fn read<T: for<'de> Deserialize<'de>>(dir: &Path, name: &str) -> Option<T> {
    let bytes = fs::read(dir.join(name)).ok()?;
    serde_json::from_slice(&bytes).ok()
}
