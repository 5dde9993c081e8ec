//! `.mcpb` bundles (MCP Bundles, manifest 0.4) for Claude Desktop: one per OS and architecture
//! (the manifest's `platform_overrides` are keyed by OS only, so one bundle cannot carry an
//! x64 and an arm64 server for the same OS).
//!
//! A bundle is a zip holding `manifest.json`, the lean `xcsh-plugins` (no compiled-in tools)
//! that serves the tool (`server.type: "binary"`), the `xcsh-plugin-host` its plugin process
//! runs in, and the platform's library (`plugin/TRIPLE/LIB`). The session's working directory
//! is a `user_config` directory the user picks when installing the bundle.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::files::FileSet;
use super::platforms::{self, Platform};
use super::{PackedLibrary, PackedTool};
use crate::error::CliError;

/// The MCPB manifest version written.
pub const MANIFEST_VERSION: &str = "0.4";

/// A platform's server programs: the CLI that serves MCP and the plugin host.
#[derive(Debug)]
pub struct ServerPrograms {
    pub cli: Vec<u8>,
    pub host: Vec<u8>,
}

/// `NAME-VERSION-OS-CPU.mcpb`.
pub fn file_name(plugin: &str, version: &str, platform: &Platform) -> String {
    format!("{plugin}-{version}-{}-{}.mcpb", platform.os, platform.cpu)
}

/// The directories that may hold `platform`'s programs in `dir`.
fn candidates(dir: &Path, platform: &Platform) -> Vec<PathBuf> {
    vec![
        dir.join(format!("native-plugins-{}", platform.npm_key)),
        dir.join(platform.triple),
        dir.to_owned(),
    ]
}

/// Find `platform`'s `xcsh-plugins` and `xcsh-plugin-host`: in `--binaries` directories, or
/// for this host beside this program. The reason when there are none.
pub fn server_programs(
    platform: &Platform,
    binaries: &[PathBuf],
) -> Result<ServerPrograms, String> {
    let exe = platform.exe_suffix;
    let mut dirs: Vec<PathBuf> = binaries
        .iter()
        .flat_map(|dir| candidates(dir, platform))
        .collect();
    let here = platforms::host().is_some_and(|host| host == platform);
    if here {
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            dirs.push(dir);
        }
    }
    for dir in &dirs {
        // A directory of another platform's programs must say it is one (a package's
        // manifest), except the --binaries directory of this very platform.
        let cli = dir.join(format!("xcsh-plugins{exe}"));
        let host = dir.join(format!("xcsh-plugin-host{exe}"));
        if !(cli.is_file() && host.is_file()) {
            continue;
        }
        if !here && !is_for(dir, platform) {
            continue;
        }
        let read = |path: &Path| {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        return Ok(ServerPrograms {
            cli: read(&cli)?,
            host: read(&host)?,
        });
    }
    Err(format!(
        "no xcsh-plugins and xcsh-plugin-host for {} (pass --binaries DIR: a directory of \
         @xcsh/native-plugins platform packages, as .ci/dist writes to target/dist/npm)",
        platform.triple
    ))
}

/// Whether `dir` is a platform package for `platform` (its `package.json` says so).
fn is_for(dir: &Path, platform: &Platform) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
        return dir.file_name().is_some_and(|name| name == platform.triple);
    };
    let Ok(manifest) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    manifest["os"][0] == platform.os && manifest["cpu"][0] == platform.cpu
}

/// `"Name <email>"` as MCPB's `author` object.
fn author(text: &str) -> Value {
    match text.split_once('<') {
        Some((name, rest)) => {
            json!({"name": name.trim(), "email": rest.trim_end_matches('>').trim()})
        }
        None => json!({"name": text.trim()}),
    }
}

