//! Host services (docs/guide/src/ask.md): what a host offers a running plugin call besides the
//! store, in one interface, [`HostServices`], that each host implements once (the terminal, the MCP
//! peer, the Node runtime, an embedder's own), and the one path every request takes to it,
//! [`CallServices`]. What a pending action's `apply` gets from its host, [`ActionContext`], is
//! here too, with the future and update types every host-side call uses: the store, below
//! the tools, takes them, so they stand below both.
//!
//! The session holds the host's implementation and gives each call a [`CallServices`], which
//! keeps the rules every host shares in one place, whatever answers:
//! - where no one can answer, a question gets the TypeScript runtime's default at once
//!   (`confirm` false, `select`/`input` none, a form `cancel`), and `complete` fails with
//!   [`NO_MODEL`];
//! - questions reach the user one at a time per session; a plugin that floods the host with
//!   more than [`MAX_WAITING_QUESTIONS`] at once gets an error for the rest;
//! - a question open when its call is cancelled is withdrawn (its future dropped), and a
//!   cancelled call asks nothing more;
//! - an answer outside its question is an error naming the field, never handed to the plugin
//!   ([`xcsh_plugin_api::checks::check_reply`]).
//!
//! A plugin process passes its plugin's requests on to its host unchanged ([`ForwardingHost`]),
//! and the host answers them here (`isolate`): the rules run once, where the user is, and a
//! plugin asks the same way wherever it runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub use xcsh_plugin_api::host::{
    form_fields, ordered_fields, CompletionMessage, CompletionRequest, EarlierResult, FieldInput,
    FieldOption, FormAction, FormField, HostFacts, HostReply, HostRequest, ModelInfo, NotifyLevel,
    Role, SessionEvent, SessionReason, NO_MODEL,
};

use crate::cancel::CancelToken;
use xcsh_plugin_api::{AgentToolResult, PluginError};

/// A boxed, sendable future: what every host-side async method here and above returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Receives partial results while a tool runs.
pub type UpdateSink = Arc<dyn Fn(AgentToolResult) + Send + Sync>;

/// How many questions may wait for the user at once in one session; more fail at once.
pub const MAX_WAITING_QUESTIONS: usize = 16;

/// What a host offers plugins: a user to ask, notifications, the session's model. Every method
/// has the default of a host that has none of them, so an implementation overrides only what
/// it offers.
///
/// `ask` and `complete` are dropped when their call is cancelled: dropping must withdraw the
/// question (take the prompt off the screen, cancel the client's request).
pub trait HostServices: Send + Sync {
    /// Whether someone can answer questions now.
    fn has_ui(&self) -> bool {
        false
    }

    /// Ask a question ([`HostRequest::is_question`]): confirm, select, input or form. Only
    /// called when [`HostServices::has_ui`] is true; the answer is checked against the
    /// question afterwards.
    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        Box::pin(async move {
            Err(PluginError::new(format!(
                "this host cannot ask a {}",
                question.service()
            )))
        })
    }

    /// Show a notification (the default: the host's log).
    fn notify(&self, message: &str, level: NotifyLevel) {
        match level {
            NotifyLevel::Info => tracing::info!(target: "xcsh::plugin", "{message}"),
            NotifyLevel::Warning => tracing::warn!(target: "xcsh::plugin", "{message}"),
            NotifyLevel::Error => tracing::error!(target: "xcsh::plugin", "{message}"),
        }
    }

    /// Show or clear (`None`) a status line (the default: nothing).
    fn set_status(&self, key: &str, text: Option<&str>) {
        let _ = (key, text);
    }

    /// The session's model, when known.
    fn model(&self) -> Option<ModelInfo> {
        None
    }

    /// Whether [`HostServices::complete`] can reach a model.
    fn can_complete(&self) -> bool {
        false
    }

    /// A completion from the session's model: its text.
    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, PluginError>> {
        let _ = request;
        Box::pin(async { Err(PluginError::new(NO_MODEL)) })
    }
}

/// A host on the other side of a link that applies the rules of this module itself: a plugin
/// process's host. A call served through one (`CallServices::forwarded`) passes each request
/// on as the plugin made it, so the rules run once, where the user is, and the answer comes back
/// as the host gave it.
pub trait ForwardingHost: Send + Sync {
    /// What the host said, when the call started, that it can do for it.
    fn facts(&self) -> HostFacts;

    /// Send `request` and wait for the host's answer; dropping the future withdraws it. A
    /// notification or a status line is sent at once and answered [`HostReply::Done`] without
    /// waiting.
    fn forward(&self, request: HostRequest) -> BoxFuture<Result<HostReply, PluginError>>;
}

/// The host with no user and no model: the default of every session.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHostServices;

impl HostServices for NoHostServices {}

