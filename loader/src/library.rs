//! Loading one plugin library: check and read the file, `dlopen` exactly the bytes that were
//! checked, the ABI and version checks, and a process-wide cache.
//!
//! A [`CheckedFile`] is a plugin file whose path passed the ownership and permission checks
//! (see the `safety` module) and whose content was read once. [`load_checked`]
//! checks those bytes' headers and hands the same bytes to the dynamic loader through a sealed
//! in-memory copy (a private copy where that is not available; see the `sys` module), so
//! replacing or rewriting the file after the check has no effect.
//!
//! Before anything is mapped, the file's version marker must name an `xcsh-plugin-api` this
//! host supports (SPEC 3; see `plugin-api/ABI.md`); abi_stable's layout check then runs on the
//! root module, where prefix types let an older plugin's vtables be shorter than the host's.
//!
//! Each file gets its own check through `init_root_module` on its own header: abi_stable's
//! `RootModule::load_from_*` caches a single module per root-module type, which would make
//! every plugin after the first silently resolve to the first one.
//!
//! Libraries are never unloaded (a tool's vtables and futures live in them). Loading the same
//! canonical path again returns the cached module while the path holds the same file object
//! (device, inode, size and modification time); once it was replaced or rewritten, loading is
//! refused with [`LoadError::ChangedSinceLoaded`], since the earlier copy is still in use and
//! a second copy of the same plugin would run beside it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use abi_stable::abi_stability::abi_checking::check_layout_compatibility;
use abi_stable::library::{LibHeader, LibraryError};
use abi_stable::std_types::RBoxError;
use abi_stable::StableAbi;
use xcsh_plugin_api::ffi::{ApiVersion, PluginModuleRef};

use crate::preflight::ApiMarker;
use crate::safety::{read_plugin_stamped, FileStamp, Refusal};
use crate::sys::{load_bytes, LoadFailure};
use crate::trust::sha256_hex;
use crate::LoadError;

/// A plugin file that passed the checks made before loading, read once: its canonical path
/// and its bytes (hashed only when trust needs the SHA-256). Loading it loads these bytes,
/// whatever the path holds by then.
#[derive(Clone)]
pub struct CheckedFile {
    path: PathBuf,
    bytes: Vec<u8>,
    stamp: FileStamp,
    sha256: OnceLock<String>,
}

impl std::fmt::Debug for CheckedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedFile")
            .field("path", &self.path)
            .field("len", &self.bytes.len())
            .field("sha256", &self.sha256.get())
            .finish()
    }
}

impl CheckedFile {
    /// Resolve `path` to its canonical form, check it and every directory above it (owner,
    /// mode, type, name), then read it once and hash it. Nothing is loaded.
    pub fn read(path: &Path) -> Result<Self, LoadError> {
        let canonical = path.canonicalize().map_err(|error| LoadError::Unreadable {
            path: path.to_owned(),
            cause: error.to_string(),
        })?;
        let (bytes, stamp) = read_plugin_stamped(&canonical).map_err(|refusal| match refusal {
            Refusal::Unsafe(cause) => LoadError::Unsafe {
                path: canonical.clone(),
                cause,
            },
            Refusal::Unreadable(cause) => LoadError::Unreadable {
                path: canonical.clone(),
                cause,
            },
        })?;
        Ok(Self {
            path: canonical,
            bytes,
            stamp,
            sha256: OnceLock::new(),
        })
    }

    /// The canonical path the file was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The content that was read (and will be loaded).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The SHA-256 of [`Self::bytes`], lowercase hex, computed on first use: hashing a
    /// large library costs more than loading it, and only trust decisions need it.
    pub fn sha256(&self) -> &str {
        self.sha256.get_or_init(|| sha256_hex(&self.bytes))
    }
}

/// A loaded, checked plugin library.
#[derive(Clone, Copy)]
pub struct PluginLibrary {
    module: PluginModuleRef,
    api_version: ApiVersion,
}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary").finish_non_exhaustive()
    }
}

