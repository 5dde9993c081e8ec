//! The `apply` of an `ast_edit` pending action: write exactly the previewed replacements.
//!
//! Nothing is searched again. Every touched file must still hash to what the preview read,
//! must not be read-only, and its replacements must not overlap; otherwise nothing is written
//! and the error names the files. Each file is then written to a temporary file in its own
//! directory (same permissions, owner kept where possible); only when every temporary file
//! exists and is durable are they renamed over the originals, so a failure or a crash leaves
//! each file either old or new, never half-written.
//!
//! Why a crash leaves every file whole: a target is only ever changed by a `rename` of a
//! complete temporary file over it, which replaces the directory entry atomically (the name
//! points at the old inode or at the new one, never at a mix), and no rename starts before
//! every temporary file's content and size are on disk (`fdatasync` of each, all done before
//! the first rename). A crash before the renames leaves the old files and some stray
//! `.name.ast_edit-*.tmp` files; during them, some files old and some new, each whole; after
//! them, the directories are fsynced so that the renames themselves survive.
//!
//! Cost: the syncs are batched, not paid one file at a time. All temporary files are written
//! first (one thread per core), each one's writeback started as soon as it is written
//! (`POSIX_FADV_DONTNEED` on Linux, which starts the write-out without waiting), so the data
//! of the whole batch goes to the disk together; only then is each file `fdatasync`ed, on
//! [`IO_THREADS`] threads, and those calls mostly find their data already written and share
//! the filesystem's metadata commits. Measured with a C replica on 2,250 files of 4 KiB on
//! this ext4: plain `fdatasync` of each on 32 threads 64-97 ms, after the writeback was
//! started 21-30 ms, one `syncfs` 22-36 ms (which would also wait for every other writer's
//! dirty data on the filesystem, so it is not used).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde_json::json;
use xcsh_plugin_api::AgentToolResult;

use crate::preview::count;
use crate::search::{hash, FileEdits};

/// One file of the plan: where it is, how it is shown, what the preview saw and will write.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Path relative to the working directory.
    pub display: String,
    /// The previewed edits and the content hash they were computed from.
    pub edits: FileEdits,
}

/// Everything `apply` needs, captured at preview time.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Files in path order.
    pub files: Vec<PlannedFile>,
}

struct Ready<'a> {
    file: &'a PlannedFile,
    target: PathBuf,
    content: Vec<u8>,
    meta: fs::Metadata,
}

/// What the check of one file found.
enum Checked<'a> {
    Ready(Box<Ready<'a>>),
    Changed(String),
    ReadOnly(String),
    Broken(String),
}

/// The file to replace for `path`: the path itself, or where it points when it is a symbolic
/// link (the link stays; its target is rewritten). Only a link needs `canonicalize` (a
/// `readlink` per component): a plain file is renamed over in its own directory either way.
fn target_of(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_absolute() && !fs::symlink_metadata(path)?.file_type().is_symlink() {
        Ok(path.to_path_buf())
    } else {
        fs::canonicalize(path)
    }
}

/// The content and metadata of `target`, from one open.
fn read_with_meta(target: &Path) -> std::io::Result<(Vec<u8>, fs::Metadata)> {
    let mut handle = File::open(target)?;
    let meta = handle.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    handle.read_to_end(&mut bytes)?;
    Ok((bytes, meta))
}

fn check_file(file: &PlannedFile) -> Checked<'_> {
    let Ok(target) = target_of(&file.edits.path) else {
        return Checked::Changed(format!("{} (deleted)", file.display));
    };
    let (bytes, meta) = match read_with_meta(&target) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Checked::Changed(format!("{} (deleted)", file.display));
        }
        Err(error) => {
            return Checked::Changed(format!("{} (unreadable: {error})", file.display));
        }
    };
    if hash(&bytes) != file.edits.hash {
        return Checked::Changed(format!("{} (modified)", file.display));
    }
    if meta.permissions().readonly() {
        return Checked::ReadOnly(file.display.clone());
    }
    match rewrite(&bytes, &file.edits) {
        Ok(content) => Checked::Ready(Box::new(Ready {
            file,
            target,
            content,
            meta,
        })),
        Err(why) => Checked::Broken(format!("Nothing was written: {}: {why}", file.display)),
    }
}

/// Threads that write and sync files at once (the work is waiting for the disk).
pub const IO_THREADS: usize = 32;

