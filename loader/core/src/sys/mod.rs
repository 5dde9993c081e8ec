//! The operating-system calls behind loading, in one place: who we are, opening a file
//! without following links, handing an already opened file (or a sealed in-memory copy) to
//! the dynamic loader, starting and containing plugin processes. Written on `rustix` where it
//! can be; the `unsafe` that is left, each block saying why it holds, is the `dlopen` itself
//! (`dl`), a plugin process's start
//! (`spawn`: inherited descriptors, Windows' Job Objects and handles), glibc's `malloc_trim`
//! (`heap`) and its version ([`glibc_version`]). With `loading::open`, this is the only module
//! the crate root's `#![deny(unsafe_code)]` allows it in. What the plugin process does to
//! itself (its sandbox, its PID namespace) is the crate `xcsh-loader-process`.
//!
//! How a checked plugin reaches the dynamic loader ([`load`]):
//! - [`LoadSource::Opened`]: the descriptor the checks were made on, through
//!   `/proc/self/fd/N`. No copy: the library is mapped straight from the page cache, as a
//!   plain `dlopen` would. Renaming another file over the path changes nothing, since the
//!   descriptor names the checked object, not the path.
//! - [`LoadSource::Bytes`]: bytes already read (and hashed, for a trust-pinned plugin) go
//!   into a `memfd` sealed against any change, so what runs is exactly what was hashed.
//! - Without `/proc/self/fd` (not Linux, or no procfs), either goes through a private copy
//!   in a fresh `0700` directory that is removed once the library is mapped.
//!
//! Libraries are never unloaded, and the descriptor a library was opened through is never
//! closed: glibc recognises an already loaded library by the name it was opened with, so a
//! reused `/proc/self/fd/N` would silently resolve to the earlier plugin.

mod dl;
pub(crate) mod heap;
#[cfg(target_os = "linux")]
mod memfd;
mod private_copy;
pub mod program_home;
pub mod repository;
pub mod sandbox;
pub(crate) mod spawn;

use std::fs::File;
use std::path::{Path, PathBuf};

use abi_stable::library::{LibHeader, LibraryError};

/// The effective user id of this process.
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Open `path` for reading without following a symbolic link in its last component and
/// without blocking on a FIFO; close-on-exec.
#[cfg(unix)]
pub(crate) fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// The version of glibc this process runs with (`2.36`), read from glibc itself; `None` on
/// any other C library.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn glibc_version() -> Option<String> {
    // SAFETY: `gnu_get_libc_version` takes no arguments, has no preconditions and returns a
    // pointer to a static, NUL-terminated string inside glibc that lives as long as the
    // process and is never written.
    let version = unsafe { libc::gnu_get_libc_version() };
    if version.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated and static, as above; only read here.
    let version = unsafe { std::ffi::CStr::from_ptr(version) };
    version.to_str().ok().map(str::to_owned)
}

/// Not glibc: no glibc versions to compare.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn glibc_version() -> Option<String> {
    None
}

/// What to hand to the dynamic loader.
#[derive(Clone, Copy)]
pub(crate) enum LoadSource<'a> {
    /// The opened, checked file itself.
    Opened(&'a File),
    /// These bytes, exactly.
    Bytes(&'a [u8]),
}

/// A library mapped into the process.
pub(crate) struct Mapped {
    /// The library's header; valid forever, since the library is never unloaded.
    pub header: &'static LibHeader,
}

/// Why [`load`] failed, with the path the dynamic loader saw (to translate messages back to
/// the original file).
pub(crate) enum LoadFailure {
    /// The in-memory or private copy could not be made, or the file could not be read.
    Copy(std::io::Error),
    /// `dlopen` or the header lookup failed.
    Library {
        /// The path the dynamic loader was given.
        loaded_at: PathBuf,
        /// abi_stable's error.
        error: LibraryError,
    },
}

/// Map `source` (the checked content of `original`) as a shared library and find its
/// abi_stable header. The library's constructors run here.
pub(crate) fn load(original: &Path, source: LoadSource<'_>) -> Result<Mapped, LoadFailure> {
    #[cfg(target_os = "linux")]
    if !force_private_copy() && Path::new("/proc/self/fd").is_dir() {
        match source {
            LoadSource::Opened(file) => {
                let fd = file.try_clone().map_err(LoadFailure::Copy)?;
                return dl::open_descriptor(fd);
            }
            LoadSource::Bytes(bytes) => match memfd::sealed(original, bytes) {
                Ok(sealed) => return dl::open_descriptor(sealed),
                Err(error) => tracing::debug!(
                    %error,
                    "no sealed memfd for {}; loading a private copy",
                    original.display()
                ),
            },
        }
    }
    match source {
        LoadSource::Bytes(bytes) => private_copy::load(original, bytes),
        LoadSource::Opened(file) => {
            let bytes = read_all(file).map_err(LoadFailure::Copy)?;
            private_copy::load(original, &bytes)
        }
    }
}

/// The whole content of `file`, from its start, whatever its read position.
pub(crate) fn read_all(file: &File) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Tests set `XCSH_LOADER_PRIVATE_COPY=1` to exercise the fallback on Linux.
#[cfg(target_os = "linux")]
fn force_private_copy() -> bool {
    std::env::var_os("XCSH_LOADER_PRIVATE_COPY").is_some_and(|v| v == "1")
}

/// Keep a close-on-exec duplicate of stdout for a protocol stream, then point descriptor 1
/// at stderr: whatever else writes to stdout (a plugin's `println!`, a C library) lands in
/// the log instead of the protocol. The caller holds the stdout lock across the swap.
#[cfg(unix)]
pub fn divert_stdout_to_stderr() -> std::io::Result<File> {
    use std::os::fd::AsFd;
    let protocol = std::io::stdout().as_fd().try_clone_to_owned()?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
    Ok(File::from(protocol))
}

/// A sealed in-memory copy of `bytes` (the pinned content of `original`), to hand to a plugin
/// child.
#[cfg(target_os = "linux")]
pub(crate) fn sealed_copy(original: &Path, bytes: &[u8]) -> std::io::Result<File> {
    memfd::sealed(original, bytes)
}

/// Without memfds (macOS): a copy of `bytes` in a file unlinked as soon as it is made, so
/// that no other process can open it, let alone change it; only this process and the child
/// it is handed to hold it. The child loads it through a private copy of its own (see
/// [`load`]).
#[cfg(not(target_os = "linux"))]
pub(crate) fn sealed_copy(_original: &Path, bytes: &[u8]) -> std::io::Result<File> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = tempfile::tempfile()?;
    file.write_all(bytes)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file)
}
