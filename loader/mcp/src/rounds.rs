//! Host services on protocol 2026-07-28 and later, where a server may not send requests to
//! its client (rmcp refuses them): a call whose plugin asks a question answers "input
//! required" instead (`InputRequiredResult`, rmcp's `model/mrtr.rs`), and the client sends
//! the same `tools/call` again with the answer (`inputResponses`) and the `requestState` it
//! was given. Between the two requests the call keeps running, paused at its question.
//!
//! - Each question is one round: its request goes out under the key `q`, and the retry's
//!   `inputResponses.q` answers it (an elicitation's or a sampling request's result).
//! - A paused call is kept [`PAUSED_CALL_LIMIT`] at most. A client that never comes back has
//!   the call cancelled then (the plugin sees `cancel`; an apply would be undone), and a late
//!   retry is told the call expired. The plugin's process counts as busy meanwhile, so it is
//!   not stopped as idle.
//! - rmcp's client gives up after 10 rounds (`DEFAULT_MRTR_MAX_ROUNDS`); the server counts
//!   none: a call that asks more questions than its client will answer waits for the next
//!   retry until [`PAUSED_CALL_LIMIT`], then is cancelled like any abandoned call.
//! - A paused call is registered among the running calls: a client that closes its input has
//!   it cancelled with the others.
//! - A retry that does not answer the question fails that question (the plugin's request
//!   errors); one whose `requestState` names no paused call is an `invalid_params` error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{InputRequest, InputRequests, InputRequiredResult};
use rmcp::ErrorData;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use xcsh_loader_core::{CancelToken, ToolOutcome};
use xcsh_plugin_api::__private::lock;

/// How long a call paused at a question waits for its client's retry.
pub const PAUSED_CALL_LIMIT: Duration = Duration::from_secs(300);

/// The key of a round's one input request.
const KEY: &str = "q";

/// A plugin's question as a round's input request, and where its answer goes.
pub(super) struct Question {
    pub(super) request: InputRequest,
    pub(super) answer: oneshot::Sender<Result<Value, String>>,
}

/// Where a call's questions go on a 2026-07-28 session.
pub(super) type Questions = mpsc::UnboundedSender<Question>;

/// A call running across requests.
pub(super) struct RoundCall {
    pub(super) outcome: tokio::task::JoinHandle<Result<ToolOutcome, ErrorData>>,
    pub(super) questions: mpsc::UnboundedReceiver<Question>,
    pub(super) cancel: CancelToken,
}

/// A call paused at a question.
struct Paused {
    call: RoundCall,
    answer: oneshot::Sender<Result<Value, String>>,
}

/// How a round ended.
pub(super) enum Round {
    /// The call ended.
    Done(Result<ToolOutcome, ErrorData>),
    /// The call asks: send this to the client.
    InputRequired(InputRequiredResult),
}

/// The calls paused at a question, by request state.
#[derive(Default)]
pub(super) struct PausedCalls {
    calls: Mutex<HashMap<String, Paused>>,
    next: AtomicU64,
}

impl PausedCalls {
    /// Run `call` until it ends or asks. When the client cancels the request driving it
    /// (`request`), the call is cancelled and this waits for its end (no response is sent).
    pub(super) async fn drive(
        self: &Arc<Self>,
        mut call: RoundCall,
        request: &tokio_util::sync::CancellationToken,
    ) -> Round {
        let lost = |error: tokio::task::JoinError| {
            Err(ErrorData::internal_error(
                format!("the call was lost: {error}"),
                None,
            ))
        };
        tokio::select! {
            outcome = &mut call.outcome => Round::Done(outcome.unwrap_or_else(lost)),
            Some(question) = call.questions.recv() => self.pause(call, question),
            () = request.cancelled() => {
                call.cancel.cancel();
                Round::Done(call.outcome.await.unwrap_or_else(lost))
            }
        }
    }

    fn pause(self: &Arc<Self>, call: RoundCall, question: Question) -> Round {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let state = format!("xcsh-round-{number}");
        let mut requests = InputRequests::new();
        requests.insert(KEY.to_owned(), question.request);
        lock(&self.calls).insert(
            state.clone(),
            Paused {
                call,
                answer: question.answer,
            },
        );
        let calls = Arc::clone(self);
        let expired = state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(PAUSED_CALL_LIMIT).await;
            let paused = lock(&calls.calls).remove(&expired);
            if let Some(paused) = paused {
                tracing::warn!(
                    "a call paused at a question got no answer in {}s; cancelling it",
                    PAUSED_CALL_LIMIT.as_secs()
                );
                paused.call.cancel.cancel();
            }
        });
        Round::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// The client's retry: answer the paused call's question, then run it on.
    pub(super) async fn resume(
        self: &Arc<Self>,
        state: &str,
        responses: Option<&rmcp::model::InputResponses>,
        request: &tokio_util::sync::CancellationToken,
    ) -> Round {
        let Some(paused) = lock(&self.calls).remove(state) else {
            return Round::Done(Err(ErrorData::invalid_params(
                format!(
                    "requestState {state:?} names no paused call: it was answered already, or \
                     expired after {}s without an answer",
                    PAUSED_CALL_LIMIT.as_secs()
                ),
                None,
            )));
        };
        let answer = responses
            .and_then(|responses| responses.get(KEY))
            .cloned()
            .ok_or_else(|| {
                format!("the client's retry did not answer the question (no inputResponses.{KEY})")
            });
        let _ = paused.answer.send(answer);
        self.drive(paused.call, request).await
    }
}
