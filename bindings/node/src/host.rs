//! The runtime as the plugins' host (docs/guide/src/ask.md, runtime.md): a call's questions,
//! notifications and completions go to `index.js` through one thread-safe function, `(request,
//! call, json)`, which answers each with [`NativeSession::answer_service`](crate::NativeSession) (a
//! `HostReply` as JSON, or an error message). `index.js` asks the runtime's own UI (the extension
//! context's `ui`, or `pi.ui` where the runtime gives a real one) and its model.
//!
//! What a call may do is decided by `index.js` when the call starts (`HostFacts`: whether a
//! UI can answer, the session's model) and carried here; the loader's `CallServices` keeps
//! the shared rules (defaults without a UI, one question at a time, answers checked). A
//! question withdrawn (its call cancelled) is sent as an empty request, so `index.js` aborts
//! the dialog.
//!
//! A notification or status line is acknowledged by `index.js` once the runtime has shown it;
//! a call's answer waits for those acknowledgements ([`RuntimeHost::delivered`]), because the
//! answer travels on another thread-safe function, whose turn on the JS thread may come
//! first: without the wait, the runtime could see an apply's result before the "applying"
//! notification it sent.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use tokio::sync::oneshot;
use xcsh_loader::services::{
    CompletionRequest, HostFacts, HostReply, HostRequest, HostServices, ModelInfo, NotifyLevel,
};
use xcsh_loader::store::BoxFuture;
use xcsh_loader::ToolError;

use crate::store::lock;

/// `(request, call, requestJson) => void`: a host request of call `call`, answered through
/// `answerService(request, ok, json)`; an empty `requestJson` withdraws request `request`.
pub(crate) type ServiceFunction = ThreadsafeFunction<
    FnArgs<(u32, u32, String)>,
    (),
    FnArgs<(u32, u32, String)>,
    Status,
    false,
    true,
>;

/// The requests sent to JS and not yet answered.
#[derive(Default)]
pub(crate) struct Answers {
    waiting: Mutex<HashMap<u32, oneshot::Sender<Result<String, String>>>>,
    next: AtomicU32,
}

impl Answers {
    /// JS answered request `request`; `false` when nobody waits for it (withdrawn, or unknown).
    pub(crate) fn answer(&self, request: u32, answer: Result<String, String>) -> bool {
        match lock(&self.waiting).remove(&request) {
            Some(waiting) => waiting.send(answer).is_ok(),
            None => false,
        }
    }
}

/// The runtime's services for one call.
pub(crate) struct RuntimeHost {
    pub(crate) call: u32,
    pub(crate) facts: HostFacts,
    pub(crate) function: Arc<ServiceFunction>,
    pub(crate) answers: Arc<Answers>,
    /// Notifications and status lines sent and not yet acknowledged.
    pub(crate) told: Mutex<Vec<BoxFuture<Result<HostReply, ToolError>>>>,
}

/// How long a call's answer waits for the runtime to take its notifications: the JS thread
/// answers them at once unless it is blocked, and then the answer waits for it anyway.
const DELIVERY_WAIT: Duration = Duration::from_secs(2);

/// Withdraws a request whose answer is no longer wanted (its call was cancelled).
struct Withdraw {
    function: Arc<ServiceFunction>,
    answers: Arc<Answers>,
    request: u32,
    call: u32,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        // Still waiting (not answered): withdraw it.
        if lock(&self.answers.waiting).remove(&self.request).is_some() {
            self.function.call(
                (self.request, self.call, String::new()).into(),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }
}

impl RuntimeHost {
    /// Send `request` to JS and wait for its reply.
    fn send(&self, request: &HostRequest) -> BoxFuture<Result<HostReply, ToolError>> {
        let json = match serde_json::to_string(request) {
            Ok(json) => json,
            Err(error) => return Box::pin(async move { Err(ToolError::new(error.to_string())) }),
        };
        let number = self.answers.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (sender, answered) = oneshot::channel();
        lock(&self.answers.waiting).insert(number, sender);
        self.function.call(
            (number, self.call, json).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
        let withdraw = Withdraw {
            function: Arc::clone(&self.function),
            answers: Arc::clone(&self.answers),
            request: number,
            call: self.call,
        };
        Box::pin(async move {
            let _withdraw = withdraw;
            let answer = answered.await;
            let json = answer
                .map_err(|_| ToolError::new("the runtime dropped the request"))?
                .map_err(ToolError::new)?;
            serde_json::from_str(&json).map_err(|error| {
                ToolError::new(format!("the runtime's answer is not a host reply: {error}"))
            })
        })
    }

    /// Send `request`; its acknowledgement is awaited by [`RuntimeHost::delivered`].
    fn tell(&self, request: HostRequest) {
        let acknowledged = self.send(&request);
        lock(&self.told).push(acknowledged);
    }

    /// Wait (at most [`DELIVERY_WAIT`]) until the runtime has taken every notification and
    /// status line this call sent: called before the call's answer goes to JS.
    pub(crate) async fn delivered(&self) {
        let told = std::mem::take(&mut *lock(&self.told));
        let all = async {
            for acknowledged in told {
                // A notification the runtime failed to show is not the call's failure.
                let _ = acknowledged.await;
            }
        };
        let _ = tokio::time::timeout(DELIVERY_WAIT, all).await;
    }
}

impl HostServices for RuntimeHost {
    fn has_ui(&self) -> bool {
        self.facts.has_ui
    }

    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, ToolError>> {
        self.send(&question)
    }

    fn notify(&self, message: &str, level: NotifyLevel) {
        self.tell(HostRequest::Notify {
            message: message.to_owned(),
            level,
        });
    }

    fn set_status(&self, key: &str, text: Option<&str>) {
        self.tell(HostRequest::SetStatus {
            key: key.to_owned(),
            text: text.map(str::to_owned),
        });
    }

    fn model(&self) -> Option<ModelInfo> {
        self.facts.model.clone()
    }

    fn can_complete(&self) -> bool {
        self.facts.can_complete
    }

    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, ToolError>> {
        let reply = self.send(&HostRequest::Complete { request });
        Box::pin(async move {
            match reply.await? {
                HostReply::Completion { text, .. } => Ok(text),
                other => Err(ToolError::new(format!(
                    "the runtime answered a completion with {other:?}"
                ))),
            }
        })
    }
}