/// One session's services and what its calls share (the one-question-at-a-time lock). The
/// services may change while the session lives ([`crate::Session::set_host_services`]: an MCP
/// client that declared what it can do, a runtime whose user interface arrived).
#[derive(Clone)]
pub(crate) struct SessionServices {
    current: Arc<std::sync::RwLock<Arc<dyn HostServices>>>,
    /// Held while a question is on screen.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// Questions open or waiting.
    waiting: Arc<AtomicUsize>,
    /// Where the plugin may write, when a sandbox confines it (told to `exec`).
    writable: Option<Arc<[std::path::PathBuf]>>,
}

impl std::fmt::Debug for SessionServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionServices")
            .field("has_ui", &self.services().has_ui())
            .finish_non_exhaustive()
    }
}

impl Default for SessionServices {
    fn default() -> Self {
        Self::new(Arc::new(NoHostServices))
    }
}

impl SessionServices {
    pub(crate) fn new(services: Arc<dyn HostServices>) -> Self {
        Self {
            current: Arc::new(std::sync::RwLock::new(services)),
            asking: Arc::default(),
            waiting: Arc::default(),
            writable: None,
        }
    }

    /// The same services, for a plugin whose sandbox lets it write only under `writable`.
    pub(crate) fn confined_to(mut self, writable: Option<Arc<[std::path::PathBuf]>>) -> Self {
        self.writable = writable;
        self
    }

    /// The services now.
    fn services(&self) -> Arc<dyn HostServices> {
        Arc::clone(&xcsh_plugin_api::__private::read(&self.current))
    }

    /// Answer with `services` from now on (calls already asking keep theirs).
    pub(crate) fn replace(&self, services: Arc<dyn HostServices>) {
        *xcsh_plugin_api::__private::write(&self.current) = services;
    }

    /// The services of one call, withdrawn when `cancel` fires: answered by `answering` when
    /// given (the session's own otherwise), sharing the session's one-question-at-a-time rule.
    pub(crate) fn for_call_with(
        &self,
        answering: Option<Arc<dyn HostServices>>,
        cancel: CancelToken,
    ) -> CallServices {
        CallServices {
            session: self.clone(),
            answerer: answering.map_or(Answerer::Session, Answerer::Own),
            cancel,
        }
    }
}

/// The host services of one call: the path of every request a plugin sends (see the module
/// docs for the rules kept here).
#[derive(Clone)]
pub struct CallServices {
    session: SessionServices,
    answerer: Answerer,
    cancel: CancelToken,
}

/// Who answers a call's requests.
#[derive(Clone)]
enum Answerer {
    /// The session's services, with the rules applied here.
    Session,
    /// This call's own services, over the session's, with the rules applied here.
    Own(Arc<dyn HostServices>),
    /// A host every request passes on to unchanged: it applies the rules itself.
    Forwarded(Arc<dyn ForwardingHost>),
}

