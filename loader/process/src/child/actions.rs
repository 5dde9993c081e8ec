//! The pending actions a plugin pushed, as its child keeps them: the push (which waits for the
//! host's store), then the host's apply, reject or drop of each.
//!
//! An apply or reject runs on the worker that read it, against the request's [`CancelToken`]:
//! when the host gives up on the request (a cancelled or timed-out `resolve`) or the session
//! ends, the plugin's future is dropped there, so an apply that commits staged file changes
//! undoes them before the child answers. A cancelled apply keeps the action, as a failed one
//! does, unless the host dropped the action meanwhile.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{Outgoing, Shared};
use xcsh_loader_core::for_layers::protocol::{ChildMessage, Resolution};
use xcsh_loader_core::forward::Pending;
use xcsh_loader_core::messages::{APPLY_CANCELLED, REJECT_CANCELLED};
use xcsh_loader_core::store::PendingAction;
use xcsh_loader_core::tool::{ActionContext, CancelToken, PluginError};
use xcsh_plugin_api::__private::lock;

/// An action the host's store took.
enum Held {
    /// Waiting for the host's apply, reject or drop.
    Ready(PendingAction),
    /// Its apply or reject runs; `dropped` once the host dropped the action meanwhile (a failed
    /// or cancelled apply then does not keep it).
    Running { dropped: bool },
}

/// The child's side of the plugin's pushes: the actions the host took, by id, and the pushes
/// waiting for the host's answer.
#[derive(Default)]
pub(super) struct Pushes {
    actions: Mutex<HashMap<u64, Held>>,
    /// The pushes waiting for the host's answer: `None` when its store took the action, its
    /// refusal otherwise.
    waiting: Pending<Option<String>>,
    /// Set once calls are served: before that (a push from the factory) nobody reads the
    /// host's answer.
    pub(super) serving: AtomicBool,
}

impl Pushes {
    /// Send `action` to the host and wait for its answer: the plugin's push succeeds only once
    /// the session's store took the action, and fails with the store's refusal otherwise.
    /// Another worker reads the answer (see `work`).
    pub(super) fn push(
        &self,
        outgoing: &Outgoing,
        action: PendingAction,
    ) -> Result<(), PluginError> {
        if !self.serving.load(Ordering::SeqCst) {
            return Err(PluginError::new(
                "a pending action can only be pushed while a tool runs, not from the plugin's factory",
            ));
        }
        let (id, answer) = self.waiting.open();
        let message = ChildMessage::Push {
            action: id,
            label: action.label().to_owned(),
            source_tool_name: action.source_tool_name().to_owned(),
            details: action.details().cloned(),
            has_reject: action.has_reject(),
        };
        // Kept before the push is sent: the host may apply it as soon as it took it.
        lock(&self.actions).insert(id, Held::Ready(action));
        outgoing.send(&message);
        // The plugin's push is synchronous: this worker waits (other workers read the socket),
        // on a plain thread park, whatever runtime the plugin's call runs on.
        let refused = match futures_executor::block_on(answer) {
            Ok(refused) => refused,
            // The host is gone: nobody will resolve the action.
            Err(_) => Some("the host ended the session".to_owned()),
        };
        match refused {
            None => Ok(()),
            Some(message) => {
                let action = lock(&self.actions).remove(&id);
                drop(action);
                Err(PluginError::new(message))
            }
        }
    }

    /// The host's answer to the push of `action`.
    pub(super) fn answered(&self, action: u64, refused: Option<String>) {
        self.waiting.answer(action, refused);
    }

    /// The host is gone: every push waiting for it fails now, and every later one at once.
    pub(super) fn host_gone(&self) {
        self.waiting.close();
    }

    /// The host dropped `action` unresolved. One whose apply runs is not kept after it.
    pub(super) fn drop_action(&self, action: u64) {
        let mut actions = lock(&self.actions);
        let held = match actions.get_mut(&action) {
            Some(Held::Running { dropped }) => {
                *dropped = true;
                None
            }
            Some(Held::Ready(_)) => actions.remove(&action),
            None => None,
        };
        drop(actions);
        // Plugin code (the action's drop) runs outside the lock.
        drop(held);
    }

    /// Take `action` to run its apply or reject; `None` when it is not waiting for one.
    fn start(&self, action: u64) -> Option<PendingAction> {
        let mut actions = lock(&self.actions);
        match actions.remove(&action) {
            Some(Held::Ready(pending)) => {
                actions.insert(action, Held::Running { dropped: false });
                Some(pending)
            }
            Some(running) => {
                actions.insert(action, running);
                None
            }
            None => None,
        }
    }

