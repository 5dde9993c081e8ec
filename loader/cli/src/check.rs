//! `xcsh-plugins check PATH...`: load each plugin alone and tell its author what is wrong.
//!
//! Each file gets a fresh session with nothing else loaded, so problems are the file's own:
//! the ABI and version check, the factory, every tool's name, label, description and
//! parameter schema. A directory stands for the plugin files in it, as with `--plugin DIR`.
//! A plugin refused for its `xcsh-plugin-api` version still reports the version it was built
//! against, and what to rebuild it against. A library built for another platform gets how to
//! build it for this one. A multi-platform plugin folder (`*.xcsh-plugin`) is checked library
//! by library: this host's is loaded, the others' headers are read (their platform must be
//! their subfolder's). Exit 1 on any problem.

use std::path::{Path, PathBuf};

use clap::Args;
use xcsh_loader::library::{host_api_version, oldest_supported_api_version};
use xcsh_loader::platform::{build_hint, read_headers, target_platform, HOST_TARGET};
use xcsh_loader::plugin_folder::{is_plugin_folder, platform_libraries};
use xcsh_loader::{LoadError, LoadErrorKind, Session, ToolOrigin};
use xcsh_plugin_api::ffi::ApiVersion;

use crate::cli::{CwdArg, JsonArg, SandboxArgs};
use crate::host_options::HostOptions;
use crate::report::{
    Annotations, CheckReport, CheckedTool, Enforced, FileCheck, PolicyReport, RepositoryReport,
};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Plugin files to check, or directories of plugins (each `lib*.so` in them).
    #[arg(required = true, value_name = "PATH")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    pub cwd: CwdArg,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// Check every file named in `args` (relative paths are relative to the directory the command
/// runs in, like `--plugin`), each in a fresh session rooted at `--cwd`, in the isolation mode
/// the options ask for.
pub fn run(args: CheckArgs, host: &HostOptions) -> CheckReport {
    CheckReport {
        host_api_version: host_api_version(),
        oldest_supported_api_version: oldest_supported_api_version(),
        files: with_clashes(
            args.files
                .iter()
                .flat_map(|path| check_path(path, host))
                .collect(),
        ),
    }
}

/// Check `path`: a file, or each plugin file of a directory (a directory without any is a
/// problem of its own).
fn check_path(path: &Path, host: &HostOptions) -> Vec<FileCheck> {
    if !path.is_dir() {
        return vec![check_file(path, host)];
    }
    if is_plugin_folder(path) {
        return check_folder(path, host);
    }
    match crate::trust_commands::plugin_files(path) {
        Ok(files) => files
            .iter()
            .flat_map(|file| match file.is_dir() {
                true => check_folder(file, host),
                false => vec![check_file(file, host)],
            })
            .collect(),
        Err(message) => vec![problem(
            path,
            format!(
                "{message} (plugin files are named lib*{}, plugin folders *{})",
                std::env::consts::DLL_SUFFIX,
                xcsh_loader::plugin_folder::PLUGIN_FOLDER_SUFFIX
            ),
        )],
    }
}

/// A check that found only `message` about `path`.
fn problem(path: &Path, message: String) -> FileCheck {
    FileCheck {
        path: path.display().to_string(),
        problems: vec![message],
        ..FileCheck::default()
    }
}

/// Each platform's library in the plugin folder `folder`: this host's is loaded and checked
/// as a plugin file is; the others by their headers. A folder without this host's library
/// fails: it cannot load here.
fn check_folder(folder: &Path, host: &HostOptions) -> Vec<FileCheck> {
    let libraries = match platform_libraries(folder) {
        Ok(libraries) => libraries,
        Err(error) => return vec![problem(folder, error.cause())],
    };
    let mut checks: Vec<FileCheck> = libraries
        .iter()
        .map(|library| {
            let mut check = if library.target == HOST_TARGET {
                check_file(&library.path, host)
            } else {
                check_headers(&library.path, &library.target)
            };
            check.target = Some(library.target.clone());
            check
        })
        .collect();
    if !libraries
        .iter()
        .any(|library| library.target == HOST_TARGET)
    {
        let error = xcsh_loader::plugin_folder::no_library_for_host(folder, &libraries);
        checks.push(problem(folder, error.cause()));
    }
    checks
}