impl std::fmt::Debug for CallServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallServices")
            .field(
                "answerer",
                &match self.answerer {
                    Answerer::Session => "the session",
                    Answerer::Own(_) => "its own services",
                    Answerer::Forwarded(_) => "a forwarding host",
                },
            )
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl CallServices {
    /// The services of a call no one answers (the no-user defaults of docs/guide/src/ask.md),
    /// withdrawn when `cancel` fires.
    pub fn none(cancel: CancelToken) -> Self {
        SessionServices::default().for_call_with(None, cancel)
    }

    /// The services of a call whose every request passes on to `host` unchanged (see
    /// [`ForwardingHost`]), withdrawn when `cancel` fires; `writable` is where the plugin's
    /// sandbox lets it write (told to `exec`).
    pub fn forwarded(
        host: Arc<dyn ForwardingHost>,
        writable: Option<Arc<[std::path::PathBuf]>>,
        cancel: CancelToken,
    ) -> Self {
        Self {
            session: SessionServices::default().confined_to(writable),
            answerer: Answerer::Forwarded(host),
            cancel,
        }
    }

    /// Who answers this call.
    fn services(&self) -> Arc<dyn HostServices> {
        match &self.answerer {
            Answerer::Own(services) => Arc::clone(services),
            Answerer::Session | Answerer::Forwarded(_) => self.session.services(),
        }
    }

    /// What the host can do for this call.
    pub fn facts(&self) -> HostFacts {
        if let Answerer::Forwarded(host) = &self.answerer {
            let facts = host.facts();
            return HostFacts {
                writable: self.session.writable.as_deref().map(<[_]>::to_vec),
                runs_programs: false,
                ..facts
            };
        }
        let services = self.services();
        HostFacts {
            has_ui: services.has_ui(),
            model: services.model(),
            can_complete: services.can_complete(),
            writable: self.session.writable.as_deref().map(<[_]>::to_vec),
            runs_programs: false,
        }
    }

    /// Answer one request of the call's plugin. `Err` is the message the plugin's request
    /// fails with.
    pub async fn request(&self, request: HostRequest) -> Result<HostReply, String> {
        if let Some(answer) = self.notification(&request) {
            return answer;
        }
        if let Answerer::Forwarded(host) = &self.answerer {
            let withdrawn = withdrawn(&request);
            if self.cancel.is_cancelled() {
                return Err(withdrawn);
            }
            let reply = host.forward(request);
            return tokio::select! {
                reply = reply => reply.map_err(|e| e.message().to_owned()),
                () = self.cancel.cancelled() => Err(withdrawn),
            };
        }
        let services = self.services();
        if self.cancel.is_cancelled() {
            return Err(withdrawn(&request));
        }
        match request {
            HostRequest::Complete { request } => {
                if !services.can_complete() {
                    return Err(NO_MODEL.to_owned());
                }
                let model = services.model().map(|m| m.id);
                let completion = services.complete(request);
                tokio::select! {
                    text = completion => text
                        .map(|text| HostReply::Completion { text, model })
                        .map_err(|e| e.message().to_owned()),
                    () = self.cancel.cancelled() => Err("the call was cancelled; its completion was withdrawn".to_owned()),
                }
            }
            HostRequest::Exec { .. } => Err(
                "this host does not run programs for plugins: `exec` runs them in the plugin's own process"
                    .to_owned(),
            ),
            question => self.ask(services, question).await,
        }
    }

    /// Show a notification or a status line now, on the caller's thread: `None` for any
    /// other request. Nothing here waits, so a host that reads a plugin's messages in order
    /// shows each notification before whatever the plugin sent after it (its result, say).
    pub fn notification(&self, request: &HostRequest) -> Option<Result<HostReply, String>> {
        match request {
            HostRequest::Notify { message, level } => {
                Some(self.show(request, |services| services.notify(message, *level)))
            }
            HostRequest::SetStatus { key, text } => Some(self.show(request, |services| {
                services.set_status(key, text.as_deref())
            })),
            _ => None,
        }
    }

    /// Show `request` with `show`, unless the call was withdrawn.
    fn show(
        &self,
        request: &HostRequest,
        show: impl FnOnce(&dyn HostServices),
    ) -> Result<HostReply, String> {
        if self.cancel.is_cancelled() {
            return Err(withdrawn(request));
        }
        if let Answerer::Forwarded(host) = &self.answerer {
            // Sent now; the host shows it (its acknowledgement is not waited for).
            drop(host.forward(request.clone()));
            return Ok(HostReply::Done);
        }
        show(&*self.services());
        Ok(HostReply::Done)
    }

    async fn ask(
        &self,
        services: Arc<dyn HostServices>,
        question: HostRequest,
    ) -> Result<HostReply, String> {
        if let HostRequest::Form { schema, .. } = &question {
            // A form a plugin wrote by hand, not through `form_schema`: refused here too.
            xcsh_plugin_api::checks::check_form_schema(schema)?;
        }
        if !services.has_ui() {
            return Ok(unanswered(&question));
        }
        let waiting = Waiting::enter(&self.session.waiting).ok_or_else(|| {
            format!(
                "too many questions at once: {MAX_WAITING_QUESTIONS} are already waiting for the user; ask one at a time"
            )
        })?;
        let asked = question.clone();
        let answer = async {
            let _on_screen = self.session.asking.lock().await;
            if self.cancel.is_cancelled() {
                return Err(withdrawn(&asked));
            }
            services
                .ask(asked)
                .await
                .map_err(|e| e.message().to_owned())
        };
        let reply = tokio::select! {
            reply = answer => reply,
            () = self.cancel.cancelled() => Err(withdrawn(&question)),
        };
        drop(waiting);
        let reply = reply?;
        xcsh_plugin_api::checks::check_reply(&question, &reply)?;
        Ok(reply)
    }
}

/// The answer of a host where no one can answer (the TypeScript runtime's defaults).
fn unanswered(question: &HostRequest) -> HostReply {
    match question {
        HostRequest::Confirm { .. } => HostReply::Confirmed { yes: false },
        HostRequest::Form { .. } => HostReply::Form {
            action: FormAction::Cancel,
            content: None,
        },
        _ => HostReply::Chosen { value: None },
    }
}

fn withdrawn(request: &HostRequest) -> String {
    format!(
        "the call was cancelled; its {} was withdrawn",
        request.service()
    )
}

