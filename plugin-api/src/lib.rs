//! Write tools for the xcsh coding agent in Rust and ship them as native plugins.
//!
//! A plugin is a `cdylib` crate that implements [`CustomTool`] for each tool, returns them from
//! a factory, and exports the factory with one [`export_plugin!`] line. The host
//! (`xcsh-loader`, or its command-line host `xcsh-plugins`) loads the `.so`/`.dylib`, checks
//! that it was built against a compatible version of this crate, and calls the factory with a
//! [`CustomToolApi`].
//!
//! Tools that preview a high-impact change push a [`CustomToolPendingAction`]; nothing is
//! committed until the model calls the hidden `resolve` tool, which runs the action's `apply`
//! (or its `reject`), newest first.
//!
//! No `unsafe` is needed: everything crossing the ABI is handled here, panics in plugin code
//! become errors, and plugin code may use tokio freely.
//!
//! # Example: the seed's batch rename, previewed then resolved
//!
//! ```
//! use serde::Deserialize;
//! use schemars::JsonSchema;
//! use xcsh_plugin_api::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Params { files: Vec<String> }
//!
//! struct BatchRenamePreview { api: CustomToolApi }
//!
//! impl CustomTool for BatchRenamePreview {
//!     type Params = Params;
//!     fn name(&self) -> &str { "batch_rename_preview" }
//!     fn label(&self) -> &str { "Batch Rename Preview" }
//!     fn description(&self) -> &str { "Previews renames and defers commit to resolve" }
//!     fn deferrable(&self) -> bool { true }
//!
//!     async fn execute(&self, _id: String, params: Params, _ctx: ToolContext)
//!         -> Result<AgentToolResult, PluginError> {
//!         let n = params.files.len();
//!         self.api.push_pending_action(
//!             CustomToolPendingAction::new(format!("Batch rename: {n} files"), |reason| async move {
//!                 // apply writes here
//!                 Ok(AgentToolResult::text(format!("Applied batch rename. Reason: {reason}")))
//!             })
//!             .with_reject(|reason| async move {
//!                 Ok(Some(AgentToolResult::text(format!("Discarded batch rename. Reason: {reason}"))))
//!             })
//!             .with_source_tool_name("batch_rename_preview"),
//!         )?;
//!         Ok(AgentToolResult::text(format!(
//!             "Prepared rename plan for {n} files. Call resolve to apply or discard."
//!         )))
//!     }
//! }
//!
//! fn factory(api: &CustomToolApi) -> Result<BatchRenamePreview, PluginError> {
//!     Ok(BatchRenamePreview { api: api.clone() })
//! }
//!
//! export_plugin!(factory);
//! # fn main() {}
//! ```
//!
//! The plugin's `Cargo.toml` sets `crate-type = ["cdylib"]` and depends on this crate, `serde`
//! (with `derive`) and `schemars`. `xcsh-plugins new NAME` writes such a crate for you.

#![warn(missing_docs)]

mod api;
mod compat;
mod error;
#[doc(hidden)]
pub mod export;
mod guard;
mod pending;
mod result;
mod tool;

/// The stable ABI underneath this crate: the `xcsh-plugin-abi` crate, re-exported. Tool
/// authors never need it; hosts implement its host-side traits. See `ABI.md` for how it grows.
pub mod ffi {
    pub use xcsh_plugin_abi::*;
}

pub use api::{CustomToolApi, Logger};
pub use compat::{
    capabilities_of, Capability, API_VERSION, CAPABILITIES, OLDEST_SUPPORTED_API_VERSION,
};
pub use error::PluginError;
pub use pending::{CustomToolPendingAction, DEFAULT_SOURCE_TOOL_NAME};
pub use result::{AgentToolResult, Content};
pub use tool::{schema_of, CustomTool, ToolContext, ToolSet};

pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize};
pub use serde_json::{self, json, Value};

#[doc(hidden)]
pub mod __private {
    pub use crate::export::{into_tool_set, lib_header, PluginFactory, VERSION_MARKER};
    pub use abi_stable::library::LibHeader;
    pub use xcsh_plugin_abi::VersionMarker;
}

/// Declare a parameter struct that derives `Deserialize` and `JsonSchema` through this crate's
/// re-exports, so a plugin needs no direct `serde` or `schemars` dependency.
///
/// Field attributes (`#[serde(default)]`, doc comments that become schema descriptions) work
/// as usual.
///
/// ```
/// xcsh_plugin_api::tool_params! {
///     /// Arguments of the rename tool.
///     pub struct Params {
///         /// Files to rename.
///         pub files: Vec<String>,
///         /// Optional suffix.
///         #[serde(default)]
///         pub suffix: Option<String>,
///     }
/// }
/// let schema = xcsh_plugin_api::schema_of::<Params>();
/// assert_eq!(schema["required"], serde_json::json!(["files"]));
/// let params: Params = serde_json::from_str(r#"{"files":["a"]}"#).unwrap();
/// assert_eq!(params.files, ["a"]);
/// ```
#[macro_export]
macro_rules! tool_params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($body:tt)* }) => {
        #[derive(Debug, $crate::Deserialize, $crate::JsonSchema)]
        #[serde(crate = "xcsh_plugin_api::serde")]
        #[schemars(crate = "xcsh_plugin_api::schemars")]
        $(#[$meta])*
        $vis struct $name { $($body)* }
    };
}

/// Export a plugin's factory: a function taking `&CustomToolApi` and returning
/// `Result<T, PluginError>` where `T` is one [`CustomTool`] or a [`ToolSet`].
///
/// Write it once per plugin crate, at the crate root. See the crate docs for an example.
#[macro_export]
macro_rules! export_plugin {
    ($factory:path) => {
        #[doc(hidden)]
        pub struct __XcshPluginFactory;

        impl $crate::__private::PluginFactory for __XcshPluginFactory {
            fn create(
                api: &$crate::CustomToolApi,
            ) -> ::core::result::Result<$crate::ToolSet, $crate::PluginError> {
                $crate::__private::into_tool_set($factory(api))
            }
        }

        /// The `xcsh-plugin-api` version this library was built against, as plain bytes the
        /// host reads from the file before loading it (`xcsh_plugin_api::ffi::VERSION_MARKER_SYMBOL`).
        #[doc(hidden)]
        #[export_name = "xcsh_plugin_api_version"]
        #[used]
        pub static __XCSH_PLUGIN_API_VERSION: $crate::__private::VersionMarker =
            $crate::__private::VERSION_MARKER;

        /// The abi_stable root-module header the host looks up by this exact symbol name
        /// (`xcsh_plugin_api::ffi::ROOT_MODULE_SYMBOL`).
        #[doc(hidden)]
        #[export_name = "_1as_0lib_1header_0root_bmodule_bloader"]
        pub static __XCSH_PLUGIN_LIB_HEADER: $crate::__private::LibHeader =
            $crate::__private::lib_header::<__XcshPluginFactory>();
    };
}
