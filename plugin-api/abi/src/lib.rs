//! The stable ABI between an xcsh host and its native plugins: every type that crosses the
//! `dlopen` boundary, and the version marker a host reads before loading anything.
//!
//! Tool authors never use this crate directly; `xcsh-plugin-api` re-exports it as
//! `xcsh_plugin_api::ffi` and converts to and from it. Hosts (such as `xcsh-loader`) implement
//! [`HostApiFfi`] and [`ToolContextFfi`] and call [`PluginModuleRef::create_tools`].
//!
//! # Why a crate of its own
//!
//! abi_stable checks, at load, the layout of every type reachable from the root module, and
//! part of that check is the *package* each type comes from: the same name, and a version
//! "loosely compatible" with the host's (for 0.x, the same minor; otherwise the same major).
//! If these types lived in `xcsh-plugin-api` (0.x), a 0.3 host would refuse every 0.2 plugin
//! on the package version alone. So they live here, on major version 1 for the whole life of
//! the plugin API's current line; the minor moves when the ABI grows. Which plugin-API
//! versions a host accepts is decided separately, before `dlopen`, from the
//! [version marker](version_marker).
//!
//! # How the ABI grows (see `plugin-api/ABI.md`)
//!
//! - The root module ([`PluginModule`]) is an abi_stable prefix type; fields after
//!   `#[sabi(last_prefix_field)]` read as `Option` on the host.
//! - Every object with behaviour or a definition — the host's services ([`HostApiFfi`],
//!   [`ToolContextFfi`]), a tool ([`ToolFfi`], which *is* the tool's definition) and a
//!   pending action ([`PendingActionFfi`]) — is a `sabi_trait` object: an owned pointer plus a
//!   vtable that is itself a prefix type. A method added in a minor release goes after the
//!   `last_prefix_field` method and **must have a default body**: when the object comes from an
//!   older library whose vtable lacks it, the default runs instead (abi_stable generates that
//!   fallback).
//! - New in ABI 1.1 (`xcsh-plugin-api` 0.3): [`ToolFfi::annotations`], the tool's
//!   behaviour hints ([`FfiToolAnnotations`]); `RNone` from a 0.2 plugin.
//! - New in ABI 1.2 (`xcsh-plugin-api` 0.5): [`PendingActionFfi::can_apply`], so that a host
//!   that keeps a failed apply pending knows whether the apply may run again; `false` from an
//!   older plugin; and [`HostApiFfi::keep_alive`], a plugin's request not to be stopped
//!   while idle (a no-op on a host that stops nothing).
//! - New in ABI 1.3 (`xcsh-plugin-api` 0.6), the host services: [`ToolContextFfi::host_facts`]
//!   and [`ToolContextFfi::host_request`], one request kind for every service a host offers a
//!   running call (questions to the user, notifications, the session's model), as JSON text;
//!   [`ToolFfi::on_session`], the session's events; and the content kinds
//!   [`FfiContentKind::AUDIO`] and [`FfiContentKind::RESOURCE`]. An older host's context answers
//!   "no user interface, no model"; an older plugin's tool ignores the events.
//! - New in ABI 1.4 (`xcsh-plugin-api` 0.7): [`PendingActionFfi::apply_in`] and
//!   [`PendingActionFfi::reject_in`], an action's callbacks with the host's services of the
//!   `resolve` call that runs them; an older plugin's action runs its plain `apply`/`reject`.
//! - Enums are integers in a `#[repr(transparent)]` wrapper with associated constants
//!   ([`FfiContentKind`], [`FfiLogLevel`]): a host meeting a value it does not know sees the
//!   raw number (`known()` returns `None`) instead of misreading it.
//! - The remaining plain structs ([`FfiToolResult`], [`FfiContent`]) are frozen value types;
//!   they never gain fields within this major version.
//!
//! Rules every implementation on either side must keep:
//! - no panic may unwind out of a method (abi_stable aborts the process when one does), so the
//!   plugin side catches panics before returning, including inside futures;
//! - JSON travels as UTF-8 text, so neither side depends on the other's `serde_json` build.

#![warn(missing_docs)]
#![allow(non_local_definitions)] // sabi_trait generates impls outside the trait's scope.

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RStr, RString, RVec},
    StableAbi,
};
use async_ffi::FfiFuture;

mod version;

pub use version::{
    parse_version_marker, version_marker, ApiVersion, VersionMarker, VERSION_MARKER_LEN,
    VERSION_MARKER_PREFIX, VERSION_MARKER_SYMBOL,
};

