//! Multi-platform plugin folders: one plugin, shipped for several platforms at once.
//!
//! A folder whose name ends in [`PLUGIN_FOLDER_SUFFIX`] holds one subfolder per Rust target
//! triple, each with that platform's build of the plugin:
//!
//! ```text
//! my-tool.xcsh-plugin/
//!   x86_64-unknown-linux-gnu/libmy_tool.so
//!   aarch64-unknown-linux-gnu/libmy_tool.so
//!   x86_64-apple-darwin/libmy_tool.dylib
//!   aarch64-apple-darwin/libmy_tool.dylib
//! ```
//!
//! Wherever a plugin file is accepted (`--plugin`, `.xcsh/tools/`, the binding's `plugins`),
//! such a folder stands for this host's library in it ([`host_library`], the subfolder named
//! [`HOST_TARGET`]); the others are never opened. A folder without one is a load error naming
//! the platforms it has. `trust` pins every library of the folder ([`platform_libraries`]),
//! so the same trusted folder loads on each machine it is copied to.

use std::path::{Path, PathBuf};

use crate::loading::platform::HOST_TARGET;
use crate::loading::{LoadError, LoadErrorKind};

/// How the name of a multi-platform plugin folder ends.
pub const PLUGIN_FOLDER_SUFFIX: &str = ".xcsh-plugin";

/// Whether `path` is named as a multi-platform plugin folder (whether it is a directory is
/// for the caller to know).
pub fn is_plugin_folder(path: &Path) -> bool {
    path.file_name().is_some_and(|name| {
        let name = name.as_encoded_bytes();
        name.len() > PLUGIN_FOLDER_SUFFIX.len() && name.ends_with(PLUGIN_FOLDER_SUFFIX.as_bytes())
    })
}

/// One platform's library in a plugin folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformLibrary {
    /// The subfolder's name: the Rust target triple it is for.
    pub target: String,
    /// The library file.
    pub path: PathBuf,
}

/// Whether a file name is a shared library of any platform a plugin folder may hold
/// (`lib*.so`, `lib*.dylib`, `*.dll`), whatever this host's own suffix is.
fn is_any_library_name(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    let lib = |suffix: &[u8]| {
        name.len() > 3 + suffix.len() && name.starts_with(b"lib") && name.ends_with(suffix)
    };
    lib(b".so") || lib(b".dylib") || (name.len() > 4 && name.ends_with(b".dll"))
}

fn unreadable(path: &Path, error: &std::io::Error) -> LoadError {
    LoadError::new(
        path,
        LoadErrorKind::Unreadable {
            cause: error.to_string(),
        },
    )
}

/// The library files in one platform subfolder, sorted.
fn libraries_in(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|error| unreadable(dir, &error))?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter(|entry| is_any_library_name(&entry.file_name()))
        .map(|entry| entry.path())
        .collect();
    files.sort();
    Ok(files)
}

/// The one library of a platform subfolder; a subfolder with several is refused rather than
/// guessed at.
fn one_library(folder: &Path, target: &str) -> Result<Option<PathBuf>, LoadError> {
    let dir = folder.join(target);
    if !dir.is_dir() {
        return Ok(None);
    }
    let mut files = libraries_in(&dir)?;
    match files.len() {
        0 => Ok(None),
        1 => Ok(files.pop()),
        _ => {
            let names: Vec<String> = files
                .iter()
                .filter_map(|file| file.file_name())
                .map(|name| name.to_string_lossy().into_owned())
                .collect();
            Err(LoadError::new(
                folder,
                LoadErrorKind::PluginFolder {
                    cause: format!(
                        "{target}/ holds {} libraries ({}); keep one per platform",
                        files.len(),
                        names.join(", ")
                    ),
                },
            ))
        }
    }
}

/// The platform subfolders of `folder` (sorted), whatever they hold.
fn targets(folder: &Path) -> Result<Vec<String>, LoadError> {
    let mut targets: Vec<String> = std::fs::read_dir(folder)
        .map_err(|error| unreadable(folder, &error))?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .collect();
    targets.sort();
    Ok(targets)
}

/// Every platform's library in `folder`, by target triple. Subfolders without a library are
/// left out; one with several is an error.
pub fn platform_libraries(folder: &Path) -> Result<Vec<PlatformLibrary>, LoadError> {
    let mut found = Vec::new();
    for target in targets(folder)? {
        if let Some(path) = one_library(folder, &target)? {
            found.push(PlatformLibrary { target, path });
        }
    }
    Ok(found)
}

/// This host's library in `folder` (the subfolder named [`HOST_TARGET`]), or an error that
/// names the platforms the folder has.
pub fn host_library(folder: &Path) -> Result<PathBuf, LoadError> {
    if let Some(path) = one_library(folder, HOST_TARGET)? {
        return Ok(path);
    }
    Err(no_library_for_host(folder, &platform_libraries(folder)?))
}

/// The error for a plugin folder whose `libraries` (from [`platform_libraries`]) have none
/// for this host: it names the platforms they are for.
pub fn no_library_for_host(folder: &Path, libraries: &[PlatformLibrary]) -> LoadError {
    LoadError::new(
        folder,
        LoadErrorKind::NoLibraryForHost {
            host: HOST_TARGET.to_owned(),
            available: libraries.iter().map(|l| l.target.clone()).collect(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    #[test]
    fn the_hosts_library_is_chosen_and_the_others_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("my-tool.xcsh-plugin");
        assert!(is_plugin_folder(&folder));
        assert!(!is_plugin_folder(Path::new(".xcsh-plugin")));
        assert!(!is_plugin_folder(Path::new("tools")));
        touch(&folder.join("aarch64-apple-darwin/libmy_tool.dylib"));
        touch(&folder.join("zz-other/notes.txt"));
        let error = host_library(&folder).unwrap_err();
        assert_eq!(
            error.kind,
            LoadErrorKind::NoLibraryForHost {
                host: HOST_TARGET.to_owned(),
                available: vec!["aarch64-apple-darwin".to_owned()],
            }
        );
        assert!(
            error.to_string().contains("it has: aarch64-apple-darwin"),
            "{error}"
        );
        let host = folder.join(HOST_TARGET).join("libmy_tool.so");
        touch(&host);
        assert_eq!(host_library(&folder).unwrap(), host);
        let all = platform_libraries(&folder).unwrap();
        assert_eq!(all.len(), 2, "{all:?}");
        touch(&folder.join(HOST_TARGET).join("libother.so"));
        let error = host_library(&folder).unwrap_err();
        assert!(error.to_string().contains("holds 2 libraries"), "{error}");
    }

    #[test]
    fn an_empty_folder_says_it_has_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = tmp.path().join("empty.xcsh-plugin");
        std::fs::create_dir(&folder).unwrap();
        let error = host_library(&folder).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("it has no library for any platform"),
            "{error}"
        );
    }
}
