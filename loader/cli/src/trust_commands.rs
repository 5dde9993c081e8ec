//! `xcsh-plugins trust PATH...` and `xcsh-plugins untrust PATH...`: which project-local
//! plugins (`<cwd>/.xcsh/tools/`) may load, kept in `~/.xcsh/agent/trusted-plugins.json`.
//!
//! `trust` records each file's canonical path and the SHA-256 of its content as it is now (a
//! directory stands for the plugin files in it); a later change to the file untrusts it again.
//! The file must pass the same ownership and permission checks as at load time.

use std::path::{Path, PathBuf};

use clap::Args;
use xcsh_loader::discovery::is_library_name;
use xcsh_loader::library::CheckedFile;
use xcsh_loader::plugin_folder::{is_plugin_folder, platform_libraries};
use xcsh_loader::trust::TrustStore;
use xcsh_loader::LoadErrorKind;

use crate::cli::JsonArg;
use crate::error::CliError;
use crate::report::{PathProblem, TrustReport, TrustedFile, UntrustReport};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Plugin files, or directories of plugins, to trust as they are now.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Debug, Args)]
pub struct UntrustArgs {
    /// Plugin files, or directories of plugins, to stop trusting.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn open_store() -> Result<TrustStore, CliError> {
    let home = std::env::home_dir().ok_or_else(|| {
        CliError::Failure("no home directory to keep the trust file in (set HOME)".to_owned())
    })?;
    TrustStore::for_home(&home).map_err(|e| CliError::Failure(e.to_string()))
}

/// The plugin files `path` stands for: itself, a plugin folder (`*.xcsh-plugin`), or the
/// library files and plugin folders in a directory. Folders are left for the caller to open
/// (see [`every_library`]).
pub fn plugin_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_dir() || is_plugin_folder(path) {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .filter_map(Result::ok)
        .filter(|entry| {
            entry.file_type().is_ok_and(|t| {
                (t.is_file() && is_library_name(&entry.file_name()))
                    || (t.is_dir() && is_plugin_folder(&entry.path()))
            })
        })
        .map(|entry| entry.path())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!(
            "{}: no plugin files in this directory",
            path.display()
        ));
    }
    Ok(files)
}

/// The library files `files` stand for: a plugin folder stands for every platform's library
/// in it (trust pins each, so the folder loads on each platform it is copied to).
fn every_library(files: Vec<PathBuf>) -> Result<Vec<PathBuf>, String> {
    let mut libraries = Vec::new();
    for file in files {
        if !(file.is_dir() && is_plugin_folder(&file)) {
            libraries.push(file);
            continue;
        }
        let found = platform_libraries(&file).map_err(|e| e.to_string())?;
        if found.is_empty() {
            return Err(format!(
                "{}: no library for any platform in this plugin folder",
                file.display()
            ));
        }
        libraries.extend(found.into_iter().map(|library| library.path));
    }
    Ok(libraries)
}

/// Record every plugin file `args` names; the paths that cannot be trusted are in the
/// report's errors.
pub fn trust(args: TrustArgs) -> Result<TrustReport, CliError> {
    let mut store = open_store()?;
    let mut trusted = Vec::new();
    let mut errors = Vec::new();
    for path in &args.paths {
        let files = match plugin_files(&std::path::absolute(path).unwrap_or_else(|_| path.clone()))
            .and_then(every_library)
        {
            Ok(files) => files,
            Err(message) => {
                errors.push(PathProblem {
                    path: path.display().to_string(),
                    message,
                });
                continue;
            }
        };
        for file in files {
            match CheckedFile::read(&file) {
                Ok(checked) if checked.path().to_str().is_none() => {
                    let shown = checked.path().display();
                    errors.push(PathProblem {
                        path: shown.to_string(),
                        message: format!(
                            "{shown}: the trust file records UTF-8 paths only; rename the plugin"
                        ),
                    });
                }
                Ok(checked) => match checked.sha256() {
                    Ok(sha256) => {
                        store.trust(checked.path().to_owned(), sha256.to_owned());
                        trusted.push(TrustedFile {
                            path: checked.path().display().to_string(),
                            sha256: sha256.to_owned(),
                        });
                    }
                    Err(error) => errors.push(PathProblem {
                        path: error.path().display().to_string(),
                        message: error.to_string(),
                    }),
                },
                Err(error) => {
                    // Trust is refused for the same reasons a load would be.
                    let message = match &error.kind {
                        LoadErrorKind::Unsafe { cause } => {
                            format!("refusing to trust {}: {cause}", error.path.display())
                        }
                        _ => error.to_string(),
                    };
                    errors.push(PathProblem {
                        path: error.path().display().to_string(),
                        message,
                    });
                }
            }
        }
    }
    if !trusted.is_empty() {
        save(&store)?;
    }
    Ok(TrustReport {
        trust_file: store.file().display().to_string(),
        trusted,
        errors,
    })
}

/// The canonical form of `path` even when the file itself is gone (its directory resolved).
fn canonical_or_lexical(path: &Path) -> PathBuf {
    if let Ok(canonical) = dunce::canonicalize(path) {
        return canonical;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            dunce::canonicalize(parent).map_or_else(|_| path.to_owned(), |p| p.join(name))
        }
        _ => path.to_owned(),
    }
}

/// Remove the entries `args` names (a directory stands for every entry under it).
pub fn untrust(args: UntrustArgs) -> Result<UntrustReport, CliError> {
    let mut store = open_store()?;
    let mut removed = Vec::new();
    let mut unknown = Vec::new();
    for path in &args.paths {
        let target =
            canonical_or_lexical(&std::path::absolute(path).unwrap_or_else(|_| path.clone()));
        let matching: Vec<PathBuf> = store
            .entries()
            .map(|(p, _)| p.to_owned())
            .filter(|p| *p == target || (target.is_dir() && p.starts_with(&target)))
            .collect();
        if matching.is_empty() {
            unknown.push(target);
        }
        for path in matching {
            store.untrust(&path);
            removed.push(path);
        }
    }
    if !removed.is_empty() {
        save(&store)?;
    }
    let shown = |paths: &[PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    Ok(UntrustReport {
        trust_file: store.file().display().to_string(),
        untrusted: shown(&removed),
        not_trusted: shown(&unknown),
    })
}

fn save(store: &TrustStore) -> Result<(), CliError> {
    store
        .save()
        .map_err(|e| CliError::Failure(format!("cannot write {}: {e}", store.file().display())))
}
