//! The operating-system calls behind loading: who we are, a sealed in-memory copy of a
//! plugin, and `dlopen` of that copy. This is the only module of the loading path with
//! `unsafe` code; every block says why it holds.
//!
//! The bytes handed to the dynamic loader are exactly the bytes that were checked and hashed:
//! on Linux they go into a `memfd` that is then sealed against any change
//! (`F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL`) and opened through
//! `/proc/self/fd/N`; elsewhere, or when that is not available, into a private copy in a fresh
//! `0700` directory that is removed again once the library is mapped. Swapping or rewriting
//! the original file after the check changes nothing.
//!
//! Libraries are never unloaded, and the `memfd` of a loaded library is never closed: glibc
//! recognises an already loaded library by the name it was opened with, so a reused
//! `/proc/self/fd/N` would silently resolve to the earlier plugin.

use std::io::Write;
use std::path::{Path, PathBuf};

use abi_stable::library::{lib_header_from_raw_library, LibHeader, LibraryError, RawLibrary};

/// The effective user id of this process.
#[cfg(unix)]
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: `geteuid` takes no arguments, touches no memory of ours and cannot fail
    // (POSIX: "The geteuid() function shall always be successful").
    unsafe { libc::geteuid() }
}

/// A library mapped into the process.
pub(crate) struct Mapped {
    /// The library's header; valid forever, since the library is never unloaded.
    pub header: &'static LibHeader,
}

/// Why [`load_bytes`] failed, with the path the dynamic loader saw (to translate messages
/// back to the original file).
pub(crate) enum LoadFailure {
    /// The in-memory or private copy could not be made.
    Copy(std::io::Error),
    /// `dlopen` or the header lookup failed.
    Library {
        /// The path the dynamic loader was given.
        loaded_at: PathBuf,
        /// abi_stable's error.
        error: LibraryError,
    },
}

/// Map `bytes` (the checked content of `original`) as a shared library and find its
/// abi_stable header. The library's constructors run here.
pub(crate) fn load_bytes(original: &Path, bytes: &[u8]) -> Result<Mapped, LoadFailure> {
    #[cfg(target_os = "linux")]
    if !force_private_copy() {
        match memfd::sealed(original, bytes) {
            Ok(Some(sealed)) => return memfd::open(sealed),
            Ok(None) => {}
            Err(error) => tracing::debug!(
                %error,
                "no sealed memfd for {}; loading a private copy",
                original.display()
            ),
        }
    }
    private_copy::load(original, bytes)
}

/// Tests set `XCSH_LOADER_PRIVATE_COPY=1` to exercise the fallback on Linux.
#[cfg(target_os = "linux")]
fn force_private_copy() -> bool {
    std::env::var_os("XCSH_LOADER_PRIVATE_COPY").is_some_and(|v| v == "1")
}

/// `dlopen` `path`, then read its header. The library is leaked on purpose, failed or not:
/// once its constructors have run it stays mapped for the life of the process.
fn open_and_leak(path: &Path) -> Result<&'static LibHeader, LibraryError> {
    let library = RawLibrary::load_at(path)?;
    // SAFETY: the header is `'static` only as long as the library stays loaded; the
    // `RawLibrary` is forgotten right below, so it is never `dlclose`d and the reference
    // never dangles. The symbol's type is checked by abi_stable itself: it reads the fixed
    // `AbiHeaderRef` that every abi_stable root module exports under its mangled name and
    // refuses a header whose abi_stable ABI differs (`upgrade`).
    let header = unsafe { lib_header_from_raw_library(&library) };
    std::mem::forget(library);
    header
}