/// Another platform's library of a plugin folder: built for the platform its subfolder names,
/// with a version marker this host's API range knows. Never loaded.
fn check_headers(library: &Path, target: &str) -> FileCheck {
    let mut check = FileCheck {
        path: library.display().to_string(),
        ..FileCheck::default()
    };
    match read_headers(library) {
        Ok(headers) => {
            if let Some(expected) = target_platform(target) {
                if expected != headers.built_for {
                    check.problems.push(format!(
                        "built for {}, but it is in the folder for {target} ({expected}): move it to the folder of its own target",
                        headers.built_for
                    ));
                }
            }
            if headers.api_version.is_none() {
                check.problems.push(
                    "no xcsh-plugin-api version marker: not a plugin built with `export_plugin!`"
                        .to_owned(),
                );
            }
            check.capabilities = headers
                .api_version
                .as_deref()
                .map(xcsh_plugin_api::capabilities_of);
            check.api_version = headers.api_version;
            check.built_for = Some(headers.built_for);
        }
        Err(error) => check.problems.push(error.cause()),
    }
    check.ok = check.problems.is_empty();
    check
}

/// What to do about a plugin refused for its version: rebuild it against this host's API
/// (or, for a newer plugin, use a newer host). `None` for any other load error.
fn version_hint(error: &LoadError) -> Option<(Option<String>, String)> {
    let LoadErrorKind::IncompatibleVersion { found, host, .. } = error.kind() else {
        return None;
    };
    // A library without a version marker has a description here, not a version.
    let read = ApiVersion::parse(found);
    let newer = read
        .zip(ApiVersion::parse(host))
        .is_some_and(|(found, host)| found > host);
    let instead = if newer {
        format!(", or load it with a host built with xcsh-plugin-api {found}")
    } else {
        String::new()
    };
    let hint = format!(
        "rebuild it against xcsh-plugin-api {host} (in its Cargo.toml: \
         xcsh-plugin-api = \"{host}\", then `cargo build --release`){instead}"
    );
    Some((read.map(|v| v.to_string()), hint))
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
    let mut confinement = None;
    let mut policy = None;
    if path.is_file() {
        let builder = Session::builder(&host.cwd)
            .default_dirs(false)
            .plugin(&path)
            .isolation(host.isolation)
            // A check starts the plugin's process, whatever the cache knows, and leaves it
            // alone.
            .definitions_cache(false);
        let session = host.sandbox.apply(builder).build();
        isolation = session
            .plugins()
            .first()
            .map(|p| p.isolation.as_str().to_owned());
        sandbox = session
            .plugins()
            .first()
            .map(|p| xcsh_loader::messages::sandbox_summary(p.sandbox.as_ref()));
        confinement = session
            .plugins()
            .first()
            .and_then(|p| p.sandbox.as_ref().map(Enforced::from));
        api_version = session.plugins().first().map(|p| p.api_version.to_string());
        let isolated = host.isolation == xcsh_loader::Isolation::Process;
        if isolated {
            let confined = confinement.as_ref().map_or(cfg!(target_os = "linux"), |c| {
                c.writes != xcsh_loader::sandbox::Enforcement::None
            });
            policy = Some(policy_of(host, &path, confined));
        }
        for error in session.load_errors() {
            let cause = error.cause();
            match version_hint(error) {
                Some((read, hint)) => {
                    api_version = read;
                    problems.push(format!("{cause}; {hint}"));
                }
                // A factory that could not read what it needs under the sandbox.
                // Built for another platform: how to build it for this one.
                None if matches!(
                    error.kind(),
                    LoadErrorKind::ForeignPlatform { .. } | LoadErrorKind::NewerGlibc { .. }
                ) =>
                {
                    problems.push(format!("{cause}; {}", build_hint()));
                }
                None if isolated && xcsh_loader::messages::is_refused_access(&cause) => {
                    problems.push(format!(
                        "{cause}; {}",
                        xcsh_loader::messages::REFUSED_ACCESS_HINT
                    ));
                }
                None => problems.push(cause),
            }
        }
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
        confinement,
        policy,
        tools,
        problems,
        ..FileCheck::default()
    }
}

