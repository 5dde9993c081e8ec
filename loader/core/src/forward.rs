//! Requests that wait for an answer from the other side of a link, and a call's host services
//! forwarded over one.
//!
//! Two hosts do not answer a plugin's questions themselves but pass them on: a plugin process
//! (to its host, over the socket) and the Node binding (to the runtime's JavaScript thread).
//! Both number each request, keep its waiter until the answer comes back, take it off the
//! table when the caller stops waiting (its call was cancelled), and send notifications
//! without waiting. [`Pending`] is that table, [`ForwardedHost`] those services, and a
//! [`HostLink`] the one part each side writes: how a request travels, and how a withdrawal
//! does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::services::{
    CompletionRequest, ForwardingHost, HostFacts, HostReply, HostRequest, HostServices, ModelInfo,
    NotifyLevel,
};
use crate::store::BoxFuture;
use crate::tool::PluginError;
use xcsh_plugin_api::__private::lock;

/// Numbered requests waiting for their answers. Numbers start at 1 and are never reused.
pub struct Pending<T> {
    /// `None` once closed: nobody will answer.
    waiting: Mutex<Option<HashMap<u64, oneshot::Sender<T>>>>,
    /// The last number given (0: none yet), perhaps shared ([`Pending::numbered_from`]).
    next: Arc<AtomicU64>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self::numbered_from(Arc::default())
    }
}

impl<T> std::fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("waiting", &lock(&self.waiting).as_ref().map(HashMap::len))
            .finish()
    }
}

impl<T> Pending<T> {
    /// A table whose numbers come from `numbers` (the last number given; 0 when none), a
    /// sequence it shares with other messages of the link: a plugin process numbers calls,
    /// session events and applies in one space, so that none is mistaken for another.
    pub fn numbered_from(numbers: Arc<AtomicU64>) -> Self {
        Self {
            waiting: Mutex::new(Some(HashMap::new())),
            next: numbers,
        }
    }

    /// A new request: its number, and where its answer arrives (an error there once the table
    /// is closed or dropped unanswered: the other side is gone).
    pub fn open(&self) -> (u64, oneshot::Receiver<T>) {
        let number = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (sender, answer) = oneshot::channel();
        if let Some(waiting) = lock(&self.waiting).as_mut() {
            waiting.insert(number, sender);
        }
        (number, answer)
    }

    /// A number of the table's sequence that nobody waits on: for a one-way notice, whose
    /// acknowledgement, if the other side sends one, finds nobody and is dropped.
    pub fn unwaited(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Request `number` was answered; `false` when nobody waits for it (withdrawn, answered
    /// already, or never asked).
    pub fn answer(&self, number: u64, answer: T) -> bool {
        let waiting = lock(&self.waiting).as_mut().and_then(|w| w.remove(&number));
        waiting.is_some_and(|waiting| waiting.send(answer).is_ok())
    }

    /// Whether request `number` still waits for its answer.
    pub fn is_waiting(&self, number: u64) -> bool {
        lock(&self.waiting)
            .as_ref()
            .is_some_and(|waiting| waiting.contains_key(&number))
    }

    /// Take request `number` off the table unanswered; whether it was still waiting.
    pub fn withdraw(&self, number: u64) -> bool {
        let waiting = lock(&self.waiting).as_mut().and_then(|w| w.remove(&number));
        waiting.is_some()
    }

    /// Nobody will answer any more (the other side is gone): every request waiting now, and
    /// every one opened later, ends without an answer.
    pub fn close(&self) {
        let waiting = lock(&self.waiting).take();
        drop(waiting);
    }
}

/// How a forwarded host request reaches whoever answers it. The answers come back through
/// [`Pending::answer`] on the table the [`ForwardedHost`] was given.
pub trait HostLink: Send + Sync + 'static {
    /// Who answers, as errors name it ("the host", "the runtime").
    const PEER: &'static str;

    /// Send request `request` of call `call`; an error when it cannot go.
    fn send(&self, call: u64, request: u64, body: HostRequest) -> Result<(), String>;

    /// The caller stopped waiting for request `request` of call `call` before it was answered.
    /// Nothing by default: the late answer finds nobody waiting and is dropped.
    fn withdraw(&self, _call: u64, _request: u64) {}
}

/// The answers a link's requests wait for: a reply, or the other side's error message.
pub type HostAnswers = Pending<Result<HostReply, String>>;

/// A notification's acknowledgement, awaited by [`ForwardedHost::delivered`].
type Acknowledgement = BoxFuture<Result<HostReply, PluginError>>;

/// One call's host services, forwarded over a [`HostLink`]. The rules every host shares
/// (defaults without a user, one question at a time, answers checked) are applied by the
/// session's `CallServices` on the answering side, or around this one, never here.
pub struct ForwardedHost<L: HostLink> {
    call: u64,
    facts: HostFacts,
    link: Arc<L>,
    answers: Arc<HostAnswers>,
    /// Notifications and status lines not yet acknowledged, when kept
    /// ([`ForwardedHost::keeping_acknowledgements`]).
    told: Option<Mutex<Vec<Acknowledgement>>>,
}

impl<L: HostLink> ForwardedHost<L> {
    /// Call `call`'s services, as `facts` describe them, sent over `link`; its answers arrive
    /// in `answers` (one table for every call over the link).
    pub fn new(call: u64, facts: HostFacts, link: Arc<L>, answers: Arc<HostAnswers>) -> Self {
        Self {
            call,
            facts,
            link,
            answers,
            told: None,
        }
    }

