//! How a [`FileChanges`] is committed: check every change against the disk, stage the new
//! contents in the journal directory, make them durable, decide (write the journal), rename,
//! sync the touched directories, clean up. A [`Commit`] value owns the disk state between
//! those steps; whatever way it ends before the renames (an error, a cancellation, a panic),
//! its `Drop` removes what it staged.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::future::Future;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use super::fault::Faults;
use super::fsops::{self, identity, FileId, IO_THREADS};
use super::journal::{self, Entry, Intent, Journal, JournalPlace, INTENT_FILE, JOURNAL_FILE};
use super::{Change, CommitError, Committed, FileChanges};

/// Asked from another thread to stop before the renames.
pub(super) struct Cancel<'a>(&'a AtomicBool);

static NEVER: AtomicBool = AtomicBool::new(false);

impl Cancel<'_> {
    pub fn never() -> Cancel<'static> {
        Cancel(&NEVER)
    }

    fn check(&self) -> Result<(), CommitError> {
        if self.0.load(Ordering::SeqCst) {
            Err(CommitError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// One change, checked against the disk, with where its files go.
#[derive(Debug)]
enum Planned {
    Write {
        target: PathBuf,
        content: Vec<u8>,
        /// The file replaced, as found when checked; `None` for a new file.
        old: Option<Box<fs::Metadata>>,
        /// Checked once more before the renames: the file must still be as `old` says.
        unchanged: bool,
        temp: PathBuf,
        backup: PathBuf,
        /// The temporary file's identity, once written.
        new: Option<FileId>,
    },
    Rename {
        from: PathBuf,
        to: PathBuf,
        file: FileId,
    },
    Remove {
        target: PathBuf,
        backup: PathBuf,
        file: FileId,
    },
}

/// Paths as the user knows them: relative to the working directory when inside it.
fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn conflict(message: String) -> CommitError {
    CommitError::Conflict(message)
}

fn io_error(what: String) -> impl FnOnce(io::Error) -> CommitError {
    move |source| CommitError::Io { what, source }
}

/// The file a write replaces: `path`, or where it points when it is a symbolic link.
fn write_target(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Check every change against the disk as it is now; nothing is written.
fn check(root: &Path, changes: Vec<Change>) -> Result<Vec<Planned>, CommitError> {
    let mut planned = Vec::with_capacity(changes.len());
    let mut touched = HashSet::new();
    let mut claim = |path: &Path| {
        if touched.insert(path.to_path_buf()) {
            Ok(())
        } else {
            Err(conflict(format!(
                "{} is the subject of two changes",
                shown(root, path)
            )))
        }
    };
    for change in changes {
        match change {
            Change::Write {
                path,
                content,
                seen,
            } => {
                let target = write_target(&path)
                    .map_err(|e| conflict(format!("{} (broken link: {e})", shown(root, &path))))?;
                claim(&target)?;
                let unchanged = seen.is_some();
                let read = match seen {
                    // What the caller read the file with (no second `stat`): the last look
                    // before the renames checks the file is still that.
                    Some(seen) => Ok(*seen),
                    None => fs::metadata(&target),
                };
                let old = match read {
                    Ok(meta) => Some(Box::new(meta)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound && unchanged => {
                        return Err(CommitError::Changed {
                            files: vec![shown(root, &path)],
                        })
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(e) => {
                        return Err(io_error(format!("cannot read {}", shown(root, &path)))(e))
                    }
                };
                if let Some(meta) = &old {
                    if meta.is_dir() {
                        return Err(conflict(format!("{} is a directory", shown(root, &path))));
                    }
                    if meta.permissions().readonly() {
                        return Err(conflict(format!("{} is read-only", shown(root, &path))));
                    }
                }
                planned.push(Planned::Write {
                    target,
                    content,
                    old,
                    unchanged,
                    temp: PathBuf::new(),
                    backup: PathBuf::new(),
                    new: None,
                });
            }
            Change::Rename { from, to } => {
                claim(&from)?;
                claim(&to)?;
                let Ok(meta) = fs::symlink_metadata(&from) else {
                    return Err(conflict(format!(
                        "source {} no longer exists",
                        shown(root, &from)
                    )));
                };
                if fs::symlink_metadata(&to).is_ok() {
                    return Err(conflict(format!(
                        "target {} already exists",
                        shown(root, &to)
                    )));
                }
                let to_dir = to.parent().unwrap_or(Path::new("."));
                match fs::metadata(to_dir) {
                    Ok(dir) if fsops::device(&dir) == fsops::device(&meta) => {}
                    Ok(_) => {
                        return Err(conflict(format!(
                            "{} and {} are on different filesystems",
                            shown(root, &from),
                            shown(root, &to)
                        )))
                    }
                    Err(e) => {
                        return Err(io_error(format!("cannot rename to {}", shown(root, &to)))(
                            e,
                        ))
                    }
                }
                planned.push(Planned::Rename {
                    from,
                    to,
                    file: identity(&meta),
                });
            }
            Change::Remove { path } => {
                claim(&path)?;
                let meta = fs::symlink_metadata(&path)
                    .map_err(|_| conflict(format!("{} no longer exists", shown(root, &path))))?;
                if meta.is_dir() {
                    return Err(conflict(format!("{} is a directory", shown(root, &path))));
                }
                planned.push(Planned::Remove {
                    target: path,
                    backup: PathBuf::new(),
                    file: identity(&meta),
                });
            }
        }
    }
    Ok(planned)
}

static COMMITS: AtomicU64 = AtomicU64::new(0);

/// A name for one commit's directory, unique on this machine at this time.
fn commit_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{nanos}-{}-{}",
        std::process::id(),
        COMMITS.fetch_add(1, Ordering::Relaxed)
    )
}

/// Where the temporary file and the backup of change `index` go: in the commit's directory
/// when `target_dir` is on its filesystem (a rename can cross no other), beside the target
/// otherwise.
fn staging_paths(
    dir: &Path,
    id: &str,
    index: usize,
    target: &Path,
    same_device: bool,
) -> (PathBuf, PathBuf) {
    if same_device {
        return (dir.join(format!("t{index}")), dir.join(format!("b{index}")));
    }
    let beside = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (
        beside.join(format!(".{name}.xcsh-apply-{id}-{index}.tmp")),
        beside.join(format!(".{name}.xcsh-apply-{id}-{index}.old")),
    )
}

/// The disk state of one commit in progress; see the module.
struct Commit {
    root: PathBuf,
    dir: PathBuf,
    place: Option<JournalPlace>,
    planned: Vec<Planned>,
    /// Staged files outside `dir` (targets on another filesystem).
    outside: Vec<PathBuf>,
    journal_written: bool,
    /// Changes done so far, once the renames have begun.
    renamed: Option<usize>,
    finished: bool,
    faults: Faults,
}

/// Check, then commit `changes`; see the module.
pub(super) fn run(changes: FileChanges, cancel: &Cancel<'_>) -> Result<Committed, CommitError> {
    match make(changes, cancel)? {
        Some(commit) => commit.finish(),
        None => Ok(Committed::default()),
    }
}

/// Every step up to and including the renames and their sync: the tree is as committed, the
/// journal and the old contents still there (`None`: nothing to change). Dropping the result
/// undoes the changes; [`Commit::finish`] removes the journal and the old contents.
fn make(changes: FileChanges, cancel: &Cancel<'_>) -> Result<Option<Commit>, CommitError> {
    let FileChanges { root, changes } = changes;
    let planned = check(&root, changes)?;
    if planned.is_empty() {
        return Ok(None);
    }
    let place = JournalPlace::enter_shared(&root).map_err(io_error(format!(
        "cannot create the apply journal {}",
        journal::place(&root).display()
    )))?;
    let dir = place.dir.join(commit_id());
    let mut commit = Commit {
        faults: Faults::for_commit(&root),
        root,
        dir,
        place: Some(place),
        planned,
        outside: Vec::new(),
        journal_written: false,
        renamed: None,
        finished: false,
    };
    fs::create_dir(&commit.dir)
        .map_err(io_error(format!("cannot create {}", commit.dir.display())))?;
    commit.make(cancel)?;
    Ok(Some(commit))
}

impl Commit {
    fn make(&mut self, cancel: &Cancel<'_>) -> Result<(), CommitError> {
        self.place_files()?;
        self.stage(cancel)?;
        cancel.check()?;
        self.sync_staged()?;
        self.faults.step(|| "temporary files synced".to_owned())?;
        cancel.check()?;
        self.last_look()?;
        self.decide()?;
        cancel.check()?;
        self.rename_all(cancel)?;
        self.sync_targets();
        self.faults.step(|| "directories synced".to_owned())?;
        // Cancelled during the renames: this returns an error, and `Drop` undoes them.
        cancel.check()
    }

    /// The changes are made and durable: remove the journal, then the old contents.
    fn finish(mut self) -> Result<Committed, CommitError> {
        self.clean_up()?;
        Ok(self.counts())
    }

    /// Give each change its staging paths; name the ones outside the commit's directory in
    /// the intent file before any exists.
    fn place_files(&mut self) -> Result<(), CommitError> {
        let device = fs::metadata(&self.dir)
            .map(|m| fsops::device(&m))
            .map_err(io_error(format!("cannot read {}", self.dir.display())))?;
        let id = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (index, planned) in self.planned.iter_mut().enumerate() {
            match planned {
                Planned::Write {
                    target,
                    old,
                    temp,
                    backup,
                    ..
                } => {
                    let same = match old {
                        Some(meta) => fsops::device(meta) == device,
                        None => fs::metadata(target.parent().unwrap_or(Path::new(".")))
                            .is_ok_and(|m| fsops::device(&m) == device),
                    };
                    (*temp, *backup) = staging_paths(&self.dir, &id, index, target, same);
                    if !same {
                        self.outside.extend([temp.clone(), backup.clone()]);
                    }
                }
                Planned::Remove { target, backup, .. } => {
                    let same =
                        fs::symlink_metadata(&*target).is_ok_and(|m| fsops::device(&m) == device);
                    (_, *backup) = staging_paths(&self.dir, &id, index, target, same);
                    if !same {
                        self.outside.push(backup.clone());
                    }
                }
                Planned::Rename { .. } => {}
            }
        }
        if !self.outside.is_empty() {
            let intent = Intent {
                outside: self.outside.clone(),
            };
            journal::write_durably(&self.dir, INTENT_FILE, &intent)
                .map_err(io_error("cannot write the apply journal".to_owned()))?;
        }
        Ok(())
    }

    /// Write every new content to its temporary file (one thread per core), starting each
    /// one's writeback at once.
    fn stage(&mut self, cancel: &Cancel<'_>) -> Result<(), CommitError> {
        let root = &self.root;
        let faults = &self.faults;
        let writes: Vec<&Planned> = self
            .planned
            .iter()
            .filter(|p| matches!(p, Planned::Write { .. }))
            .collect();
        let total = writes.len();
        let staged = fsops::in_parallel(fsops::cores(), &writes, |planned| {
            cancel.check()?;
            let Planned::Write {
                target,
                content,
                old,
                temp,
                ..
            } = planned
            else {
                return Ok(None);
            };
            let new = write_temp(temp, content, old.as_deref())
                .map_err(io_error(format!("cannot write {}", shown(root, target))))?;
            faults.step(|| format!("a temporary file written ({total} to write)"))?;
            Ok(Some(new))
        });
        let mut identities = Vec::with_capacity(total);
        let mut first_error = None;
        for result in staged {
            match result {
                Ok(new) => identities.push(new),
                Err(error) => {
                    // A crash outranks every other error; then the first one.
                    if matches!(error, CommitError::SimulatedCrash { .. }) || first_error.is_none()
                    {
                        first_error = Some(error);
                    }
                    identities.push(None);
                }
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        let mut identities = identities.into_iter();
        for planned in &mut self.planned {
            if let Planned::Write { new, .. } = planned {
                *new = identities.next().flatten();
            }
        }
        Ok(())
    }

    /// Every temporary file's content on disk (their writeback already started, so the syncs
    /// mostly find it written), then the directories that name them.
    fn sync_staged(&self) -> Result<(), CommitError> {
        let temps: Vec<&PathBuf> = self
            .planned
            .iter()
            .filter_map(|p| match p {
                Planned::Write { temp, .. } => Some(temp),
                _ => None,
            })
            .collect();
        // Opened again by path rather than kept open since written: an apply may touch more
        // files than the process may hold open (`RLIMIT_NOFILE` is often 1024).
        let synced = fsops::in_parallel(IO_THREADS, &temps, |temp| {
            OpenOptions::new().write(true).open(temp)?.sync_data()
        });
        for (temp, result) in temps.iter().zip(synced) {
            result.map_err(io_error(format!("cannot sync {}", temp.display())))?;
        }
        let mut dirs = vec![self.dir.clone()];
        dirs.extend(
            self.outside
                .iter()
                .filter_map(|p| p.parent().map(Path::to_path_buf)),
        );
        dirs.sort();
        dirs.dedup();
        for dir in dirs {
            fsops::sync_dir(&dir).map_err(io_error(format!("cannot sync {}", dir.display())))?;
        }
        Ok(())
    }

    /// A file changed while the new contents were written is not overwritten.
    fn last_look(&self) -> Result<(), CommitError> {
        let changed: Vec<String> = self
            .planned
            .iter()
            .filter_map(|p| match p {
                Planned::Write {
                    target,
                    old: Some(old),
                    unchanged: true,
                    ..
                } => {
                    let now = fs::metadata(target).ok();
                    let same = now.is_some_and(|now| identity(&now) == identity(old));
                    (!same).then(|| shown(&self.root, target))
                }
                _ => None,
            })
            .collect();
        if changed.is_empty() {
            Ok(())
        } else {
            Err(CommitError::Changed { files: changed })
        }
    }

    /// Write the journal durably: from here on, a crash is finished by recovery.
    fn decide(&mut self) -> Result<(), CommitError> {
        let entries = self.planned.iter().map(entry).collect();
        let journal = Journal {
            format: journal::FORMAT,
            written_by: concat!("xcsh-plugin-api ", env!("CARGO_PKG_VERSION")).to_owned(),
            entries,
        };
        self.journal_written = true;
        journal::write_durably(&self.dir, JOURNAL_FILE, &journal)
            .map_err(io_error("cannot write the apply journal".to_owned()))?;
        self.faults.step(|| "journal written".to_owned())
    }

    /// Every change, in order; on a failure, the ones done are undone.
    fn rename_all(&mut self, cancel: &Cancel<'_>) -> Result<(), CommitError> {
        self.renamed = Some(0);
        let total = self.planned.len();
        for index in 0..total {
            // Cancelled midway: `Drop` undoes the renames done (a cancelled commit changes
            // nothing, so what the caller is told is always true).
            cancel.check()?;
            if let Err(source) = entry(&self.planned[index]).make() {
                let what = describe(&self.root, &self.planned[index]);
                let undo_failed = self.undo();
                self.discard();
                return Err(CommitError::RenameFailed {
                    what,
                    source,
                    done: index,
                    undo_failed,
                });
            }
            self.renamed = Some(index + 1);
            self.faults
                .step(|| format!("change {} of {total} made", index + 1))?;
        }
        Ok(())
    }

    /// The renames durable: each touched directory synced (best effort; they are done).
    fn sync_targets(&self) {
        let mut dirs: Vec<PathBuf> = self
            .planned
            .iter()
            .flat_map(|p| match p {
                Planned::Write { target, .. } => vec![target.parent()],
                Planned::Rename { from, to, .. } => vec![from.parent(), to.parent()],
                Planned::Remove { target, .. } => vec![target.parent()],
            })
            .flatten()
            .map(Path::to_path_buf)
            .collect();
        dirs.sort();
        dirs.dedup();
        fsops::in_parallel(IO_THREADS, &dirs, |dir| fsops::sync_dir(dir));
    }

    /// Done: the journal goes first (so a crash from here on leaves only files recovery may
    /// delete as a whole), then the old contents and the commit's directory.
    fn clean_up(&mut self) -> Result<(), CommitError> {
        for path in &self.outside {
            let _ = fs::remove_file(path);
        }
        let _ = fs::remove_file(self.dir.join(JOURNAL_FILE));
        self.journal_written = false;
        self.faults.step(|| "journal removed".to_owned())?;
        let leftovers: Vec<PathBuf> = fs::read_dir(&self.dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        // One thread: every old content is in this one directory, and unlinks in it from
        // several threads only queue on its lock (measured: twice the wall time on ext4).
        for path in &leftovers {
            let _ = fs::remove_file(path);
        }
        let _ = fs::remove_dir(&self.dir);
        self.finished = true;
        if let Some(place) = self.place.take() {
            place.leave();
        }
        Ok(())
    }

    /// Undo the changes done so far, newest first; names the ones that could not be.
    fn undo(&mut self) -> Vec<String> {
        let done = self.renamed.take().unwrap_or(0);
        let mut failed = Vec::new();
        for planned in self.planned[..done].iter().rev() {
            if let Err(e) = entry(planned).undo() {
                failed.push(format!("{}: {e}", describe(&self.root, planned)));
            }
        }
        failed
    }

    /// Remove what was staged (the journal first), then the commit's directory.
    fn discard(&mut self) {
        if self.journal_written {
            let _ = fs::remove_file(self.dir.join(JOURNAL_FILE));
            let _ = fsops::sync_dir(&self.dir);
            self.journal_written = false;
        }
        for path in &self.outside {
            let _ = fs::remove_file(path);
        }
        let _ = fs::remove_dir_all(&self.dir);
        self.finished = true;
        if let Some(place) = self.place.take() {
            place.leave();
        }
    }

    fn counts(&self) -> Committed {
        let mut counts = Committed::default();
        for planned in &self.planned {
            match planned {
                Planned::Write { .. } => counts.written += 1,
                Planned::Rename { .. } => counts.renamed += 1,
                Planned::Remove { .. } => counts.removed += 1,
            }
        }
        counts
    }
}

impl Drop for Commit {
    fn drop(&mut self) {
        if self.finished || self.faults.crashed() {
            // Done, or a simulated crash: the disk stays as a killed process leaves it.
            return;
        }
        // An error, a cancellation or a panic: nothing done stays.
        if self.renamed.is_some() {
            self.undo();
        }
        self.discard();
    }
}

/// The journal's record of a change.
fn entry(planned: &Planned) -> Entry {
    match planned {
        Planned::Write {
            target,
            old,
            temp,
            backup,
            new,
            ..
        } => Entry::Write {
            target: target.clone(),
            temp: temp.clone(),
            backup: backup.clone(),
            // Set for every write once staged (before the journal); zero never names a file.
            new: new.unwrap_or_default(),
            old: old.as_deref().map(identity),
        },
        Planned::Rename { from, to, file } => Entry::Rename {
            from: from.clone(),
            to: to.clone(),
            file: *file,
        },
        Planned::Remove {
            target,
            backup,
            file,
        } => Entry::Remove {
            target: target.clone(),
            backup: backup.clone(),
            file: *file,
        },
    }
}

fn describe(root: &Path, planned: &Planned) -> String {
    match planned {
        Planned::Write { target, .. } => format!("replacing {}", shown(root, target)),
        Planned::Rename { from, to, .. } => {
            format!("renaming {} to {}", shown(root, from), shown(root, to))
        }
        Planned::Remove { target, .. } => format!("removing {}", shown(root, target)),
    }
}

/// Write `content` to the new file `temp` with the permissions (and, where allowed, the
/// owner) of `old`; returns the new file's identity. The file is synced later, in a batch.
fn write_temp(temp: &Path, content: &[u8], old: Option<&fs::Metadata>) -> io::Result<FileId> {
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        if let Some(old) = old {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(old.permissions().mode() & 0o7777);
        }
        let mut file = options.open(temp)?;
        file.write_all(content)?;
        let made = file.metadata()?;
        if let Some(old) = old {
            // The umask may have taken bits away, and the owner is ours: put back what
            // differs (one `fstat` instead of a `fchmod` and a `fchown` per file).
            if made.permissions() != old.permissions() {
                file.set_permissions(old.permissions())?;
            }
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                if (made.uid(), made.gid()) != (old.uid(), old.gid()) {
                    // Kept when we may (root); otherwise the file becomes ours, like any
                    // editor's.
                    let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
                }
            }
        }
        fsops::start_writeback(&file);
        Ok(identity(&made))
    })();
    if result.is_err() {
        let _ = fs::remove_file(temp);
    }
    result
}

/// The future of [`FileChanges::commit`]: the commit runs on a thread of its own; dropping
/// this future before it ends cancels it and waits until the disk is settled.
#[must_use = "a commit does nothing unless awaited"]
pub struct CommitFuture {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for CommitFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitFuture").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shared {
    cancel: AtomicBool,
    slot: Mutex<Slot>,
    ended: Condvar,
}

/// What the commit's thread hands over: the commit made (its clean-up left to the poll that
/// takes it), or why not.
type Made = Result<Option<Commit>, CommitError>;

#[derive(Default)]
struct Slot {
    result: Option<Made>,
    waker: Option<Waker>,
    ended: bool,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        crate::sync::lock(&self.slot)
    }

    fn end(&self, result: Made) {
        let waker = {
            let mut slot = self.lock();
            slot.result = Some(result);
            slot.ended = true;
            slot.waker.take()
        };
        self.ended.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl CommitFuture {
    pub(super) fn start(changes: FileChanges) -> CommitFuture {
        let shared = Arc::new(Shared::default());
        let worker = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("xcsh-commit".to_owned())
            .spawn(move || {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    make(changes, &Cancel(&worker.cancel))
                }));
                worker.end(outcome.unwrap_or_else(|panic| {
                    Err(CommitError::Io {
                        what: "the commit failed internally (its changes were undone)".to_owned(),
                        source: io::Error::other(crate::panic_text(&*panic)),
                    })
                }));
            });
        if let Err(error) = spawned {
            shared.end(Err(CommitError::Io {
                what: "cannot start the commit's thread".to_owned(),
                source: error,
            }));
        }
        CommitFuture { shared }
    }
}

impl Future for CommitFuture {
    type Output = Result<Committed, CommitError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let made = {
            let mut slot = self.shared.lock();
            match slot.result.take() {
                Some(made) => made,
                None => {
                    slot.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        };
        // Taken: the caller will learn that the changes are made, so they stay. The clean-up
        // happens here rather than on the commit's thread so that a commit dropped before
        // this point can still be undone (see `Drop`).
        Poll::Ready(match made {
            Ok(Some(commit)) => commit.finish(),
            Ok(None) => Ok(Committed::default()),
            Err(error) => Err(error),
        })
    }
}

impl Drop for CommitFuture {
    /// Cancel: the commit stops at its next step and undoes what it did; a commit already made
    /// but never taken is undone too (dropping it). So a commit whose result nobody received
    /// changed nothing.
    fn drop(&mut self) {
        self.shared.cancel.store(true, Ordering::SeqCst);
        let made = {
            let mut slot = self.shared.lock();
            while !slot.ended {
                slot = self
                    .shared
                    .ended
                    .wait(slot)
                    .unwrap_or_else(|p| p.into_inner());
            }
            slot.result.take()
        };
        drop(made);
    }
}
