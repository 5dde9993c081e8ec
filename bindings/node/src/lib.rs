//! The native half of `@xcsh/native-plugins`: a Node-API face on the loader core's `Session`
//! (`xcsh-loader-core`).
//!
//! `index.js` is the public surface (`nativeToolFactory`); this crate only exposes what it
//! needs, as one class, [`NativeSession`]: load a session whose pending actions go to the JS
//! runtime's store ([`store::RuntimeStore`]), list its tools, call them (with partial
//! results, cancellation and the session's timeout), settle an action the runtime resolves
//! (abortable: an aborted apply is dropped where it runs, so staged file changes are undone),
//! and close. Every rule (discovery, trust, isolation, sandbox, argument validation, reload)
//! is the loader's; nothing here repeats it.
//!
//! A call is started synchronously and answered through one session-wide thread-safe function
//! ([`calls`]): two thread hand-offs per call, none of them through a runtime.
//!
//! What the runtime must be able to count on:
//! - no panic unwinds into the JS engine: every exported function catches it (napi-rs does
//!   for `async fn`s; `catch_unwind` for the others), a call's worker catches what its job
//!   throws, and callbacks into JS never panic;
//! - nothing here keeps the runtime alive: the thread-safe functions are weak, and only a
//!   running call holds the event loop (`index.js` keeps a timer while any runs);
//! - plugin code never runs on the JS thread, so a push can wait for JS without deadlock.

#![deny(unsafe_code)]

mod calls;
mod host;
mod publisher;
mod store;

pub use publisher::check_tool_publisher;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Error, Result, Status};
use napi_derive::napi;
use xcsh_loader_core::resolve::{settle, settle_or_keep, ResolveAction};
use xcsh_loader_core::services::HostServices;
use xcsh_loader_core::tool::{ActionContext, CallOptions, CancelToken, PacedUpdates};
use xcsh_loader_core::{Isolation, Session};

use calls::{CallState, InlineTask, SettleFunction, Workers};
use store::{lock, PushFunction, RuntimeStore};

/// `(call, partialResultJson) => void`: a call's paced partial results.
type UpdateFunction =
    ThreadsafeFunction<FnArgs<(u32, String)>, (), FnArgs<(u32, String)>, Status, false, true>;

