//! `xcsh-plugins trust PATH...` and `xcsh-plugins untrust PATH...`: which project-local
//! plugins (`<cwd>/.xcsh/tools/`) may load, kept in `~/.xcsh/agent/trusted-plugins.json`.
//!
//! `trust` records each file's canonical path and the SHA-256 of its content as it is now (a
//! directory stands for the plugin files in it); a later change to the file untrusts it again.
//! The file must pass the same ownership and permission checks as at load time.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;
use xcsh_loader::discovery::is_library_name;
use xcsh_loader::library::CheckedFile;
use xcsh_loader::render::sanitize;
use xcsh_loader::trust::TrustStore;
use xcsh_loader::LoadErrorKind;

use crate::output::print_json;
use crate::HostOptions;

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Plugin files, or directories of plugins, to trust as they are now.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UntrustArgs {
    /// Plugin files, or directories of plugins, to stop trusting.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

fn open_store() -> Result<TrustStore, String> {
    let home = std::env::home_dir()
        .ok_or("no home directory to keep the trust file in (set HOME)".to_owned())?;
    TrustStore::for_home(&home).map_err(|e| e.to_string())
}

/// The plugin files `path` stands for: itself, or the library files in a directory.
fn plugin_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter(|entry| is_library_name(&entry.file_name()))
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

pub fn trust(args: TrustArgs, host: &HostOptions) -> ExitCode {
    let mut store = match open_store() {
        Ok(store) => store,
        Err(message) => return fail(host.json, &message),
    };
    let mut trusted = Vec::new();
    let mut errors = Vec::new();
    for path in &args.paths {
        let files = match plugin_files(&host.cwd.join(path)) {
            Ok(files) => files,
            Err(message) => {
                errors.push(json!({"path": path.display().to_string(), "message": message}));
                continue;
            }
        };
        for file in files {
            match CheckedFile::read(&file) {
                Ok(checked) if checked.path().to_str().is_none() => {
                    errors.push(json!({
                        "path": checked.path().display().to_string(),
                        "message": format!(
                            "{}: the trust file records UTF-8 paths only; rename the plugin",
                            checked.path().display()
                        ),
                    }));
                }
                Ok(checked) => match checked.sha256() {
                    Ok(sha256) => {
                        store.trust(checked.path().to_owned(), sha256.to_owned());
                        trusted.push((checked.path().to_owned(), sha256.to_owned()));
                    }
                    Err(error) => errors.push(json!({
                        "path": error.path().display().to_string(),
                        "message": error.to_string(),
                    })),
                },
                Err(error) => {
                    // Trust is refused for the same reasons a load would be.
                    let message = match &error.kind {
                        LoadErrorKind::Unsafe { cause } => {
                            format!("refusing to trust {}: {cause}", error.path.display())
                        }
                        other => other.to_string(),
                    };
                    errors.push(json!({
                        "path": error.path().display().to_string(),
                        "message": message,
                    }));
                }
            }
        }
    }
    if !trusted.is_empty() {
        if let Err(error) = store.save() {
            return fail(
                host.json,
                &format!("cannot write {}: {error}", store.file().display()),
            );
        }
    }
    if host.json {
        let trusted: Vec<_> = trusted
            .iter()
            .map(|(path, sha256)| json!({"path": path.display().to_string(), "sha256": sha256}))
            .collect();
        print_json(&json!({
            "trustFile": store.file().display().to_string(),
            "trusted": trusted,
            "errors": errors,
        }));
    } else {
        for (path, sha256) in &trusted {
            println!(
                "trusted {}\n    sha256 {sha256}",
                sanitize(&path.display().to_string())
            );
        }
        if !trusted.is_empty() {
            println!(
                "(recorded in {})",
                sanitize(&store.file().display().to_string())
            );
        }
        for error in &errors {
            eprintln!(
                "error: {}",
                sanitize(error["message"].as_str().unwrap_or_default())
            );
        }
    }
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The canonical form of `path` even when the file itself is gone (its directory resolved).
fn canonical_or_lexical(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map_or_else(|_| path.to_owned(), |p| p.join(name)),
        _ => path.to_owned(),
    }
}

pub fn untrust(args: UntrustArgs, host: &HostOptions) -> ExitCode {
    let mut store = match open_store() {
        Ok(store) => store,
        Err(message) => return fail(host.json, &message),
    };
    let mut removed = Vec::new();
    let mut unknown = Vec::new();
    for path in &args.paths {
        let target = canonical_or_lexical(&host.cwd.join(path));
        // A directory stands for every trusted file under it.
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
        if let Err(error) = store.save() {
            return fail(
                host.json,
                &format!("cannot write {}: {error}", store.file().display()),
            );
        }
    }
    if host.json {
        let show = |paths: &[PathBuf]| -> Vec<String> {
            paths.iter().map(|p| p.display().to_string()).collect()
        };
        print_json(&json!({
            "trustFile": store.file().display().to_string(),
            "untrusted": show(&removed),
            "notTrusted": show(&unknown),
        }));
    } else {
        for path in &removed {
            println!("untrusted {}", sanitize(&path.display().to_string()));
        }
        for path in &unknown {
            println!("{} was not trusted", sanitize(&path.display().to_string()));
        }
    }
    ExitCode::SUCCESS
}

fn fail(json_output: bool, message: &str) -> ExitCode {
    if json_output {
        print_json(&json!({"errors": [{"message": message}]}));
    } else {
        eprintln!("error: {}", sanitize(message));
    }
    ExitCode::FAILURE
}