/// The sandbox policy of `plugin`'s process in a `check` under `host`'s options: the
/// defaults, and what the options add. `confined`: whether its process's reads and writes are
/// confined (what the child reported; where it did not load, whether this platform has a
/// sandbox); when not, they are whatever the user's own are.
fn policy_of(host: &HostOptions, plugin: &Path, confined: bool) -> PolicyReport {
    use xcsh_loader::sandbox::{BASE_ENVIRONMENT, PROC_READABLE, SYSTEM_READABLE, TEMP_VARIABLES};
    let shown = |path: &Path| path.display().to_string();
    let private = format!("{} (private)", TEMP_VARIABLES.join(", "));
    // Where there is a private home (Unix), `HOME` is the private one, listed with the other
    // variables of the private home.
    let mut environment: Vec<String> = BASE_ENVIRONMENT
        .iter()
        .filter(|name| !cfg!(unix) || **name != "HOME")
        .map(|n| (*n).to_owned())
        .collect();
    environment.extend(host.sandbox.pass_env.iter().cloned());
    environment.push(private.clone());
    if cfg!(unix) {
        environment.push(
            "HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_DATA_HOME, CARGO_HOME (private home)"
                .to_owned(),
        );
        environment.push("RUSTUP_HOME, PYENV_ROOT (the user's toolchains)".to_owned());
        environment.push("GIT_TERMINAL_PROMPT=0".to_owned());
    }
    if !confined {
        let anything = format!(
            "anything this user may ({})",
            xcsh_loader::messages::NO_SANDBOX_HERE
        );
        return PolicyReport {
            environment,
            reads: vec![anything.clone()],
            writes: vec![anything],
            network: "allowed (no sandbox)",
            repository: None,
        };
    }
    let mut writes = vec![shown(&host.cwd), private.clone()];
    writes.extend(host.sandbox.allow_write.iter().map(|p| shown(p)));
    let mut reads: Vec<String> = SYSTEM_READABLE
        .iter()
        .filter(|dir| Path::new(dir).exists())
        .map(|dir| (*dir).to_owned())
        .collect();
    reads.extend(PROC_READABLE.iter().map(|file| (*file).to_owned()));
    reads.push(shown(&host.cwd));
    reads.extend(plugin.parent().map(shown));
    reads.push(private);
    reads.push("HOME (private: git's and cargo's settings, credentials filtered out)".to_owned());
    if let Some(home) = std::env::home_dir() {
        reads.extend(
            xcsh_loader::sandbox::toolchain_reads(&home)
                .iter()
                .map(|dir| format!("{} (toolchain)", shown(dir))),
        );
    }
    let repository = repository_of(host);
    if let Some(repository) = &repository {
        reads.extend(
            repository
                .listable
                .iter()
                .map(|root| format!("{root} (enclosing repository: names only)")),
        );
        reads.extend(
            repository
                .read_only
                .iter()
                .chain(&repository.writable)
                .map(|path| format!("{path} (enclosing repository)")),
        );
    }
    reads.extend(host.sandbox.allow_write.iter().map(|p| shown(p)));
    reads.extend(host.sandbox.allow_read.iter().map(|p| shown(p)));
    PolicyReport {
        environment,
        reads,
        writes,
        network: if host.sandbox.deny_network {
            "denied"
        } else {
            "allowed"
        },
        repository,
    }
}

/// What a plugin process may do with the repository `--cwd` is in, as the loader decides it
/// (`EnclosingRepository`, the very function the session's sandbox is made from): its parts
/// above `--cwd`, read-only unless an `--allow-write` path holds them.
fn repository_of(host: &HostOptions) -> Option<RepositoryReport> {
    let repository = xcsh_loader::sandbox::EnclosingRepository::find(&host.cwd)?;
    let mut writable_dirs = vec![host.cwd.clone()];
    writable_dirs.extend(host.sandbox.allow_write.iter().cloned());
    let read_only: Vec<_> = repository.read_only(&writable_dirs).collect();
    // Each path once, and none inside another (a linked worktree's git directory is in the
    // common one).
    let mut grants: Vec<&Path> = read_only
        .iter()
        .map(|read| repository.grant_for(read))
        .collect();
    grants.dedup();
    let grant: Vec<String> = grants
        .iter()
        .filter(|path| {
            !grants
                .iter()
                .any(|other| path.starts_with(other) && path != &other)
        })
        .fold(Vec::new(), |mut unique: Vec<String>, path| {
            let shown = path.display().to_string();
            if !unique.contains(&shown) {
                unique.push(shown);
            }
            unique
        });
    let shown = |read: &xcsh_loader::sandbox::RepositoryRead| read.path.display().to_string();
    Some(RepositoryReport {
        root: repository.root.display().to_string(),
        listable: repository
            .listable
            .as_ref()
            .map(|root| root.display().to_string()),
        writable: repository
            .reads
            .iter()
            .filter(|read| !read_only.contains(read))
            .map(shown)
            .collect(),
        read_only: read_only.iter().map(|read| shown(read)).collect(),
        grant,
        withheld: repository.withheld.clone(),
    })
}