/// A place among the waiting questions, given back on drop.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicUsize) -> Option<Self> {
        let before = count.fetch_add(1, Ordering::SeqCst);
        if before >= MAX_WAITING_QUESTIONS {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Self(count))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A session event for every tool: each tool hears it with its own earlier results only.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionChange {
    /// What happened.
    pub reason: SessionReason,
    /// The session file left behind, on `switch`.
    pub previous_session_file: Option<String>,
    /// The earlier tool results on the current branch, of every tool, oldest first.
    pub results: Vec<ToolResultEntry>,
}

/// One earlier tool result, as a runtime's session history holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultEntry {
    /// The tool that produced it.
    pub tool_name: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The result's details.
    pub details: serde_json::Value,
}

impl SessionChange {
    /// A change with no history.
    pub fn new(reason: SessionReason) -> Self {
        Self {
            reason,
            previous_session_file: None,
            results: Vec::new(),
        }
    }

    /// The event as the tool `name` hears it.
    pub fn for_tool(&self, name: &str) -> SessionEvent {
        SessionEvent {
            reason: self.reason.clone(),
            previous_session_file: self.previous_session_file.clone(),
            results: self
                .results
                .iter()
                .filter(|entry| entry.tool_name == name)
                .map(|entry| EarlierResult {
                    tool_call_id: entry.tool_call_id.clone(),
                    details: entry.details.clone(),
                })
                .collect(),
        }
    }
}

/// What a pending action's `apply` or `reject` gets from its host (docs/guide/src/pending.md): the
/// services of the `resolve` call that runs it — its cancellation, its partial-update listener, and
/// the questions, notifications and model of that call — as `execute` gets them in `CallContext`.
#[derive(Clone)]
pub struct ActionContext {
    /// Cancellation of the `resolve` call (or of whatever settles the action).
    pub cancel: CancelToken,
    /// Partial-result listener of that call, if it wants updates.
    pub updates: Option<UpdateSink>,
    /// The host's services for that call.
    pub services: CallServices,
}

impl ActionContext {
    /// A context with no one to ask and no updates, cancelled by `cancel`: what an embedder
    /// that settles an action on its own gives (a question then gets the no-user defaults).
    pub fn without_services(cancel: CancelToken) -> Self {
        Self {
            services: CallServices::none(cancel.clone()),
            cancel,
            updates: None,
        }
    }
}

impl std::fmt::Debug for ActionContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionContext")
            .field("cancelled", &self.cancel.is_cancelled())
            .field("wants_updates", &self.updates.is_some())
            .field("services", &self.services)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A user who takes `delay` to answer yes to everything.
    struct SlowYes(Duration);

    impl HostServices for SlowYes {
        fn has_ui(&self) -> bool {
            true
        }
        fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
            let delay = self.0;
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                Ok(match question {
                    HostRequest::Select { options, .. } => HostReply::Chosen {
                        value: Some(format!("{}!", options[0])),
                    },
                    _ => HostReply::Confirmed { yes: true },
                })
            })
        }
    }

    fn confirm() -> HostRequest {
        HostRequest::Confirm {
            title: "t".into(),
            message: "m".into(),
        }
    }

    #[tokio::test]
    async fn no_user_means_the_defaults_and_no_model() {
        let call = SessionServices::default().for_call_with(None, CancelToken::new());
        assert_eq!(
            call.request(confirm()).await,
            Ok(HostReply::Confirmed { yes: false })
        );
        let complete = HostRequest::Complete {
            request: CompletionRequest::new("hi"),
        };
        assert_eq!(call.request(complete).await, Err(NO_MODEL.to_owned()));
    }

    #[tokio::test]
    async fn a_cancelled_call_withdraws_its_question_and_floods_are_refused() {
        let session = SessionServices::new(Arc::new(SlowYes(Duration::from_secs(60))));
        let cancel = CancelToken::new();
        let call = session.for_call_with(None, cancel.clone());
        let mut asked = Vec::new();
        for _ in 0..MAX_WAITING_QUESTIONS + 4 {
            let call = call.clone();
            asked.push(tokio::spawn(async move { call.request(confirm()).await }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
        let mut refused = 0;
        let mut withdrawn = 0;
        for task in asked {
            match task.await.unwrap() {
                Err(m) if m.starts_with("too many questions at once") => refused += 1,
                Err(m) if m.ends_with("its confirm was withdrawn") => withdrawn += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((refused, withdrawn), (4, MAX_WAITING_QUESTIONS));
        assert_eq!(session.waiting.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn answers_outside_the_question_never_reach_the_plugin() {
        let call = SessionServices::new(Arc::new(SlowYes(Duration::ZERO)))
            .for_call_with(None, CancelToken::new());
        let select = HostRequest::Select {
            title: "Pick".into(),
            options: vec!["a".into(), "b".into()],
        };
        let error = call.request(select).await.unwrap_err();
        assert!(
            error.contains("\"a!\", which is not one of its options"),
            "{error}"
        );
    }
}
