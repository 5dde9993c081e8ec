//! Loading one plugin library: `dlopen`, the ABI and version checks, and a process-wide cache.
//!
//! Each file gets its own check through `lib_header_from_path(..).init_root_module()`:
//! abi_stable's `RootModule::load_from_*` caches a single module per root-module type, which
//! would make every plugin after the first silently resolve to the first one.
//!
//! Libraries are never unloaded (a tool's vtables and futures live in them), and loading the
//! same canonical path again returns the cached module.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use abi_stable::library::{lib_header_from_path, LibraryError, RootModule};
use xcsh_plugin_api::ffi::PluginModuleRef;

use crate::LoadError;

/// A loaded, checked plugin library.
#[derive(Clone, Copy)]
pub struct PluginLibrary {
    module: PluginModuleRef,
    api_version: &'static str,
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

    /// The `xcsh-plugin-api` version the library was built against.
    pub fn api_version(&self) -> &'static str {
        self.api_version
    }
}

fn cache() -> &'static Mutex<HashMap<PathBuf, PluginLibrary>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, PluginLibrary>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The `xcsh-plugin-api` version this host was built with.
pub fn host_api_version() -> String {
    PluginModuleRef::VERSION_STRINGS.version.to_string()
}

/// Load and check the library at `path` (canonical). Loading runs the library's constructors,
/// so only call this on files you trust.
pub fn load_library(path: &Path) -> Result<PluginLibrary, LoadError> {
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(library) = cache.get(path) {
        return Ok(*library);
    }
    crate::preflight::check_library_file(path).map_err(|cause| LoadError::NotALibrary {
        path: path.to_owned(),
        cause,
    })?;
    let header = lib_header_from_path(path).map_err(|error| classify(path, error))?;
    let module = header
        .init_root_module::<PluginModuleRef>()
        .map_err(|error| classify(path, error))?;
    let library = PluginLibrary {
        module,
        api_version: header.version_strings().version.as_str(),
    };
    cache.insert(path.to_owned(), library);
    Ok(library)
}

fn classify(path: &Path, error: LibraryError) -> LoadError {
    let path = path.to_owned();
    match error {
        LibraryError::OpenError { err, .. } => LoadError::NotALibrary {
            path,
            cause: err.to_string(),
        },
        LibraryError::GetSymbolError { .. } => LoadError::NoRootModule { path },
        LibraryError::IncompatibleVersionNumber {
            expected_version,
            actual_version,
            ..
        } => LoadError::IncompatibleVersion {
            path,
            expected: expected_version.to_string(),
            found: actual_version.to_string(),
        },
        LibraryError::RootModule { err, .. } => LoadError::Factory {
            path,
            message: err.to_string(),
        },
        other => LoadError::IncompatibleAbi {
            path,
            cause: first_lines(&other.to_string(), 12),
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
