//! The core of the host side of xcsh native plugins: find and load plugin libraries, run their
//! tools in a [`Session`] with its own [`PendingActionStore`], and finish previews with
//! `resolve`. The crate an embedder depends on is `xcsh-loader`, which re-exports this one
//! with the layers above it (the MCP server, `xcsh-loader-mcp`; what runs inside a plugin
//! process, `xcsh-loader-process`); an embedder who wants the session alone can depend on this
//! crate only.
//!
//! ```no_run
//! # async fn demo() {
//! use xcsh_loader_core::{Provider, Session};
//!
//! let session = Session::builder("/path/to/project")
//!     .plugin("target/release/libbatch_rename.so")
//!     .build();
//! for error in session.load_errors() {
//!     eprintln!("warning: {error}");
//! }
//! let preview = session
//!     .call("batch_rename_preview", serde_json::json!({"files": ["a1.txt"], "find": "a", "replace": "b"}))
//!     .await;
//! println!("{}", preview.text());
//! // While something is pending, force the model towards `resolve`.
//! assert!(session.tool_choice(Provider::Anthropic).is_some());
//! let applied = session
//!     .call("resolve", serde_json::json!({"action": "apply", "reason": "looks right"}))
//!     .await;
//! println!("{}", applied.text());
//! # }
//! ```
//!
//! # Where things are
//!
//! The modules follow a call's way through the host, each using only those above it; where a
//! lower layer needs something a higher one has, it is handed in (the probe `isolate` runs
//! before a first in-process `dlopen` is a [`load::Probe`] the session gives loading):
//!
//! | module | what it is for |
//! |---|---|
//! | `cancel` | the cancellation token of a call (the lock that survives a panic is the plugin API's one, `xcsh_plugin_api::__private::lock`) |
//! | `sys`, [`plugin_log`] | the operating-system calls (`rustix`), the `dlopen`, starting plugin processes, the sandbox's policy; where plugins' log lines go |
//! | [`messages`] | every exact string of the contract, once |
//! | `loading` (public as [`load`]) | discover → check → trust → open a plugin library; [`LoadError`] |
//! | [`store`], `recovery` | the [`PendingActionStore`] and its [`PendingAction`]s; finishing applies a killed process left |
//! | [`services`], [`forward`] | what a host offers a running call besides the store: questions, notifications, the model; those services passed on over a link, and numbered requests waiting for answers |
//! | [`tool`] | what the session runs: the [`Tool`] trait, its spec, call context and outcome |
//! | `plugin_abi`, [`resolve`] | plugin tools and actions as [`Tool`]s and [`PendingAction`]s; the `resolve` tool, tool-choice steering, the renderer |
//! | [`isolate`] | process isolation: each plugin library in a child process (`xcsh-plugin-host`, whose side is the crate `xcsh-loader-process`): starting it, the protocol, its tools and pending actions in the session |
//! | [`session`] | [`Session`] and [`SessionBuilder`]: loading into a session, validating and running calls, reloading changed plugin files |
//! | [`library`] | opening one library by hand: loading with the plugin-process probe in front |
//!
//! What the layers above use of this crate's internals is in the hidden module `for_layers`,
//! in one place.
//!
//! Cargo features: `ast-edit` (the built-in `ast_edit`, from the `xcsh-ast-edit` plugin
//! crate), on by default; `ast-edit-all-languages` (every grammar) and `publisher-keys`
//! (packed tools' signatures). With `default-features = false` the crate builds a session and
//! nothing else. The programs `xcsh-plugins` and `xcsh-plugin-host` are the package of that
//! name (`loader/cli`), so an embedder builds neither.

#![warn(missing_docs)]
// `unsafe` only where a library is opened (`loading::open`) and in the system calls (`sys`).
#![deny(unsafe_code)]

mod cancel;
pub mod forward;
pub mod isolate;
pub mod library;
mod loading;
pub mod messages;
mod plugin_abi;
pub mod plugin_log;
mod recovery;
pub mod resolve;
pub mod services;
pub mod session;
pub mod store;
#[allow(unsafe_code)]
mod sys;
pub mod tool;

