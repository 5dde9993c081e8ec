//! The host side of xcsh native plugins: find and load plugin libraries, run their tools in a
//! [`Session`] with its own [`PendingActionStore`], finish previews with `resolve`, and serve
//! them to agents over MCP.
//!
//! ```no_run
//! # async fn demo() {
//! use xcsh_loader::{Provider, Session};
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
//! # The layers
//!
//! This is the crate an embedder depends on. Its layers are crates of their own, so that the
//! compiler holds them (a layer can use only the ones below it), and this one re-exports them
//! under the paths they always had:
//!
//! | crate | what it is for | here as |
//! |---|---|---|
//! | `xcsh-loader-core` | loading and checking plugin libraries, the store, tools, `resolve`, the [`Session`], host services, starting plugin processes and talking to them | everything at the top level |
//! | `xcsh-loader-process` | what runs inside a plugin process: its sandbox, the PID namespace of its programs, its side of the protocol (cargo feature `plugin-process`) | [`isolate::child_main`], [`sandbox::confine`] |
//! | `xcsh-loader-mcp` | the MCP server (cargo feature `mcp`) | [`mcp`] |
//! | `xcsh-plugins` (`loader/cli`) | the command-line host and the plugin-process program `xcsh-plugin-host` | not a library |
//!
//! Cargo features: `ast-edit` (the built-in `ast_edit`, from the `xcsh-ast-edit` plugin
//! crate), `mcp` (the MCP server) and `plugin-process` (what `xcsh-plugin-host` runs), on by default; `ast-edit-all-languages` (every grammar)
//! and `publisher-keys` (packed tools' signatures). With `default-features = false` the crate
//! builds a session and nothing else (as does `xcsh-loader-core` alone).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use xcsh_loader_core::*;
#[cfg(feature = "mcp")]
pub use xcsh_loader_mcp as mcp;

/// Process isolation: each plugin library in a child process of its own (the core's
/// `isolate`), and, with the feature `plugin-process`, what runs in that child.
pub mod isolate {
    pub use xcsh_loader_core::isolate::*;
    #[cfg(feature = "plugin-process")]
    pub use xcsh_loader_process::child_main;
}

/// The sandbox a plugin's child process puts itself in (see docs/guide/src/isolation.md):
/// the policy (the core's), and, with the feature `plugin-process`, its enforcement.
pub mod sandbox {
    pub use xcsh_loader_core::sandbox::*;
    #[cfg(feature = "plugin-process")]
    pub use xcsh_loader_process::sandbox::{
        apply_limits, confine, confine_filesystem, SandboxError,
    };
}
