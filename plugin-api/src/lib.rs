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
//! use xcsh_plugin_api::*;
//!
//! tool_params! { struct Params { files: Vec<String> } }
//!
//! #[derive(Default)]
//! struct BatchRenamePreview;
//!
//! impl CustomTool for BatchRenamePreview {
//!     type Params = Params;
//!     fn name(&self) -> &str { "batch_rename_preview" }
//!     fn label(&self) -> &str { "Batch Rename Preview" }
//!     fn description(&self) -> &str { "Previews renames and defers commit to resolve" }
//!     fn deferrable(&self) -> bool { true }
//!
//!     async fn execute(&self, _id: String, p: Params, ctx: ToolContext) -> Result<AgentToolResult, PluginError> {
//!         let n = p.files.len();
//!         ctx.push_pending_action(
//!             CustomToolPendingAction::new(format!("Batch rename: {n} files"), |reason| async move {
//!                 // apply writes here
//!                 Ok(AgentToolResult::text(format!("Applied batch rename. Reason: {reason}")))
//!             })
//!             .with_reject(|reason| async move {
//!                 // optional: cleanup or notify on discard
//!                 Ok(Some(AgentToolResult::text(format!("Discarded batch rename. Reason: {reason}"))))
//!             })
//!             .with_source_tool_name("batch_rename_preview"),
//!         )?;
//!         Ok(AgentToolResult::text(format!("Prepared rename plan for {n} files. Call resolve to apply or discard.")))
//!     }
//! }
//!
//! export_plugin!(tools: [BatchRenamePreview]);
//! # fn main() {}
//! ```
//!
//! The plugin's `Cargo.toml` sets `crate-type = ["cdylib"]` and depends on this crate only:
//! [`tool_params!`] derives the parameters through its re-exports, `?` converts any error
//! into [`PluginError`], and [`ToolContext`] reaches the host's services. Tools that need the
//! [`CustomToolApi`] when the plugin loads implement [`FromApi`], or are returned by a
//! factory function (`export_plugin!(factory)`). `xcsh-plugins new NAME` writes such a crate
//! for you, with tests.
//!
//! # Features
//!
//! - `tokio`: re-exports tokio (timers, files, processes, sync, io-util, macros) as
//!   `xcsh_plugin_api::tokio`.
//! - `testing`: `testing::PluginTest`, an in-process host for unit tests of `execute`,
//!   `apply` and `reject` (no loader, no `.so`).
// `unsafe` only behind `export_plugin!` (the `export` module): an author writes none.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod api;
#[cfg(feature = "checks")]
pub mod checks;
mod compat;
mod error;
pub mod exec;
#[doc(hidden)]
#[allow(unsafe_code)]
pub mod export;
pub mod files;
pub mod form;
mod guard;
/// The guide's pages and the README as doctests (see the module).
#[cfg(all(doctest, feature = "testing"))]
pub mod guide;
pub mod host;
mod pending;
mod result;
mod schema;
mod sync;
#[cfg(feature = "testing")]
pub mod testing;
mod tool;
mod ui;
pub mod view;

/// tokio, as this crate builds it (cargo feature `tokio`): timers, `fs`, processes, `sync`,
/// `io-util` and the macros, without a direct dependency. Plugin code may use it inside
/// `execute`, `apply` and `reject`: they run inside a runtime the plugin library owns.
///
/// ```
/// # async fn f() {
/// xcsh_plugin_api::tokio::time::sleep(std::time::Duration::from_millis(1)).await;
/// # }
/// ```
#[cfg(feature = "tokio")]
pub use tokio;

/// The stable ABI underneath this crate: the `xcsh-plugin-abi` crate, re-exported. Tool
/// authors never need it; hosts implement its host-side traits. See `ABI.md` for how it grows.
pub mod ffi {
    pub use xcsh_plugin_abi::*;
}

pub use api::{CustomToolApi, Logger};

/// What [`CustomToolApi::push_pending_action`] fails with in a runtime without a
/// pending-action store. A tool that can do without one (a preview that is only shown, for
/// instance) compares the error's message with this.
pub const STORE_UNAVAILABLE: &str =
    "Pending action store unavailable for custom tools in this runtime.";

