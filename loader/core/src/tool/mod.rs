//! The host's view of a tool: a [`ToolSpec`] plus an async `execute`. Plugin tools, the
//! built-in `ast_edit`, and anything an embedder adds all look the same to the session.
//! What a call gives back ([`ToolOutcome`]) and the options it takes ([`CallOptions`]) are
//! here too, since `resolve` and the session both produce and take them.

pub(crate) mod definition;
mod outcome;
mod progress;

pub(crate) use outcome::{bounded, Interrupted};

/// How long a call that was timed out or cancelled may take to end on its own before its
/// plugin process is killed (or, in-process, before the call is reported abandoned).
pub const GRACE_PERIOD: std::time::Duration = std::time::Duration::from_millis(750);
pub use crate::cancel::CancelToken;
pub use outcome::{drawable, drawable_updates, CallOptions, ToolOutcome};
pub use progress::{PacedUpdates, ProgressThrottle, PROGRESS_INTERVAL};

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

/// What a pending action's `apply` or `reject` gets, and the partial-result listener: they
/// live with the host services, below the store, which takes them.
pub use crate::services::{ActionContext, UpdateSink};
use crate::store::{BoxFuture, PendingActionSink};

/// An error from a tool, an `apply` or a `reject`: a message for the model and the user.
///
/// It is the very type plugin authors return, so a failure crosses from a plugin to the host
/// and on to the model as one type, under one name.
pub use xcsh_plugin_api::PluginError;

/// The name [`PluginError`] had in the loader before 0.2: the same type.
#[deprecated(note = "use `PluginError`, the same type")]
pub type ToolError = PluginError;

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOrigin {
    /// Compiled into the host (`ast_edit`, `resolve`, or an embedder's own tool).
    Builtin,
    /// Loaded from this plugin library.
    Plugin(PathBuf),
}

impl std::fmt::Display for ToolOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolOrigin::Builtin => f.write_str("builtin"),
            ToolOrigin::Plugin(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A tool's behaviour hints, as MCP's tool annotations name them. `None`: the tool says
/// nothing, or (a plugin built against `xcsh-plugin-api` older than 0.3) cannot say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolHints {
    /// It does not modify its environment (`readOnlyHint`).
    pub read_only: Option<bool>,
    /// It may destroy or overwrite data (`destructiveHint`).
    pub destructive: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (`idempotentHint`).
    pub idempotent: Option<bool>,
    /// It reaches an open world of external entities (`openWorldHint`).
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// What a deferrable tool's preview is: read-only and not destructive (the change happens
    /// in `resolve`), as `xcsh-plugin-api`'s `CustomTool` defaults say too.
    pub const PREVIEW: ToolHints = ToolHints {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: None,
        open_world: None,
    };
}

/// A tool's static description.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name the model calls it by.
    pub name: String,
    /// Human-readable label.
    pub label: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// Never offered for a user to pick.
    pub hidden: bool,
    /// May push pending actions; registers `resolve`.
    pub deferrable: bool,
    /// Behaviour hints (MCP annotations).
    pub hints: ToolHints,
    /// Where it comes from.
    pub origin: ToolOrigin,
}

/// What a running tool may use from its session.
#[derive(Clone)]
pub struct CallContext {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Where the session's pending actions go (its store, or its embedder's), if anywhere.
    pub store: Option<Arc<dyn PendingActionSink>>,
    /// Cancellation of this call.
    pub cancel: CancelToken,
    /// Partial-result listener, if the caller wants updates.
    pub updates: Option<UpdateSink>,
    /// The host's services for this call: questions, notifications, the model
    /// (docs/guide/src/ask.md).
    pub services: crate::services::CallServices,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("cwd", &self.cwd)
            .field("has_store", &self.store.is_some())
            .field("cancelled", &self.cancel.is_cancelled())
            .finish()
    }
}

/// A tool as the session runs it. Arguments arrive already validated against
/// [`ToolSpec::parameters`].
pub trait Tool: Send + Sync {
    /// The tool's description.
    fn spec(&self) -> &ToolSpec;

    /// Run the tool.
    fn execute(
        &self,
        tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>>;

    /// Called once the session gave up on call `tool_call_id` (a timeout or a cancellation;
    /// the call's [`CancelToken`] has fired and its future was dropped), so the tool can settle
    /// what still runs on its behalf. Returns a note the session appends to its message
    /// (`Tool "x" timed out after 2s; {note}`), or `None`. The default does nothing.
    fn interrupted(&self, tool_call_id: &str) -> BoxFuture<Option<String>> {
        let _ = tool_call_id;
        Box::pin(async { None })
    }

    /// Hear a session event (start, switch, branch, tree, shutdown), with this tool's own
    /// earlier results. The default ignores it.
    fn on_session(&self, event: crate::services::SessionEvent) -> BoxFuture<()> {
        let _ = event;
        Box::pin(async {})
    }

    /// How a call of the tool looks, filled from its arguments by a host that draws calls
    /// ([`Session::call_status`](crate::Session::call_status)). `None` by default.
    fn call_view(&self) -> Option<xcsh_plugin_api::view::CallView> {
        None
    }
}
