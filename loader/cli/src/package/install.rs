//! `xcsh-plugins install SOURCE`, `update [NAME]`, `remove NAME` and `list --installed`: packed
//! tools in the CLI's own directories (`~/.xcsh/agent/tools/`, or the project's `.xcsh/tools/`
//! with `--project`), each as a `NAME.xcsh-plugin/` folder holding this host's library, the
//! tool's manifest and an install record (`xcsh-install.json`: where it came from, what was
//! verified).
//!
//! Nothing a user had is lost or half-written:
//! - everything is fetched and verified (integrity or checksum, publisher signature, platform,
//!   name conflicts) before the first write;
//! - the new folder is written and synced in a staging directory beside the installed ones,
//!   then swapped in with one atomic exchange (`renameat2(RENAME_EXCHANGE)` on Linux), so a
//!   loader sees the old version or the new one, never neither and never a mix;
//! - trust is pinned to exactly the bytes verified; for a project install, the pin waits in a
//!   journal in `~/.xcsh/agent/` until the swap is done, and the next command settles it if
//!   the install was killed in between.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::{Deserialize, Serialize};
use xcsh_loader::discovery::{project_dir, user_dir};
use xcsh_loader::platform::HOST_TARGET;
use xcsh_loader::plugin_folder::PLUGIN_FOLDER_SUFFIX;
use xcsh_loader::publisher::{self, PublisherCheck, PublisherError, SignedLibrary};
use xcsh_loader::trust::TrustStore;

use super::files::{write_atomic, FileSet};
use super::source::{self, Fetched, Source};
use super::{ToolManifest, TOOL_MANIFEST};
use crate::cli::{CwdArg, JsonArg};
use crate::error::CliError;

/// The install record's name inside an installed folder.
pub const INSTALL_RECORD: &str = "xcsh-install.json";
/// Where staged and replaced folders wait, inside a tools directory (ignored by discovery:
/// its name does not end in `.xcsh-plugin`).
const STAGING: &str = ".xcsh-installing";
/// The journal of a trust pin waiting for its swap, in `~/.xcsh/agent/`.
const PIN_JOURNAL: &str = "install-pin.json";

/// Where an install goes.
#[derive(Debug, Default, Clone, Args)]
pub struct PlaceArgs {
    /// The project's .xcsh/tools/ (under --cwd) instead of ~/.xcsh/agent/tools/.
    #[arg(long)]
    pub project: bool,
    #[command(flatten)]
    pub cwd: CwdArg,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// npm:@scope/name[@range], a NAME-VERSION.xcsh-plugin.tar.gz archive, a .mcpb bundle, a
    /// NAME.xcsh-plugin folder, or an https URL of an archive or bundle (with --sha256).
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The SHA-256 the file must have (required for a URL).
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Accept a publisher key other than the one pinned for this tool (or an unsigned
    /// version after a signed one).
    #[arg(long)]
    pub accept_new_key: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The installed tool to update (its plugin name or npm name); all of them by default.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Accept a publisher key other than the one pinned.
    #[arg(long)]
    pub accept_new_key: bool,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The installed tool to remove (its plugin name or npm name).
    #[arg(value_name = "NAME")]
    pub name: String,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// `xcsh-install.json`: what was installed, from where, verified how.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InstallRecord {
    pub plugin: String,
    pub npm_name: String,
    pub version: String,
    /// The SOURCE as given again by `update`.
    pub source: String,
    /// What was verified of the download (`sha512-…`, `sha256:…`).
    pub integrity: String,
    /// The library, relative to the folder.
    pub library: String,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher_key: Option<String>,
    pub tools: Vec<String>,
}

/// One installed tool, as `install`, `update`, `remove` and `list --installed` report it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledTool {
    #[serde(flatten)]
    pub record: InstallRecord,
    pub folder: String,
}

/// What `install`/`update`/`remove`/`list --installed` did or found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallReport {
    pub action: &'static str,
    pub directory: String,
    /// Lines saying what changed (`installed @t/hello 1.0.0`, `updated … 1.0.0 → 1.1.0`).
    pub changes: Vec<String>,
    pub installed: Vec<InstalledTool>,
    pub errors: Vec<String>,
}