/// What a host's `resolve` answers when nothing is pending (the `testing` harness answers
/// the same).
pub const NO_PENDING_ACTION: &str = "No pending action to resolve. Nothing to apply or discard.";
pub use compat::{
    capabilities_of, Capability, API_VERSION, CAPABILITIES, OLDEST_SUPPORTED_API_VERSION,
};
pub use error::PluginError;
pub use exec::{ExecOptions, ExecOutput, ExecRequest, DEFAULT_MAX_OUTPUT, MAX_RUNNING_PROGRAMS};
pub use form::form_schema;
pub use guard::panic_text;
pub use host::{
    CompletionRequest, EarlierResult, ModelInfo, NotifyLevel, SessionEvent, SessionReason, NO_MODEL,
};
pub use pending::{CustomToolPendingAction, DEFAULT_SOURCE_TOOL_NAME};
pub use result::{AgentToolResult, Content, EmbeddedResource};
pub use tool::{schema_of, CustomTool, FromApi, ToolContext, ToolSet};

pub use ui::{FormAnswer, Ui};
/// A documented `async fn` as a tool: the shortest way to write one (since 0.7).
///
/// The function's doc comment is the tool's description for the model; its parameters are the
/// tool's JSON parameters (each one's doc comment its description, `Option<T>` an optional
/// property, other attributes such as `#[serde(default)]` lent to the field); a parameter of
/// type `ToolContext` or `&ToolContext` receives the call's context, wherever it stands. The
/// function returns `Result<T, E>` (or a plain `T`) where `T: Into<AgentToolResult>` (an
/// [`AgentToolResult`], a `String`, a `&'static str`) and `E: Into<PluginError>`.
///
/// `#[tool]` writes, beside the function, a unit struct named after it in `UpperCamelCase`
/// (`git_cleanup` → `GitCleanup`) implementing [`CustomTool`], which is what
/// [`export_plugin!`] and [`tools!`] take, and its parameter struct (`GitCleanupParams`).
/// Options: `name = ".."` (default: the function's name), `label = ".."` (default: the name
/// in words, `Git cleanup`), and the flags `deferrable`, `hidden`, `read_only`, `destructive`,
/// `idempotent`, `open_world` (bare for `true`, or `= false`). A parameter marked `#[params]`
/// takes the whole parameter type instead (a [`tool_params!`] struct), and must be the only
/// one.
///
/// What cannot become a tool is a compile error naming the culprit: a borrowed parameter
/// (`name: &str`: `parameter `name` is deserialized from the model's JSON, so it must own its
/// data`), a missing doc comment, a function that is not `async`, generic or a method.
///
/// ```
/// use xcsh_plugin_api::testing::PluginTest;
/// use xcsh_plugin_api::*;
///
/// /// A simple greeting tool
/// #[tool]
/// async fn hello(
///     /// Name to greet
///     name: String,
///     /// How many times (once when absent)
///     times: Option<u32>,
/// ) -> Result<AgentToolResult, PluginError> {
///     let text = format!("Hello, {name}! ").repeat(times.unwrap_or(1) as usize);
///     Ok(AgentToolResult::text(text.trim_end()).with_details(json!({ "greeted": name })))
/// }
///
/// // In a plugin crate: export_plugin!(tools: [Hello]);
/// let schema = Hello.parameters_schema();
/// assert_eq!(schema["required"], json!(["name"]));
/// assert_eq!(schema["properties"]["times"]["type"], "integer");
/// assert_eq!(Hello.label(), "Hello");
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let test = PluginTest::new(tools![Hello]);
/// let outcome = test.call("hello", json!({"name": "Ada", "times": 2})).await?;
/// assert_eq!(outcome.text(), "Hello, Ada! Hello, Ada!");
/// # Ok::<(), xcsh_plugin_api::testing::TestError>(())
/// # }).unwrap();
/// ```
///
/// A deferrable tool previews, and its pending action's apply gets the `resolve` call's
/// context (see [`CustomToolPendingAction::new_in_context`]):
///
/// ```
/// use xcsh_plugin_api::*;
///
/// /// Delete one local branch, after the model resolves the preview.
/// #[tool(deferrable)]
/// async fn delete_branch(ctx: ToolContext, /** The branch */ branch: String) -> Result<String, PluginError> {
///     let label = format!("Delete branch: {branch}");
///     ctx.push_pending_action(CustomToolPendingAction::new_in_context(label, |_reason, ctx| async move {
///         let git = ctx.exec("git", ["branch", "-d", &branch], ExecOptions::new()).await?;
///         Ok(AgentToolResult::text(git.stdout_text()))
///     }))?;
///     Ok("Previewed. Call resolve to apply or discard.".to_owned())
/// }
/// assert!(DeleteBranch.deferrable());
/// ```
pub use xcsh_plugin_macros::tool;

pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize};
pub use serde_json::{self, json, Value};

#[doc(hidden)]
pub mod __private {
    pub use crate::export::{
        into_tool_set, lib_header, tool_from_api, PluginFactory, VERSION_MARKER,
    };
    pub use abi_stable::library::LibHeader;
    pub use xcsh_plugin_abi::VersionMarker;

    /// The file transaction's fan-out over threads, for the workspace's own `ast_edit`, whose
    /// apply checks its files the same way: one routine, not part of the API (hidden, may
    /// change in any release).
    pub use crate::files::fsops::in_parallel;

    /// The one poison-tolerant lock (mutexes and read-write locks) of the plugin API and the workspace's hosts (the loader,
    /// the Node binding, `ast_edit`). Hidden, may change in any release.
    pub use crate::sync::{lock, mutex_get_mut, read, rw_get_mut, write};
}

/// Declare parameter types — structs and enums — deriving `Deserialize` and `JsonSchema`
/// through this crate's re-exports, so a plugin needs no direct `serde` or `schemars`
/// dependency. This is the one way to declare typed parameters.
///
/// Any number of `struct { .. }` and `enum { .. }` items go in one invocation; each also
/// derives `Debug`. Attributes (`#[serde(default)]`, `#[serde(rename_all = "..")]`, further
/// derives, doc comments that become schema descriptions) work as usual.
///
/// **Structs are strict**: an argument the struct does not declare is refused, not silently
/// dropped (`#[serde(deny_unknown_fields)]`, and `"additionalProperties": false` in the
/// schema, so the host refuses it before `execute` runs). A model that misspells an optional
/// argument learns so instead of getting the default. To accept and ignore unknown arguments,
/// put `#[allow_unknown_fields]` first on the struct (required with `#[serde(flatten)]`, which
/// serde cannot combine with `deny_unknown_fields`).
///
/// ```
/// xcsh_plugin_api::tool_params! {
///     /// Arguments of the rename tool.
///     pub struct Params {
///         /// Files to rename.
///         pub files: Vec<String>,
///         /// What to do with each name.
///         pub case: Case,
///         /// Optional suffix.
///         #[serde(default)]
///         pub suffix: Option<String>,
///     }
///
///     /// A change of case.
///     #[derive(PartialEq)]
///     #[serde(rename_all = "lowercase")]
///     pub enum Case { Upper, Lower }
/// }
/// let schema = xcsh_plugin_api::schema_of::<Params>();
/// assert_eq!(schema["required"], serde_json::json!(["files", "case"]));
/// assert_eq!(schema["additionalProperties"], false);
/// let params: Params = serde_json::from_str(r#"{"files":["a"],"case":"upper"}"#).unwrap();
/// assert_eq!((params.files, params.case), (vec!["a".to_owned()], Case::Upper));
/// // A misspelt `suffix` is an error, not a silent `None`.
/// let typo = serde_json::from_str::<Params>(r#"{"files":[],"case":"upper","sufix":"x"}"#);
/// assert!(typo.unwrap_err().to_string().contains("unknown field `sufix`"));
/// ```
///
/// The opt-out:
///
/// ```
/// xcsh_plugin_api::tool_params! {
///     #[allow_unknown_fields]
///     pub struct Lenient { pub name: String }
/// }
/// let schema = xcsh_plugin_api::schema_of::<Lenient>();
/// assert!(schema.get("additionalProperties").is_none());
/// let params: Lenient = serde_json::from_str(r#"{"name":"a","extra":1}"#).unwrap();
/// assert_eq!(params.name, "a");
/// ```
#[macro_export]
macro_rules! tool_params {
    () => {};
    (#[allow_unknown_fields] $(#[$meta:meta])* $vis:vis struct $name:ident { $($body:tt)* } $($rest:tt)*) => {
        #[derive(Debug, $crate::Deserialize, $crate::JsonSchema)]
        #[serde(crate = "xcsh_plugin_api::serde")]
        #[schemars(crate = "xcsh_plugin_api::schemars")]
        $(#[$meta])*
        $vis struct $name { $($body)* }
        $crate::tool_params! { $($rest)* }
    };
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($body:tt)* } $($rest:tt)*) => {
        #[derive(Debug, $crate::Deserialize, $crate::JsonSchema)]
        #[serde(crate = "xcsh_plugin_api::serde", deny_unknown_fields)]
        #[schemars(crate = "xcsh_plugin_api::schemars")]
        $(#[$meta])*
        $vis struct $name { $($body)* }
        $crate::tool_params! { $($rest)* }
    };
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($body:tt)* } $($rest:tt)*) => {
        #[derive(Debug, $crate::Deserialize, $crate::JsonSchema)]
        #[serde(crate = "xcsh_plugin_api::serde")]
        #[schemars(crate = "xcsh_plugin_api::schemars")]
        $(#[$meta])*
        $vis enum $name { $($body)* }
        $crate::tool_params! { $($rest)* }
    };
}

