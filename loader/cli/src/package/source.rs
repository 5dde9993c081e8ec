//! Where `xcsh-plugins install` gets a packed tool, and how each source is verified before
//! anything is written:
//!
//! - `npm:@scope/name[@range]`: from the registry npm is configured with, through `npm pack`
//!   (npm's own resolution, registry and credentials); each tarball's SHA-512 is checked
//!   against the registry's `dist.integrity`;
//! - a `.xcsh-plugin.tar.gz` archive or a `.mcpb` bundle, by path or by `https` URL (fetched
//!   with the system's `curl`; `--sha256` required, and checked);
//! - a `NAME.xcsh-plugin` folder;
//! - a plugin crate's directory, built with `cargo build --release` (this machine's library;
//!   its manifest made as `pack` makes it).
//!
//! Archives are read in memory with a size cap, and every entry must stay inside its folder:
//! no `..`, no absolute path, no link, nothing but files and directories.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::Digest;
use xcsh_loader::plugin_folder::PLUGIN_FOLDER_SUFFIX;

use super::{ToolManifest, TOOL_MANIFEST};
use crate::error::CliError;

/// The most an archive may hold once unpacked, and the most a download may be.
pub const SIZE_CAP: u64 = 512 * 1024 * 1024;

/// What the user asked to install.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// `npm:SPEC`.
    Npm(String),
    /// An `https` URL of an archive or a bundle.
    Url(String),
    /// A local `.xcsh-plugin.tar.gz` / `.tgz` archive.
    Archive(PathBuf),
    /// A local `.mcpb` bundle.
    Bundle(PathBuf),
    /// A local `NAME.xcsh-plugin` folder.
    Folder(PathBuf),
    /// A plugin crate's directory (holding `Cargo.toml`), built with cargo.
    Crate(PathBuf),
}

impl Source {
    /// Parse the command line's SOURCE.
    pub fn parse(text: &str) -> Result<Source, CliError> {
        if let Some(spec) = text.strip_prefix("npm:") {
            if spec.is_empty() {
                return Err(CliError::Usage(
                    "npm: needs a package name (npm:@scope/name[@range])".to_owned(),
                ));
            }
            return Ok(Source::Npm(spec.to_owned()));
        }
        if text.starts_with("https://") {
            return Ok(Source::Url(text.to_owned()));
        }
        if text.contains("://") {
            return Err(CliError::Usage(format!(
                "{text}: only https URLs are fetched (with --sha256)"
            )));
        }
        let path = PathBuf::from(text);
        if text.ends_with(".mcpb") {
            Ok(Source::Bundle(path))
        } else if text.ends_with(".tar.gz") || text.ends_with(".tgz") {
            Ok(Source::Archive(path))
        } else if text.trim_end_matches('/').ends_with(PLUGIN_FOLDER_SUFFIX) && path.is_dir() {
            Ok(Source::Folder(path))
        } else if path.join("Cargo.toml").is_file() {
            Ok(Source::Crate(path))
        } else {
            Err(CliError::Usage(format!(
                "{text}: not a source install takes (npm:@scope/name[@range], a \
                 NAME-VERSION{PLUGIN_FOLDER_SUFFIX}.tar.gz archive, a .mcpb bundle, a \
                 NAME{PLUGIN_FOLDER_SUFFIX} folder, a plugin crate's directory, or an https URL \
                 of an archive or bundle)"
            )))
        }
    }

    /// How the source is recorded (and given again by `update`).
    pub fn describe(&self) -> String {
        match self {
            Source::Npm(spec) => format!("npm:{spec}"),
            Source::Url(url) => url.clone(),
            Source::Archive(path)
            | Source::Bundle(path)
            | Source::Folder(path)
            | Source::Crate(path) => dunce::canonicalize(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string(),
        }
    }
}

/// A tool fetched and verified: its manifest and this host's library.
#[derive(Debug)]
pub struct Fetched {
    pub manifest: ToolManifest,
    /// This host's library: file name and bytes.
    pub library_name: String,
    pub library: Vec<u8>,
    /// Its detached signature (`.minisig` text), if it came with one.
    pub signature: Option<String>,
    /// What was verified about the download: `sha512-…` (npm) or `sha256:…`.
    pub integrity: String,
}

/// `sha512-BASE64`, as npm's `dist.integrity`.
pub fn sha512_integrity(bytes: &[u8]) -> String {
    format!(
        "sha512-{}",
        data_encoding::BASE64.encode(&sha2::Sha512::digest(bytes))
    )
}

/// Lower-case hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    xcsh_loader::trust::sha256_hex(bytes)
}

