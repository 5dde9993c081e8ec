//! `dlopen` and the abi_stable header lookup: the one place with `unsafe` on the loading
//! path.

use std::path::Path;
#[cfg(target_os = "linux")]
use std::{
    os::fd::{AsRawFd, IntoRawFd},
    path::PathBuf,
};

use abi_stable::library::{lib_header_from_raw_library, LibHeader, LibraryError, RawLibrary};

#[cfg(target_os = "linux")]
use super::{LoadFailure, Mapped};

/// `dlopen` `path`, then read its header. The library is leaked on purpose, failed or not:
/// once its constructors have run it stays mapped for the life of the process.
pub(super) fn open_and_leak(path: &Path) -> Result<&'static LibHeader, LibraryError> {
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

/// `dlopen` the file behind `fd` through `/proc/self/fd/N`. The descriptor is kept open for
/// good once anything was mapped under its name (see the module docs of `sys`).
#[cfg(target_os = "linux")]
pub(super) fn open_descriptor(fd: impl IntoRawFd + AsRawFd) -> Result<Mapped, LoadFailure> {
    let loaded_at = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    match open_and_leak(&loaded_at) {
        Ok(header) => {
            // Never closed: the descriptor number is the library's name to glibc.
            let _ = fd.into_raw_fd();
            Ok(Mapped { header })
        }
        // Nothing was loaded under this name; the descriptor can go (dropped here).
        Err(error @ LibraryError::OpenError { .. }) => {
            Err(LoadFailure::Library { loaded_at, error })
        }
        Err(error) => {
            // Loaded, but no usable header: the library stays mapped, so keep its name.
            let _ = fd.into_raw_fd();
            Err(LoadFailure::Library { loaded_at, error })
        }
    }
}
