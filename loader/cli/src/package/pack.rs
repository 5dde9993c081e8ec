//! `xcsh-plugins pack FOLDER`: one native tool, from its `NAME.xcsh-plugin/` folder, as every
//! host's installer takes it (docs/guide/src/ship.md):
//!
//! - npm: a main package (`omp` manifest for xcsh's runtime, a `bin` serving the tool over MCP
//!   for `npx -y`, and our own `xcsh` manifest) depending on the `@xcsh/native-plugins` version
//!   this CLI belongs to, with one optional package per platform holding that platform's
//!   library ([`super::npm`]);
//! - `.mcpb` bundles for Claude Desktop, one per OS and architecture whose server programs are
//!   at hand ([`super::mcpb`]);
//! - the folder itself as `NAME-VERSION.xcsh-plugin.tar.gz` (for `xcsh-plugins install`).
//!
//! Everything is built in memory and checked before the first file is written, so a refusal
//! (a missing `author`, a folder with no library for this host to list the tools from) writes
//! nothing.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;
use xcsh_loader::plugin_folder::{is_plugin_folder, platform_libraries, PLUGIN_FOLDER_SUFFIX};

use super::crate_info;
use super::files::{write_atomic, FileSet};
use super::platforms::{self, Platform};
use super::sign::SigningKey;
use super::{mcpb, npm, PackedLibrary, PackedTool, ToolSummary};
use crate::cli::JsonArg;
use crate::error::CliError;

#[derive(Debug, Args)]
pub struct PackArgs {
    /// The tool's multi-platform folder (`dist/NAME.xcsh-plugin`, what build-plugin.sh writes).
    #[arg(value_name = "FOLDER")]
    pub folder: PathBuf,
    /// Where to write the packages, bundles and archive (default: the folder's parent).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The tool crate's Cargo.toml (default: the first found above the folder).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Where the MCP server programs for other platforms are, for their `.mcpb` bundles: a
    /// directory of `@xcsh/native-plugins` platform packages (`.ci/dist`'s `target/dist/npm`,
    /// or an unpacked `node_modules/@xcsh`), each holding `xcsh-plugins` and
    /// `xcsh-plugin-host`. This host's come from beside this program otherwise.
    #[arg(long, value_name = "DIR")]
    pub binaries: Vec<PathBuf>,
    /// Sign the libraries with this minisign secret key (`xcsh-plugins keygen` writes one);
    /// its password from $XCSH_SIGN_PASSWORD, or none.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// Sign the .mcpb bundles with MCPB's own scheme (what Claude Desktop checks): this
    /// certificate (PEM), with --mcpb-key, through the MCPB CLI (`mcpb sign`; $XCSH_MCPB, or
    /// `mcpb` on PATH: `npm install -g @anthropic-ai/mcpb`).
    #[arg(long, value_name = "PEM", requires = "mcpb_key")]
    pub mcpb_cert: Option<PathBuf>,
    /// The certificate's private key (PEM), for --mcpb-cert.
    #[arg(long, value_name = "PEM", requires = "mcpb_cert")]
    pub mcpb_key: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

/// What `pack` wrote.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackReport {
    pub name: String,
    pub version: String,
    pub npm_name: String,
    pub tools: Vec<String>,
    pub platforms: Vec<String>,
    /// The binding version the main package depends on.
    pub binding_version: String,
    /// The publisher key the libraries are signed with (minisign public key), if signed.
    pub publisher_key: Option<String>,
    /// Where the npm tarballs are (`OUT/npm`).
    pub npm_dir: String,
    pub written: Vec<Written>,
    /// Bundles not written, and why.
    pub skipped: Vec<String>,
}

/// One file `pack` wrote.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Written {
    pub kind: &'static str,
    pub path: String,
    pub bytes: u64,
}

impl crate::report::Report for PackReport {
    fn failed(&self) -> bool {
        false
    }
}