/// Run `work` on every item on one thread per core; results in item order.
fn in_parallel<'a, T: Sync, R: Send>(items: &'a [T], work: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    in_parallel_on(cores, items, work)
}

/// Run `work` on every item on up to `threads` threads; results in item order.
fn in_parallel_on<'a, T: Sync, R: Send>(
    threads: usize,
    items: &'a [T],
    work: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(work).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(work).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Make every file's new content, or say why nothing may be written.
fn prepare(plan: &Plan) -> Result<Vec<Ready<'_>>, String> {
    let mut changed = Vec::new();
    let mut read_only = Vec::new();
    let mut ready = Vec::new();
    for checked in in_parallel(&plan.files, check_file) {
        match checked {
            Checked::Ready(item) => ready.push(*item),
            Checked::Changed(what) => changed.push(what),
            Checked::ReadOnly(what) => read_only.push(what),
            Checked::Broken(message) => return Err(message),
        }
    }
    if !changed.is_empty() {
        return Err(format!(
            "Nothing was written: {} changed since the preview: {}. Run ast_edit again to \
             preview the current content.",
            count(changed.len(), "file"),
            changed.join(", ")
        ));
    }
    if !read_only.is_empty() {
        return Err(format!(
            "Nothing was written: read-only {}: {}.",
            if read_only.len() == 1 {
                "file"
            } else {
                "files"
            },
            read_only.join(", ")
        ));
    }
    Ok(ready)
}

/// Apply `edits` to `bytes`, back to front, refusing overlaps and out-of-range edits.
fn rewrite(bytes: &[u8], edits: &FileEdits) -> Result<Vec<u8>, String> {
    let mut sorted: Vec<_> = edits.replacements.iter().collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    for pair in sorted.windows(2) {
        if pair[1].start < pair[0].end || pair[1].start == pair[0].start {
            return Err(format!(
                "overlapping edits at {}:{} and {}:{}",
                pair[0].line, pair[0].column, pair[1].line, pair[1].column
            ));
        }
    }
    let mut out = bytes.to_vec();
    for r in sorted.iter().rev() {
        if r.start > r.end || r.end > out.len() {
            return Err(format!("edit at {}:{} is out of range", r.line, r.column));
        }
        out.splice(r.start..r.end, r.text.bytes());
    }
    Ok(out)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

#[cfg(test)]
pub(crate) static FAIL_TEMP_FOR: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn injected_failure(_target: &Path) -> std::io::Result<()> {
    #[cfg(test)]
    if FAIL_TEMP_FOR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|p| p == _target)
    {
        return Err(std::io::Error::other("injected failure"));
    }
    Ok(())
}

/// Write `ready`'s content next to its target; returns the temporary path. The file is not
/// synced here: [`apply`] syncs every temporary file once all are written.
fn write_temp(ready: &Ready<'_>, pid: u32) -> std::io::Result<PathBuf> {
    let dir = ready.target.parent().unwrap_or(Path::new("."));
    let name = ready
        .target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(
        ".{name}.ast_edit-{pid}-{}.tmp",
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        injected_failure(&ready.target)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(ready.meta.permissions().mode() & 0o7777);
        }
        let mut file = options.open(&temp)?;
        file.write_all(&ready.content)?;
        // The umask may have taken bits away, and the owner is ours: put back what differs
        // (one `fstat` instead of a `fchmod` and a `fchown` per file).
        let made = file.metadata()?;
        if made.permissions() != ready.meta.permissions() {
            file.set_permissions(ready.meta.permissions())?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if (made.uid(), made.gid()) != (ready.meta.uid(), ready.meta.gid()) {
                // Keep the owner when we may (root); otherwise the file becomes ours, like any
                // editor.
                let _ = std::os::unix::fs::fchown(
                    &file,
                    Some(ready.meta.uid()),
                    Some(ready.meta.gid()),
                );
            }
        }
        start_writeback(&file);
        Ok(file)
    })();
    match result {
        Ok(_) => Ok(temp),
        Err(error) => {
            let _ = fs::remove_file(&temp);
            Err(error)
        }
    }
}

/// Ask the kernel to start writing `file` out now (Linux: `POSIX_FADV_DONTNEED` starts the
/// writeback of dirty pages without waiting), so that the data of every temporary file is in
/// flight together before the first `fdatasync`, and the syncs find it mostly written. Only a
/// hint: durability comes from [`sync_temp`].
fn start_writeback(_file: &File) {
    #[cfg(target_os = "linux")]
    let _ = rustix::fs::fadvise(_file, 0, None, rustix::fs::Advice::DontNeed);
}