impl crate::report::Report for InstallReport {
    fn failed(&self) -> bool {
        !self.errors.is_empty()
    }
}

impl crate::output::Text for InstallReport {
    fn write_text(&self, to: &mut crate::output::Streams<'_>) -> std::io::Result<()> {
        use xcsh_loader::render::sanitize;
        for change in &self.changes {
            writeln!(to.out, "{}", sanitize(change))?;
        }
        if self.action == "list" {
            if self.installed.is_empty() {
                writeln!(
                    to.out,
                    "no tools installed in {}",
                    sanitize(&self.directory)
                )?;
            }
            for tool in &self.installed {
                let record = &tool.record;
                writeln!(
                    to.out,
                    "{} {} ({}): tools {}\n    from {}\n    {}{}",
                    sanitize(&record.npm_name),
                    sanitize(&record.version),
                    sanitize(&record.plugin),
                    sanitize(&record.tools.join(", ")),
                    sanitize(&record.source),
                    sanitize(&tool.folder),
                    record
                        .publisher_key
                        .as_deref()
                        .map(|key| format!("\n    signed by {}", sanitize(key)))
                        .unwrap_or_default()
                )?;
            }
        }
        for error in &self.errors {
            writeln!(to.err, "error: {}", sanitize(error))?;
        }
        Ok(())
    }
}

/// The tools directory an install goes to, and the session's working directory.
fn tools_dir(place: &PlaceArgs) -> Result<PathBuf, CliError> {
    if place.project {
        // The session's working directory as every command takes it (`--cwd`, checked).
        Ok(project_dir(&crate::host_options::session_cwd(
            place.cwd.cwd.clone(),
        )?))
    } else {
        Ok(user_dir(&home()?))
    }
}

fn home() -> Result<PathBuf, CliError> {
    std::env::home_dir().ok_or_else(|| {
        CliError::Failure("no home directory for ~/.xcsh/agent/ (set HOME)".to_owned())
    })
}

fn failure(what: impl std::fmt::Display, error: impl std::fmt::Display) -> CliError {
    CliError::Failure(format!("{what}: {error}"))
}

/// The installed folders of `dir`, with their records.
pub fn installed_in(dir: &Path) -> Vec<InstalledTool> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<InstalledTool> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .ends_with(PLUGIN_FOLDER_SUFFIX)
        })
        .filter_map(|entry| {
            let bytes = std::fs::read(entry.path().join(INSTALL_RECORD)).ok()?;
            let record: InstallRecord = serde_json::from_slice(&bytes).ok()?;
            Some(InstalledTool {
                record,
                folder: entry.path().display().to_string(),
            })
        })
        .collect();
    found.sort_by(|a, b| a.record.plugin.cmp(&b.record.plugin));
    found
}

fn find_installed(dir: &Path, name: &str) -> Result<InstalledTool, CliError> {
    let installed = installed_in(dir);
    let names: Vec<String> = installed
        .iter()
        .map(|t| t.record.npm_name.clone())
        .collect();
    installed
        .into_iter()
        .find(|tool| tool.record.plugin == name || tool.record.npm_name == name)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "{name} is not installed in {} (installed: {})",
                dir.display(),
                if names.is_empty() {
                    "nothing".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        })
}

/// A pin waiting for its swap.
#[derive(Debug, Serialize, Deserialize)]
struct PendingPin {
    library: PathBuf,
    sha256: String,
}

fn journal_path() -> Result<PathBuf, CliError> {
    Ok(home()?.join(".xcsh").join("agent").join(PIN_JOURNAL))
}

