//! `xcsh-plugins check FILE...`: load each plugin alone and tell its author what is wrong.
//!
//! Each file gets a fresh session with nothing else loaded, so problems are the file's own:
//! the ABI and version check, the factory, every tool's name, label, description and
//! parameter schema. Exit 1 on any problem.

use std::path::{Path, PathBuf};

use clap::Args;
use xcsh_loader::library::{host_api_version, oldest_supported_api_version};
use xcsh_loader::{Session, ToolOrigin};

use crate::report::{Annotations, CheckReport, CheckedTool, FileCheck};
use crate::HostOptions;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Plugin files to check.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

/// Check every file named in `args` (relative paths are relative to the directory the command
/// runs in, like `--plugin`), each in a fresh session rooted at `--cwd`, in the isolation mode
/// the options ask for.
pub fn run(args: CheckArgs, host: &HostOptions) -> CheckReport {
    CheckReport {
        host_api_version: host_api_version(),
        oldest_supported_api_version: oldest_supported_api_version(),
        files: with_clashes(args.files.iter().map(|f| check_file(f, host)).collect()),
    }
}

/// Files checked together are meant to load together: a tool name that two of them define
/// is a problem of each, naming the other file.
fn with_clashes(mut files: Vec<FileCheck>) -> Vec<FileCheck> {
    let names: Vec<(usize, String, String)> = files
        .iter()
        .enumerate()
        .flat_map(|(i, file)| {
            file.tools
                .iter()
                .map(move |tool| (i, tool.name.clone(), file.path.clone()))
        })
        .collect();
    for (i, name, _) in &names {
        for (j, other_name, other_path) in &names {
            if i != j && name == other_name {
                let file = &mut files[*i];
                file.problems.push(format!(
                    "{}, defined in {other_path} too (files checked together load together)",
                    xcsh_loader::messages::name_conflict(name)
                ));
                file.ok = false;
            }
        }
    }
    files
}

fn check_file(file: &Path, host: &HostOptions) -> FileCheck {
    let path = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let mut problems = Vec::new();
    let mut tools = Vec::new();
    let mut api_version = None;
    let mut isolation = None;
    let mut sandbox = None;
    if path.is_file() {
        let builder = Session::builder(&host.cwd)
            .default_dirs(false)
            .plugin(&path)
            .isolation(host.isolation);
        let session = host.sandbox.apply(builder).build();
        isolation = session
            .plugins()
            .first()
            .map(|p| p.isolation.as_str().to_owned());
        sandbox = session
            .plugins()
            .first()
            .map(|p| xcsh_loader::messages::sandbox_summary(p.sandbox.as_ref()));
        problems.extend(session.load_errors().iter().map(|e| e.cause()));
        api_version = session.plugins().first().map(|p| p.api_version.to_string());
        for spec in session.tools() {
            if !matches!(spec.origin, ToolOrigin::Plugin(_)) {
                continue;
            }
            if spec.label.trim().is_empty() {
                problems.push(format!("tool \"{}\" has an empty label", spec.name));
            }
            if spec.description.trim().is_empty() {
                problems.push(format!(
                    "tool \"{}\" has an empty description (the model relies on it)",
                    spec.name
                ));
            }
            tools.push(CheckedTool {
                name: spec.name.clone(),
                label: spec.label.clone(),
                hidden: spec.hidden,
                deferrable: spec.deferrable,
                annotations: Annotations::from(&spec.hints),
            });
        }
        if tools.is_empty() && problems.is_empty() {
            problems.push("the plugin's factory returned no tools".to_owned());
        }
    } else {
        problems.push(match std::fs::metadata(&path) {
            Ok(_) => "not a regular file".to_owned(),
            Err(error) => match xcsh_loader::discovery::missing_cdylib_hint(&path, &error) {
                Some(hint) => format!("cannot read: {error}; {hint}"),
                None => format!("cannot read: {error}"),
            },
        });
    }
    FileCheck {
        path: file.display().to_string(),
        ok: problems.is_empty(),
        capabilities: api_version.as_deref().map(xcsh_plugin_api::capabilities_of),
        api_version,
        isolation,
        sandbox,
        tools,
        problems,
    }
}
