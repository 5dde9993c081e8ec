//! The stable ABI between a host and a plugin library.
//!
//! Everything in this module crosses the `dlopen` boundary, so every type is `#[repr(C)]` and
//! derives [`StableAbi`]: `abi_stable` records its layout in the library, and the host refuses a
//! library whose layout or crate version does not match its own before calling any of it.
//!
//! Tool authors never touch this module; the safe layer ([`crate::CustomTool`],
//! [`crate::CustomToolApi`], [`crate::CustomToolPendingAction`]) converts to and from it. Hosts
//! (such as `xcsh-loader`) implement [`HostApiFfi`] and [`ToolContextFfi`] and call
//! [`PluginModuleRef::create_tools`].
//!
//! Rules every implementation on either side must keep:
//! - no panic may unwind out of a method (abi_stable aborts the process when one does), so the
//!   plugin side catches panics before returning, including inside futures;
//! - JSON travels as UTF-8 text, so neither side depends on the other's `serde_json` build.

#![allow(non_local_definitions)] // sabi_trait generates impls outside the trait's scope.

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RString, RVec},
    StableAbi,
};
use async_ffi::FfiFuture;

/// A tool result as it crosses the boundary. See [`crate::AgentToolResult`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiToolResult {
    /// Content blocks, in order.
    pub content: RVec<FfiContent>,
    /// Structured details as JSON text, if any.
    pub details_json: ROption<RString>,
}

/// Parse `details_json` from the other side of the boundary. Both sides write it with
/// serde_json, but should a foreign library send text that is not JSON, it is kept as a string
/// rather than lost.
pub fn details_from_json(raw: ROption<RString>) -> Option<serde_json::Value> {
    raw.into_option().map(|raw| {
        serde_json::from_str(raw.as_str())
            .unwrap_or_else(|_| serde_json::Value::String(raw.into_string()))
    })
}

/// Which kind of content block an [`FfiContent`] is.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfiContentKind {
    /// `text` holds UTF-8 text.
    Text,
    /// `text` holds base64 image data and `mime_type` its type.
    Image,
}

/// One content block of an [`FfiToolResult`].
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct FfiContent {
    /// The kind of block.
    pub kind: FfiContentKind,
    /// Text, or base64 data for an image.
    pub text: RString,
    /// The image's MIME type; empty for text.
    pub mime_type: RString,
}

/// The outcome of an `execute` or `apply` future: a result, or an error message.
pub type FfiOutcome = RResult<FfiToolResult, RString>;
/// The outcome of a `reject` future: an optional replacement result, or an error message.
pub type FfiRejectOutcome = RResult<ROption<FfiToolResult>, RString>;

/// Severity of a log line sent from a plugin to the host.
#[repr(u8)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FfiLogLevel {
    /// Fine-grained diagnostics.
    Debug,
    /// Normal progress.
    Info,
    /// Something looks wrong but the tool carries on.
    Warn,
    /// Something failed.
    Error,
}

/// Services the host offers to the plugin. Implemented by the host.
#[sabi_trait]
pub trait HostApiFfi: Send + Sync {
    /// The session's working directory.
    fn cwd(&self) -> RString;
    /// Push a pending action onto the session's store; `Err` carries the reason it was refused
    /// (for instance when the runtime has no store).
    fn push_pending_action(&self, action: FfiPendingAction) -> RResult<(), RString>;
    /// Write a line to the host's log.
    #[sabi(last_prefix_field)]
    fn log(&self, level: FfiLogLevel, message: RString);
}

/// An owned host API object.
pub type HostApiBox = HostApiFfi_TO<'static, RBox<()>>;

/// Per-call services the host offers while a tool runs. Implemented by the host.
#[sabi_trait]
pub trait ToolContextFfi: Send + Sync {
    /// Report a partial result while the tool is still running.
    fn update(&self, partial: FfiToolResult);
    /// Whether the host has cancelled this call.
    #[sabi(last_prefix_field)]
    fn is_cancelled(&self) -> bool;
}

/// An owned tool-call context object.
pub type ToolContextBox = ToolContextFfi_TO<'static, RBox<()>>;

/// A tool's behaviour. Implemented by the plugin.
#[sabi_trait]
pub trait ToolFfi: Send + Sync {
    /// Run the tool with arguments given as JSON text. Dropping the future cancels the call.
    #[sabi(last_prefix_field)]
    fn execute(
        &self,
        tool_call_id: RString,
        params_json: RString,
        ctx: ToolContextBox,
    ) -> FfiFuture<FfiOutcome>;
}

/// A tool's static description plus its behaviour.
#[repr(C)]
#[derive(StableAbi)]
pub struct FfiToolDef {
    /// Unique tool name, as the model calls it.
    pub name: RString,
    /// Human-readable label.
    pub label: RString,
    /// Description for the model.
    pub description: RString,
    /// JSON Schema of the parameters, as JSON text.
    pub parameters_json: RString,
    /// Never offered for a user to pick.
    pub hidden: bool,
    /// May push pending actions (registers `resolve`).
    pub deferrable: bool,
    /// The tool's behaviour.
    pub tool: ToolFfi_TO<'static, RBox<()>>,
}

/// The callbacks of a pending action. Implemented by the plugin.
#[sabi_trait]
pub trait PendingActionFfi: Send + Sync {
    /// Commit the previewed change. Called at most once.
    fn apply(&self, reason: RString) -> FfiFuture<FfiOutcome>;
    /// Whether [`PendingActionFfi::reject`] does anything.
    fn has_reject(&self) -> bool;
    /// Clean up on discard. Called at most once, and only when `apply` was not.
    #[sabi(last_prefix_field)]
    fn reject(&self, reason: RString) -> FfiFuture<FfiRejectOutcome>;
}

/// A pending action as it crosses the boundary. See [`crate::CustomToolPendingAction`].
#[repr(C)]
#[derive(StableAbi)]
pub struct FfiPendingAction {
    /// Short human summary, non-empty.
    pub label: RString,
    /// Arbitrary JSON text, if any.
    pub details_json: ROption<RString>,
    /// The tool that produced the action.
    pub source_tool_name: RString,
    /// apply / reject.
    pub callbacks: PendingActionFfi_TO<'static, RBox<()>>,
}

/// The root module every plugin library exports (through [`crate::export_plugin!`]).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(panic))]
pub struct PluginModule {
    /// Run the plugin's factory with the host's services; returns its tools or an error message.
    /// Panics in the factory come back as an error.
    #[sabi(last_prefix_field)]
    pub create_tools: extern "C" fn(host: HostApiBox) -> RResult<RVec<FfiToolDef>, RString>,
}

impl RootModule for PluginModuleRef {
    declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "xcsh_plugin";
    const NAME: &'static str = "xcsh_plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// The symbol under which a plugin library exports its root module header. It is abi_stable's
/// `ROOT_MODULE_LOADER_NAME`, spelled out because [`crate::export_plugin!`] needs a literal.
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

#[cfg(test)]
mod tests {
    #[test]
    fn root_module_symbol_matches_abi_stable() {
        assert_eq!(
            super::ROOT_MODULE_SYMBOL,
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
    }
}
