//! [`PendingActionStore`]: the session's LIFO stack of previewed changes awaiting `resolve`.
//!
//! Tools push, `resolve` pops; nothing else removes an action except an explicit
//! [`PendingActionStore::clear`]. The store is shared between tasks and threads behind one
//! mutex: operations are tiny (a `Vec` push or pop), so a lock beats anything cleverer.

use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

use xcsh_plugin_api::__private::lock;
use xcsh_plugin_api::PluginError;

pub use crate::services::{ActionContext, BoxFuture};
/// The `apply(reason, ctx)` callback of a pending action: `ctx` is what the host offers the
/// call that settles it (docs/guide/src/pending.md).
pub type ApplyFn = Box<
    dyn FnOnce(String, ActionContext) -> BoxFuture<Result<AgentToolResult, PluginError>> + Send,
>;
/// The optional `reject(reason, ctx)` callback of a pending action.
pub type RejectFn = Box<
    dyn FnOnce(String, ActionContext) -> BoxFuture<Result<Option<AgentToolResult>, PluginError>>
        + Send,
>;

/// After a failed apply: the apply to run when the action is applied again, or `None` when
/// its apply cannot run again (a one-shot apply, or a plugin that predates retryable ones).
pub type RetryFn = Arc<dyn Fn() -> Option<ApplyFn> + Send + Sync>;

/// How an apply or reject whose future was dropped unfinished (a cancellation, a timeout) ended
/// where it really ran, when it completed after all: the interruption reached it too late.
pub(crate) enum LateOutcome {
    /// The apply completed, with this result.
    Applied(AgentToolResult),
    /// The reject completed, with this result.
    Rejected(Option<AgentToolResult>),
}

/// For an action whose apply and reject run elsewhere (in a plugin process): after one of them
/// was interrupted, waits (bounded) until it has ended there, and says whether it completed
/// after all. `resolve` then reports what really happened.
pub(crate) type LateOutcomeFn = Arc<dyn Fn() -> BoxFuture<Option<LateOutcome>> + Send + Sync>;

/// A previewed change waiting for `resolve`.
///
/// `resolve` (the CLI's, the MCP server's) pops it and runs `apply` or `reject` once, whatever
/// the outcome. A runtime that keeps a failed preview pending (the Node-API binding, for xcsh's
/// TypeScript runtime) uses [`PendingAction::start_apply`] instead: a failed apply leaves an
/// action that can still be rejected, or applied again when its apply is retryable.
pub struct PendingAction {
    label: String,
    source_tool_name: String,
    details: Option<Value>,
    apply: ApplyFn,
    reject: Option<RejectFn>,
    retry: Option<RetryFn>,
    /// Why the first apply failed, once one did.
    first_failure: Option<String>,
    late: Option<LateOutcomeFn>,
}

impl fmt::Debug for PendingAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingAction")
            .field("label", &self.label)
            .field("source_tool_name", &self.source_tool_name)
            .field("details", &self.details)
            .field("has_reject", &self.reject.is_some())
            .finish()
    }
}

impl PendingAction {
    /// A pending action. `label` must be non-empty (see [`PendingAction::validate_label`]).
    pub fn new(
        label: impl Into<String>,
        source_tool_name: impl Into<String>,
        apply: ApplyFn,
    ) -> Self {
        Self {
            label: label.into(),
            source_tool_name: source_tool_name.into(),
            details: None,
            apply,
            reject: None,
            retry: None,
            first_failure: None,
            late: None,
        }
    }

    /// Say how to learn the end of an interrupted apply or reject (see [`LateOutcomeFn`]).
    #[must_use]
    pub(crate) fn with_late_outcome(mut self, late: LateOutcomeFn) -> Self {
        self.late = Some(late);
        self
    }

    /// See [`PendingAction::with_late_outcome`].
    pub(crate) fn late_outcome(&self) -> Option<LateOutcomeFn> {
        self.late.clone()
    }

    /// Say how the action is applied again after a failed apply (see [`RetryFn`]).
    #[must_use]
    pub fn with_retry(mut self, retry: RetryFn) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Check a label before building an action from untrusted input.
    pub fn validate_label(label: &str) -> Result<(), PluginError> {
        if label.trim().is_empty() {
            Err(PluginError::new("pending action label must not be empty"))
        } else {
            Ok(())
        }
    }

    /// Attach a reject callback.
    #[must_use]
    pub fn with_reject(mut self, reject: RejectFn) -> Self {
        self.reject = Some(reject);
        self
    }

    /// Attach details.
    #[must_use]
    pub fn with_details(mut self, details: Option<Value>) -> Self {
        self.details = details;
        self
    }

    /// The human summary.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The tool that produced it.
    pub fn source_tool_name(&self) -> &str {
        &self.source_tool_name
    }

    /// Arbitrary details.
    pub fn details(&self) -> Option<&Value> {
        self.details.as_ref()
    }

    /// Whether a reject callback exists.
    pub fn has_reject(&self) -> bool {
        self.reject.is_some()
    }

    /// Run `apply(reason, ctx)`, consuming the action (an embedder's own `resolve` uses this).
    pub fn apply(
        self,
        reason: String,
        ctx: ActionContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        (self.apply)(reason, ctx)
    }