/// The bundle for one platform.
pub fn bundle(
    packed: &PackedTool,
    library: &PackedLibrary,
    server: &ServerPrograms,
    signature: Option<String>,
) -> Result<FileSet, CliError> {
    let info = &packed.info;
    let platform = library.platform;
    let exe = platform.exe_suffix;
    let cli = format!("server/xcsh-plugins{exe}");
    let mut manifest = serde_json::Map::new();
    manifest.insert("manifest_version".into(), json!(MANIFEST_VERSION));
    manifest.insert("name".into(), json!(packed.plugin));
    manifest.insert("display_name".into(), json!(packed.plugin));
    manifest.insert("version".into(), json!(info.version));
    manifest.insert("description".into(), json!(info.description));
    manifest.insert("author".into(), author(&info.author));
    if let Some(license) = &info.license {
        manifest.insert("license".into(), json!(license));
    }
    if let Some(repository) = &info.repository {
        manifest.insert(
            "repository".into(),
            json!({"type": "git", "url": repository}),
        );
    }
    if let Some(homepage) = &info.homepage {
        manifest.insert("homepage".into(), json!(homepage));
    }
    manifest.insert(
        "server".into(),
        json!({
            "type": "binary",
            "entry_point": cli,
            "mcp_config": {
                "command": format!("${{__dirname}}/{cli}"),
                "args": [
                    "mcp",
                    "--no-default-dirs",
                    "--no-builtins",
                    "--plugin",
                    format!("${{__dirname}}/plugin/{}/{}", platform.triple, library.file_name),
                    "--cwd",
                    "${user_config.workdir}"
                ],
                "env": {}
            }
        }),
    );
    manifest.insert(
        "tools".into(),
        Value::Array(
            packed
                .tools
                .iter()
                .map(|tool| json!({"name": tool.name, "description": tool.description}))
                .collect(),
        ),
    );
    manifest.insert("compatibility".into(), json!({"platforms": [platform.os]}));
    manifest.insert(
        "user_config".into(),
        json!({
            "workdir": {
                "type": "directory",
                "title": "Working directory",
                "description": "The directory the tool works in: its paths resolve there, and its plugin process may write only there.",
                "required": true
            }
        }),
    );
    let mut set = FileSet::default();
    let mut text = serde_json::to_string_pretty(&Value::Object(manifest))
        .map_err(|e| CliError::Failure(e.to_string()))?;
    text.push('\n');
    set.add("manifest.json", text, false);
    set.add(
        super::TOOL_MANIFEST,
        serde_json::to_vec_pretty(&packed.manifest())
            .map_err(|e| CliError::Failure(e.to_string()))?,
        false,
    );
    set.add(cli, server.cli.clone(), true);
    set.add(
        format!("server/xcsh-plugin-host{exe}"),
        server.host.clone(),
        true,
    );
    // Under its triple: an installer of the bundle tells an x64 library from an arm64 one.
    let library_path = format!("plugin/{}/{}", platform.triple, library.file_name);
    set.add(library_path.clone(), library.bytes.clone(), false);
    if let Some(signature) = signature {
        set.add(format!("{library_path}.minisig"), signature, false);
    }
    Ok(set)
}

/// Sign the bundle at `path` with MCPB's own scheme (a PKCS#7 signature appended to the zip,
/// what Claude Desktop checks) through the MCPB CLI: `$XCSH_MCPB`, else `mcpb` on PATH.
pub fn sign(path: &Path, cert: &Path, key: &Path) -> Result<(), CliError> {
    let program = std::env::var_os("XCSH_MCPB").unwrap_or_else(|| "mcpb".into());
    let output = std::process::Command::new(&program)
        .arg("sign")
        .arg(path)
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key)
        .output()
        .map_err(|e| {
            CliError::Failure(format!(
                "cannot run {} to sign {}: {e} (install the MCPB CLI: npm install -g \
                 @anthropic-ai/mcpb, or set XCSH_MCPB)",
                program.to_string_lossy(),
                path.display()
            ))
        })?;
    if !output.status.success() {
        return Err(CliError::Failure(format!(
            "mcpb sign {} failed: {}{}",
            path.display(),
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authors_become_objects() {
        assert_eq!(
            author("Ada <ada@x.org>"),
            json!({"name": "Ada", "email": "ada@x.org"})
        );
        assert_eq!(author("Ada"), json!({"name": "Ada"}));
    }
}