pub use isolate::Isolation;
#[cfg(feature = "publisher-keys")]
pub use load::publisher;
/// Compatibility paths of the flat layout: `xcsh_loader::trust`, `::discovery`, ...
pub use load::{discovery, platform, plugin_folder, trust};
pub use load::{LoadError, LoadErrorKind};

/// Finding and loading plugin libraries: discover → check → (trust) → open. Nothing here knows
/// about sessions or tools: the output is a [`PluginLibrary`](library::PluginLibrary). `open`
/// is [`library`]: the loading layer's opening with the plugin-process probe in front.
pub mod load {
    pub use crate::library as open;
    pub use crate::library::{load_checked, load_library};
    #[cfg(feature = "publisher-keys")]
    pub use crate::loading::publisher;
    pub use crate::loading::{
        discovery, host_api_version, load_checked_with, oldest_supported_api_version, platform,
        plugin_folder, trust, CheckedFile, LoadError, LoadErrorKind, PluginLibrary, Probe,
    };
}
pub use messages::{NO_PENDING_ACTION, RESOLVE_REMINDER, RESOLVE_TOOL_NAME, STORE_UNAVAILABLE};
#[cfg(feature = "ast-edit")]
pub use plugin_abi::ast_edit_tool;
pub use plugin_abi::{builtin_plugin_tools, BuiltinPluginTool, PluginTool};
pub use resolve::render::{render_resolve, RenderStyle};
pub use resolve::{render, steering};
pub use session::{
    parse_idle_time, IdleTimeError, LoadedPlugin, Session, SessionBuilder, StopIdleAfter,
    DEFAULT_STOP_IDLE_AFTER,
};
pub use steering::{Provider, SteeringMessage, ToolChoice};
pub use store::{
    PendingAction, PendingActionSink, PendingActionStore, PendingSummary, PushSubscription,
};
/// The sandbox a plugin's child process puts itself in (see docs/guide/src/isolation.md): its policy,
/// and the report of what was enforced; the enforcement is `xcsh-loader-process`'s.
pub use sys::sandbox;
/// The name [`PluginError`] had here before 0.2.
#[allow(deprecated)]
pub use tool::ToolError;
pub use tool::{
    CallContext, CallOptions, CancelToken, Tool, ToolHints, ToolOrigin, ToolOutcome, ToolSpec,
    UpdateSink,
};
pub use xcsh_plugin_api::{AgentToolResult, Content, PluginError};

/// What the layers above the core (the MCP server, the plugin process) use of its internals. Not an API:
/// hidden, and free to change with the layers that use it.
#[doc(hidden)]
pub mod for_layers {
    #[cfg(unix)]
    pub use crate::sys::divert_stdout_to_stderr;

    // The plugin process's side (`xcsh-loader-process`): the protocol, the plugin library
    // handed over, the host's handover of the link (one contract with `sys::spawn`'s side),
    // the plugin as tools.
    pub use crate::isolate::protocol;
    pub use crate::loading::open::load_inherited;
    pub use crate::plugin_abi::{instantiate, KeepAliveSink, PluginTool, PushSink};
    pub use crate::sys::spawn::{
        die_with_parent, parent_is, take_link, take_plugin, ChildRead, ChildWrite,
    };
}

/// The checks a plugin file's bytes go through before anything loads it, for the fuzz target
/// (`loader/fuzz`). Not an API.
#[doc(hidden)]
pub mod fuzzing {
    /// Run every check made on a file's bytes before loading (what it was built for, the
    /// header and layout checks, the version marker, the build-id), discarding the answers.
    pub fn check_file_bytes(bytes: &[u8]) {
        let _ = crate::loading::platform::check_platform(bytes);
        if crate::loading::preflight::check_library(bytes).is_ok() {
            let _ = crate::loading::headers::read_api_marker(bytes);
        }
        let _ = crate::loading::headers::build_id(bytes);
    }
}
