//! The store's stand-in for a pending action that lives in a plugin child: `resolve` runs it
//! like any other, and its apply or reject goes to the child that owns the real action.
//!
//! The session's store stays the host's: LIFO order, labels, details and steering are exactly
//! those of in-process actions. When the proxy is dropped unresolved (a cleared store, an
//! ended session) the child is told to drop the real action; when the child is gone, apply
//! and reject fail and say that nothing was applied.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::connection::Connection;
use super::protocol::{HostMessage, Resolution};
use crate::messages::action_orphaned;
use crate::store::{BoxFuture, PendingAction};
use crate::tool::ToolError;

/// One action in one child; tells the child to drop it unless it was applied or rejected.
struct ActionHandle {
    connection: Arc<Connection>,
    action: u64,
    label: String,
    settled: AtomicBool,
}

impl Drop for ActionHandle {
    fn drop(&mut self) {
        if !self.settled.swap(true, Ordering::SeqCst) {
            self.connection.send(HostMessage::DropAction {
                action: self.action,
            });
        }
    }
}

impl ActionHandle {
    async fn resolve(
        &self,
        message: impl FnOnce(u64) -> HostMessage,
    ) -> Result<Resolution, ToolError> {
        self.settled.store(true, Ordering::SeqCst);
        self.connection.resolve(message).await.map_err(|cause| {
            ToolError::new(action_orphaned(&self.label, &self.connection.path, &cause))
        })
    }
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
    });
    let for_apply = Arc::clone(&handle);
    let mut pending = PendingAction::new(
        label,
        source_tool_name,
        Box::new(move |reason: String| -> BoxFuture<_> {
            Box::pin(async move {
                let message = |request| HostMessage::Apply {
                    request,
                    action,
                    reason,
                };
                match for_apply.resolve(message).await? {
                    Resolution::Applied { result } => Ok(result),
                    Resolution::Failed { message } => Err(ToolError::new(message)),
                    Resolution::Rejected { .. } => Err(ToolError::new(
                        "the plugin process answered apply with a reject",
                    )),
                }
            })
        }),
    )
    .with_details(details);
    if has_reject {
        pending = pending.with_reject(Box::new(move |reason: String| -> BoxFuture<_> {
            Box::pin(async move {
                let message = |request| HostMessage::Reject {
                    request,
                    action,
                    reason,
                };
                match handle.resolve(message).await? {
                    Resolution::Rejected { result } => Ok(result),
                    Resolution::Failed { message } => Err(ToolError::new(message)),
                    Resolution::Applied { .. } => Err(ToolError::new(
                        "the plugin process answered reject with an apply",
                    )),
                }
            })
        }));
    }
    pending
}
