//! Finding plugin files: explicit paths first, then `<cwd>/.xcsh/tools/`, then
//! `~/.xcsh/agent/tools/`, each deduplicated by canonical path. A multi-platform plugin
//! folder (`*.xcsh-plugin`, see [`crate::loading::plugin_folder`]) stands for this host's
//! library in it, given explicitly or found in a plugin directory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::loading::plugin_folder::{host_library, is_plugin_folder};
use crate::loading::{LoadError, LoadErrorKind};

/// Where a candidate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateSource {
    /// Given by the embedder or on the command line.
    Explicit,
    /// The project's `<cwd>/.xcsh/tools/`.
    Project,
    /// The user's `~/.xcsh/agent/tools/`.
    User,
}

/// A file that may be a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Canonical path.
    pub path: PathBuf,
    /// Where it was found.
    pub source: CandidateSource,
}

/// What to search.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Files and directories given explicitly, searched first. `SessionBuilder::plugin`
    /// makes them absolute against the process's current directory.
    pub explicit: Vec<PathBuf>,
    /// The session's working directory (for `.xcsh/tools/`).
    pub cwd: PathBuf,
    /// The user's home directory (for `.xcsh/agent/tools/`), if known.
    pub home: Option<PathBuf>,
    /// Search the project and user directories.
    pub default_dirs: bool,
}

/// The project-local plugin directory under `cwd`.
pub fn project_dir(cwd: &Path) -> PathBuf {
    cwd.join(".xcsh").join("tools")
}

/// The user's plugin directory under `home`.
pub fn user_dir(home: &Path) -> PathBuf {
    home.join(".xcsh").join("agent").join("tools")
}

/// Whether a file name has the platform's shared-library prefix and suffix. Names need not be
/// UTF-8: only the prefix and suffix are compared.
pub fn is_library_name(name: &std::ffi::OsStr) -> bool {
    let (prefix, suffix) = (
        std::env::consts::DLL_PREFIX.as_bytes(),
        std::env::consts::DLL_SUFFIX.as_bytes(),
    );
    let name = name.as_encoded_bytes();
    name.len() > prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix)
}

impl Discovery {
    /// The candidates in load order, and the explicit paths that could not be read.
    pub fn candidates(&self) -> (Vec<Candidate>, Vec<LoadError>) {
        let mut found = Vec::new();
        let mut errors = Vec::new();
        let mut seen = HashSet::new();
        for path in self.explicit.iter().cloned() {
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() && is_plugin_folder(&path) => add_folder(
                    &path,
                    CandidateSource::Explicit,
                    &mut seen,
                    &mut found,
                    &mut errors,
                ),
                Ok(meta) if meta.is_dir() => {
                    scan_dir(
                        &path,
                        CandidateSource::Explicit,
                        &mut seen,
                        &mut found,
                        &mut errors,
                    );
                }
                Ok(_) => add(
                    &path,
                    CandidateSource::Explicit,
                    &mut seen,
                    &mut found,
                    &mut errors,
                ),
                Err(error) => {
                    let cause = match missing_cdylib_hint(&path, &error) {
                        Some(hint) => format!("{error}; {hint}"),
                        None => error.to_string(),
                    };
                    errors.push(LoadError::new(path, LoadErrorKind::Unreadable { cause }));
                }
            }
        }
        if self.default_dirs {
            let project = project_dir(&self.cwd);
            if project.is_dir() {
                scan_dir(
                    &project,
                    CandidateSource::Project,
                    &mut seen,
                    &mut found,
                    &mut errors,
                );
            }
            if let Some(home) = &self.home {
                let user = user_dir(home);
                if user.is_dir() {
                    scan_dir(
                        &user,
                        CandidateSource::User,
                        &mut seen,
                        &mut found,
                        &mut errors,
                    );
                }
            }
        }
        (found, errors)
    }
}

/// For a missing `target/<profile>/lib<name>.so` next to which cargo left `lib<name>.rlib`:
/// the crate builds no `cdylib`, which is the fix to suggest.
pub fn missing_cdylib_hint(path: &Path, error: &std::io::Error) -> Option<String> {
    if error.kind() != std::io::ErrorKind::NotFound {
        return None;
    }
    let name = path.file_name()?;
    if !is_library_name(name) {
        return None;
    }
    let rlib = path.with_extension("rlib");
    rlib.is_file().then(|| {
        format!(
            "cargo built {} but no shared library: add `[lib] crate-type = [\"cdylib\"]` to the plugin's Cargo.toml",
            rlib.display()
        )
    })
}