#[cfg(target_os = "linux")]
mod memfd {
    use std::ffi::CString;
    use std::fs::File;
    use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};

    use super::*;

    /// The seals that make the content immutable, including against adding or removing seals.
    const SEALS: libc::c_int =
        libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;

    /// An anonymous file holding `bytes`, sealed; `Ok(None)` when `/proc/self/fd` is missing.
    pub(super) fn sealed(original: &Path, bytes: &[u8]) -> std::io::Result<Option<File>> {
        if !Path::new("/proc/self/fd").is_dir() {
            return Ok(None);
        }
        // The name only shows in /proc/PID/maps ("/memfd:xcsh-plugin:libx.so (deleted)");
        // the kernel limits it to 249 bytes.
        let file_name = original
            .file_name()
            .map(|n| n.to_string_lossy().replace('\0', "?"))
            .unwrap_or_default();
        let mut name = format!("xcsh-plugin:{file_name}");
        while name.len() > 240 {
            name.pop();
        }
        let name = CString::new(name).map_err(std::io::Error::other)?;
        let file = create(
            &name,
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING | libc::MFD_EXEC,
        )
        .or_else(|error| {
            // Kernels before 6.3 do not know MFD_EXEC (and make memfds executable anyway).
            if error.raw_os_error() == Some(libc::EINVAL) {
                create(&name, libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
            } else {
                Err(error)
            }
        })?;
        let mut file = file;
        file.write_all(bytes)?;
        // SAFETY: `fcntl(F_ADD_SEALS)` takes one `int` argument, which `SEALS` is; the
        // descriptor is open and owned by `file` for the whole call.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, SEALS) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Some(file))
    }

    fn create(name: &CString, flags: libc::c_uint) -> std::io::Result<File> {
        // SAFETY: `name` is a NUL-terminated string that lives across the call, and `flags`
        // are valid `memfd_create` flags; the call reads nothing else of ours.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `memfd_create` just returned this descriptor; it is open and nothing else
        // owns it, so `File` may take ownership (and close it on drop).
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// `dlopen` the sealed file through `/proc/self/fd/N`.
    pub(super) fn open(sealed: File) -> Result<Mapped, LoadFailure> {
        let loaded_at = PathBuf::from(format!("/proc/self/fd/{}", sealed.as_raw_fd()));
        match open_and_leak(&loaded_at) {
            Ok(header) => {
                // Never closed (see the module docs): the library lives in these pages, and
                // the descriptor number, which is the library's name to glibc, is never reused.
                let _ = sealed.into_raw_fd();
                Ok(Mapped { header })
            }
            Err(error @ LibraryError::OpenError { .. }) => {
                // Nothing was loaded under this name; the descriptor can go.
                Err(LoadFailure::Library { loaded_at, error })
            }
            Err(error) => {
                // Loaded, but no usable header: the library stays mapped, so keep its name.
                let _ = sealed.into_raw_fd();
                Err(LoadFailure::Library { loaded_at, error })
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use std::io::{Read, Seek, SeekFrom};

        use super::*;

        #[test]
        #[allow(clippy::unwrap_used)]
        fn the_copy_is_sealed_and_holds_exactly_the_bytes() {
            let bytes = b"exactly these bytes".to_vec();
            let mut file = sealed(Path::new("/x/libsealed.so"), &bytes)
                .unwrap()
                .unwrap();
            // SAFETY: `F_GET_SEALS` takes no argument; the descriptor is open.
            let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
            assert_eq!(seals & SEALS, SEALS);
            assert!(file.write_all(b"more").is_err(), "writes must fail");
            assert!(file.set_len(3).is_err(), "shrinking must fail");
            assert!(file.set_len(100).is_err(), "growing must fail");
            let mut through_proc = Vec::new();
            File::open(format!("/proc/self/fd/{}", file.as_raw_fd()))
                .unwrap()
                .read_to_end(&mut through_proc)
                .unwrap();
            assert_eq!(through_proc, bytes);
            file.seek(SeekFrom::Start(0)).unwrap();
            let mut again = Vec::new();
            file.read_to_end(&mut again).unwrap();
            assert_eq!(again, bytes);
        }
    }
}

/// The fallback: a private copy in a fresh `0700` directory, removed once the library is
/// mapped (the mapping keeps the pages).
mod private_copy {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    /// A fresh directory only this user can enter; `mkdir` fails rather than reuse a name.
    fn private_dir() -> std::io::Result<PathBuf> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let mut last_error = None;
        for _ in 0..16 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!(
                "xcsh-plugin-{}-{n}-{nanos:08x}",
                std::process::id()
            ));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&dir) {
                Ok(()) => return Ok(dir),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    last_error = Some(error);
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_error.unwrap_or_else(|| std::io::Error::other("no free directory name")))
    }

    pub(super) fn load(original: &Path, bytes: &[u8]) -> Result<Mapped, LoadFailure> {
        let dir = private_dir().map_err(LoadFailure::Copy)?;
        let name = original
            .file_name()
            .map_or_else(|| "plugin".into(), |n| n.to_owned());
        let copy = dir.join(name);
        let written = (|| {
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o500);
            let mut file = options.open(&copy)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        let result = match written {
            Ok(()) => open_and_leak(&copy)
                .map(|header| Mapped { header })
                .map_err(|error| LoadFailure::Library {
                    loaded_at: copy.clone(),
                    error,
                }),
            Err(error) => Err(LoadFailure::Copy(error)),
        };
        let _ = std::fs::remove_file(&copy);
        let _ = std::fs::remove_dir(&dir);
        result
    }
}