impl crate::output::Text for PackReport {
    fn write_text(&self, to: &mut crate::output::Streams<'_>) -> std::io::Result<()> {
        writeln!(
            to.out,
            "packed {} {} ({}): tools {}; platforms {}",
            self.name,
            self.version,
            self.npm_name,
            self.tools.join(", "),
            self.platforms.join(", ")
        )?;
        if let Some(key) = &self.publisher_key {
            writeln!(to.out, "signed by publisher key {key}")?;
        }
        for file in &self.written {
            writeln!(
                to.out,
                "  {:<16} {} ({} bytes)",
                file.kind, file.path, file.bytes
            )?;
        }
        for skipped in &self.skipped {
            writeln!(to.out, "  skipped: {skipped}")?;
        }
        writeln!(
            to.out,
            "publish the npm packages, platforms first, with: for f in {}/npm/*.tgz; do npm publish \"$f\" --access public; done",
            self.npm_dir
        )?;
        Ok(())
    }
}

/// Run `pack`.
pub fn run(args: PackArgs) -> Result<PackReport, CliError> {
    let folder = dunce::canonicalize(&args.folder)
        .map_err(|e| CliError::Usage(format!("{}: {e}", args.folder.display())))?;
    if !folder.is_dir() || !is_plugin_folder(&folder) {
        return Err(CliError::Usage(format!(
            "{}: not a plugin folder (a directory named NAME{PLUGIN_FOLDER_SUFFIX} with one \
             subfolder per target triple; build-plugin.sh writes one)",
            folder.display()
        )));
    }
    let plugin = folder
        .file_name()
        .map(|name| name.to_string_lossy())
        .and_then(|name| name.strip_suffix(PLUGIN_FOLDER_SUFFIX).map(str::to_owned))
        .unwrap_or_default();
    let manifest = crate_info::find_manifest(&folder, args.manifest_path.as_deref())?;
    let info = crate_info::read(&manifest)?;
    let libraries = libraries_of(&folder)?;
    let tools = tool_summaries(&folder)?;
    let key = match &args.sign {
        Some(path) => Some(SigningKey::read(path)?),
        None => None,
    };
    let packed = PackedTool {
        plugin: plugin.clone(),
        info: info.clone(),
        tools: tools.clone(),
        libraries,
        binding_version: npm::BINDING_VERSION.to_owned(),
        publisher_key: key.as_ref().map(SigningKey::public_key),
    };
    let signatures = match &key {
        Some(key) => packed
            .libraries
            .iter()
            .map(|library| {
                key.sign(&library.bytes, &library.file_name)
                    .map(|s| (library.platform.triple, s))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let signature_of = |triple: &str| {
        signatures
            .iter()
            .find(|(t, _)| *t == triple)
            .map(|(_, signature)| signature.clone())
    };

    // Everything in memory first.
    let mut outputs: Vec<(&'static str, PathBuf, Vec<u8>)> = Vec::new();
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => folder.parent().unwrap_or(Path::new(".")).to_owned(),
    };
    let npm_dir = out.join("npm");
    for library in &packed.libraries {
        let set = npm::platform_package(&packed, library, signature_of(library.platform.triple));
        let tarball = npm_dir.join(npm::tarball_name(
            &npm::platform_package_name(&packed.info, library.platform),
            &info.version,
        ));
        outputs.push(("npm platform", tarball, set.tar_gz("package")?));
    }
    let main = npm::main_package(&packed)?;
    outputs.push((
        "npm main",
        npm_dir.join(npm::tarball_name(&info.npm_name, &info.version)),
        main.tar_gz("package")?,
    ));
    let mut skipped = Vec::new();
    for library in &packed.libraries {
        match mcpb::server_programs(library.platform, &args.binaries) {
            Ok(server) => {
                let bundle = mcpb::bundle(
                    &packed,
                    library,
                    &server,
                    signature_of(library.platform.triple),
                )?;
                let name = mcpb::file_name(&plugin, &info.version, library.platform);
                outputs.push(("mcpb", out.join(name), bundle.zip()?));
            }
            Err(why) => skipped.push(format!("the .mcpb for {}: {why}", library.platform.triple)),
        }
    }
    let folder_archive = folder_archive(&packed, &signatures)?;
    outputs.push((
        "folder archive",
        out.join(format!(
            "{plugin}-{}{PLUGIN_FOLDER_SUFFIX}.tar.gz",
            info.version
        )),
        folder_archive.tar_gz(&format!("{plugin}{PLUGIN_FOLDER_SUFFIX}"))?,
    ));

    // Then the files.
    let mut written = Vec::new();
    std::fs::create_dir_all(&npm_dir)
        .map_err(|e| CliError::Failure(format!("cannot create {}: {e}", npm_dir.display())))?;
    for (kind, path, bytes) in &outputs {
        write_atomic(path, bytes)
            .map_err(|e| CliError::Failure(format!("cannot write {}: {e}", path.display())))?;
        let mut size = bytes.len() as u64;
        if *kind == "mcpb" {
            if let (Some(cert), Some(key)) = (&args.mcpb_cert, &args.mcpb_key) {
                mcpb::sign(path, cert, key)?;
                size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(size);
            }
        }
        written.push(Written {
            kind,
            path: path.display().to_string(),
            bytes: size,
        });
    }
    Ok(PackReport {
        name: plugin,
        version: info.version.clone(),
        npm_name: info.npm_name.clone(),
        tools: tools.iter().map(|tool| tool.name.clone()).collect(),
        platforms: packed
            .libraries
            .iter()
            .map(|library| library.platform.triple.to_owned())
            .collect(),
        binding_version: packed.binding_version.clone(),
        publisher_key: packed.publisher_key.clone(),
        npm_dir: npm_dir.display().to_string(),
        written,
        skipped,
    })
}

/// Each platform library of the folder, read; a subfolder that is not a platform xcsh ships
/// for is refused (it would be packed for no one).
fn libraries_of(folder: &Path) -> Result<Vec<PackedLibrary>, CliError> {
    let found = platform_libraries(folder).map_err(|e| CliError::Failure(e.to_string()))?;
    if found.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no library in any platform subfolder; build it first (./build-plugin.sh)",
            folder.display()
        )));
    }
    found
        .into_iter()
        .map(|library| {
            let platform: &'static Platform =
                platforms::by_triple(&library.target).ok_or_else(|| {
                    CliError::Usage(format!(
                        "{}: {}/ is not a platform xcsh ships for (the platforms: {})",
                        folder.display(),
                        library.target,
                        platforms::PLATFORMS
                            .iter()
                            .map(|p| p.triple)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            let bytes = std::fs::read(&library.path).map_err(|e| {
                CliError::Failure(format!("cannot read {}: {e}", library.path.display()))
            })?;
            let file_name = library
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(PackedLibrary {
                platform,
                file_name,
                bytes,
            })
        })
        .collect()
}

/// The tools the folder's library for this host offers, learnt by loading it (in a plugin
/// process, as any load): a folder that does not load is not packed.
pub fn tool_summaries(folder: &Path) -> Result<Vec<ToolSummary>, CliError> {
    let scratch = tempfile::tempdir()
        .map_err(|e| CliError::Failure(format!("cannot create a scratch directory: {e}")))?;
    let session = xcsh_loader::Session::builder(scratch.path())
        .default_dirs(false)
        .definitions_cache(false)
        .plugin(folder)
        .build();
    if let Some(error) = session.load_errors().first() {
        return Err(CliError::Failure(format!(
            "{}: the tool does not load on this host, so its tools cannot be listed: {error}",
            folder.display()
        )));
    }
    let tools: Vec<ToolSummary> = session
        .tools()
        .into_iter()
        .filter(|spec| spec.name != xcsh_loader::RESOLVE_TOOL_NAME)
        .map(|spec| ToolSummary {
            name: spec.name,
            label: spec.label,
            description: spec.description,
            deferrable: spec.deferrable,
        })
        .collect();
    if tools.is_empty() {
        return Err(CliError::Failure(format!(
            "{}: the plugin offers no tool; nothing to pack",
            folder.display()
        )));
    }
    Ok(tools)
}

/// The folder as `xcsh-plugins install` takes it: each platform's library (and signature),
/// and the package manifest (`xcsh-tool.json`).
fn folder_archive(
    packed: &PackedTool,
    signatures: &[(&'static str, String)],
) -> Result<FileSet, CliError> {
    let mut set = FileSet::default();
    for library in &packed.libraries {
        let triple = library.platform.triple;
        set.add(
            format!("{triple}/{}", library.file_name),
            library.bytes.clone(),
            false,
        );
        if let Some((_, signature)) = signatures.iter().find(|(t, _)| *t == triple) {
            set.add(
                format!("{triple}/{}.minisig", library.file_name),
                signature.clone().into_bytes(),
                false,
            );
        }
    }
    set.add(
        super::TOOL_MANIFEST,
        serde_json::to_vec_pretty(&packed.manifest())
            .map_err(|e| CliError::Failure(e.to_string()))?,
        false,
    );
    Ok(set)
}
