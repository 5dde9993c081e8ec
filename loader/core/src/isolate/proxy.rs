//! The store's stand-in for a pending action that lives in a plugin child: `resolve` runs it
//! like any other, and its apply or reject goes to the child that owns the real action.
//!
//! The session's store stays the host's: LIFO order, labels, details and steering are exactly
//! those of in-process actions. When the proxy is dropped unresolved (a cleared store, an
//! ended session) the child is told to drop the real action; when the child is gone, apply
//! and reject fail and say that nothing was applied. When it ended during an apply, an
//! interrupted commit of staged file changes it left is finished or undone right away (the
//! recovery every new session runs), and the error says which.
//!
//! An apply or reject the host gives up on (a cancelled or timed-out `resolve`) is cancelled in
//! the child too: its future is dropped there, so an apply that commits staged file changes
//! undoes them. `resolve` then waits (up to the grace period) for the child to say how it
//! ended, and reports an apply that completed before the cancellation reached it as applied.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::connection::{Connection, LateAnswer};
use super::protocol::{HostMessage, Resolution};
use crate::messages::{action_orphaned, apply_cut_short};
use crate::store::{ActionContext, ApplyFn, BoxFuture, LateOutcome, PendingAction};
use crate::tool::{PluginError, GRACE_PERIOD};
use xcsh_plugin_api::__private::lock;

/// One action in one child; tells the child to drop it unless it was applied or rejected.
struct ActionHandle {
    connection: Arc<Connection>,
    action: u64,
    label: String,
    settled: AtomicBool,
    /// How the latest apply or reject request ended in the child.
    late: Mutex<Option<LateAnswer>>,
}

/// Marks the action unsettled again when an apply is dropped before its answer: the child keeps
/// an action whose apply was cancelled, as one whose apply failed.
struct KeptIfDropped<'a>(Option<&'a AtomicBool>);

impl Drop for KeptIfDropped<'_> {
    fn drop(&mut self) {
        if let Some(settled) = self.0 {
            settled.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for ActionHandle {
    fn drop(&mut self) {
        if !self.settled.swap(true, Ordering::SeqCst) {
            self.connection.send(HostMessage::DropAction {
                action: self.action,
            });
        }
        // The action held its process busy (never stopped while idle); its idle time starts
        // now.
        self.connection.touch();
    }
}

impl ActionHandle {
    /// Send the apply or reject `message` and wait for the child's answer. The action is
    /// settled unless an apply failed: the child then keeps it, for a reject or a retry (the
    /// host's own `resolve` drops it, and the drop reaches the child).
    async fn resolve(
        &self,
        message: impl FnOnce(u64) -> HostMessage,
        apply: bool,
        ctx: ActionContext,
    ) -> Result<Resolution, PluginError> {
        // Settled while in flight: the child took the action out of its table to run it.
        self.settled.store(true, Ordering::SeqCst);
        let mut kept = KeptIfDropped(apply.then_some(&self.settled));
        let late = LateAnswer::default();
        *lock(&self.late) = Some(late.clone());
        let resolution = self.connection.resolve(message, late, ctx).await;
        kept.0 = None;
        self.connection.touch();
        let resolution = match resolution {
            Ok(resolution) => resolution,
            Err(gone) if apply && gone.sent => {
                return Err(PluginError::new(self.apply_cut_short(&gone.cause).await))
            }
            Err(gone) => {
                return Err(PluginError::new(action_orphaned(
                    &self.label,
                    &self.connection.path,
                    &gone.cause,
                )))
            }
        };
        if apply && matches!(resolution, Resolution::Failed { .. }) {
            self.settled.store(false, Ordering::SeqCst);
        }
        Ok(resolution)
    }

    /// The child ended while it had the apply: it may have been committing staged file
    /// changes, and left their journal. Its process is gone, so nothing is committing there
    /// any more (a commit of another process still running keeps recovery out): finish or
    /// undo it now, as the next session would, and say which.
    async fn apply_cut_short(&self, cause: &str) -> String {
        let cwd = self.connection.cwd.clone();
        let recover = move || crate::recovery::recover_interrupted_applies(&cwd);
        let recovered = tokio::task::spawn_blocking(recover)
            .await
            .unwrap_or_default();
        let left = self
            .connection
            .cwd
            .join(xcsh_plugin_api::files::JOURNAL_DIR)
            .exists();
        apply_cut_short(&self.label, &self.connection.path, cause, &recovered, left)
    }
}

impl ActionHandle {
    /// After an apply or reject of this action was dropped unanswered: wait (up to the grace
    /// period) until the child has ended it, and whether it completed there after all.
    async fn late_outcome(&self) -> Option<LateOutcome> {
        let late = lock(&self.late).clone()?;
        match late.wait(GRACE_PERIOD).await? {
            Resolution::Applied { result } => Some(LateOutcome::Applied(result)),
            Resolution::Rejected { result } => Some(LateOutcome::Rejected(result)),
            Resolution::Failed { .. } => None,
        }
    }
}

/// The apply of the action behind `handle`: the child runs the plugin's.
fn proxy_apply(handle: &Arc<ActionHandle>) -> ApplyFn {
    let handle = Arc::clone(handle);
    Box::new(move |reason: String, ctx: ActionContext| -> BoxFuture<_> {
        Box::pin(async move {
            let action = handle.action;
            let facts = ctx.services.facts();
            let message = |request| HostMessage::Apply {
                request,
                action,
                reason,
                facts,
            };
            // A write the sandbox refused in the enclosing repository: the flag that grants it.
            match handle.resolve(message, true, ctx).await? {
                Resolution::Applied { mut result } => {
                    handle.connection.explain_in_result(&mut result);
                    Ok(result)
                }
                Resolution::Failed { message } => Err(PluginError::new(
                    handle.connection.explain_in_error(message),
                )),
                Resolution::Rejected { .. } => Err(PluginError::new(
                    "the plugin process answered apply with a reject",
                )),
            }
        })
    })
}

/// The proxy for action `action` that `connection`'s child pushed.
pub(super) fn proxy_action(
    connection: Arc<Connection>,
    action: u64,
    label: String,
    source_tool_name: String,
    details: Option<Value>,
    has_reject: bool,
) -> PendingAction {
    let handle = Arc::new(ActionHandle {
        connection,
        action,
        label: label.clone(),
        settled: AtomicBool::new(false),
        late: Mutex::new(None),
    });
    let for_retry = Arc::clone(&handle);
    let for_late = Arc::clone(&handle);
    let mut pending = PendingAction::new(label, source_tool_name, proxy_apply(&handle))
        .with_details(details)
        // The child keeps an action whose apply failed, and its own copy decides what applying
        // it again does (the plugin's apply again, or the error naming the first failure).
        .with_retry(Arc::new(move || Some(proxy_apply(&for_retry))))
        .with_late_outcome(Arc::new(move || {
            let handle = Arc::clone(&for_late);
            Box::pin(async move { handle.late_outcome().await })
        }));
    if has_reject {
        pending = pending.with_reject(Box::new(move |reason: String, ctx: ActionContext| {
            Box::pin(async move {
                let facts = ctx.services.facts();
                let message = |request| HostMessage::Reject {
                    request,
                    action,
                    reason,
                    facts,
                };
                match handle.resolve(message, false, ctx).await? {
                    Resolution::Rejected { result } => Ok(result),
                    Resolution::Failed { message } => Err(PluginError::new(
                        handle.connection.explain_in_error(message),
                    )),
                    Resolution::Applied { .. } => Err(PluginError::new(
                        "the plugin process answered reject with an apply",
                    )),
                }
            })
        }));
    }
    pending
}