/// Settle what an interrupted install left: a pin whose swap happened (the library there has
/// the journalled bytes) is made; the journal and any staged folder are removed. A replaced
/// folder whose new one never arrived is put back.
fn recover(dir: &Path) -> Result<(), CliError> {
    let journal = journal_path()?;
    if let Ok(bytes) = std::fs::read(&journal) {
        if let Ok(pin) = serde_json::from_slice::<PendingPin>(&bytes) {
            let there = std::fs::read(&pin.library).map(|b| source::sha256_hex(&b));
            if there.is_ok_and(|sha256| sha256 == pin.sha256) {
                let mut trust = crate::trust_commands::open_store()?;
                trust.trust(pin.library.clone(), pin.sha256.clone());
                trust
                    .save()
                    .map_err(|e| failure(trust.file().display(), e))?;
            }
        }
        let _ = std::fs::remove_file(&journal);
    }
    let staging = dir.join(STAGING);
    if let Ok(entries) = std::fs::read_dir(&staging) {
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            // `NAME.xcsh-plugin.previous`: moved aside by a non-atomic swap that did not finish.
            if let Some(folder) = name.strip_suffix(".previous") {
                let target = dir.join(folder);
                if !target.exists() && std::fs::rename(entry.path(), &target).is_ok() {
                    continue;
                }
            }
            let _ = std::fs::remove_dir_all(entry.path());
        }
        let _ = std::fs::remove_dir(&staging);
    }
    Ok(())
}

/// Hold this user's install lock for the rest of the command (one install, update or remove
/// at a time; kept in `~/.xcsh/agent/`, not among the tools).
fn lock(dir: &Path) -> Result<std::fs::File, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| failure(format!("cannot create {}", dir.display()), e))?;
    let path = home()?.join(".xcsh").join("agent").join("install.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| failure(format!("cannot open {}", path.display()), e))?;
    file.lock()
        .map_err(|e| failure(format!("cannot lock {}", path.display()), e))?;
    Ok(file)
}

/// Check the publisher's signature against the manifest's key and the pinned one. The key to
/// pin, if any.
fn check_publisher(
    fetched: &Fetched,
    trust: &TrustStore,
    accept_new_key: bool,
) -> Result<Option<String>, CliError> {
    let manifest = &fetched.manifest;
    let shown = format!("{} {}", manifest.npm_name, manifest.version);
    let library = SignedLibrary {
        tool: &manifest.npm_name,
        shown: &shown,
        key: manifest.publisher_key.as_deref(),
        file_name: &fetched.library_name,
        bytes: &fetched.library,
        signature: fetched.signature.as_deref(),
    };
    match publisher::check(trust, library, accept_new_key) {
        Ok(PublisherCheck::Unsigned) => Ok(None),
        Ok(PublisherCheck::Known(key) | PublisherCheck::FirstSeen(key)) => Ok(Some(key)),
        Err(
            error
            @ (PublisherError::KeyChanged { .. } | PublisherError::UnsignedAfterSigned { .. }),
        ) => Err(CliError::Failure(format!(
            "{error}; refused (if the publisher changed keys, install it with \
                 --accept-new-key); nothing was installed"
        ))),
        Err(error) => Err(CliError::Failure(format!("{error}; nothing was installed"))),
    }
}

/// Refuse a tool whose name another installed tool of `dir` already has (discovery would
/// skip the later one).
fn check_conflicts(dir: &Path, manifest: &ToolManifest) -> Result<(), CliError> {
    for other in installed_in(dir) {
        if other.record.plugin == manifest.plugin {
            continue;
        }
        if let Some(tool) = manifest
            .tools
            .iter()
            .find(|t| other.record.tools.contains(&t.name))
        {
            return Err(CliError::Failure(format!(
                "{} (of {} {}, installed in {}); nothing was installed",
                xcsh_loader::messages::name_conflict(&tool.name),
                other.record.npm_name,
                other.record.version,
                other.folder
            )));
        }
    }
    let target = dir.join(format!("{}{PLUGIN_FOLDER_SUFFIX}", manifest.plugin));
    if target.exists() && !target.join(INSTALL_RECORD).is_file() {
        return Err(CliError::Failure(format!(
            "{} exists and was not installed by xcsh-plugins; move it away first; nothing was installed",
            target.display()
        )));
    }
    Ok(())
}

