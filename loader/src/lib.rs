//! The host side of xcsh native plugins: find and load plugin libraries, run their tools in a
//! [`Session`] with its own [`PendingActionStore`], and finish previews with `resolve`.
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
//! Modules, in the order a call flows through them: [`discovery`] finds candidate files,
//! [`library`] checks, reads and loads them (project-local ones only when [`trust`]ed),
//! `plugin_tool` adapts their tools, [`session`] validates and runs calls, [`resolve`]
//! finishes pending actions from the [`store`], [`steering`] forces the model's tool choice,
//! and [`render`] draws the outcome.

#![warn(missing_docs)]

pub mod discovery;
mod error;
pub mod library;
#[cfg(feature = "mcp")]
pub mod mcp;
mod plugin_tool;
mod preflight;
pub mod render;
pub mod resolve;
mod safety;
pub mod session;
pub mod steering;
pub mod store;
mod sys;
mod tool;
pub mod trust;

pub use error::LoadError;
#[cfg(feature = "ast-edit")]
pub use plugin_tool::ast_edit_tool;
pub use plugin_tool::{builtin_plugin_tools, BuiltinPluginTool, PluginTool, STORE_UNAVAILABLE};
pub use render::{render_resolve, RenderStyle};
pub use resolve::{NO_PENDING_ACTION, RESOLVE_TOOL_NAME};
pub use session::{CallOptions, LoadedPlugin, Session, SessionBuilder, ToolOutcome};
pub use steering::{Provider, SteeringMessage, ToolChoice, RESOLVE_REMINDER};
pub use store::{PendingAction, PendingActionStore, PendingSummary, PushSubscription};
pub use tool::{CallContext, CancelToken, Tool, ToolError, ToolOrigin, ToolSpec, UpdateSink};
pub use xcsh_plugin_api::{AgentToolResult, Content};