/// `fdatasync` one temporary file: its content and size are on disk before it is renamed.
/// Opened again by path rather than kept open since it was written: an apply may touch more
/// files than the process may hold open (`RLIMIT_NOFILE` is often 1024).
fn sync_temp(temp: &PathBuf) -> std::io::Result<()> {
    OpenOptions::new().write(true).open(temp)?.sync_data()
}

fn same_stamp(meta: &fs::Metadata, now: &fs::Metadata) -> bool {
    let modified = |m: &fs::Metadata| m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    meta.len() == now.len() && modified(meta) == modified(now)
}

/// Write the plan. The result text is `Applied {n} replacement(s) in {m} file(s).`
pub fn apply(plan: &Plan) -> Result<AgentToolResult, String> {
    let ready = prepare(plan)?;
    let cleanup = |temps: &[PathBuf]| {
        for temp in temps {
            let _ = fs::remove_file(temp);
        }
    };
    let pid = std::process::id();
    let written = in_parallel(&ready, |item| write_temp(item, pid));
    let temps: Vec<PathBuf> = written
        .iter()
        .filter_map(|w| w.as_ref().ok().cloned())
        .collect();
    if let Some((item, Err(error))) = ready.iter().zip(&written).find(|(_, w)| w.is_err()) {
        cleanup(&temps);
        return Err(format!(
            "Nothing was written: cannot write {}: {error}",
            item.file.display
        ));
    }
    // Every temporary file is written and its writeback started; now wait until each is on
    // disk. The writes went out together, so most syncs find their data already written.
    let synced = in_parallel_on(IO_THREADS, &temps, sync_temp);
    if let Some((item, Err(error))) = ready.iter().zip(&synced).find(|(_, s)| s.is_err()) {
        cleanup(&temps);
        return Err(format!(
            "Nothing was written: cannot write {}: {error}",
            item.file.display
        ));
    }
    // A last look: a file touched while the temporary files were written is not overwritten.
    let touched: Vec<&str> = ready
        .iter()
        .filter(|item| !fs::metadata(&item.target).is_ok_and(|now| same_stamp(&item.meta, &now)))
        .map(|item| item.file.display.as_str())
        .collect();
    if !touched.is_empty() {
        cleanup(&temps);
        return Err(format!(
            "Nothing was written: {} changed since the preview: {}. Run ast_edit again to \
             preview the current content.",
            count(touched.len(), "file"),
            touched.join(", ")
        ));
    }
    for (done, (item, temp)) in ready.iter().zip(&temps).enumerate() {
        if let Err(error) = fs::rename(temp, &item.target) {
            cleanup(&temps[done..]);
            let written: Vec<&str> = ready[..done]
                .iter()
                .map(|r| r.file.display.as_str())
                .collect();
            let left: Vec<&str> = ready[done..]
                .iter()
                .map(|r| r.file.display.as_str())
                .collect();
            return Err(format!(
                "Failed to replace {}: {error}. Written: [{}]; unchanged: [{}].",
                item.file.display,
                written.join(", "),
                left.join(", ")
            ));
        }
    }
    sync_dirs(&ready_dirs(&ready));
    let total: usize = plan.files.iter().map(|f| f.edits.replacements.len()).sum();
    // SPEC 5 spells this text with a literal "(s)", unlike the label's `{s}` plural.
    let text = format!(
        "Applied {total} replacement(s) in {} file(s).",
        plan.files.len()
    );
    Ok(AgentToolResult::text(text).with_details(json!({
        "totalReplacements": total,
        "filesTouched": plan.files.len(),
        "applied": true,
        "files": plan.files.iter().map(|f| f.display.as_str()).collect::<Vec<_>>(),
    })))
}

/// The directories of the targets, each once.
fn ready_dirs(ready: &[Ready<'_>]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ready
        .iter()
        .filter_map(|r| r.target.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Make the renames durable (best effort: they are done and cannot be undone, and not every
/// platform can open a directory).
fn sync_dirs(dirs: &[PathBuf]) {
    in_parallel_on(IO_THREADS, dirs, |dir| {
        if let Ok(handle) = File::open(dir) {
            let _ = handle.sync_all();
        }
    });
}
