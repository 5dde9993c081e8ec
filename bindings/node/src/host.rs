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
//! The numbering, the waiting and the withdrawal are the loader's forwarder
//! ([`xcsh_loader_core::forward`]); this module is its link to JavaScript, [`RuntimeLink`].
//!
//! A notification or status line is acknowledged by `index.js` once the runtime has shown it;
//! a call's answer waits for those acknowledgements ([`delivered`]), because the
//! answer travels on another thread-safe function, whose turn on the JS thread may come
//! first: without the wait, the runtime could see an apply's result before the "applying"
//! notification it sent.

use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use xcsh_loader_core::forward::{ForwardedHost, HostAnswers, HostLink};
use xcsh_loader_core::services::{form_fields, HostFacts, HostReply, HostRequest};

/// `(request, call, requestJson) => void`: a host request of call `call`, answered through
/// `answerService(request, ok, json)`; an empty `requestJson` withdraws request `request`.
pub(crate) type ServiceFunction = ThreadsafeFunction<
    FnArgs<(i64, u32, String)>,
    (),
    FnArgs<(i64, u32, String)>,
    Status,
    false,
    true,
>;

/// The runtime's services for one call.
pub(crate) type RuntimeHost = ForwardedHost<RuntimeLink>;

/// The runtime's JavaScript thread, reached through the session's service function.
pub(crate) struct RuntimeLink(pub(crate) ServiceFunction);

impl RuntimeLink {
    fn call(&self, request: u64, call: u64, json: String) {
        // Requests are numbered from 1 and calls come from the runtime's own u32 numbers, so
        // neither conversion fails in practice; a number that did not fit would only reach JS
        // as one nobody answers.
        let request = i64::try_from(request).unwrap_or(i64::MAX);
        let call = u32::try_from(call).unwrap_or(u32::MAX);
        self.0.call(
            (request, call, json).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }
}

impl HostLink for RuntimeLink {
    const PEER: &'static str = "the runtime";

    fn send(&self, call: u64, request: u64, body: HostRequest) -> Result<(), String> {
        let json = request_json(&body).map_err(|error| error.to_string())?;
        self.call(request, call, json);
        Ok(())
    }

    /// An empty request: `index.js` aborts the dialog.
    fn withdraw(&self, call: u64, request: u64) {
        self.call(request, call, String::new());
    }
}

/// `request` as `host.js` reads it: a form comes with its fields as every host without forms
/// asks them ([`form_fields`]), so the runtime's dialogs ask what the terminal asks.
fn request_json(request: &HostRequest) -> serde_json::Result<String> {
    let mut json = serde_json::to_value(request)?;
    if let (HostRequest::Form { schema, order, .. }, Some(object)) = (request, json.as_object_mut())
    {
        object.insert(
            "fields".to_owned(),
            serde_json::to_value(form_fields(schema, order))?,
        );
    }
    serde_json::to_string(&json)
}

/// Call `call`'s services over `link`, as `facts` describe them, keeping its notifications'
/// acknowledgements for [`delivered`].
pub(crate) fn runtime_host(
    call: u32,
    facts: HostFacts,
    link: Arc<RuntimeLink>,
    answers: Arc<HostAnswers>,
) -> RuntimeHost {
    ForwardedHost::new(u64::from(call), facts, link, answers).keeping_acknowledgements()
}

/// JS answered request `request`: a `HostReply` as JSON when `ok`, the error message otherwise.
/// Returns whether the request was still waiting.
pub(crate) fn answer(answers: &HostAnswers, request: i64, ok: bool, json: String) -> bool {
    let Ok(request) = u64::try_from(request) else {
        return false;
    };
    let answer = if ok {
        serde_json::from_str::<HostReply>(&json)
            .map_err(|error| format!("the runtime's answer is not a host reply: {error}"))
    } else {
        Err(json)
    };
    answers.answer(request, answer)
}

/// How long a call's answer waits for the runtime to take its notifications: the JS thread
/// answers them at once unless it is blocked, and then the answer waits for it anyway.
const DELIVERY_WAIT: Duration = Duration::from_secs(2);

/// Wait (at most [`DELIVERY_WAIT`]) until the runtime has taken every notification and status
/// line `host`'s call sent: called before the call's answer goes to JS.
pub(crate) async fn delivered(host: &RuntimeHost) {
    host.delivered(DELIVERY_WAIT).await;
}