    /// Start `apply(reason, ctx)`, keeping what a failed apply leaves: the future to run, and
    /// the rest of the action, which [`AfterFailedApply::into_action`] turns back into a
    /// pending action when the apply fails (or is interrupted). On success the rest is dropped.
    pub fn start_apply(
        self,
        reason: String,
        ctx: ActionContext,
    ) -> (
        BoxFuture<Result<AgentToolResult, PluginError>>,
        AfterFailedApply,
    ) {
        let future = (self.apply)(reason, ctx);
        let rest = AfterFailedApply {
            label: self.label,
            source_tool_name: self.source_tool_name,
            details: self.details,
            reject: self.reject,
            retry: self.retry,
            first_failure: self.first_failure,
            late: self.late,
        };
        (future, rest)
    }

    /// Run `reject(reason)` when the action has one, consuming the action; `Ok(None)` when it
    /// has none or it gave no result (the caller's default discard text stands).
    pub fn reject(
        self,
        reason: String,
        ctx: ActionContext,
    ) -> BoxFuture<Result<Option<AgentToolResult>, PluginError>> {
        match self.reject {
            Some(reject) => reject(reason, ctx),
            None => Box::pin(async { Ok(None) }),
        }
    }
}

/// What of a pending action remains while its apply runs (see [`PendingAction::start_apply`]).
pub struct AfterFailedApply {
    label: String,
    source_tool_name: String,
    details: Option<Value>,
    reject: Option<RejectFn>,
    retry: Option<RetryFn>,
    first_failure: Option<String>,
    late: Option<LateOutcomeFn>,
}

impl AfterFailedApply {
    /// The pending action again, after its apply failed with `failure`: its reject unchanged,
    /// and an apply that runs the plugin's again when it is retryable, or otherwise fails
    /// with a message naming the first failure and saying what to do.
    pub fn into_action(self, failure: &str) -> PendingAction {
        let first_failure = self.first_failure.unwrap_or_else(|| failure.to_owned());
        let apply = self
            .retry
            .as_ref()
            .and_then(|retry| retry())
            .unwrap_or_else(|| {
                let message = crate::messages::cannot_apply_again(&self.label, &first_failure);
                Box::new(
                    move |_reason: String, _ctx: ActionContext| -> BoxFuture<_> {
                        Box::pin(async move { Err(PluginError::new(message)) })
                    },
                )
            });
        PendingAction {
            label: self.label,
            source_tool_name: self.source_tool_name,
            details: self.details,
            apply,
            reject: self.reject,
            retry: self.retry,
            first_failure: Some(first_failure),
            late: self.late,
        }
    }
}

/// Where a session's pushed pending actions go: its own [`PendingActionStore`], or the store
/// of the runtime that embeds the session (a TypeScript runtime's, through the Node-API
/// binding), which may refuse a push.
///
/// A refused action is dropped without running either callback, and the tool that pushed it
/// gets the refusal's message as its push error: nothing is left half-pushed.
pub trait PendingActionSink: Send + Sync {
    /// Take `action`, or refuse it with the message the pushing tool's push fails with.
    fn push_action(&self, action: PendingAction) -> Result<(), PluginError>;
}

impl PendingActionSink for PendingActionStore {
    fn push_action(&self, action: PendingAction) -> Result<(), PluginError> {
        self.push(action);
        Ok(())
    }
}

/// What a push listener sees: the pushed action's summary and the new count.
pub type PushListener = dyn Fn(&PendingSummary, usize) + Send + Sync;

struct Listeners {
    next_id: u64,
    entries: Vec<(u64, Arc<PushListener>)>,
}

/// The session's LIFO stack of pending actions. Cheap to share: wrap it in an `Arc`.
pub struct PendingActionStore {
    stack: Mutex<Vec<PendingAction>>,
    listeners: Arc<Mutex<Listeners>>,
}

impl fmt::Debug for PendingActionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingActionStore")
            .field("count", &self.count())
            .finish()
    }
}

impl Default for PendingActionStore {
    fn default() -> Self {
        Self::new()
    }
}