    /// Keep each notification's acknowledgement, for [`ForwardedHost::delivered`]. Without
    /// it a notification is sent and forgotten.
    #[must_use]
    pub fn keeping_acknowledgements(mut self) -> Self {
        self.told = Some(Mutex::default());
        self
    }

    /// Wait, at most `limit`, until the other side acknowledged every notification and status
    /// line this call sent (when kept): for an answer that travels another way than they did
    /// and must not overtake them.
    pub async fn delivered(&self, limit: Duration) {
        let Some(told) = &self.told else { return };
        let told = std::mem::take(&mut *lock(told));
        let all = async {
            for acknowledged in told {
                // A notification the other side failed to show is not the call's failure.
                let _ = acknowledged.await;
            }
        };
        let _ = tokio::time::timeout(limit, all).await;
    }

    /// Send `body` and wait for its answer; dropping the future withdraws the request.
    fn send(&self, body: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        let (request, answer) = self.answers.open();
        if let Err(error) = self.link.send(self.call, request, body) {
            // Never sent: nothing to withdraw on the other side.
            self.answers.withdraw(request);
            return Box::pin(std::future::ready(Err(PluginError::new(error))));
        }
        let withdraw = Withdraw {
            link: Arc::clone(&self.link),
            answers: Arc::clone(&self.answers),
            call: self.call,
            request,
        };
        Box::pin(async move {
            let _withdraw = withdraw;
            match answer.await {
                Ok(reply) => reply.map_err(PluginError::new),
                Err(_) => Err(PluginError::new(format!("{} is gone", L::PEER))),
            }
        })
    }

    /// Send `body` without waiting for its acknowledgement: kept for [`Self::delivered`], or
    /// sent one-way (no waiter on the table, nothing to withdraw).
    fn tell(&self, body: HostRequest) {
        match &self.told {
            Some(told) => {
                let acknowledged = self.send(body);
                lock(told).push(acknowledged);
            }
            None => {
                // Sent and forgotten: a notice that could not go has nobody to tell.
                let _ = self.link.send(self.call, self.answers.unwaited(), body);
            }
        }
    }
}

/// Takes a request off the table, and tells the link, when its caller stops waiting first.
struct Withdraw<L: HostLink> {
    link: Arc<L>,
    answers: Arc<HostAnswers>,
    call: u64,
    request: u64,
}

impl<L: HostLink> Drop for Withdraw<L> {
    fn drop(&mut self) {
        if self.answers.withdraw(self.request) {
            self.link.withdraw(self.call, self.request);
        }
    }
}

/// Passed on as the plugin made them: the other side applies the rules (a plugin process's
/// host).
impl<L: HostLink> ForwardingHost for ForwardedHost<L> {
    fn facts(&self) -> HostFacts {
        self.facts.clone()
    }