/// Fetch and verify `source` for `triple` (this host's).
pub fn fetch(source: &Source, sha256: Option<&str>, triple: &str) -> Result<Fetched, CliError> {
    match source {
        Source::Npm(spec) => fetch_npm(spec, triple),
        Source::Url(url) => {
            let Some(expected) = sha256 else {
                return Err(CliError::Usage(format!(
                    "{url}: a download needs --sha256 HEX (the checksum its publisher gives), \
                     so that what is installed is what they published"
                )));
            };
            let bytes = download(url)?;
            check_sha256(url, &bytes, expected)?;
            let integrity = format!("sha256:{}", sha256_hex(&bytes));
            let name = url
                .rsplit('/')
                .next()
                .unwrap_or(url)
                .split(['?', '#'])
                .next()
                .unwrap_or("");
            let fetched = if name.ends_with(".mcpb") {
                from_bundle(url, &bytes, triple)?
            } else {
                from_archive(url, &bytes, triple)?
            };
            Ok(Fetched {
                integrity,
                ..fetched
            })
        }
        Source::Archive(path) | Source::Bundle(path) => {
            let bytes = read_capped(path)?;
            if let Some(expected) = sha256 {
                check_sha256(&path.display().to_string(), &bytes, expected)?;
            }
            let integrity = format!("sha256:{}", sha256_hex(&bytes));
            let shown = path.display().to_string();
            let fetched = if matches!(source, Source::Bundle(_)) {
                from_bundle(&shown, &bytes, triple)?
            } else {
                from_archive(&shown, &bytes, triple)?
            };
            Ok(Fetched {
                integrity,
                ..fetched
            })
        }
        Source::Folder(path) => from_folder(path, triple),
        Source::Crate(path) => from_crate(path, triple),
    }
}