impl PendingActionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self {
            stack: Mutex::new(Vec::new()),
            listeners: Arc::new(Mutex::new(Listeners {
                next_id: 0,
                entries: Vec::new(),
            })),
        }
    }

    /// Put `action` on top, then notify push listeners with its summary and the new count.
    pub fn push(&self, action: PendingAction) {
        let summary = PendingSummary::of(&action);
        let count = {
            let mut stack = lock(&self.stack);
            stack.push(action);
            stack.len()
        };
        // Listeners run outside every lock, so a listener may use the store.
        let listeners: Vec<Arc<PushListener>> = lock(&self.listeners)
            .entries
            .iter()
            .map(|(_, listener)| Arc::clone(listener))
            .collect();
        for listener in &listeners {
            listener(&summary, count);
        }
    }

    /// The label and source of the top action, without removing it.
    pub fn peek(&self) -> Option<PendingSummary> {
        lock(&self.stack).last().map(PendingSummary::of)
    }

    /// Remove and return the top action.
    pub fn pop(&self) -> Option<PendingAction> {
        lock(&self.stack).pop()
    }

    /// Whether anything is pending.
    pub fn has_pending(&self) -> bool {
        !lock(&self.stack).is_empty()
    }

    /// Number of pending actions.
    pub fn count(&self) -> usize {
        lock(&self.stack).len()
    }

    /// Summaries of every pending action, newest first (the order `resolve` takes them).
    pub fn summaries(&self) -> Vec<PendingSummary> {
        lock(&self.stack)
            .iter()
            .rev()
            .map(PendingSummary::of)
            .collect()
    }

    /// Drop every pending action without running any callback. `resolve` never calls this.
    pub fn clear(&self) {
        lock(&self.stack).clear();
    }

    /// Register a push listener; it stays registered until the returned handle is dropped.
    pub fn subscribe_push(
        &self,
        listener: impl Fn(&PendingSummary, usize) + Send + Sync + 'static,
    ) -> PushSubscription {
        let mut listeners = lock(&self.listeners);
        let id = listeners.next_id;
        listeners.next_id += 1;
        listeners.entries.push((id, Arc::new(listener)));
        PushSubscription {
            id,
            listeners: Arc::downgrade(&self.listeners),
        }
    }
}

/// What `peek` and `summaries` return: a view of an action that can outlive the lock.
///
/// Serialised as hosts show a pending action to a program (`call --json`'s `pendingDetails`,
/// MCP's `xcsh/pendingDetails`): `{"label", "sourceToolName", "details"}`, `details` left out
/// when the action has none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSummary {
    /// The action's label.
    pub label: String,
    /// The tool that pushed it.
    pub source_tool_name: String,
    /// The action's `details` (docs/guide/src/pending.md), when it has any: what `call --json` and
    /// MCP's `xcsh/pendingDetails` show of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl PendingSummary {
    fn of(action: &PendingAction) -> Self {
        Self {
            label: action.label.clone(),
            source_tool_name: action.source_tool_name.clone(),
            details: action.details.clone(),
        }
    }
}

/// Unsubscribes its push listener when dropped.
#[must_use = "the listener is removed when this handle is dropped"]
pub struct PushSubscription {
    id: u64,
    listeners: Weak<Mutex<Listeners>>,
}

impl fmt::Debug for PushSubscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushSubscription")
            .field("id", &self.id)
            .finish()
    }
}

impl Drop for PushSubscription {
    fn drop(&mut self) {
        if let Some(listeners) = self.listeners.upgrade() {
            lock(&listeners).entries.retain(|(id, _)| *id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn action(label: &str) -> PendingAction {
        let label_owned = label.to_owned();
        PendingAction::new(
            label,
            "test",
            Box::new(move |_, _| Box::pin(async move { Ok(AgentToolResult::text(label_owned)) })),
        )
    }

    #[test]
    fn summaries_carry_details_newest_first_and_serialise_without_empty_ones() {
        let store = PendingActionStore::new();
        store.push(action("a").with_details(Some(serde_json::json!({"files": 2}))));
        store.push(action("b"));
        let summaries = store.summaries();
        assert_eq!(
            serde_json::to_value(&summaries).ok(),
            Some(serde_json::json!([
                {"label": "b", "sourceToolName": "test"},
                {"label": "a", "sourceToolName": "test", "details": {"files": 2}}
            ]))
        );
    }

    #[test]
    fn is_lifo() {
        let store = PendingActionStore::new();
        assert!(!store.has_pending());
        assert!(store.pop().is_none());
        assert!(store.peek().is_none());
        store.push(action("a"));
        store.push(action("b"));
        assert_eq!(store.count(), 2);
        assert_eq!(store.peek().map(|s| s.label), Some("b".to_owned()));
        assert_eq!(store.pop().map(|a| a.label().to_owned()), Some("b".into()));
        assert_eq!(store.pop().map(|a| a.label().to_owned()), Some("a".into()));
        assert!(store.pop().is_none());
    }

    #[test]
    fn clear_empties() {
        let store = PendingActionStore::new();
        store.push(action("a"));
        store.clear();
        assert_eq!(store.count(), 0);
    }

    #[test]
    fn listeners_see_action_and_count_until_unsubscribed() {
        let store = PendingActionStore::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let subscription = store.subscribe_push(move |action, count| {
            lock(&sink).push((action.label.clone(), count));
        });
        store.push(action("a"));
        store.push(action("b"));
        drop(subscription);
        store.push(action("c"));
        assert_eq!(*lock(&seen), vec![("a".to_owned(), 1), ("b".to_owned(), 2)]);
    }

    #[test]
    fn listener_may_read_the_store() {
        let store = Arc::new(PendingActionStore::new());
        let calls = Arc::new(AtomicUsize::new(0));
        let (inner, counter) = (Arc::downgrade(&store), Arc::clone(&calls));
        let _subscription = store.subscribe_push(move |_, _| {
            if let Some(store) = inner.upgrade() {
                counter.fetch_add(store.count(), Ordering::SeqCst);
            }
        });
        store.push(action("a"));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
