//! The hidden `resolve` tool: pop the newest pending action and apply or discard it
//! (its exact strings are in [`crate::messages`]).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use xcsh_plugin_api::{AgentToolResult, Content};

use crate::messages;
use crate::store::{BoxFuture, PendingAction, PendingActionStore};
use crate::tool::{bounded, Interrupted, ToolOutcome};
use crate::tool::{CancelToken, ToolHints, ToolOrigin, ToolSpec};

pub mod render;
pub mod steering;

pub use crate::messages::{NO_PENDING_ACTION, RESOLVE_TOOL_LABEL, RESOLVE_TOOL_NAME};

/// The `resolve` tool's spec, with its strict schema.
pub fn resolve_spec() -> ToolSpec {
    ToolSpec {
        name: RESOLVE_TOOL_NAME.to_owned(),
        label: RESOLVE_TOOL_LABEL.to_owned(),
        description: "Apply or discard the pending preview action produced by an earlier tool \
                      call. Pending actions are resolved newest first."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "action": {"enum": ["apply", "discard"]},
                "reason": {"type": "string", "description": "Why you're applying or discarding"}
            },
            "required": ["action", "reason"],
            "additionalProperties": false
        }),
        hidden: true,
        deferrable: false,
        // It applies or discards: destructive, and never the same twice.
        hints: ToolHints {
            read_only: Some(false),
            destructive: Some(true),
            idempotent: Some(false),
            open_world: Some(false),
        },
        origin: ToolOrigin::Builtin,
    }
}

/// What the model asks `resolve` to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolveAction {
    /// Run `apply(reason)`.
    Apply,
    /// Run `reject(reason)` if present, else discard with the default text.
    Discard,
}

impl ResolveAction {
    /// `apply` or `discard`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResolveAction::Apply => "apply",
            ResolveAction::Discard => "discard",
        }
    }
}

/// `resolve`'s arguments (already schema-checked by the session).
#[derive(Debug, Clone, Deserialize)]
pub struct ResolveArgs {
    /// Apply or discard.
    pub action: ResolveAction,
    /// Informative only.
    pub reason: String,
}

/// Run `resolve` on `store` (None: the runtime has no store, so nothing can be pending).
pub(crate) async fn run_resolve(
    store: Option<&PendingActionStore>,
    args: ResolveArgs,
    cancel: &CancelToken,
    timeout: Option<Duration>,
) -> ToolOutcome {
    let details = |label: Value, source: Value| {
        json!({
            "action": args.action.as_str(),
            "reason": args.reason,
            "sourceToolName": source,
            "label": label,
        })
    };
    // Pop before running: an action whose callback fails or is cancelled is consumed.
    let Some(action) = store.and_then(PendingActionStore::pop) else {
        return ToolOutcome::error(NO_PENDING_ACTION)
            .with_details(details(Value::Null, Value::Null));
    };
    let label = action.label().to_owned();
    let details = details(json!(label), json!(action.source_tool_name()));
    let outcome = match settle(action, args.action, args.reason.clone(), cancel, timeout).await {
        Err(message) => ToolOutcome::error(message),
        Ok(result) => match args.action {
            ResolveAction::Apply => {
                let text = result.map(|r| r.joined_text()).unwrap_or_default();
                let text = if text.is_empty() {
                    messages::applied(&label)
                } else {
                    text
                };
                ToolOutcome::success(AgentToolResult::text(text))
            }
            ResolveAction::Discard => ToolOutcome::success(AgentToolResult {
                content: match result {
                    Some(result) => result.content,
                    None => vec![Content::Text {
                        text: messages::discarded(&label, &args.reason),
                    }],
                },
                details: None,
            }),
        },
    };
    outcome.with_details(details)
}

/// Run `action`'s `apply` (its result as `Some`) or its `reject` (its result; `None` when it has
/// none or gave none), bounded by `cancel` and `timeout`. The action is consumed whatever
/// happens; an error is the message for the model. `resolve` settles its actions with this,
/// and so does a runtime that keeps its own store (the Node-API binding).
pub async fn settle(
    action: PendingAction,
    how: ResolveAction,
    reason: String,
    cancel: &CancelToken,
    timeout: Option<Duration>,
) -> Result<Option<AgentToolResult>, String> {
    if how == ResolveAction::Discard && !action.has_reject() {
        return Ok(None);
    }
    let label = action.label().to_owned();
    let (callback, future): (&str, BoxFuture<_>) = match how {
        ResolveAction::Apply => (
            "apply",
            Box::pin(async move { action.apply(reason).await.map(Some) }),
        ),
        ResolveAction::Discard => ("reject", action.reject(reason)),
    };
    match bounded(future, cancel, timeout).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(error.message().to_owned()),
        Err(interrupted) => Err(interrupted_text(interrupted, callback, &label)),
    }
}

fn interrupted_text(interrupted: Interrupted, callback: &str, label: &str) -> String {
    format!("{callback} of \"{label}\" {interrupted}; the pending action was consumed")
}
