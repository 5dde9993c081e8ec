//! [`RuntimeStore`]: the JS runtime's pending-action store, as the loader's session sees it.
//!
//! A plugin's push lands here (from whatever thread the plugin pushed on: a blocking-pool
//! thread in-process, a reader thread under process isolation). The action itself, with its
//! Rust `apply`/`reject`, stays in this table under a number; the runtime's store gets a JS
//! object naming that number (built by `index.js`). The push waits until JS called
//! `pi.pushPendingAction`: if that threw, the action leaves the table and the plugin's push
//! fails with the thrown message, so nothing is half-pushed, and a call's pushes all reach JS
//! before the call ends.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use xcsh_loader_core::{PendingAction, PendingActionSink, PluginError};

/// `(id, label, sourceToolName, detailsJson, hasReject) => void`, throwing to refuse. Weak: it
/// never keeps the runtime alive (a push only happens while a call's promise is pending, and
/// that promise does).
pub(crate) type PushFunction = ThreadsafeFunction<
    FnArgs<(u32, String, String, Option<String>, bool)>,
    (),
    FnArgs<(u32, String, String, Option<String>, bool)>,
    Status,
    false,
    true,
>;

/// The native side of the runtime's store: the actions handed to JS and not yet settled.
pub(crate) struct RuntimeStore {
    push: PushFunction,
    /// By id, in push order (ids only grow).
    actions: Mutex<BTreeMap<u32, PendingAction>>,
    next: AtomicU32,
}

impl RuntimeStore {
    pub(crate) fn new(push: PushFunction) -> Self {
        Self {
            push,
            actions: Mutex::new(BTreeMap::new()),
            next: AtomicU32::new(1),
        }
    }

    /// Take action `id` to run its apply or reject; `None` once it was taken (settled, or
    /// discarded by `close`).
    pub(crate) fn take(&self, id: u32) -> Option<PendingAction> {
        lock(&self.actions).remove(&id)
    }

    /// Put action `id` back after a failed apply, unless the session closed meanwhile: then
    /// the action is handed back, for the caller to discard as `close` would have.
    pub(crate) fn put_back(
        &self,
        id: u32,
        action: PendingAction,
        closed: &AtomicBool,
    ) -> Option<PendingAction> {
        let mut actions = lock(&self.actions);
        // Checked under the table's lock: `close` sets the flag before it empties the table.
        if closed.load(Ordering::SeqCst) {
            return Some(action);
        }
        actions.insert(id, action);
        None
    }

    /// Every action not yet settled, newest first (the order `close` discards them).
    pub(crate) fn take_all_newest_first(&self) -> Vec<PendingAction> {
        let taken = std::mem::take(&mut *lock(&self.actions));
        taken.into_values().rev().collect()
    }
}

impl PendingActionSink for RuntimeStore {
    fn push_action(&self, action: PendingAction) -> Result<(), PluginError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let arguments = (
            id,
            action.label().to_owned(),
            action.source_tool_name().to_owned(),
            action.details().map(|details| details.to_string()),
            action.has_reject(),
        );
        // In the table before JS sees it: the runtime may apply it as soon as it has it.
        lock(&self.actions).insert(id, action);
        let (answer, answered) = std::sync::mpsc::sync_channel::<Result<(), String>>(1);
        let status = self.push.call_with_return_value(
            arguments.into(),
            ThreadsafeFunctionCallMode::Blocking,
            move |returned: napi::Result<()>, _env| {
                let _ = answer.send(returned.map_err(|error| error.reason.clone()));
                Ok(())
            },
        );
        let outcome = if status == Status::Ok {
            // Never on the JS thread: plugin code runs on the loader's threads, and a push
            // blocks only the thread of the plugin that pushed.
            answered
                .recv()
                .unwrap_or_else(|_| Err(SHUTTING_DOWN.to_owned()))
        } else {
            Err(SHUTTING_DOWN.to_owned())
        };
        outcome.map_err(|message| {
            drop(self.take(id));
            PluginError::new(message)
        })
    }
}

/// A push refused because the runtime is going away.
const SHUTTING_DOWN: &str =
    "the JavaScript runtime is shutting down; the pending action was not pushed";

/// Lock `mutex`, recovering from poisoning (the plugin API's one routine).
pub(crate) use xcsh_plugin_api::__private::lock;
