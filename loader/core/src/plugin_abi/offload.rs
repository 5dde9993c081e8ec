//! In-process plugin calls off the host's runtime threads: each call's future is polled on a
//! blocking-pool thread of its own, so plugin code that blocks (`std::thread::sleep`, a busy
//! loop) only ties up that thread. The host's task waits on a channel, so a timeout or a
//! cancellation still returns control at once; the plugin's future is dropped at its next
//! `.await` once the call's [`CancelToken`] fires.
//!
//! Nothing here can stop plugin code that never yields: the thread stays busy until it
//! returns, and the call is reported as abandoned (see [`Running::interrupted`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use abi_stable::std_types::RResult;
use serde_json::Value;
use xcsh_plugin_api::ffi::{FfiToolDef, ToolContextBox};
use xcsh_plugin_api::AgentToolResult;

use crate::messages;
use crate::store::BoxFuture;
use crate::tool::GRACE_PERIOD;
use crate::tool::{CancelToken, PluginError};

/// The calls of one tool running off the runtime, by tool-call id; each token fires when its
/// call's thread is done with the plugin's future.
#[derive(Clone, Default)]
pub(crate) struct Running {
    calls: Arc<Mutex<HashMap<String, CancelToken>>>,
}

impl Running {
    fn insert(&self, id: &str) -> CancelToken {
        let finished = CancelToken::new();
        self.lock().insert(id.to_owned(), finished.clone());
        finished
    }

    fn remove(&self, id: &str) -> Option<CancelToken> {
        self.lock().remove(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancelToken>> {
        xcsh_plugin_api::__private::lock(&self.calls)
    }

    /// After the session gave up on call `id`: give its thread a grace period to drop the
    /// plugin's future; if it is still busy, say the call was abandoned.
    pub(crate) fn interrupted(&self, id: &str) -> BoxFuture<Option<String>> {
        let finished = self.remove(id);
        Box::pin(async move {
            let finished = finished?;
            let ended = tokio::time::timeout(GRACE_PERIOD, finished.cancelled()).await;
            ended.is_err().then(|| messages::CALL_ABANDONED.to_owned())
        })
    }
}

/// Run one call of `tool` on a blocking-pool thread of the current runtime (inline when there
/// is no runtime).
pub(super) fn execute(
    tool: Arc<FfiToolDef>,
    running: &Running,
    id: String,
    arguments: Value,
    context: ToolContextBox,
    cancel: CancelToken,
) -> BoxFuture<Result<AgentToolResult, PluginError>> {
    let finished = running.insert(&id);
    let running = running.clone();
    Box::pin(async move {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            running.remove(&id);
            let future = tool.execute(id.into(), arguments.to_string().into(), context);
            return into_result(future.await);
        };
        let polling = runtime.clone();
        let call_id = id.clone();
        runtime.spawn_blocking(move || {
            let future = tool.execute(call_id.into(), arguments.to_string().into(), context);
            let outcome = polling.block_on(async move {
                tokio::select! {
                    outcome = future => Some(outcome),
                    () = cancel.cancelled() => None,
                }
            });
            let _ = sender.send(outcome);
            finished.cancel();
        });
        let outcome = receiver.await;
        running.remove(&id);
        match outcome {
            Ok(Some(outcome)) => into_result(outcome),
            Ok(None) => Err(PluginError::new("the call was cancelled")),
            Err(_) => Err(PluginError::new("the call's thread ended without a result")),
        }
    })
}

fn into_result(
    outcome: RResult<xcsh_plugin_api::ffi::FfiToolResult, abi_stable::std_types::RString>,
) -> Result<AgentToolResult, PluginError> {
    match outcome {
        RResult::ROk(result) => Ok(AgentToolResult::from(result)),
        RResult::RErr(message) => Err(PluginError::new(message.into_string())),
    }
}
