//! The hidden `resolve` tool: pop the newest pending action and apply or discard it
//! (its exact strings are in [`crate::messages`]).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use xcsh_plugin_api::{AgentToolResult, Content};

use crate::messages;
use crate::store::{LateOutcome, LateOutcomeFn, PendingAction, PendingActionStore};
use crate::tool::{bounded, Interrupted, ToolOutcome};
use crate::tool::{ActionContext, ToolHints, ToolOrigin, ToolSpec};

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
    ctx: ActionContext,
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
    let outcome = match settle(action, args.action, args.reason.clone(), ctx, timeout).await {
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
                // The resolve block is drawn as the contract says, from its text.
                view: None,
            }),
        },
    };
    outcome.with_details(details)
}

/// Run `action`'s `apply` (its result as `Some`) or its `reject` (its result; `None` when it has
/// none or gave none), with the host's services of `ctx`, bounded by its cancellation and
/// `timeout`. The action is consumed whatever
/// happens (the design note's `resolve`); an error is the message for the model.
pub async fn settle(
    action: PendingAction,
    how: ResolveAction,
    reason: String,
    ctx: ActionContext,
    timeout: Option<Duration>,
) -> Result<Option<AgentToolResult>, String> {
    run(action, how, reason, ctx, timeout, false).await.result
}

/// What became of an action [`settle_or_keep`] ran.
pub struct Settlement {
    /// As [`settle`]'s result.
    pub result: Result<Option<AgentToolResult>, String>,
    /// After an apply that failed or was interrupted: the action, still unsettled (it may be
    /// rejected, or applied again; see [`PendingAction::start_apply`]). `None` once settled.
    pub unsettled: Option<PendingAction>,
}

/// As [`settle`], for a runtime that keeps a failed preview pending (the Node-API binding, for
/// xcsh's TypeScript runtime): only a successful apply or a reject settles the action; after a
/// failed apply it comes back in [`Settlement::unsettled`].
pub async fn settle_or_keep(
    action: PendingAction,
    how: ResolveAction,
    reason: String,
    ctx: ActionContext,
    timeout: Option<Duration>,
) -> Settlement {
    run(action, how, reason, ctx, timeout, true).await
}

/// [`settle`] (`keep` false) and [`settle_or_keep`] (`keep` true).
async fn run(
    action: PendingAction,
    how: ResolveAction,
    reason: String,
    ctx: ActionContext,
    timeout: Option<Duration>,
    keep: bool,
) -> Settlement {
    let cancel = &ctx.cancel.clone();
    let label = action.label().to_owned();
    let late = action.late_outcome();
    if how == ResolveAction::Discard {
        if !action.has_reject() {
            return Settlement {
                result: Ok(None),
                unsettled: None,
            };
        }
        let result = match bounded(action.reject(reason, ctx), cancel, timeout).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(error.message().to_owned()),
            Err(interrupted) => match late_outcome(late).await {
                Some(LateOutcome::Rejected(result)) => Ok(result),
                _ => Err(interrupted_text(interrupted, "reject", &label, false)),
            },
        };
        return Settlement {
            result,
            unsettled: None,
        };
    }
    let (apply, rest) = action.start_apply(reason, ctx);
    let failure = match bounded(apply, cancel, timeout).await {
        Ok(Ok(result)) => {
            return Settlement {
                result: Ok(Some(result)),
                unsettled: None,
            }
        }
        Ok(Err(error)) => error.message().to_owned(),
        Err(interrupted) => match late_outcome(late).await {
            // It completed before the interruption reached it: applied, and said so.
            Some(LateOutcome::Applied(result)) => {
                return Settlement {
                    result: Ok(Some(result)),
                    unsettled: None,
                }
            }
            _ => interrupted_text(interrupted, "apply", &label, keep),
        },
    };
    Settlement {
        unsettled: keep.then(|| rest.into_action(&failure)),
        result: Err(failure),
    }
}

/// After an interrupted apply or reject of an action that runs elsewhere (a plugin process):
/// wait until it has ended there, and whether it completed after all.
async fn late_outcome(late: Option<LateOutcomeFn>) -> Option<LateOutcome> {
    match late {
        Some(late) => late().await,
        None => None,
    }
}

fn interrupted_text(interrupted: Interrupted, callback: &str, label: &str, kept: bool) -> String {
    if kept {
        format!("{callback} of \"{label}\" {interrupted}; the action is still pending")
    } else {
        format!("{callback} of \"{label}\" {interrupted}; the pending action was consumed")
    }
}