/// Swap `staged` into `target`: atomically where the system can, else by two renames that
/// `recover` completes.
fn swap_in(staged: &Path, target: &Path, staging: &Path) -> Result<(), CliError> {
    if !target.exists() {
        return std::fs::rename(staged, target)
            .map_err(|e| failure(format!("cannot move in {}", target.display()), e));
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, staged, CWD, target, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(()),
            // A file system without the exchange: the two renames below.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(failure(format!("cannot swap in {}", target.display()), e)),
        }
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let aside = staging.join(format!("{name}.previous"));
    std::fs::rename(target, &aside)
        .map_err(|e| failure(format!("cannot move aside {}", target.display()), e))?;
    std::fs::rename(staged, target)
        .map_err(|e| failure(format!("cannot move in {}", target.display()), e))?;
    // What was staged now holds the previous version.
    std::fs::rename(&aside, staged)
        .map_err(|e| failure(format!("cannot clean {}", aside.display()), e))
}

/// Install `fetched` into `dir` from `source`; the record written.
fn install_fetched(
    dir: &Path,
    source: &str,
    fetched: Fetched,
    accept_new_key: bool,
) -> Result<(InstallRecord, PathBuf), CliError> {
    let mut trust = crate::trust_commands::open_store()?;
    let key = check_publisher(&fetched, &trust, accept_new_key)?;
    check_conflicts(dir, &fetched.manifest)?;
    let manifest = &fetched.manifest;
    let library_rel = format!("{HOST_TARGET}/{}", fetched.library_name);
    let record = InstallRecord {
        plugin: manifest.plugin.clone(),
        npm_name: manifest.npm_name.clone(),
        version: manifest.version.clone(),
        source: source.to_owned(),
        integrity: fetched.integrity.clone(),
        library: library_rel.clone(),
        sha256: source::sha256_hex(&fetched.library),
        publisher_key: key.clone(),
        tools: manifest.tools.iter().map(|t| t.name.clone()).collect(),
    };
    let mut set = FileSet::default();
    set.add(library_rel.clone(), fetched.library.clone(), false);
    if let Some(signature) = &fetched.signature {
        set.add(format!("{library_rel}.minisig"), signature.clone(), false);
    }
    set.add(
        TOOL_MANIFEST,
        serde_json::to_vec_pretty(manifest).map_err(|e| CliError::Failure(e.to_string()))?,
        false,
    );
    set.add(
        INSTALL_RECORD,
        serde_json::to_vec_pretty(&record).map_err(|e| CliError::Failure(e.to_string()))?,
        false,
    );
    let staging = dir.join(STAGING);
    std::fs::create_dir_all(&staging)
        .map_err(|e| failure(format!("cannot create {}", staging.display()), e))?;
    let staged = tempfile::Builder::new()
        .prefix(&format!("{}.", manifest.plugin))
        .tempdir_in(&staging)
        .map_err(|e| failure(format!("cannot stage in {}", staging.display()), e))?
        .keep();
    let folder = staged.join("new");
    set.write_dir(&folder)
        .map_err(|e| failure(format!("cannot write {}", folder.display()), e))?;
    sync_tree(&folder);
    let target = dir.join(format!("{}{PLUGIN_FOLDER_SUFFIX}", manifest.plugin));
    let target_canonical = dunce::canonicalize(dir)
        .map(|d| d.join(format!("{}{PLUGIN_FOLDER_SUFFIX}", manifest.plugin)))
        .unwrap_or_else(|_| target.clone());
    let library_path = target_canonical.join(&library_rel);
    // The pin waits in a journal until the swap is done.
    let journal = journal_path()?;
    let pin = PendingPin {
        library: library_path.clone(),
        sha256: record.sha256.clone(),
    };
    write_atomic(&journal, &serde_json::to_vec(&pin).unwrap_or_default())
        .map_err(|e| failure(format!("cannot write {}", journal.display()), e))?;
    swap_in(&folder, &target, &staging)?;
    trust.trust(library_path, record.sha256.clone());
    if let Some(key) = &key {
        trust.pin_publisher(&manifest.npm_name, key);
    }
    trust
        .save()
        .map_err(|e| failure(trust.file().display(), e))?;
    let _ = std::fs::remove_file(&journal);
    let _ = std::fs::remove_dir_all(&staged);
    let _ = std::fs::remove_dir(&staging);
    Ok((record, target))
}

