//! Packing a native tool for every host's installer, and installing one (docs/guide/src/ship.md).
//!
//! - [`pack`]: `xcsh-plugins pack FOLDER`, from a `NAME.xcsh-plugin/` folder to npm packages,
//!   `.mcpb` bundles and a folder archive;
//! - [`install`]: `xcsh-plugins install SOURCE`, `update`, `remove`, `list --installed`.
//!
//! One manifest, [`ToolManifest`] (`xcsh-tool.json`), travels in every form: it names the tool,
//! its version, its tools, the library of each platform and the publisher key that signed
//! them, so an installer knows what it got without loading anything.

pub mod crate_info;
pub mod files;
pub mod install;
pub mod mcpb;
pub mod npm;
pub mod pack;
pub mod platforms;
pub mod sign;
pub mod source;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate_info::CrateInfo;
use platforms::Platform;

/// The manifest's file name, at the root of a main npm package and of a folder archive.
pub const TOOL_MANIFEST: &str = "xcsh-tool.json";

/// One tool of a packed plugin, as its manifest lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolSummary {
    pub name: String,
    pub label: String,
    pub description: String,
    pub deferrable: bool,
}

/// One platform's library, read into memory.
#[derive(Debug, Clone)]
pub struct PackedLibrary {
    pub platform: &'static Platform,
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Everything `pack` knows about the tool it packs.
#[derive(Debug, Clone)]
pub struct PackedTool {
    /// The folder's name without `.xcsh-plugin`: the installed folder's name.
    pub plugin: String,
    pub info: CrateInfo,
    pub tools: Vec<ToolSummary>,
    pub libraries: Vec<PackedLibrary>,
    /// The `@xcsh/native-plugins` version the npm package depends on.
    pub binding_version: String,
    /// The minisign public key (its base64 line) the libraries are signed with.
    pub publisher_key: Option<String>,
}

/// `xcsh-tool.json`: what a packed tool is, in every form it ships in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ToolManifest {
    /// Always 1 for this layout.
    pub manifest_version: u32,
    /// The plugin's name (its installed folder is `NAME.xcsh-plugin`).
    pub plugin: String,
    pub version: String,
    pub description: String,
    pub author: String,
    /// The main npm package's name.
    pub npm_name: String,
    pub tools: Vec<ToolSummary>,
    /// Per target triple: the library's file name and the npm package that carries it.
    pub platforms: BTreeMap<String, ManifestPlatform>,
    /// The binding version the npm package was packed against.
    pub binding: String,
    /// The publisher's minisign public key, when the libraries are signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher_key: Option<String>,
}

/// One platform in [`ToolManifest::platforms`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ManifestPlatform {
    pub library: String,
    pub package: String,
}

impl PackedTool {
    /// The manifest that ships with every form of this tool.
    pub fn manifest(&self) -> ToolManifest {
        ToolManifest {
            manifest_version: 1,
            plugin: self.plugin.clone(),
            version: self.info.version.clone(),
            description: self.info.description.clone(),
            author: self.info.author.clone(),
            npm_name: self.info.npm_name.clone(),
            tools: self.tools.clone(),
            platforms: self
                .libraries
                .iter()
                .map(|library| {
                    (
                        library.platform.triple.to_owned(),
                        ManifestPlatform {
                            library: library.file_name.clone(),
                            package: npm::platform_package_name(&self.info, library.platform),
                        },
                    )
                })
                .collect(),
            binding: self.binding_version.clone(),
            publisher_key: self.publisher_key.clone(),
        }
    }
}