fn add(
    path: &Path,
    source: CandidateSource,
    seen: &mut HashSet<PathBuf>,
    found: &mut Vec<Candidate>,
    errors: &mut Vec<LoadError>,
) {
    match dunce::canonicalize(path) {
        Ok(canonical) => {
            if seen.insert(canonical.clone()) {
                found.push(Candidate {
                    path: canonical,
                    source,
                });
            }
        }
        Err(error) => errors.push(LoadError::new(
            path.to_owned(),
            LoadErrorKind::Unreadable {
                cause: error.to_string(),
            },
        )),
    }
}

/// This host's library in the plugin folder `folder`, or the error saying why there is none.
fn add_folder(
    folder: &Path,
    source: CandidateSource,
    seen: &mut HashSet<PathBuf>,
    found: &mut Vec<Candidate>,
    errors: &mut Vec<LoadError>,
) {
    match host_library(folder) {
        Ok(library) => add(&library, source, seen, found, errors),
        Err(error) => errors.push(error),
    }
}

fn scan_dir(
    dir: &Path,
    source: CandidateSource,
    seen: &mut HashSet<PathBuf>,
    found: &mut Vec<Candidate>,
    errors: &mut Vec<LoadError>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(LoadError::new(
                dir.to_owned(),
                LoadErrorKind::Unreadable {
                    cause: error.to_string(),
                },
            ));
            return;
        }
    };
    // Library files and plugin folders, in one order by name.
    let mut files: Vec<(PathBuf, bool)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let file_type = entry.file_type().ok()?;
            let path = entry.path();
            if file_type.is_file() && is_library_name(&entry.file_name()) {
                Some((path, false))
            } else if file_type.is_dir() && is_plugin_folder(&path) {
                Some((path, true))
            } else {
                None
            }
        })
        .collect();
    files.sort();
    for (path, folder) in files {
        if folder {
            add_folder(&path, source, seen, found, errors);
        } else {
            add(&path, source, seen, found, errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names() {
        let name = format!(
            "{}x{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        assert!(is_library_name(name.as_ref()));
        assert!(!is_library_name("x.txt".as_ref()));
        assert!(!is_library_name(std::env::consts::DLL_SUFFIX.as_ref()));
    }

    #[test]
    fn explicit_first_then_dedup_and_only_libraries_in_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("proj");
        let tools = project_dir(&cwd);
        std::fs::create_dir_all(&tools).unwrap();
        let lib = tools.join(format!(
            "{}a{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        std::fs::write(&lib, b"x").unwrap();
        std::fs::write(tools.join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(tools.join(format!(
            "{}dir{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )))
        .unwrap();
        let discovery = Discovery {
            explicit: vec![lib.clone(), PathBuf::from("missing.so")],
            cwd: cwd.clone(),
            home: None,
            default_dirs: true,
        };
        let (found, errors) = discovery.candidates();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].source, CandidateSource::Explicit);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().contains("missing.so"));
    }

    #[test]
    fn plugin_folders_stand_for_the_hosts_library() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("proj");
        let tools = project_dir(&cwd);
        let host = crate::loading::platform::HOST_TARGET;
        let library = tools.join("a.xcsh-plugin").join(host).join(format!(
            "{}a{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        std::fs::create_dir_all(library.parent().unwrap()).unwrap();
        std::fs::write(&library, b"x").unwrap();
        let elsewhere = tools
            .join("b.xcsh-plugin")
            .join("riscv64gc-unknown-linux-gnu");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("libb.so"), b"x").unwrap();
        // Not a plugin folder: a plain directory inside tools/ is not searched.
        std::fs::create_dir_all(tools.join("c").join(host)).unwrap();
        let discovery = Discovery {
            explicit: vec![],
            cwd: cwd.clone(),
            home: None,
            default_dirs: true,
        };
        let (found, errors) = discovery.candidates();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, dunce::canonicalize(&library).unwrap());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .contains("it has: riscv64gc-unknown-linux-gnu"),
            "{}",
            errors[0]
        );
        // Given explicitly, the same.
        let explicit = Discovery {
            explicit: vec![tools.join("a.xcsh-plugin")],
            cwd,
            home: None,
            default_dirs: false,
        };
        let (found, errors) = explicit.candidates();
        assert_eq!((found.len(), errors.len()), (1, 0));
    }
}