/// fsync every file and directory of a freshly written tree (best effort: a file system that
/// cannot sync directories still gets its files synced).
fn sync_tree(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            sync_tree(&path);
        } else if let Ok(file) = std::fs::File::open(&path) {
            let _ = file.sync_all();
        }
    }
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.sync_all();
    }
}

fn report(action: &'static str, dir: &Path) -> InstallReport {
    InstallReport {
        action,
        directory: dir.display().to_string(),
        changes: Vec::new(),
        installed: Vec::new(),
        errors: Vec::new(),
    }
}

/// `install`.
pub fn install(args: InstallArgs) -> Result<InstallReport, CliError> {
    let dir = tools_dir(&args.place)?;
    let source = Source::parse(&args.source)?;
    let fetched = source::fetch(&source, args.sha256.as_deref(), HOST_TARGET)?;
    let _lock = lock(&dir)?;
    recover(&dir)?;
    let before = installed_in(&dir)
        .into_iter()
        .find(|t| t.record.plugin == fetched.manifest.plugin);
    let (record, target) = install_fetched(&dir, &source.describe(), fetched, args.accept_new_key)?;
    let mut report = report("install", &dir);
    report.changes.push(change_line(
        before.as_ref().map(|t| &t.record),
        &record,
        &target,
    ));
    report.installed.push(InstalledTool {
        record,
        folder: target.display().to_string(),
    });
    Ok(report)
}