/// A tool result as it crosses the boundary: a frozen value type (plain struct; it never gains
/// fields in this major version). New kinds of content are new [`FfiContentKind`] values.
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

/// Which kind of content block an [`FfiContent`] is: an open set of integers, so a newer
/// library may send a kind this build does not know ([`FfiContentKind::known`] is `None`).
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FfiContentKind(pub u8);

impl FfiContentKind {
    /// `text` holds UTF-8 text.
    pub const TEXT: Self = Self(0);
    /// `text` holds base64 image data and `mime_type` its type.
    pub const IMAGE: Self = Self(1);
    /// `text` holds base64 audio data and `mime_type` its type (since ABI 1.3).
    pub const AUDIO: Self = Self(2);
    /// An embedded resource (since ABI 1.3): `text` holds the JSON object
    /// `{"uri": .., "text": ..}` or `{"uri": .., "blob": <base64>}`, `mime_type` its type
    /// (empty when unknown).
    pub const RESOURCE: Self = Self(3);
    /// How the result looks (since ABI 1.5): `text` holds a view's JSON (`xcsh_plugin_api::view`).
    /// Not content for the model: a host that knows it takes it out of the content (to draw it);
    /// a host that does not (older than ABI 1.5) never gets one, since it refuses the plugins
    /// that send it.
    pub const VIEW: Self = Self(4);

    /// The kind, if this build knows it.
    pub fn known(self) -> Option<KnownContentKind> {
        match self {
            Self::TEXT => Some(KnownContentKind::Text),
            Self::IMAGE => Some(KnownContentKind::Image),
            Self::AUDIO => Some(KnownContentKind::Audio),
            Self::RESOURCE => Some(KnownContentKind::Resource),
            Self::VIEW => Some(KnownContentKind::View),
            _ => None,
        }
    }
}

/// The content kinds this build knows (see [`FfiContentKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownContentKind {
    /// Text.
    Text,
    /// A base64 image.
    Image,
    /// Base64 audio.
    Audio,
    /// An embedded resource.
    Resource,
    /// How the result looks.
    View,
}

/// One content block of an [`FfiToolResult`]; a frozen value type.
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

/// Severity of a log line sent from a plugin to the host: an open set of integers, like
/// [`FfiContentKind`].
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FfiLogLevel(pub u8);

impl FfiLogLevel {
    /// Fine-grained diagnostics.
    pub const DEBUG: Self = Self(0);
    /// Normal progress.
    pub const INFO: Self = Self(1);
    /// Something looks wrong but the tool carries on.
    pub const WARN: Self = Self(2);
    /// Something failed.
    pub const ERROR: Self = Self(3);
}

/// Services the host offers to the plugin. Implemented by the host; its vtable is a prefix
/// type (methods added later go after `log` and have a default body).
#[sabi_trait]
pub trait HostApiFfi: Send + Sync {
    /// The session's working directory.
    fn cwd(&self) -> RString;
    /// Push a pending action onto the session's store; `Err` carries the reason it was refused
    /// (for instance when the runtime has no store).
    fn push_pending_action(&self, action: FfiPendingAction) -> RResult<(), RString>;
    /// Write a line to the host's log. A level the host does not know is logged as an error.
    #[sabi(last_prefix_field)]
    fn log(&self, level: FfiLogLevel, message: RString);

    // ---- Added in ABI 1.2 (xcsh-plugin-api 0.5). Every method below needs a default body. ----

    /// Ask the host not to stop this plugin's process while it is idle (`true`: the plugin
    /// holds state a restart would lose, such as an open connection or a warm index), or let
    /// it be stopped again (`false`). A host that stops nothing (in-process, or one before
    /// ABI 1.2, whose vtable lacks this method) runs the default body, which does nothing.
    fn keep_alive(&self, keep: bool) {
        let _ = keep;
    }
}

/// An owned host API object.
pub type HostApiBox = HostApiFfi_TO<'static, RBox<()>>;

/// Per-call services the host offers while a tool runs. Implemented by the host; its vtable
/// is a prefix type.
#[sabi_trait]
pub trait ToolContextFfi: Send + Sync {
    /// Report a partial result while the tool is still running.
    fn update(&self, partial: FfiToolResult);
    /// Whether the host has cancelled this call.
    #[sabi(last_prefix_field)]
    fn is_cancelled(&self) -> bool;

    // ---- Added in ABI 1.3 (xcsh-plugin-api 0.6). Every method below needs a default body. ----