    fn forward(&self, request: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        match request {
            HostRequest::Notify { .. } | HostRequest::SetStatus { .. } => {
                self.tell(request);
                Box::pin(std::future::ready(Ok(HostReply::Done)))
            }
            request => self.send(request),
        }
    }
}

impl<L: HostLink> HostServices for ForwardedHost<L> {
    fn has_ui(&self) -> bool {
        self.facts.has_ui
    }

    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        self.send(question)
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

    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, PluginError>> {
        let reply = self.send(HostRequest::Complete { request });
        Box::pin(async move {
            match reply.await? {
                HostReply::Completion { text, .. } => Ok(text),
                other => Err(PluginError::new(format!(
                    "{} answered a completion with {other:?}",
                    L::PEER
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link that records what went over it, and answers nothing by itself.
    #[derive(Default)]
    struct Recorder {
        sent: Mutex<Vec<(u64, u64, HostRequest)>>,
        withdrawn: Mutex<Vec<(u64, u64)>>,
        broken: bool,
    }

    impl HostLink for Recorder {
        const PEER: &'static str = "the recorder";

        fn send(&self, call: u64, request: u64, body: HostRequest) -> Result<(), String> {
            if self.broken {
                return Err("the recorder is unplugged".to_owned());
            }
            lock(&self.sent).push((call, request, body));
            Ok(())
        }

        fn withdraw(&self, call: u64, request: u64) {
            lock(&self.withdrawn).push((call, request));
        }
    }

    /// A link that records, and an empty table of answers.
    fn fresh() -> (Arc<Recorder>, Arc<HostAnswers>) {
        (Arc::default(), Arc::default())
    }

    fn confirm() -> HostRequest {
        HostRequest::Confirm {
            title: "go?".to_owned(),
            message: String::new(),
        }
    }

    fn host(link: &Arc<Recorder>, answers: &Arc<HostAnswers>) -> ForwardedHost<Recorder> {
        ForwardedHost::new(
            7,
            HostFacts::default(),
            Arc::clone(link),
            Arc::clone(answers),
        )
    }

    #[tokio::test]
    async fn an_answer_reaches_its_request_and_only_once() {
        let (link, answers) = fresh();
        let host = host(&link, &answers);
        let asked = host.ask(confirm());
        let (call, request, _) = lock(&link.sent)[0].clone();
        assert_eq!((call, request), (7, 1));
        assert!(answers.answer(request, Ok(HostReply::Confirmed { yes: true })));
        assert!(!answers.answer(request, Ok(HostReply::Confirmed { yes: false })));
        assert!(matches!(
            asked.await,
            Ok(HostReply::Confirmed { yes: true })
        ));
        assert!(
            lock(&link.withdrawn).is_empty(),
            "an answered request is not withdrawn"
        );
    }

    #[tokio::test]
    async fn a_dropped_question_is_withdrawn_and_its_late_answer_dropped() {
        let (link, answers) = fresh();
        let host = host(&link, &answers);
        drop(host.ask(confirm()));
        assert_eq!(*lock(&link.withdrawn), vec![(7, 1)]);
        assert!(!answers.answer(1, Ok(HostReply::Confirmed { yes: true })));
    }

    #[tokio::test]
    async fn errors_name_the_peer_and_the_cause() {
        let unplugged = Arc::new(Recorder {
            broken: true,
            ..Recorder::default()
        });
        let answers = Arc::new(HostAnswers::default());
        let error = host(&unplugged, &answers)
            .complete(CompletionRequest::new("hi"))
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), "the recorder is unplugged");
        assert!(
            lock(&unplugged.withdrawn).is_empty(),
            "what never went is not withdrawn"
        );

        let (link, answers) = fresh();
        let host = host(&link, &answers);
        let completion = host.complete(CompletionRequest::new("hi"));
        assert!(answers.answer(1, Ok(HostReply::Confirmed { yes: true })));
        let error = completion.await.unwrap_err().to_string();
        assert!(
            error.starts_with("the recorder answered a completion with"),
            "{error}"
        );

        let asked = host.ask(HostRequest::Notify {
            message: "x".to_owned(),
            level: NotifyLevel::Info,
        });
        answers.close();
        let error = asked.await.unwrap_err().to_string();
        assert_eq!(error, "the recorder is gone");
        let error = host.ask(HostRequest::Notify {
            message: "y".to_owned(),
            level: NotifyLevel::Info,
        });
        assert_eq!(error.await.unwrap_err().to_string(), "the recorder is gone");
    }

    /// Wait until `count` requests went over `link` (at most a few seconds: a request kept
    /// back on this side fails the test instead of hanging it).
    async fn sent(link: &Recorder, count: usize) {
        let arrived = async {
            while lock(&link.sent).len() < count {
                tokio::task::yield_now().await;
            }
        };
        let waited = tokio::time::timeout(Duration::from_secs(5), arrived).await;
        assert!(waited.is_ok(), "only {} sent", lock(&link.sent).len());
    }

    /// A call served through a forwarding host passes its requests on as the plugin made them:
    /// a form this side's rules would refuse (a nested schema), and a question though the
    /// facts say no one can answer, both reach the other side, which applies the rules; its
    /// answer comes back unchanged, and a cancelled call withdraws what it asked.
    #[tokio::test]
    async fn a_forwarded_call_passes_requests_on_unchanged_and_withdraws_on_cancel() {
        use crate::cancel::CancelToken;
        use crate::services::CallServices;
        let (link, answers) = fresh();
        let cancel = CancelToken::new();
        let call = CallServices::forwarded(Arc::new(host(&link, &answers)), None, cancel.clone());
        let nested = HostRequest::Form {
            message: "m".to_owned(),
            schema: serde_json::json!({"type": "object", "properties": {
                "deep": {"type": "object", "properties": {}}}}),
            order: Vec::new(),
        };
        let asked = tokio::spawn({
            let call = call.clone();
            let nested = nested.clone();
            async move { call.request(nested).await }
        });
        sent(&link, 1).await;
        assert_eq!(lock(&link.sent)[0].2, nested, "sent as the plugin made it");
        let odd = HostReply::Chosen { value: None };
        assert!(answers.answer(1, Ok(odd.clone())));
        assert_eq!(
            asked.await.unwrap(),
            Ok(odd),
            "the other side's answer, unchanged"
        );

        let notified = call.request(HostRequest::Notify {
            message: "n".to_owned(),
            level: NotifyLevel::Info,
        });
        assert_eq!(notified.await, Ok(HostReply::Done), "not waited for");

        let waiting = tokio::spawn({
            let call = call.clone();
            async move { call.request(confirm()).await }
        });
        sent(&link, 3).await;
        cancel.cancel();
        let error = waiting.await.unwrap().unwrap_err();
        assert!(error.contains("cancelled"), "{error}");
        // The notification, request 2, went one-way: only the question is withdrawn.
        assert_eq!(*lock(&link.withdrawn), vec![(7, 3)]);
    }

    #[tokio::test]
    async fn notifications_go_one_way_unless_acknowledgements_are_kept() {
        let (link, answers) = fresh();
        let forgetting = host(&link, &answers);
        forgetting.notify("one", NotifyLevel::Info);
        assert_eq!(lock(&link.sent).len(), 1);
        assert!(
            lock(&link.withdrawn).is_empty(),
            "sent one-way: nothing waits, nothing is withdrawn"
        );
        assert!(
            !answers.answer(1, Ok(HostReply::Done)),
            "its acknowledgement finds nobody"
        );

        let keeping = host(&link, &answers).keeping_acknowledgements();
        keeping.set_status("k", Some("working"));
        assert!(answers.answer(2, Ok(HostReply::Done)));
        keeping.notify("unanswered", NotifyLevel::Info);
        // The first was acknowledged; the wait for the second ends at its limit.
        keeping.delivered(Duration::from_millis(50)).await;
        assert_eq!(
            *lock(&link.withdrawn),
            vec![(7, 3)],
            "the unacknowledged one is withdrawn"
        );
    }
}