impl PluginLibrary {
    pub(crate) fn module(&self) -> PluginModuleRef {
        self.module
    }

    /// The `xcsh-plugin-api` version the library was built against (from its version
    /// marker).
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }
}

/// What loading one path gave, and for which file object (see [`FileStamp`]).
struct Cached {
    stamp: FileStamp,
    outcome: Result<PluginLibrary, LoadError>,
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Cached>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Cached>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The `xcsh-plugin-api` version this host was built with.
pub fn host_api_version() -> String {
    xcsh_plugin_api::API_VERSION.to_owned()
}

/// The oldest `xcsh-plugin-api` version this host loads.
pub fn oldest_supported_api_version() -> String {
    xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION.to_owned()
}

/// The version policy of SPEC 3, applied to the marker read from the file (before `dlopen`):
/// the plugin's version when this host supports it, the refusal otherwise.
fn check_api_version(path: &Path, bytes: &[u8]) -> Result<ApiVersion, LoadError> {
    let refuse = |found: String| LoadError::IncompatibleVersion {
        path: path.to_owned(),
        found,
        oldest: oldest_supported_api_version(),
        host: host_api_version(),
    };
    let text = match crate::preflight::read_api_marker(bytes) {
        ApiMarker::Version(text) => text,
        ApiMarker::Unmarked => return Err(refuse("0.1 or older (no version marker)".to_owned())),
        ApiMarker::NoRootModule => {
            return Err(LoadError::NoRootModule {
                path: path.to_owned(),
            })
        }
    };
    // Both of this host's versions are compile-time constants checked by xcsh-plugin-api's
    // tests; a plugin's marker is data and may be anything.
    let (Some(host), Some(oldest)) = (
        ApiVersion::parse(xcsh_plugin_api::API_VERSION),
        ApiVersion::parse(xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION),
    ) else {
        return Err(refuse(text));
    };
    match ApiVersion::parse(&text) {
        Some(version) if version.is_supported_by(oldest, host) => Ok(version),
        _ => Err(refuse(text)),
    }
}

/// Check, read and load the library at `path`: [`CheckedFile::read`], then [`load_checked`].
/// Loading runs the library's constructors, so only call this on files you trust.
pub fn load_library(path: &Path) -> Result<PluginLibrary, LoadError> {
    load_checked(&CheckedFile::read(path)?)
}

/// Load the bytes of a checked file (never the path's current content) and check the ABI and
/// version. Loading runs the library's constructors, so only call this on files you trust.
pub fn load_checked(file: &CheckedFile) -> Result<PluginLibrary, LoadError> {
    let path = file.path();
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(cached) = cache.get(path) {
        if cached.stamp == file.stamp {
            return cached.outcome.clone();
        }
        if cached.outcome.is_ok() {
            return Err(LoadError::ChangedSinceLoaded {
                path: path.to_owned(),
            });
        }
        // The earlier content never loaded usably: nothing of it is in use, so try this one.
    }
    crate::preflight::check_library_bytes(file.bytes()).map_err(|cause| {
        LoadError::NotALibrary {
            path: path.to_owned(),
            cause,
        }
    })?;
    let api_version = check_api_version(path, file.bytes())?;
    let outcome = match load_bytes(path, file.bytes()) {
        Ok(mapped) => init_root_module(mapped.header)
            .map(|module| PluginLibrary {
                module,
                api_version,
            })
            .map_err(|error| classify(path, None, error)),
        Err(LoadFailure::Copy(error)) => {
            return Err(LoadError::Unreadable {
                path: path.to_owned(),
                cause: format!("cannot make the private copy to load: {error}"),
            })
        }
        // Nothing was mapped: a later attempt may succeed (a missing dependency installed).
        Err(LoadFailure::Library {
            loaded_at,
            error: error @ LibraryError::OpenError { .. },
        }) => return Err(classify(path, Some(&loaded_at), error)),
        Err(LoadFailure::Library { loaded_at, error }) => {
            Err(classify(path, Some(&loaded_at), error))
        }
    };
    // Mapped, usable or not: remember the outcome, so the same bytes are never mapped twice.
    cache.insert(
        path.to_owned(),
        Cached {
            stamp: file.stamp,
            outcome: outcome.clone(),
        },
    );
    outcome
}

/// Check the root module's layout and initialise it, letting the plugin be *older* than the
/// host.
///
/// abi_stable's `init_root_module` treats the host's layout as the interface and the library's
/// as the implementation, and its prefix-type rule lets the implementation's vtables and
/// modules have more fields than the interface's, never fewer: a newer library in an older
/// host. Our version policy is the other way round (a 0.3 host loads 0.2 plugins; newer
/// plugins were refused from their marker already), so the check runs with the plugin's layout
/// as the interface and the host's as the implementation that grew. Every type must still
/// match field for field where both have it; only trailing prefix-type fields may be missing
/// on the plugin's side, and the host reads those through accessors that answer `None` (see
/// `plugin-api/ABI.md`). abi_stable's own version check on the ABI crate (same major) still
/// runs.
fn init_root_module(header: &'static LibHeader) -> Result<PluginModuleRef, LibraryError> {
    let Some(plugin_layout) = header.layout() else {
        return Err(LibraryError::AbiInstability(RBoxError::from_fmt(
            &"the root module was exported without its layout, so it cannot be checked",
        )));
    };
    check_layout_compatibility(plugin_layout, <PluginModuleRef as StableAbi>::LAYOUT)
        .map_err(|errors| LibraryError::AbiInstability(RBoxError::from_fmt(&errors)))?;
    // SAFETY: `init_root_module_with_unchecked_layout` requires `PluginModuleRef` to have the
    // layout of the library's root module. The check above proved that every type reachable
    // from the plugin's root module matches the host's field for field, except trailing
    // fields of prefix types (the root module and the vtables) that the host has and the
    // plugin lacks. Those are never read directly: prefix-type accessors check the field
    // against the instance's own field count (stored beside it by abi_stable) and answer
    // `None`, and sabi_trait calls run the method's default body instead.
    unsafe { header.init_root_module_with_unchecked_layout::<PluginModuleRef>() }
}

/// Map abi_stable's error to ours. Messages name the original file, never the
/// `/proc/self/fd/N` or private copy the dynamic loader was given.
fn classify(path: &Path, loaded_at: Option<&Path>, error: LibraryError) -> LoadError {
    let text = |message: String| match loaded_at {
        Some(loaded_at) => message.replace(
            &loaded_at.display().to_string(),
            &path.display().to_string(),
        ),
        None => message,
    };
    let path = path.to_owned();
    match error {
        LibraryError::OpenError { err, .. } => LoadError::NotALibrary {
            path,
            cause: text(err.to_string()),
        },
        LibraryError::GetSymbolError { .. } => LoadError::NoRootModule { path },
        // abi_stable's own check compares the ABI crate's versions (same major); the marker
        // passed, so only a hand-made library gets here.
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => LoadError::IncompatibleAbi {
            path,
            cause: format!(
                "built against xcsh-plugin-abi {actual_version}, this host uses {expected_version}"
            ),
        },
        LibraryError::RootModule { err, .. } => LoadError::Factory {
            path,
            message: text(err.to_string()),
        },
        other => LoadError::IncompatibleAbi {
            path,
            cause: first_lines(&text(other.to_string()), 12),
        },
    }
}

/// abi_stable's layout errors can run to hundreds of lines; keep the head.
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        text.trim_end().to_owned()
    } else {
        format!(
            "{}\n... ({} more lines)",
            lines[..n].join("\n"),
            lines.len() - n
        )
    }
}