    /// What the host can do for this call, as the JSON text of `xcsh_plugin_api::host::HostFacts`
    /// (whether a user can answer, the session's model). `RNone` from a host before ABI 1.3
    /// (the default body): no user interface, no model.
    fn host_facts(&self) -> ROption<RString> {
        ROption::RNone
    }

    /// Ask the host for a service on behalf of this call: the JSON text of an
    /// `xcsh_plugin_api::host::HostRequest`, answered by the JSON text of a `HostReply`, or an
    /// error message. Dropping the future withdraws the request (a question is taken off the
    /// screen). A host before ABI 1.3 runs the default body, which refuses every request.
    fn host_request(&self, request_json: RString) -> FfiFuture<RResult<RString, RString>> {
        let _ = request_json;
        async_ffi::FutureExt::into_ffi(async {
            RResult::RErr(RString::from("this host offers no services to plugins"))
        })
    }
}

/// An owned tool-call context object.
pub type ToolContextBox = ToolContextFfi_TO<'static, RBox<()>>;

/// A tri-state hint: unset, `false` or `true`; an open set of integers like [`FfiContentKind`]
/// (a value this build does not know reads as unset).
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FfiHint(pub u8);

impl FfiHint {
    /// The tool says nothing.
    pub const UNSET: Self = Self(0);
    /// The hint is false.
    pub const NO: Self = Self(1);
    /// The hint is true.
    pub const YES: Self = Self(2);

    /// The hint as an `Option<bool>`.
    pub fn get(self) -> Option<bool> {
        match self {
            Self::NO => Some(false),
            Self::YES => Some(true),
            _ => None,
        }
    }
}

impl From<Option<bool>> for FfiHint {
    fn from(hint: Option<bool>) -> Self {
        match hint {
            None => Self::UNSET,
            Some(false) => Self::NO,
            Some(true) => Self::YES,
        }
    }
}

/// A tool's behaviour hints, as MCP's tool annotations name them (since ABI 1.1,
/// `xcsh-plugin-api` 0.3). A frozen value type: these four are MCP's, and a further hint would
/// be a further [`ToolFfi`] method.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiToolAnnotations {
    /// The tool does not modify its environment.
    pub read_only: FfiHint,
    /// The tool may perform destructive updates (meaningful when not read-only).
    pub destructive: FfiHint,
    /// Calling it again with the same arguments has no further effect.
    pub idempotent: FfiHint,
    /// The tool interacts with an open world of external entities.
    pub open_world: FfiHint,
}

/// A tool: its definition and its behaviour. Implemented by the plugin.
///
/// The definition is read through methods rather than struct fields so that it is owned by
/// the plugin (dropped through the vtable, never leaked) and can grow: the vtable is a prefix
/// type, and a definition item added in a minor release is a method after `execute` with a
/// default body (what an older plugin, whose vtable lacks it, answers).
#[sabi_trait]
pub trait ToolFfi: Send + Sync {
    /// Unique tool name, as the model calls it.
    fn name(&self) -> RStr<'_>;
    /// Human-readable label.
    fn label(&self) -> RStr<'_>;
    /// Description for the model.
    fn description(&self) -> RStr<'_>;
    /// JSON Schema of the parameters, as JSON text.
    fn parameters_json(&self) -> RStr<'_>;
    /// Never offered for a user to pick.
    fn hidden(&self) -> bool;
    /// May push pending actions (registers `resolve`).
    fn deferrable(&self) -> bool;
    /// Run the tool with arguments given as JSON text. Dropping the future cancels the call.
    #[sabi(last_prefix_field)]
    fn execute(
        &self,
        tool_call_id: RString,
        params_json: RString,
        ctx: ToolContextBox,
    ) -> FfiFuture<FfiOutcome>;

    // ---- Added in ABI 1.1 (xcsh-plugin-api 0.3). Every method below needs a default body. ----

    /// The tool's behaviour hints. `RNone` when the plugin predates them (the default body
    /// runs when an older plugin's vtable has no such method).
    fn annotations(&self) -> ROption<FfiToolAnnotations> {
        ROption::RNone
    }

    // ---- Added in ABI 1.3 (xcsh-plugin-api 0.6). Every method below needs a default body. ----

    /// Hear a session event: the JSON text of an `xcsh_plugin_api::host::SessionEvent`. A plugin
    /// before ABI 1.3 runs the default body, which ignores it. The future never fails: the
    /// plugin side turns an error or a panic into a log line.
    fn on_session(&self, event_json: RString) -> FfiFuture<()> {
        let _ = event_json;
        async_ffi::FutureExt::into_ffi(async {})
    }

