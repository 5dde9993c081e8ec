//! The filesystem calls a commit and a recovery need beyond `std::fs`: an atomic exchange of
//! two names, a rename that never replaces, a file's identity, directory syncs and a writeback
//! hint. Each has a portable fallback, so the rest of the module reads the same everywhere.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// What identifies a file while it exists: its inode number, size and modification time.
/// Recovery compares it with the journal's record to tell the new content from the old, and
/// both from a file someone made since (a new file may get a freed inode number again; its
/// modification time tells it apart). A rename changes none of the three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct FileId {
    ino: u64,
    len: u64,
    modified_ns: u64,
}

pub(super) fn identity(meta: &fs::Metadata) -> FileId {
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(meta);
    #[cfg(not(unix))]
    let ino = 0;
    FileId {
        ino,
        len: meta.len(),
        modified_ns: meta
            .modified()
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    }
}

/// The device a file lives on (0 where that cannot be known): a rename works only within one.
pub(super) fn device(meta: &fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::dev(meta)
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// The identity of whatever `path` names now (not following a final symbolic link).
pub(super) fn identity_at(path: &Path) -> Option<FileId> {
    fs::symlink_metadata(path).ok().map(|m| identity(&m))
}

/// Swap the names `a` and `b` atomically: `Ok(true)`; `Ok(false)` where the filesystem or the
/// platform cannot (the caller then links a backup and renames).
pub(super) fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    #[cfg(any(target_os = "linux", target_vendor = "apple"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
            Ok(()) => Ok(true),
            Err(e) if unsupported(e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn unsupported(error: rustix::io::Errno) -> bool {
    use rustix::io::Errno;
    error == Errno::INVAL || error == Errno::NOSYS || error == Errno::OPNOTSUPP
}

/// Rename `from` to `to`, failing with `AlreadyExists` if `to` exists (never replacing a file
/// that appeared meanwhile).
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_vendor = "apple"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(e) if !unsupported(e) => return Err(e.into()),
            Err(_) => {}
        }
    }
    // A hard link never replaces; the old name then goes.
    fs::hard_link(from, to)?;
    fs::remove_file(from)
}

/// Make a directory's entries durable (best effort where a directory cannot be opened).
pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Ask the kernel to start writing `file` out now (Linux: `POSIX_FADV_DONTNEED` starts the
/// writeback of its dirty pages without waiting), so that the data of every temporary file is
/// in flight together before the first sync, and the syncs find it mostly written. Only a
/// hint: durability comes from the sync.
pub(super) fn start_writeback(file: &File) {
    #[cfg(target_os = "linux")]
    let _ = rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed);
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Run `work` on every item on up to `threads` threads; results in item order. The work here
/// is mostly waiting for the disk, so more threads than cores pay off for syncs.
pub fn in_parallel<'a, T: Sync, R: Send>(
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

/// One thread per core: for work that computes as much as it waits.
pub(super) fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
}

/// Threads that sync files at once (the work is waiting for the disk).
pub(super) const IO_THREADS: usize = 32;