fn change_line(before: Option<&InstallRecord>, after: &InstallRecord, target: &Path) -> String {
    let signed = after
        .publisher_key
        .as_deref()
        .map(|key| format!("; signed by publisher key {key} (pinned)"))
        .unwrap_or_default();
    match before {
        None => format!(
            "installed {} {} into {} (tools: {}; from {}, {}){signed}",
            after.npm_name,
            after.version,
            target.display(),
            after.tools.join(", "),
            after.source,
            after.integrity
        ),
        Some(before) => {
            let added: Vec<&String> = after
                .tools
                .iter()
                .filter(|t| !before.tools.contains(t))
                .collect();
            let removed: Vec<&String> = before
                .tools
                .iter()
                .filter(|t| !after.tools.contains(t))
                .collect();
            let mut line = format!(
                "updated {} {} -> {} in {}",
                after.npm_name,
                before.version,
                after.version,
                target.display()
            );
            if !added.is_empty() {
                line.push_str(&format!(
                    "; new tools: {}",
                    added
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if !removed.is_empty() {
                line.push_str(&format!(
                    "; tools gone: {}",
                    removed
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            if before.publisher_key != after.publisher_key {
                line.push_str(&format!(
                    "; publisher key {} -> {}",
                    before.publisher_key.as_deref().unwrap_or("none"),
                    after.publisher_key.as_deref().unwrap_or("none")
                ));
            }
            line + &signed
        }
    }
}

/// The source `update` fetches again: an npm spec without its version (the newest the range
/// allows is `npm:NAME`'s latest), a path or URL as recorded.
fn update_source(record: &InstallRecord) -> Result<Source, String> {
    if record.source.starts_with("https://") {
        return Err(format!(
            "{} was installed from a URL with a checksum; install the new version with \
             `xcsh-plugins install URL --sha256 HEX`",
            record.npm_name
        ));
    }
    Source::parse(&record.source).map_err(|e| e.message().to_owned())
}

/// `update`.
pub fn update(args: UpdateArgs) -> Result<InstallReport, CliError> {
    let dir = tools_dir(&args.place)?;
    let _lock = lock(&dir)?;
    recover(&dir)?;
    let targets = match &args.name {
        Some(name) => vec![find_installed(&dir, name)?],
        None => installed_in(&dir),
    };
    let mut report = report("update", &dir);
    for tool in targets {
        let record = &tool.record;
        let outcome = update_source(record)
            .map_err(CliError::Failure)
            .and_then(|source| {
                let fetched = source::fetch(&source, None, HOST_TARGET)?;
                if fetched.manifest.version == record.version
                    && source::sha256_hex(&fetched.library) == record.sha256
                {
                    return Ok(None);
                }
                install_fetched(&dir, &record.source, fetched, args.accept_new_key).map(Some)
            });
        match outcome {
            Ok(None) => report.changes.push(format!(
                "{} {} is up to date ({})",
                record.npm_name, record.version, record.source
            )),
            Ok(Some((after, target))) => {
                report
                    .changes
                    .push(change_line(Some(record), &after, &target));
                report.installed.push(InstalledTool {
                    record: after,
                    folder: target.display().to_string(),
                });
            }
            Err(error) => report.errors.push(error.message().to_owned()),
        }
    }
    if args.name.is_none() && report.changes.is_empty() && report.errors.is_empty() {
        report
            .changes
            .push(format!("no tools installed in {}", dir.display()));
    }
    Ok(report)
}

/// `remove`.
pub fn remove(args: RemoveArgs) -> Result<InstallReport, CliError> {
    let dir = tools_dir(&args.place)?;
    let _lock = lock(&dir)?;
    recover(&dir)?;
    let tool = find_installed(&dir, &args.name)?;
    let folder = PathBuf::from(&tool.folder);
    let staging = dir.join(STAGING);
    std::fs::create_dir_all(&staging)
        .map_err(|e| failure(format!("cannot create {}", staging.display()), e))?;
    let aside = staging.join(format!("removed-{}", tool.record.plugin));
    let _ = std::fs::remove_dir_all(&aside);
    // One rename takes it out of discovery's sight; then it is deleted.
    std::fs::rename(&folder, &aside)
        .map_err(|e| failure(format!("cannot remove {}", folder.display()), e))?;
    let mut trust = crate::trust_commands::open_store()?;
    let canonical = dunce::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    trust.untrust(
        &canonical
            .join(format!("{}{PLUGIN_FOLDER_SUFFIX}", tool.record.plugin))
            .join(&tool.record.library),
    );
    trust
        .save()
        .map_err(|e| failure(trust.file().display(), e))?;
    let _ = std::fs::remove_dir_all(&aside);
    let _ = std::fs::remove_dir(&staging);
    let mut report = report("remove", &dir);
    report.changes.push(format!(
        "removed {} {} from {} (its publisher key stays pinned)",
        tool.record.npm_name, tool.record.version, tool.folder
    ));
    Ok(report)
}

/// `accept-key NAME [KEY]`: accept KEY as the publisher key of the packed tool NAME (its npm
/// name), or with none, accept it unsigned; the trust store pins it.
pub fn accept_key(name: &str, key: Option<&str>) -> Result<String, CliError> {
    let mut trust = crate::trust_commands::open_store()?;
    let before = trust.publisher_key(name).map(str::to_owned);
    match key {
        Some(key) => {
            publisher::check_key(key).map_err(CliError::Usage)?;
            trust.pin_publisher(name, key);
        }
        None => {
            trust.forget_publisher(name);
        }
    }
    trust
        .save()
        .map_err(|e| failure(trust.file().display(), e))?;
    Ok(format!(
        "{name}: publisher key {} -> {} (recorded in {})",
        before.as_deref().unwrap_or("none"),
        key.unwrap_or("none (unsigned versions load)"),
        trust.file().display()
    ))
}

/// `list --installed`: the user's installs and the project's.
pub fn list(cwd: &CwdArg) -> Result<InstallReport, CliError> {
    let user = user_dir(&home()?);
    let project = tools_dir(&PlaceArgs {
        project: true,
        cwd: cwd.clone(),
    })?;
    let mut report = report("list", &user);
    report.directory = format!("{} and {}", user.display(), project.display());
    report.installed = installed_in(&user);
    report.installed.extend(installed_in(&project));
    Ok(report)
}