    // ---- Added in ABI 1.5 (xcsh-plugin-api 0.8). Every method below needs a default body. ----

    /// How a call of the tool looks, as the JSON of an `xcsh_plugin_api::view::CallView`: a
    /// template the host fills from the call's arguments (a host draws a call before it runs,
    /// and synchronously). `RNone` when the tool gives none, or the plugin predates views.
    fn call_view_json(&self) -> ROption<RString> {
        ROption::RNone
    }
}

/// A tool's definition and behaviour as it crosses the boundary (an owned [`ToolFfi`] object).
pub type FfiToolDef = ToolFfi_TO<'static, RBox<()>>;

/// A pending action: its description and its callbacks. Implemented by the plugin; the vtable
/// is a prefix type.
#[sabi_trait]
pub trait PendingActionFfi: Send + Sync {
    /// Short human summary, non-empty.
    fn label(&self) -> RStr<'_>;
    /// Arbitrary JSON text, if any.
    fn details_json(&self) -> ROption<RString>;
    /// The tool that produced the action.
    fn source_tool_name(&self) -> RStr<'_>;
    /// Commit the previewed change. A successful apply settles the action (neither callback
    /// runs again). Up to ABI 1.1 a plugin's apply also took its reject, whatever the outcome;
    /// from 1.2 a failed apply keeps the reject, and a retryable one keeps the apply too
    /// (see [`PendingActionFfi::can_apply`]).
    fn apply(&self, reason: RString) -> FfiFuture<FfiOutcome>;
    /// Whether [`PendingActionFfi::reject`] does anything (now: the answer changes when the
    /// action settles, or, from a plugin before ABI 1.2, when an apply started).
    fn has_reject(&self) -> bool;
    /// Clean up on discard. Settles the action; called at most once, and never after a
    /// successful apply.
    #[sabi(last_prefix_field)]
    fn reject(&self, reason: RString) -> FfiFuture<FfiRejectOutcome>;

    // ---- Added in ABI 1.2 (xcsh-plugin-api 0.5). Every method below needs a default body. ----

    /// Whether [`PendingActionFfi::apply`] would run the plugin's apply now: before the first
    /// apply, and after a failed one when the plugin made its apply retryable. `false` from a
    /// plugin before ABI 1.2 (the default body), whose apply ran once whatever its outcome.
    fn can_apply(&self) -> bool {
        false
    }

    // ---- Added in ABI 1.4 (xcsh-plugin-api 0.7). Every method below needs a default body. ----

    /// [`PendingActionFfi::apply`], with the host's services for the `resolve` call that runs
    /// it (docs/guide/src/pending.md: an action's apply gets what `execute` gets — questions,
    /// notifications, programs, cancellation, partial updates). A plugin before ABI 1.4 runs the
    /// default body: its apply, which never asks the host anything.
    fn apply_in(&self, reason: RString, ctx: ToolContextBox) -> FfiFuture<FfiOutcome> {
        drop(ctx);
        self.apply(reason)
    }

    /// [`PendingActionFfi::reject`], with the host's services, as
    /// [`PendingActionFfi::apply_in`]. A plugin before ABI 1.4 runs its reject.
    fn reject_in(&self, reason: RString, ctx: ToolContextBox) -> FfiFuture<FfiRejectOutcome> {
        drop(ctx);
        self.reject(reason)
    }
}

/// A pending action as it crosses the boundary (an owned [`PendingActionFfi`] object).
pub type FfiPendingAction = PendingActionFfi_TO<'static, RBox<()>>;

/// The root module every plugin library exports (through `xcsh_plugin_api::export_plugin!`).
/// A prefix type: fields added later read as `Option` on the host.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(option))]
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
    /// This crate's version (1.x): abi_stable's own version check accepts any library of the
    /// same major. Which plugin-API versions load is decided before `dlopen`, from the marker.
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// The symbol under which a plugin library exports its root module header. It is abi_stable's
/// `ROOT_MODULE_LOADER_NAME`, spelled out because `export_plugin!` needs a literal.
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

    #[test]
    fn hints_round_trip_and_unknown_values_read_as_unset() {
        for hint in [None, Some(false), Some(true)] {
            assert_eq!(super::FfiHint::from(hint).get(), hint);
        }
        assert_eq!(super::FfiHint(9).get(), None);
    }

    #[test]
    fn unknown_enum_values_are_reported_not_misread() {
        assert_eq!(
            super::FfiContentKind::TEXT.known(),
            Some(super::KnownContentKind::Text)
        );
        assert_eq!(super::FfiContentKind(200).known(), None);
    }
}