/// Build the crate at `dir` with `cargo build --release` and take its cdylib, with a manifest
/// made as `pack` makes one (tools learnt by loading it).
fn from_crate(dir: &Path, triple: &str) -> Result<Fetched, CliError> {
    let manifest_path = dir.join("Cargo.toml");
    let info = super::crate_info::read(&manifest_path)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--lib",
            "--message-format=json-render-diagnostics",
        ])
        .arg("--manifest-path")
        .arg(&manifest_path)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            CliError::Failure(format!("cannot run cargo to build {}: {e}", dir.display()))
        })?;
    if !output.status.success() {
        return Err(CliError::Failure(format!(
            "{}: cargo build --release failed (its errors are above); nothing was installed",
            dir.display()
        )));
    }
    let suffix = std::env::consts::DLL_SUFFIX;
    let library = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| {
            message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|k| k == "cdylib"))
        })
        .flat_map(|message| {
            message["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|file| file.as_str().map(PathBuf::from))
        .find(|file| file.to_string_lossy().ends_with(suffix))
        .ok_or_else(|| {
            CliError::Failure(format!(
                "{}: the crate builds no cdylib (add crate-type = [\"cdylib\", \"rlib\"] under [lib]); \
                 nothing was installed",
                dir.display()
            ))
        })?;
    let tools = super::pack::tool_summaries(&library)?;
    let bytes = read_capped(&library)?;
    let library_name = library
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let plugin = info
        .npm_name
        .rsplit('/')
        .next()
        .unwrap_or(&info.npm_name)
        .to_owned();
    check_plugin_name(&dir.display().to_string(), &plugin)?;
    let platform = super::platforms::by_triple(triple).ok_or_else(|| {
        CliError::Failure(format!("{triple} is not a platform packed tools ship for"))
    })?;
    let manifest = ToolManifest {
        manifest_version: 1,
        plugin,
        version: info.version.clone(),
        description: info.description.clone(),
        author: info.author.clone(),
        npm_name: info.npm_name.clone(),
        tools,
        platforms: [(
            triple.to_owned(),
            super::ManifestPlatform {
                library: library_name.clone(),
                package: super::npm::platform_package_name(&info, platform),
            },
        )]
        .into_iter()
        .collect(),
        binding: super::npm::BINDING_VERSION.to_owned(),
        publisher_key: None,
    };
    Ok(Fetched {
        integrity: format!("built from source, sha256:{}", sha256_hex(&bytes)),
        library_name,
        library: bytes,
        signature: None,
        manifest,
    })
}

fn check_sha256(what: &str, bytes: &[u8], expected: &str) -> Result<(), CliError> {
    let actual = sha256_hex(bytes);
    if actual.eq_ignore_ascii_case(expected.trim()) {
        Ok(())
    } else {
        Err(CliError::Failure(format!(
            "{what}: checksum mismatch: --sha256 says {expected}, the file is {actual}; \
             nothing was installed"
        )))
    }
}

fn read_capped(path: &Path) -> Result<Vec<u8>, CliError> {
    let meta =
        std::fs::metadata(path).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    if meta.len() > SIZE_CAP {
        return Err(CliError::Failure(format!(
            "{}: {} bytes, over the {SIZE_CAP}-byte cap; nothing was installed",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read(path)
        .map_err(|e| CliError::Failure(format!("cannot read {}: {e}", path.display())))
}

/// Download `url` with the system's curl (TLS and proxies as the system has them), capped.
fn download(url: &str) -> Result<Vec<u8>, CliError> {
    let output = Command::new("curl")
        .args([
            "--fail",
            "--silent",
            "--show-error",
            "--location",
            "--proto",
            "=https",
        ])
        .args(["--max-filesize", &SIZE_CAP.to_string()])
        .arg("--")
        .arg(url)
        .output()
        .map_err(|e| CliError::Failure(format!("cannot run curl to download {url}: {e}")))?;
    if !output.status.success() {
        return Err(CliError::Failure(format!(
            "cannot download {url}: {}; nothing was installed",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output.stdout)
}

/// `npm pack SPEC` into a scratch directory: the tarball's bytes and what npm says of it.
fn npm_pack(spec: &str, scratch: &Path) -> Result<(Vec<u8>, serde_json::Value), CliError> {
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let output = Command::new(npm)
        .args(["pack", "--json", "--ignore-scripts"])
        .arg("--pack-destination")
        .arg(scratch)
        .arg("--")
        .arg(spec)
        .current_dir(scratch)
        .output()
        .map_err(|e| {
            CliError::Failure(format!(
                "cannot run npm to fetch {spec}: {e} (npm: sources need npm on PATH)"
            ))
        })?;
    if !output.status.success() {
        return Err(npm_failure(spec, &output));
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        CliError::Failure(format!(
            "npm pack {spec} printed something that is not JSON: {e}"
        ))
    })?;
    let entry = report
        .get(0)
        .cloned()
        .ok_or_else(|| CliError::Failure(format!("npm pack {spec} reported no package")))?;
    let file = entry["filename"].as_str().unwrap_or_default();
    // npm's own name for the tarball it wrote (`@t/x` 1.0.0 → `t-x-1.0.0.tgz`).
    let bytes = read_capped(&scratch.join(file))?;
    let integrity = entry["integrity"].as_str().unwrap_or_default();
    let actual = sha512_integrity(&bytes);
    if integrity != actual {
        return Err(CliError::Failure(format!(
            "npm:{spec}: integrity mismatch: the registry says {integrity}, the tarball is {actual}; nothing was installed"
        )));
    }
    Ok((bytes, entry))
}

/// Why `npm pack` failed: the error it reports as JSON on stdout (`--json`), else its stderr.
fn npm_failure(spec: &str, output: &std::process::Output) -> CliError {
    let reported: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let error = &reported["error"];
    let code = error["code"].as_str().unwrap_or_default();
    let cause = match error["summary"].as_str() {
        Some(summary) if !summary.is_empty() => summary.to_owned(),
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            stderr
                .lines()
                .filter(|line| line.starts_with("npm error") || line.starts_with("npm ERR"))
                .take(3)
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    let what = match code {
        "EINTEGRITY" => {
            "integrity mismatch: the tarball is not what the registry's dist.integrity says"
        }
        "E404" | "ETARGET" => "no such package or version in the registry",
        "ECONNREFUSED" | "ENOTFOUND" | "ETIMEDOUT" | "EAI_AGAIN" | "ECONNRESET" => {
            "the registry is unreachable"
        }
        _ if cause.contains("integrity") => {
            "integrity mismatch: the tarball is not what the registry's dist.integrity says"
        }
        _ => "npm could not fetch it",
    };
    CliError::Failure(format!(
        "npm:{spec}: {what} ({}{cause}); nothing was installed",
        if code.is_empty() {
            String::new()
        } else {
            format!("{code}: ")
        }
    ))
}

fn fetch_npm(spec: &str, triple: &str) -> Result<Fetched, CliError> {
    let scratch = tempfile::tempdir()
        .map_err(|e| CliError::Failure(format!("cannot create a scratch directory: {e}")))?;
    let (main, entry) = npm_pack(spec, scratch.path())?;
    let shown = format!("npm:{spec}");
    let files = unpack_tar_gz(&shown, &main, "package")?;
    let manifest = manifest_from(&shown, &files, "")?;
    let platform = manifest
        .platforms
        .get(triple)
        .ok_or_else(|| no_library(&shown, &manifest, triple))?;
    let version = entry["version"]
        .as_str()
        .unwrap_or(&manifest.version)
        .to_owned();
    let (platform_tarball, _) =
        npm_pack(&format!("{}@{version}", platform.package), scratch.path())?;
    let platform_files = unpack_tar_gz(&platform.package, &platform_tarball, "package")?;
    let library = platform_files
        .iter()
        .find(|(path, _)| *path == platform.library)
        .map(|(_, bytes)| bytes.clone())
        .ok_or_else(|| {
            CliError::Failure(format!(
                "{}@{version}: no {} in the package; nothing was installed",
                platform.package, platform.library
            ))
        })?;
    let signature = signature_in(&platform_files, &format!("{}.minisig", platform.library))?;
    Ok(Fetched {
        library_name: platform.library.clone(),
        library,
        signature,
        integrity: entry["integrity"].as_str().unwrap_or_default().to_owned(),
        manifest,
    })
}

fn signature_in(files: &[(String, Vec<u8>)], name: &str) -> Result<Option<String>, CliError> {
    files
        .iter()
        .find(|(path, _)| path == name)
        .map(|(_, bytes)| {
            String::from_utf8(bytes.clone()).map_err(|_| {
                CliError::Failure(format!("{name} is not text; nothing was installed"))
            })
        })
        .transpose()
}

fn no_library(shown: &str, manifest: &ToolManifest, triple: &str) -> CliError {
    let has: Vec<&str> = manifest.platforms.keys().map(String::as_str).collect();
    CliError::Failure(format!(
        "{shown}: no library for this platform ({triple}); it has: {}; nothing was installed",
        if has.is_empty() {
            "none".to_owned()
        } else {
            has.join(", ")
        }
    ))
}

/// Parse `xcsh-tool.json` at `prefix` in `files`.
fn manifest_from(
    shown: &str,
    files: &[(String, Vec<u8>)],
    prefix: &str,
) -> Result<ToolManifest, CliError> {
    let name = format!("{prefix}{TOOL_MANIFEST}");
    let bytes = files
        .iter()
        .find(|(path, _)| *path == name)
        .map(|(_, bytes)| bytes)
        .ok_or_else(|| {
            CliError::Failure(format!(
                "{shown}: no {TOOL_MANIFEST} in it: not a tool packed by `xcsh-plugins pack`; nothing was installed"
            ))
        })?;
    let manifest: ToolManifest = serde_json::from_slice(bytes).map_err(|e| {
        CliError::Failure(format!(
            "{shown}: {TOOL_MANIFEST} is not valid ({e}); nothing was installed"
        ))
    })?;
    check_plugin_name(shown, &manifest.plugin)?;
    Ok(manifest)
}

/// The plugin's name becomes a folder name: keep it to one plain path component.
fn check_plugin_name(shown: &str, name: &str) -> Result<(), CliError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(CliError::Failure(format!(
            "{shown}: the plugin name {name:?} is not a plain name; nothing was installed"
        )))
    }
}

/// Whether `path` (an archive entry's name, `/`-separated) stays inside its folder.
fn safe_entry(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains(':')
        && path.split('/').all(|part| part != ".." && part != ".")
}

/// The regular files of a gzipped tar, each under `top/` (stripped), refusing any entry that
/// is not a file or directory, escapes, or would unpack past the cap.
pub fn unpack_tar_gz(
    shown: &str,
    bytes: &[u8],
    top: &str,
) -> Result<Vec<(String, Vec<u8>)>, CliError> {
    let refuse =
        |cause: String| CliError::Failure(format!("{shown}: {cause}; nothing was installed"));
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut files = Vec::new();
    let mut total: u64 = 0;
    let entries = archive
        .entries()
        .map_err(|e| refuse(format!("not a gzipped tar ({e})")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| refuse(format!("a damaged archive ({e})")))?;
        let raw = entry.path_bytes();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if !safe_entry(name.trim_end_matches('/')) {
            return Err(refuse(format!("the entry {name:?} escapes its folder")));
        }
        let Some(inside) = name.strip_prefix(&format!("{top}/")) else {
            return Err(refuse(format!("the entry {name:?} is outside {top}/")));
        };
        match kind {
            tar::EntryType::Directory => continue,
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            // pax and GNU long-name headers are read by the tar crate itself.
            other => {
                return Err(refuse(format!(
                    "the entry {name:?} is a {other:?}, not a file (links are refused)"
                )))
            }
        }
        total = total.saturating_add(entry.size());
        if total > SIZE_CAP {
            return Err(refuse(format!(
                "over the {SIZE_CAP}-byte cap once unpacked"
            )));
        }
        let mut content = Vec::with_capacity(entry.size().min(SIZE_CAP) as usize);
        (&mut entry)
            .take(SIZE_CAP + 1)
            .read_to_end(&mut content)
            .map_err(|e| refuse(format!("cannot read {name:?} ({e})")))?;
        files.push((inside.to_owned(), content));
    }
    Ok(files)
}

fn from_archive(shown: &str, bytes: &[u8], triple: &str) -> Result<Fetched, CliError> {
    // The archive's one top folder is NAME.xcsh-plugin.
    let refuse =
        |cause: String| CliError::Failure(format!("{shown}: {cause}; nothing was installed"));
    let mut probe = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let top = probe
        .entries()
        .map_err(|e| refuse(format!("not a gzipped tar ({e})")))?
        .next()
        .and_then(Result::ok)
        .map(|entry| {
            String::from_utf8_lossy(&entry.path_bytes())
                .split('/')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default();
    if !top.ends_with(PLUGIN_FOLDER_SUFFIX) {
        return Err(refuse(format!(
            "not a plugin folder archive (its top folder is {top:?}, not NAME{PLUGIN_FOLDER_SUFFIX})"
        )));
    }
    let files = unpack_tar_gz(shown, bytes, &top)?;
    library_in(shown, &files, triple, &format!("{triple}/"))
}

/// This platform's library (and its signature) at `PREFIX/LIBRARY` among `files`, with the
/// manifest that names it.
fn library_in(
    shown: &str,
    files: &[(String, Vec<u8>)],
    triple: &str,
    prefix: &str,
) -> Result<Fetched, CliError> {
    let manifest = manifest_from(shown, files, "")?;
    let platform = manifest
        .platforms
        .get(triple)
        .ok_or_else(|| no_library(shown, &manifest, triple))?;
    let path = format!("{prefix}{}", platform.library);
    let library = files
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, b)| b.clone())
        .ok_or_else(|| {
            CliError::Failure(format!(
                "{shown}: no library for this platform ({triple}) in it (no {path}); nothing was installed"
            ))
        })?;
    Ok(Fetched {
        library_name: platform.library.clone(),
        library,
        signature: signature_in(files, &format!("{path}.minisig"))?,
        integrity: String::new(),
        manifest,
    })
}

fn from_bundle(shown: &str, bytes: &[u8], triple: &str) -> Result<Fetched, CliError> {
    let refuse =
        |cause: String| CliError::Failure(format!("{shown}: {cause}; nothing was installed"));
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| refuse(format!("not a zip (.mcpb) ({e})")))?;
    let mut files = Vec::new();
    let mut total: u64 = 0;
    for index in 0..zip.len() {
        let mut file = zip
            .by_index(index)
            .map_err(|e| refuse(format!("a damaged bundle ({e})")))?;
        let name = file
            .name()
            .map(|name| name.into_owned())
            .map_err(|e| refuse(format!("an entry whose name cannot be read ({e})")))?;
        if file.is_dir() {
            continue;
        }
        if !safe_entry(&name) || file.enclosed_name().is_none() || file.is_symlink() {
            return Err(refuse(format!("the entry {name:?} escapes the bundle")));
        }
        total = total.saturating_add(file.size());
        if total > SIZE_CAP {
            return Err(refuse(format!(
                "over the {SIZE_CAP}-byte cap once unpacked"
            )));
        }
        let mut content = Vec::new();
        (&mut file)
            .take(SIZE_CAP + 1)
            .read_to_end(&mut content)
            .map_err(|e| refuse(format!("cannot read {name:?} ({e})")))?;
        files.push((name, content));
    }
    // A bundle carries one platform's library, under `plugin/TRIPLE/`.
    library_in(shown, &files, triple, &format!("plugin/{triple}/"))
}

fn from_folder(folder: &Path, triple: &str) -> Result<Fetched, CliError> {
    let shown = folder.display().to_string();
    let manifest_bytes = std::fs::read(folder.join(TOOL_MANIFEST)).map_err(|_| {
        CliError::Failure(format!(
            "{shown}: no {TOOL_MANIFEST} in it: install takes a folder `xcsh-plugins pack` \
             wrote (install its .xcsh-plugin.tar.gz), or load the folder with --plugin; nothing was installed"
        ))
    })?;
    let files = vec![(TOOL_MANIFEST.to_owned(), manifest_bytes)];
    let manifest = manifest_from(&shown, &files, "")?;
    let platform = manifest
        .platforms
        .get(triple)
        .ok_or_else(|| no_library(&shown, &manifest, triple))?;
    let path = folder.join(triple).join(&platform.library);
    let library = read_capped(&path)?;
    let signature = std::fs::read_to_string(
        folder
            .join(triple)
            .join(format!("{}.minisig", platform.library)),
    )
    .ok();
    Ok(Fetched {
        library_name: platform.library.clone(),
        integrity: format!("sha256:{}", sha256_hex(&library)),
        library,
        signature,
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse() {
        assert_eq!(
            Source::parse("npm:@t/x@^1").unwrap(),
            Source::Npm("@t/x@^1".into())
        );
        assert!(matches!(
            Source::parse("https://h/x.mcpb").unwrap(),
            Source::Url(_)
        ));
        assert!(Source::parse("http://h/x.mcpb").is_err());
        assert!(matches!(
            Source::parse("x-1.0.0.xcsh-plugin.tar.gz").unwrap(),
            Source::Archive(_)
        ));
        assert!(matches!(
            Source::parse("x.mcpb").unwrap(),
            Source::Bundle(_)
        ));
        assert!(Source::parse("whatever").is_err());
    }

    #[test]
    fn escaping_entries_are_refused() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "a\\..\\x", "C:x", "./a"] {
            assert!(!safe_entry(bad), "{bad}");
        }
        assert!(safe_entry("x.xcsh-plugin/x86_64-unknown-linux-gnu/libx.so"));
    }

    #[test]
    fn integrity_is_npms_format() {
        // `printf '' | openssl dgst -sha512 -binary | base64`
        assert_eq!(
            sha512_integrity(b""),
            "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
        );
    }
}