    /// The apply or reject of `action` ended; `kept` is the action again after a failed or
    /// cancelled apply, kept for the host unless it dropped the action meanwhile.
    fn end(&self, action: u64, kept: Option<PendingAction>) {
        let mut actions = lock(&self.actions);
        let dropped = matches!(
            actions.remove(&action),
            Some(Held::Running { dropped: true })
        );
        let unwanted = match kept {
            Some(pending) if !dropped => {
                actions.insert(action, Held::Ready(pending));
                None
            }
            other => other,
        };
        drop(actions);
        drop(unwanted);
    }
}

/// Apply or reject `id` on this worker until it ends or `cancel` fires, then answer `request`.
///
/// A failed or cancelled apply settles nothing: the action goes back into the table under its
/// id, for the host to reject, apply again (its copy decides whether the plugin's apply runs
/// again), or drop (what the host's own `resolve` does: pop, then apply once).
pub(super) fn resolve(
    shared: &Shared,
    request: u64,
    id: u64,
    reason: String,
    apply: bool,
    ctx: ActionContext,
) {
    let cancel = &ctx.cancel.clone();
    let pushes = &shared.pushes;
    let Some(action) = pushes.start(id) else {
        shared.outgoing.send(&ChildMessage::Resolved {
            request,
            resolution: Resolution::Failed {
                message: "the pending action is unknown to its plugin process".to_owned(),
            },
        });
        return;
    };
    let resolution = if apply {
        let (future, rest) = action.start_apply(reason, ctx);
        match until_cancelled(shared, future, cancel) {
            Some(Ok(result)) => {
                pushes.end(id, None);
                Resolution::Applied { result }
            }
            outcome => {
                let message = match outcome {
                    Some(Err(error)) => error.message().to_owned(),
                    _ => APPLY_CANCELLED.to_owned(),
                };
                pushes.end(id, Some(rest.into_action(&message)));
                Resolution::Failed { message }
            }
        }
    } else {
        let outcome = until_cancelled(shared, action.reject(reason, ctx), cancel);
        pushes.end(id, None);
        match outcome {
            Some(Ok(result)) => Resolution::Rejected { result },
            Some(Err(error)) => Resolution::Failed {
                message: error.message().to_owned(),
            },
            None => Resolution::Failed {
                message: REJECT_CANCELLED.to_owned(),
            },
        }
    };
    shared.outgoing.send(&ChildMessage::Resolved {
        request,
        resolution,
    });
}

/// Poll `future` on this worker until it ends (`Some`) or `cancel` fires (`None`: the future is
/// dropped here, before this returns).
fn until_cancelled<T>(
    shared: &Shared,
    future: impl std::future::Future<Output = T>,
    cancel: &CancelToken,
) -> Option<T> {
    shared.runtime.block_on(async move {
        tokio::select! {
            outcome = future => Some(outcome),
            () = cancel.cancelled() => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use xcsh_plugin_api::AgentToolResult;

    fn action() -> PendingAction {
        PendingAction::new(
            "Test: one",
            "test",
            Box::new(|_reason, _ctx| Box::pin(async { Ok(AgentToolResult::text("applied")) })),
        )
    }

    fn kept(pushes: &Pushes) -> Vec<u64> {
        let actions = lock(&pushes.actions);
        actions
            .iter()
            .filter(|(_, held)| matches!(held, Held::Ready(_)))
            .map(|(id, _)| *id)
            .collect()
    }

    #[test]
    fn a_cancelled_apply_keeps_its_action_unless_the_host_dropped_it_meanwhile() {
        let pushes = Pushes::default();
        for id in [1, 2] {
            lock(&pushes.actions).insert(id, Held::Ready(action()));
        }
        for id in [1, 2] {
            let Some(running) = pushes.start(id) else {
                panic!("action {id} is not there");
            };
            // While it runs, it is not there for another apply.
            assert!(pushes.start(id).is_none());
            if id == 2 {
                pushes.drop_action(id);
            }
            // Its apply is dropped unfinished (cancelled).
            let ctx = ActionContext::without_services(CancelToken::new());
            let (apply, rest) = running.start_apply(String::new(), ctx);
            drop(apply);
            pushes.end(id, Some(rest.into_action(APPLY_CANCELLED)));
        }
        assert_eq!(kept(&pushes), [1]);
        // A dropped action that waits is dropped at once; an applied one is not kept.
        pushes.drop_action(1);
        assert!(kept(&pushes).is_empty());
        lock(&pushes.actions).insert(3, Held::Ready(action()));
        assert!(pushes.start(3).is_some());
        pushes.end(3, None);
        assert!(lock(&pushes.actions).is_empty());
    }
}