/// `(level, pluginFile, line) => void`: what plugins log, and what their processes print.
type LogFunction = ThreadsafeFunction<
    FnArgs<(&'static str, String, String)>,
    (),
    FnArgs<(&'static str, String, String)>,
    Status,
    false,
    true,
>;

/// What `index.js` passes after checking the user's options.
#[napi(object)]
pub struct SessionOptions {
    /// The session's working directory (`pi.cwd`).
    pub cwd: String,
    /// Plugin files or directories, searched first.
    pub plugins: Vec<String>,
    /// Search `<cwd>/.xcsh/tools/` and `~/.xcsh/agent/tools/` too.
    pub default_dirs: bool,
    /// `"process"` or `"in-process"`.
    pub isolation: String,
    /// The default timeout of calls, applies and rejects, in milliseconds.
    pub timeout_ms: Option<f64>,
    /// The address-space limit of each plugin process, as the CLI's `--memory-limit`.
    pub memory_limit: Option<String>,
    /// Extra writable paths for plugin processes.
    pub allow_write: Vec<String>,
    /// Extra readable paths for plugin processes.
    pub allow_read: Vec<String>,
    /// Environment variables passed to plugin processes by name (a trailing `*`: a prefix).
    pub pass_env: Vec<String>,
    /// Deny plugin processes TCP.
    pub deny_network: bool,
    /// The `xcsh-plugin-host` executable (found by `index.js` beside the addon).
    pub plugin_host: Option<String>,
    /// Stop a plugin process idle this many milliseconds; `Infinity` never stops one;
    /// absent: the loader's default (30 s).
    pub stop_idle_after_ms: Option<f64>,
}

/// A tool as `index.js` turns it into an xcsh `CustomTool`.
#[napi(object)]
pub struct NativeTool {
    pub name: String,
    pub label: String,
    pub description: String,
    /// The JSON Schema of its parameters, as JSON.
    pub parameters_json: String,
    pub hidden: bool,
    pub deferrable: bool,
    /// The plugin's read-only hint (`undefined` when it gives none, or predates hints).
    pub read_only: Option<bool>,
    /// The plugin file it comes from.
    pub origin: String,
}

/// A plugin file that did not load.
#[napi(object)]
pub struct NativeLoadError {
    pub path: String,
    pub message: String,
}

/// Parse a size as the CLI's `--memory-limit` does (bytes, or K/M/G/T); throws the CLI's
/// message when it does not parse.
#[napi(catch_unwind)]
pub fn parse_size(text: String) -> Result<f64> {
    xcsh_loader_core::sandbox::parse_size(&text)
        .map(|bytes| bytes as f64)
        .map_err(Error::from_reason)
}

/// An empty napi-rs `async` call (a promise, napi-rs's per-promise thread-safe function, a hop
/// to its tokio runtime and back): what every call cost before [`calls`], shown beside the
/// floor by the benchmark (`bench/calls.js`); not part of the package's surface.
#[napi]
pub async fn bench_async_floor() -> u32 {
    0
}

/// Panics, so that a test can show that a panic in the addon reaches JS as an `Error` and the
/// runtime goes on. Debug builds only.
#[cfg(debug_assertions)]
#[napi(catch_unwind)]
pub fn debug_panic(message: String) {
    panic!("{message}");
}

/// One loaded session, its calls and the actions it handed to the runtime's store.
#[napi]
pub struct NativeSession {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None` before `load` and after `close`.
    session: Mutex<Option<Arc<Session>>>,
    store: Option<Arc<RuntimeStore>>,
    updates: Arc<UpdateFunction>,
    log: Option<Arc<LogFunction>>,
    /// Running calls, by the number `index.js` gave each.
    calls: Mutex<HashMap<u32, Arc<CallState>>>,
    /// The cancellation of each running apply or reject that JS may abort, by the number
    /// `index.js` gave it (created by whichever of `settle` and `abort_settle` comes first).
    settles: Mutex<HashMap<u32, CancelToken>>,
    /// Settles calls' promises (see [`calls`]).
    settle: Arc<SettleFunction>,
    /// The threads calls run on.
    workers: Workers,
    /// napi-rs's tokio runtime, taken in `load`: calls run in its context (its timers, its
    /// I/O, what the loader spawns), polled on the worker that runs them.
    runtime: Mutex<Option<tokio::runtime::Handle>>,
    /// Plugins run in processes of their own: calls need no worker ([`calls::InlineTask`]).
    isolated: AtomicBool,
    closed: AtomicBool,
    timeout: Option<Duration>,
    options: Mutex<Option<SessionOptions>>,
    /// Where calls' host-service requests go (`None`: no host services, the defaults of
    /// docs/guide/src/ask.md).
    services: Option<Arc<host::RuntimeLink>>,
    /// The requests sent there and not yet answered.
    answers: Arc<xcsh_loader_core::forward::HostAnswers>,
}

/// A session event as `index.js` forwards it (`onSession`'s event, with the earlier tool
/// results of the current branch).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsSessionEvent {
    reason: String,
    #[serde(default)]
    previous_session_file: Option<String>,
    #[serde(default)]
    results: Vec<JsToolResult>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsToolResult {
    tool_name: String,
    tool_call_id: String,
    #[serde(default)]
    details: serde_json::Value,
}

/// The message of a call (or apply, or reject) after `close()`.
const CLOSED: &str = "the native plugins were closed (close() was called); nothing was run";

#[napi]
impl NativeSession {
    /// A session to be loaded by [`NativeSession::load`]. `push` is `None` when the runtime
    /// has no store (pushes then fail with the contract's message).
    #[napi(constructor, catch_unwind)]
    pub fn new(
        options: SessionOptions,
        push: Option<PushFunction>,
        updates: UpdateFunction,
        log: Option<LogFunction>,
        settle: SettleFunction,
        service: Option<host::ServiceFunction>,
    ) -> Result<Self> {
        let timeout = match options.timeout_ms {
            Some(ms) if !(ms.is_finite() && ms >= 0.0) => {
                return Err(Error::new(
                    Status::InvalidArg,
                    format!("timeoutMs must be a non-negative number of milliseconds, got {ms}"),
                ))
            }
            Some(ms) if ms > 0.0 => Some(Duration::from_secs_f64(ms / 1000.0)),
            _ => None,
        };
        Ok(Self {
            shared: Arc::new(Shared {
                session: Mutex::new(None),
                store: push.map(|push| Arc::new(RuntimeStore::new(push))),
                updates: Arc::new(updates),
                log: log.map(Arc::new),
                calls: Mutex::new(HashMap::new()),
                settles: Mutex::new(HashMap::new()),
                settle: Arc::new(settle),
                workers: Workers::new(),
                runtime: Mutex::new(None),
                isolated: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                timeout,
                options: Mutex::new(Some(options)),
                services: service.map(|function| Arc::new(host::RuntimeLink(function))),
                answers: Arc::default(),
            }),
        })
    }

    /// The answer to host request `request` (see [`host`]): a `HostReply` as JSON when `ok`,
    /// the error message otherwise. Returns whether the request was still waiting.
    #[napi(catch_unwind)]
    pub fn answer_service(&self, request: i64, ok: bool, json: String) -> bool {
        host::answer(&self.shared.answers, request, ok, json)
    }

    /// Tell every tool of a session event (`onSession`'s, as JSON: `reason`,
    /// `previousSessionFile`, `results` of the current branch as `{toolName, toolCallId,
    /// details}`); resolves once each has heard it.
    #[napi]
    pub async fn session_event(&self, event_json: String) -> Result<()> {
        let event: JsSessionEvent = serde_json::from_str(&event_json)
            .map_err(|error| Error::from_reason(format!("not a session event: {error}")))?;
        let Some(session) = self.session() else {
            return Ok(());
        };
        let reason = serde_json::from_value(serde_json::Value::String(event.reason))
            .map_err(|error| Error::from_reason(error.to_string()))?;
        let change = xcsh_loader_core::services::SessionChange {
            reason,
            previous_session_file: event.previous_session_file,
            results: event
                .results
                .into_iter()
                .map(|result| xcsh_loader_core::services::ToolResultEntry {
                    tool_name: result.tool_name,
                    tool_call_id: result.tool_call_id,
                    details: result.details,
                })
                .collect(),
        };
        session.session_event(change).await;
        Ok(())
    }

    /// Discover, check and load the plugins (off the JS thread: process isolation waits for
    /// each plugin process's handshake).
    #[napi]
    pub async fn load(&self) -> Result<()> {
        let Some(options) = lock(&self.shared.options).take() else {
            return Err(Error::from_reason("the session was already loaded"));
        };
        let builder = builder(options, &self.shared)?;
        *lock(&self.shared.runtime) = Some(tokio::runtime::Handle::current());
        let session = tokio::task::spawn_blocking(move || builder.build())
            .await
            .map_err(|error| Error::from_reason(format!("loading the plugins failed: {error}")))?;
        *lock(&self.shared.session) = Some(Arc::new(session));
        Ok(())
    }

    /// How a call of tool `name` with the arguments `arguments_json` looks (the JSON of an
    /// `xcsh_plugin_api::view::Status`), or `null` when the tool gives no call view: for the
    /// runtime's synchronous `renderCall`, filled here without running plugin code.
    #[napi(catch_unwind)]
    pub fn call_status(&self, name: String, arguments_json: String) -> Option<String> {
        let session = self.session()?;
        let arguments = serde_json::from_str(&arguments_json).unwrap_or(serde_json::Value::Null);
        let status = session.call_status(&name, &arguments)?;
        serde_json::to_string(&status).ok()
    }

    /// The tools of the session, `resolve` excepted (the runtime has its own).
    #[napi(catch_unwind)]
    pub fn tools(&self) -> Vec<NativeTool> {
        let Some(session) = self.session() else {
            return Vec::new();
        };
        session
            .tools()
            .into_iter()
            .filter(|spec| spec.name != xcsh_loader_core::RESOLVE_TOOL_NAME)
            .map(|spec| NativeTool {
                parameters_json: spec.parameters.to_string(),
                origin: spec.origin.to_string(),
                name: spec.name,
                label: spec.label,
                description: spec.description,
                hidden: spec.hidden,
                deferrable: spec.deferrable,
                read_only: spec.hints.read_only,
            })
            .collect()
    }

    /// Every plugin file that failed to load, and why.
    #[napi(catch_unwind)]
    pub fn load_errors(&self) -> Vec<NativeLoadError> {
        let Some(session) = self.session() else {
            return Vec::new();
        };
        session
            .load_errors()
            .iter()
            .map(|error| NativeLoadError {
                path: error.path.display().to_string(),
                message: error.to_string(),
            })
            .collect()
    }

    /// Start calling `name` with `arguments_json` (validated against its schema by the
    /// session) and return at once: the call runs on a worker thread ([`calls`]), and its
    /// outcome reaches the session's settle function as `(call, ok, resultJson or message)`.
    /// `call` is the number [`NativeSession::cancel`] and the update function know it by;
    /// `wants_updates` paces its partial results to the update function. Throws (and settles
    /// nothing) when the session is closed or the arguments are not JSON.
    #[napi(catch_unwind)]
    pub fn start_call(
        &self,
        call: u32,
        name: String,
        arguments_json: String,
        tool_call_id: String,
        wants_updates: bool,
        facts_json: Option<String>,
    ) -> Result<()> {
        let session = self.session().ok_or_else(|| Error::from_reason(CLOSED))?;
        let services = self.call_services(call, facts_json.as_deref());
        let runtime = lock(&self.shared.runtime)
            .clone()
            .ok_or_else(|| Error::from_reason(CLOSED))?;
        let arguments: serde_json::Value =
            serde_json::from_str(&arguments_json).map_err(|error| {
                Error::from_reason(format!(
                    "the arguments of tool \"{name}\" are not JSON: {error}"
                ))
            })?;
        let state = Arc::new(CallState::new(call, name.clone()));
        lock(&self.shared.calls).insert(call, Arc::clone(&state));
        // A plugin that blocks its worker cannot time itself out: the watchdog answers instead.
        let watchdog = self.shared.timeout.map(|limit| {
            let (state, settle) = (Arc::clone(&state), Arc::clone(&self.shared.settle));
            runtime.spawn(async move {
                tokio::time::sleep(limit).await;
                state.answer(&settle, false, state.timed_out(limit));
            })
        });
        if self.shared.isolated.load(Ordering::SeqCst) {
            // Nothing of the plugin runs here: poll on this thread until the call waits for its
            // plugin process, then on the reader thread that reads the answer.
            let shared = Arc::clone(&self.shared);
            let (panic_state, panic_settle) = (Arc::clone(&state), Arc::clone(&self.shared.settle));
            let panic_tool = name.clone();
            InlineTask::spawn(
                runtime,
                async move {
                    let (ok, text) = run_call(
                        &shared,
                        &session,
                        &state,
                        call,
                        &name,
                        arguments,
                        tool_call_id,
                        wants_updates,
                        services,
                    )
                    .await;
                    if let Some(watchdog) = watchdog {
                        watchdog.abort();
                    }
                    lock(&shared.calls).remove(&call);
                    state.answer(&shared.settle, ok, text);
                },
                move |panic| {
                    let message =
                        format!("the call of tool \"{panic_tool}\" panicked in the addon: {panic}");
                    panic_state.answer(&panic_settle, false, message);
                },
            );
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        let job_state = Arc::clone(&state);
        let tool = name.clone();
        let job = Box::new(move || {
            let run = std::panic::AssertUnwindSafe(|| {
                runtime.block_on(run_call(
                    &shared,
                    &session,
                    &job_state,
                    call,
                    &name,
                    arguments,
                    tool_call_id,
                    wants_updates,
                    services,
                ))
            });
            let (ok, text) = std::panic::catch_unwind(run).unwrap_or_else(|payload| {
                (
                    false,
                    format!(
                        "the call of tool \"{name}\" panicked in the addon: {}",
                        panic_text(&*payload)
                    ),
                )
            });
            if let Some(watchdog) = watchdog {
                watchdog.abort();
            }
            lock(&shared.calls).remove(&call);
            job_state.answer(&shared.settle, ok, text);
        });
        self.shared.workers.submit(job).map_err(|error| {
            lock(&self.shared.calls).remove(&call);
            Error::from_reason(format!(
                "cannot start a thread for the call of tool \"{tool}\": {error}"
            ))
        })
    }

    /// Cancel call `call` (its `AbortSignal` fired): the plugin sees `is_cancelled()`, and the
    /// call is answered now, from here, whether or not the plugin stops (one blocked in-process
    /// is abandoned; a plugin process that does not stop is stopped as a timeout stops it).
    /// Returns the message to reject the call with, or `null` when it was answered already.
    #[napi(catch_unwind)]
    pub fn cancel(&self, call: u32) -> Option<String> {
        let state = lock(&self.shared.calls).get(&call).cloned()?;
        state.claim_cancelled()
    }

    /// The floor of every call, for the benchmark: an empty job handed to a worker, answered
    /// through the settle function as `(call, true, "")`. Not part of the package's surface.
    #[napi(catch_unwind)]
    pub fn bench_floor(&self, call: u32) -> Result<()> {
        let settle = Arc::clone(&self.shared.settle);
        self.shared
            .workers
            .submit(Box::new(move || {
                settle.call(
                    (call, true, String::new()).into(),
                    ThreadsafeFunctionCallMode::NonBlocking,
                );
            }))
            .map_err(|error| Error::from_reason(error.to_string()))
    }

    /// Run the plugin's `apply` (or `reject`) of action `id`. Resolves with the result as
    /// JSON; a reject that gave none (or no reject at all) resolves `null`. Only a successful
    /// apply or a reject settles the action: after a failed apply it stays in the table under
    /// `id`, for a reject or another apply (xcsh's runtime keeps a failed preview pending).
    /// Rejects with `not pending` when the action is no longer there (settled already, or
    /// discarded by `close`).
    ///
    /// `abort` is the number [`NativeSession::abort_settle`] knows it by (its `AbortSignal`):
    /// an aborted apply or reject is dropped where it runs (in its plugin process too), so an
    /// apply that commits staged file changes undoes them, and this rejects with `apply of
    /// "{label}" was cancelled; the action is still pending` once it has ended; one that had
    /// completed first resolves as usual.
    ///
    /// `call` and `facts_json` give the apply or reject the runtime's services, as
    /// `start_call`'s give a tool's call (docs/guide/src/pending.md): its questions and
    /// notifications come to the service function as those of call `call`.
    #[napi]
    pub async fn settle(
        &self,
        id: u32,
        apply: bool,
        reason: String,
        abort: Option<u32>,
        call: Option<u32>,
        facts_json: Option<String>,
    ) -> Result<Option<String>> {
        let aborts = abort.map(|number| Abortable::new(&self.shared, number));
        let cancel = aborts
            .as_ref()
            .map(|aborts| aborts.cancel.clone())
            .unwrap_or_default();
        let host = call.and_then(|call| self.call_services(call, facts_json.as_deref()));
        let services = host.clone().map(|host| host as Arc<dyn HostServices>);
        let ctx = match self.session() {
            Some(session) => session.action_context(services, cancel, None),
            None => ActionContext::without_services(cancel),
        };
        let outcome = self.settle_until(id, apply, reason, ctx).await;
        drop(aborts);
        if let Some(host) = &host {
            host::delivered(host).await;
        }
        outcome
    }

    /// Abort the apply or reject started with `abort` number `abort` (its `AbortSignal` fired);
    /// [`NativeSession::settle`] answers once it has ended.
    #[napi(catch_unwind)]
    pub fn abort_settle(&self, abort: u32) {
        Abortable::token(&self.shared, abort).cancel();
    }

    /// Discard every action still pending, newest first, through its `reject` (reason: the
    /// session ended), then end the plugin processes and wait for them. Calls made after it
    /// reject; calling it again does nothing.
    #[napi]
    pub async fn close(&self) -> Result<()> {
        if self.shared.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let session = lock(&self.shared.session).take();
        // Running calls are answered now (cancelled), whether or not their plugins stop.
        // Taken out of the table first: cancelling a call may poll it to its end right here
        // (an `InlineTask` runs on its waker's thread), and its end removes it from the table.
        let running: Vec<_> = lock(&self.shared.calls).values().cloned().collect();
        for state in running {
            if let Some(message) = state.claim_cancelled() {
                state.answer_claimed(&self.shared.settle, message);
            }
        }
        self.shared.workers.close();
        if let Some(store) = &self.shared.store {
            for action in store.take_all_newest_first() {
                let reason = xcsh_loader_core::messages::SESSION_ENDED.to_owned();
                let ctx = ActionContext::without_services(CancelToken::new());
                // A failing reject is the plugin's to report; every other action still gets
                // its own.
                let _ = settle(
                    action,
                    ResolveAction::Discard,
                    reason,
                    ctx,
                    self.shared.timeout,
                )
                .await;
            }
        }
        let Some(mut session) = session else {
            return Ok(());
        };
        // Calls that were running hold the session until they end (cancelled above).
        for _ in 0..200 {
            match Arc::try_unwrap(session) {
                Ok(owned) => {
                    owned.shutdown().await;
                    return Ok(());
                }
                Err(shared) => session = shared,
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Still held after 2 s: dropping it stops its processes without waiting for them.
        drop(session);
        Ok(())
    }
}

impl NativeSession {
    /// The runtime's services for call `call`, when the session has a service function:
    /// `facts_json` (a `HostFacts`) says whether a UI can answer and which model the session
    /// has; absent or unreadable, neither.
    fn call_services(&self, call: u32, facts_json: Option<&str>) -> Option<Arc<host::RuntimeHost>> {
        let link = self.shared.services.as_ref()?;
        let facts = facts_json
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default();
        Some(Arc::new(host::runtime_host(
            call,
            facts,
            Arc::clone(link),
            Arc::clone(&self.shared.answers),
        )))
    }

    /// [`NativeSession::settle`], until `cancel` fires.
    async fn settle_until(
        &self,
        id: u32,
        apply: bool,
        reason: String,
        ctx: ActionContext,
    ) -> Result<Option<String>> {
        let store = self
            .shared
            .store
            .as_ref()
            .ok_or_else(|| Error::from_reason("not pending"))?;
        let action = store
            .take(id)
            .ok_or_else(|| Error::from_reason("not pending"))?;
        let how = if apply {
            ResolveAction::Apply
        } else {
            ResolveAction::Discard
        };
        let settlement = settle_or_keep(action, how, reason, ctx, self.shared.timeout).await;
        if let Some(unsettled) = settlement.unsettled {
            // `close` may have run meanwhile: then the action is discarded as it would have been.
            if let Some(action) = store.put_back(id, unsettled, &self.shared.closed) {
                let reason = xcsh_loader_core::messages::SESSION_ENDED.to_owned();
                let _ = settle(
                    action,
                    ResolveAction::Discard,
                    reason,
                    ActionContext::without_services(CancelToken::new()),
                    self.shared.timeout,
                )
                .await;
            }
        }
        match settlement.result {
            // xcsh's runtime shows text and images: audio and resources as a line each.
            Ok(Some(result)) => serde_json::to_string(&result.with_placeholders())
                .map(Some)
                .map_err(|error| Error::from_reason(format!("cannot encode the result: {error}"))),
            Ok(None) => Ok(None),
            Err(message) => Err(Error::from_reason(message)),
        }
    }

    fn session(&self) -> Option<Arc<Session>> {
        if self.shared.closed.load(Ordering::SeqCst) {
            return None;
        }
        lock(&self.shared.session).clone()
    }
}

/// The cancellation of one apply or reject, registered under its abort number while it runs.
struct Abortable {
    shared: Arc<Shared>,
    number: u32,
    cancel: CancelToken,
}

impl Abortable {
    fn new(shared: &Arc<Shared>, number: u32) -> Self {
        Self {
            shared: Arc::clone(shared),
            number,
            cancel: Self::token(shared, number),
        }
    }

    /// The token of `number`, made by whichever of the settle and its abort comes first.
    fn token(shared: &Shared, number: u32) -> CancelToken {
        lock(&shared.settles).entry(number).or_default().clone()
    }
}

impl Drop for Abortable {
    fn drop(&mut self) {
        lock(&self.shared.settles).remove(&self.number);
    }
}

/// `stopIdleAfterMs` as the loader's idle time: `Infinity` is never (`None`); anything else
/// must be a positive number of milliseconds (`index.js` checked it already).
fn idle_time(ms: f64) -> Result<Option<Duration>> {
    if ms == f64::INFINITY {
        return Ok(None);
    }
    if !ms.is_finite() || ms < 1.0 {
        return Err(Error::new(
            Status::InvalidArg,
            format!(
                "stopIdleAfterMs must be a positive number of milliseconds or Infinity, got {ms}"
            ),
        ));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
}

/// A session builder for `options`, its pushes going to the runtime's store.
fn builder(options: SessionOptions, shared: &Shared) -> Result<xcsh_loader_core::SessionBuilder> {
    let isolation: Isolation = options
        .isolation
        .parse()
        .map_err(|message: String| Error::new(Status::InvalidArg, message))?;
    shared
        .isolated
        .store(isolation == Isolation::Process, Ordering::SeqCst);
    let mut builder = Session::builder(&options.cwd)
        .default_dirs(options.default_dirs)
        .isolation(isolation)
        .deny_network(options.deny_network)
        // In-process, a call's plugin future is polled on the worker that runs the call.
        .inline_plugin_calls(true)
        .default_timeout(shared.timeout);
    builder = match &shared.store {
        Some(store) => builder.pending_actions_to(Arc::clone(store) as _),
        None => builder.without_store(),
    };
    if let Some(limit) = &options.memory_limit {
        let bytes = xcsh_loader_core::sandbox::parse_size(limit)
            .map_err(|message| Error::new(Status::InvalidArg, format!("memoryLimit: {message}")))?;
        builder = builder.memory_limit(Some(bytes));
    }
    for path in &options.allow_write {
        builder = builder.allow_write(path);
    }
    for path in &options.allow_read {
        builder = builder.allow_read(path);
    }
    for name in &options.pass_env {
        let name = xcsh_loader_core::sandbox::parse_env_pattern(name)
            .map_err(|message| Error::new(Status::InvalidArg, format!("passEnv: {message}")))?;
        builder = builder.pass_env(name);
    }
    if let Some(ms) = options.stop_idle_after_ms {
        builder = builder.stop_idle_after(idle_time(ms)?);
    }
    if let Some(log) = &shared.log {
        let log = Arc::clone(log);
        builder = builder.plugin_log(Arc::new(move |plugin, level, line| {
            let arguments = (
                level.as_str(),
                plugin.display().to_string(),
                line.to_owned(),
            );
            log.call(arguments.into(), ThreadsafeFunctionCallMode::NonBlocking);
        }));
    }
    if let Some(host) = &options.plugin_host {
        builder = builder.plugin_host(host);
    }
    for plugin in &options.plugins {
        builder = builder.plugin(plugin);
    }
    Ok(builder)
}

/// Run one call on the current worker: the loader's outcome as `(ok, result JSON or message)`.
#[allow(clippy::too_many_arguments)] // One call's parts, from `start_call` only.
async fn run_call(
    shared: &Shared,
    session: &Session,
    state: &CallState,
    call: u32,
    name: &str,
    arguments: serde_json::Value,
    tool_call_id: String,
    wants_updates: bool,
    host: Option<Arc<host::RuntimeHost>>,
) -> (bool, String) {
    let paced = wants_updates.then(|| {
        let updates = Arc::clone(&shared.updates);
        PacedUpdates::start(move |_, partial| {
            if let Ok(json) = serde_json::to_string(&partial) {
                updates.call((call, json).into(), ThreadsafeFunctionCallMode::NonBlocking);
            }
            std::future::ready(())
        })
    });
    let options = CallOptions {
        cancel: state.cancel.clone(),
        timeout: None,
        updates: paced.as_ref().map(PacedUpdates::sink),
        tool_call_id: Some(tool_call_id),
        services: host.clone().map(|host| host as Arc<dyn HostServices>),
    };
    let outcome = session.call_with(name, arguments, options).await;
    if let Some(paced) = paced {
        paced.finish().await;
    }
    if let Some(host) = &host {
        host::delivered(host).await;
    }
    if outcome.is_error {
        return (false, outcome.text());
    }
    // xcsh's runtime shows text and images: audio and resources as a line each.
    match serde_json::to_string(&outcome.result.with_placeholders()) {
        Ok(json) => (true, json),
        Err(error) => (false, format!("cannot encode the result: {error}")),
    }
}

pub(crate) use xcsh_plugin_api::panic_text;