/// A factory for a list of tool types, each built with [`FromApi`] (every `Default` tool has
/// it): what [`export_plugin!`]`(tools: [..])` exports, and what a test hands
/// `testing::PluginTest::new` (cargo feature `testing`).
///
/// ```
/// use xcsh_plugin_api::*;
///
/// #[derive(Default)]
/// struct Ping;
/// impl CustomTool for Ping {
///     type Params = Value;
///     fn name(&self) -> &str { "ping" }
///     fn label(&self) -> &str { "Ping" }
///     fn description(&self) -> &str { "Answers pong" }
///     fn parameters_schema(&self) -> Value { json!({"type": "object"}) }
///     async fn execute(&self, _: String, _: Value, _: ToolContext)
///         -> Result<AgentToolResult, PluginError> {
///         Ok(AgentToolResult::text("pong"))
///     }
/// }
///
/// let factory = tools![Ping];
/// # let _ = factory;
/// ```
#[macro_export]
macro_rules! tools {
    ($($tool:ty),+ $(,)?) => {
        |api: &$crate::CustomToolApi| -> ::core::result::Result<$crate::ToolSet, $crate::PluginError> {
            ::core::result::Result::Ok(
                $crate::ToolSet::new()
                    $(.with($crate::__private::tool_from_api::<$tool>(api)?))+
            )
        }
    };
}

/// Export the plugin's tools. Write it once per plugin crate, at the crate root, in one of
/// two forms:
///
/// - `export_plugin!(tools: [ToolA, ToolB])`: tool types built with [`FromApi`] (every
///   `Default` tool has it);
/// - `export_plugin!(factory)`: a function taking `&CustomToolApi` and returning
///   `Result<T, PluginError>`, where `T` is one [`CustomTool`] or a [`ToolSet`].
///
/// See the crate docs for an example.
#[macro_export]
macro_rules! export_plugin {
    (@export $factory:expr) => {
        #[doc(hidden)]
        pub struct __XcshPluginFactory;

        impl $crate::__private::PluginFactory for __XcshPluginFactory {
            fn create(
                api: &$crate::CustomToolApi,
            ) -> ::core::result::Result<$crate::ToolSet, $crate::PluginError> {
                $crate::__private::into_tool_set(($factory)(api))
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
    (tools: [$($tool:ty),+ $(,)?]) => {
        $crate::export_plugin!(@export $crate::tools![$($tool),+]);
    };
    ($factory:path) => {
        $crate::export_plugin!(@export $factory);
    };
}
