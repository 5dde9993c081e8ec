//! The host's side of one plugin child: start it with the checked descriptor and one end of
//! a socketpair, take its handshake, then route its frames (results, updates, log lines,
//! pushes) until it ends; reap it and say how it ended.
//!
//! The child is started, reaped and timed on the isolation runtime ([`background`]): one
//! thread of its own,
//! independent of whatever runtime (if any) the embedder uses, so `SessionBuilder::build`
//! may stay synchronous and the children outlive no one's runtime. A call writes its frame
//! itself, from the caller's thread; each child's answers are read by a thread of its own and
//! handed back through tokio channels, which work from any runtime (see the `reader`
//! module).

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::{mpsc, oneshot};
use xcsh_plugin_api::AgentToolResult;

use super::protocol::{
    FrameReader, FrameWriter, HostMessage, Resolution, ToolDefinition, PROTOCOL_VERSION,
};
use crate::forward::Pending;
use crate::loading::{LoadError, LoadErrorKind};
use crate::plugin_log::{PluginLogLevel, PluginLogSink};
use crate::store::PendingActionSink;
use crate::sys::sandbox::{Confinement, SandboxPolicy};
use crate::sys::spawn::{describe_exit, hand_over, tokio_child_id, Containment, HostWrite};
use crate::tool::{ActionContext, CancelToken, UpdateSink, GRACE_PERIOD};
use xcsh_plugin_api::__private::lock;

/// How long writing one frame to a child may block before the child is given up on.
const WRITE_LIMIT: Duration = Duration::from_secs(5);

/// How long a child may take to load its library and report its tools.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(20);

/// The isolation runtime: one worker thread owning children, readers, reapers and timers.
pub(super) fn background() -> Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("xcsh-isolation")
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the isolation runtime: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// What a plugin process reports to its session besides call results: its pushes and its
/// log lines.
#[derive(Clone)]
pub(crate) struct SessionLinks {
    /// Where its pushes go (`None`: the session has no store).
    pub store: Option<Arc<dyn PendingActionSink>>,
    /// Where its log lines and output go (`None`: `tracing`).
    pub log: Option<PluginLogSink>,
    /// Told when a plugin's idle process was stopped (see the `idle` module), with what its
    /// last handshake reported: the session compares the next handshake with it.
    pub idle_stopped: Option<super::plugin::IdleStopped>,
}

/// What starting a child needs.
#[derive(Clone)]
pub(crate) struct Launch {
    pub host_binary: PathBuf,
    /// The plugin's canonical path (messages, the child's display name).
    pub path: PathBuf,
    /// The checked content: the opened file, or a sealed memfd of the pinned bytes.
    pub descriptor: Arc<File>,
    pub cwd: PathBuf,
    pub links: SessionLinks,
    /// What the child may do; it confines itself before it loads the library.
    pub sandbox: SandboxPolicy,
    /// The repository the working directory is in (part of it readable in `sandbox`): a
    /// result that reads like a write there was refused gets the flag that grants it.
    pub repository: Option<Arc<crate::sys::sandbox::EnclosingRepository>>,
    /// The session's private temporary directory, the child's `TMPDIR`.
    pub temp_dir: Option<PathBuf>,
    /// The private home's variables, over the host's (`HOME` among them).
    pub program_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Stop a child that has been idle this long (`None`: never); see the `idle` module.
    pub stop_idle_after: Option<Duration>,
    /// The plugin's key in the definitions cache, if the session uses one.
    pub cache_key: Option<String>,
}

/// What the child reported at the handshake.
pub(super) struct Hello {
    pub api_version: String,
    pub tools: Vec<ToolDefinition>,
    pub confinement: Option<Confinement>,
}

/// Why an apply or reject got no answer.
pub(super) struct NoAnswer {
    /// How the child ended.
    pub cause: String,
    /// Whether it had been sent: the child may have been running it when it ended.
    pub sent: bool,
}

/// How a call on a child ended.
pub(super) enum CallEnd {
    /// The child answered.
    Done(Result<AgentToolResult, String>),
    /// The child ended first; how.
    Gone(String),
}

/// A call sent to a child.
pub(super) struct SentCall {
    pub number: u64,
    pub end: oneshot::Receiver<CallEnd>,
    /// Fires once the call ended, answered or not.
    pub finished: CancelToken,
}

pub(super) struct CallSlot {
    pub(super) end: oneshot::Sender<CallEnd>,
    pub(super) updates: Option<UpdateSink>,
    pub(super) finished: CancelToken,
    /// The host services of the call: what its plugin's requests are answered with.
    pub(super) services: crate::services::CallServices,
}

/// An apply's or reject's answer, as the child gives it or how it failed there.
pub(super) type ResolveAnswer = Result<Resolution, String>;

/// How a resolve request ended in the child, for a caller that may have given up on it: known
/// once the request was answered in time (nothing late), never sent, or abandoned (its answer
/// still coming, from the request table, or never when the child ends first).
#[derive(Clone, Default)]
pub(super) struct LateAnswer {
    /// Fires once `state` is no longer [`Late::Unknown`].
    known: CancelToken,
    state: Arc<Mutex<Late>>,
}

#[derive(Default)]
enum Late {
    /// The request runs and its caller waits for it.
    #[default]
    Unknown,
    /// Nothing came late: the caller had the answer, or the request was never sent.
    Nothing,
    /// The caller gave up: the child's answer, when it comes, arrives here.
    Coming(oneshot::Receiver<ResolveAnswer>),
}

impl LateAnswer {
    /// Nothing comes late: the caller took the answer, or nothing was sent.
    fn settle(&self) {
        self.become_known(Late::Nothing);
    }

    /// The caller gave up on the request: its answer, if the child gives one, comes through
    /// `answer`.
    fn abandon(&self, answer: oneshot::Receiver<ResolveAnswer>) {
        self.become_known(Late::Coming(answer));
    }

    fn become_known(&self, state: Late) {
        *lock(&self.state) = state;
        self.known.cancel();
    }

    /// Wait up to `limit` for the request to end, then the child's late answer, if any.
    pub(super) async fn wait(&self, limit: Duration) -> Option<Resolution> {
        let waited = async {
            self.known.cancelled().await;
            let coming = match std::mem::take(&mut *lock(&self.state)) {
                Late::Coming(answer) => answer,
                Late::Unknown | Late::Nothing => return None,
            };
            // An error: the child ended without answering (the table was closed).
            coming.await.ok().and_then(Result::ok)
        };
        tokio::time::timeout(limit, waited).await.ok().flatten()
    }
}

/// An apply or reject request in flight, held by its caller's future. Dropped unanswered (the
/// caller gave up), it tells the child to cancel the request (`cancel {call: request}`: calls
/// and requests are numbered from one counter) and hands the answer's way over to its
/// [`LateAnswer`].
struct Asked<'a> {
    connection: &'a Connection,
    request: u64,
    answer: oneshot::Receiver<ResolveAnswer>,
    late: LateAnswer,
    /// Set once the caller took the answer.
    taken: bool,
}

impl Drop for Asked<'_> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        if self.connection.shared.requests.is_waiting(self.request) {
            self.connection
                .send(HostMessage::Cancel { call: self.request });
        }
        // Answered meanwhile or not, the answer (or the table's end) is what happened.
        let answer = std::mem::replace(&mut self.answer, oneshot::channel().1);
        self.late.abandon(answer);
    }
}

pub(super) enum Stop {
    /// Kill now.
    Kill,
}

/// State the reader and the reaper share with the [`Connection`].
#[derive(Default)]
pub(super) struct Shared {
    pub(super) calls: Mutex<HashMap<u64, CallSlot>>,
    /// Session events not yet heard: each is answered when the child says it heard its event,
    /// and all of them when the child is gone (closed), which is what the host's `on_session`
    /// waits for. Numbered with the calls and requests ([`Connection::number`]).
    pub(super) hearing: Pending<()>,
    /// Apply and reject requests not yet answered, numbered with the calls (as `hearing`).
    pub(super) requests: Pending<ResolveAnswer>,
    /// What the applies and rejects running in the child use of the host while their caller
    /// waits (docs/guide/src/pending.md): the host services and update listener of the call
    /// settling each.
    pub(super) settling: Mutex<HashMap<u64, ActionContext>>,
    /// Set once the child is gone: how it ended.
    ended: Mutex<Option<String>>,
    /// Why the host ended it, when it did (a timeout, a malformed frame, the session's end).
    pub(super) stopped_by_host: Mutex<Option<String>>,
    /// It sent something malformed: killed by the host, but counted as a crash.
    pub(super) violated_protocol: AtomicBool,
    /// It printed Rust's `memory allocation of N bytes failed` on stderr (an allocation
    /// refused under its memory limit; the abort that follows is not a plain crash).
    pub(super) out_of_memory: Arc<AtomicBool>,
    /// Fires when the reader thread has routed everything the child sent.
    pub(super) reader_done: CancelToken,
    /// Fires once `ended` is set.
    ended_signal: CancelToken,
    /// The plugin asked not to be stopped while idle (`CustomToolApi::keep_alive`).
    pub(super) keep_alive: AtomicBool,
}

/// The host's handle on one running child. Dropping the last handle shuts the child down.
pub(super) struct Connection {
    pub path: PathBuf,
    outgoing: FrameWriter<HostWrite>,
    stop: mpsc::UnboundedSender<Stop>,
    shared: Arc<Shared>,
    /// The last number given to a call, a session event or a request (one sequence: the
    /// child routes them by number).
    numbers: Arc<AtomicU64>,
    /// Whether the plugin already counted this child's end as a crash.
    pub crash_noted: AtomicBool,
    /// When the child last stopped being used (a call or an action of its own ended); see
    /// [`Connection::idle_for`].
    last_used: Mutex<Instant>,
    /// The child's process id (for the log).
    pub pid: Option<u32>,
    /// The session's working directory (where an apply the child was running journals its
    /// commit).
    pub cwd: PathBuf,
    /// What explains a write the sandbox refused in the enclosing repository.
    refused_writes: RefusedWrites,
}

/// What a child's answers are read against for [`Connection::explain_refused_write`]: the
/// enclosing repository, the child's writable directories, where the hint is logged.
struct RefusedWrites {
    repository: Option<Arc<crate::sys::sandbox::EnclosingRepository>>,
    writable: Vec<PathBuf>,
    log: Option<PluginLogSink>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The child cancels what still runs and exits; it is killed after the grace period
        // otherwise.
        self.outgoing.send(&HostMessage::Shutdown);
        lock(&self.shared.stopped_by_host).get_or_insert_with(|| "the session ended".to_owned());
        if let Ok(runtime) = background() {
            let stop = self.stop.clone();
            runtime.spawn(async move {
                tokio::time::sleep(GRACE_PERIOD).await;
                let _ = stop.send(Stop::Kill);
            });
        }
    }
}

impl Connection {
    /// When `text` (a call's or an apply's result or error) reads like a write in the
    /// read-only part of the enclosing repository was refused, the line naming the flag that
    /// grants it, logged as the plugin's warning. The host cannot see what the plugin's
    /// programs printed unless the plugin passes it on (in its text, its error, or its
    /// details, where a program's output usually goes); it looks there, and only claims what
    /// a path in it shows.
    pub(super) fn explain_refused_write(&self, text: &str) -> Option<String> {
        let RefusedWrites {
            repository,
            writable,
            log,
        } = &self.refused_writes;
        let hint = repository
            .as_ref()?
            .write_refusal_hint(text, &self.cwd, writable)?;
        crate::plugin_log::plugin_log(log.as_ref(), &self.path, PluginLogLevel::Warn, &hint);
        Some(hint)
    }

    /// [`Self::explain_refused_write`] for a result: its text blocks and every string in its
    /// details (a program's `stderr`) are read; the hint, if any, is added as a text block
    /// (what the model reads).
    pub(super) fn explain_in_result(&self, result: &mut AgentToolResult) {
        fn strings<'a>(value: &'a serde_json::Value, into: &mut Vec<&'a str>) {
            match value {
                serde_json::Value::String(text) => into.push(text),
                serde_json::Value::Array(items) => {
                    items.iter().for_each(|item| strings(item, into))
                }
                serde_json::Value::Object(fields) => {
                    fields.values().for_each(|field| strings(field, into))
                }
                _ => {}
            }
        }
        let mut texts: Vec<&str> = result.texts().collect();
        if let Some(details) = &result.details {
            strings(details, &mut texts);
        }
        if let Some(hint) = self.explain_refused_write(&texts.join("\n")) {
            result
                .content
                .push(xcsh_plugin_api::Content::Text { text: hint });
        }
    }

    /// [`Self::explain_refused_write`] for an error message: the hint, if any, on a line of
    /// its own after it.
    pub(super) fn explain_in_error(&self, message: String) -> String {
        match self.explain_refused_write(&message) {
            Some(hint) => format!("{message}\n{hint}"),
            None => message,
        }
    }

    /// Start a child and take its handshake.
    pub(super) async fn start(launch: Launch) -> Result<(Arc<Connection>, Hello), LoadError> {
        let fail =
            |cause: String| LoadError::new(&launch.path, LoadErrorKind::PluginProcess { cause });
        let mut command = tokio::process::Command::new(&launch.host_binary);
        // A clean environment: what the sandbox lets through by name, and what is set below
        // (the host's secrets, `GITHUB_TOKEN` and the like, never reach the plugin).
        command
            .env_clear()
            .envs(launch.sandbox.environment())
            .arg("--protocol")
            .arg(PROTOCOL_VERSION.to_string())
            .arg("--path")
            .arg(&launch.path)
            .arg("--cwd")
            .arg(&launch.cwd)
            .env("XCSH_PLUGIN_HOST_PARENT", std::process::id().to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if launch.links.store.is_some() {
            command.arg("--store");
        }
        let policy = serde_json::to_string(&launch.sandbox)
            .map_err(|e| fail(format!("cannot encode the sandbox policy: {e}")))?;
        command.arg("--sandbox").arg(policy);
        // The private temporary directory, or none: the shared one is not readable.
        for name in crate::sys::sandbox::TEMP_VARIABLES {
            command.env_remove(name);
            if let Some(temp_dir) = &launch.temp_dir {
                command.env(name, temp_dir);
            }
        }
        command.envs(launch.program_env.iter().map(|(k, v)| (k, v)));
        let ((parent_end, writer), handover) =
            hand_over(command.as_std_mut(), &launch.descriptor, WRITE_LIMIT)
                .map_err(|e| fail(format!("cannot make the link to the plugin process: {e}")))?;
        let mut child = command.spawn().map_err(|e| {
            fail(format!(
                "cannot start {}: {e}; set {}=/path/to/{} or use in-process isolation",
                launch.host_binary.display(),
                super::PLUGIN_HOST_ENV,
                super::PLUGIN_HOST_BIN
            ))
        })?;
        let containment = handover
            .started(tokio_child_id(&child), launch.sandbox.memory_limit)
            .map_err(|e| {
                let _ = child.start_kill();
                fail(format!("cannot contain the plugin process: {e}"))
            })?;
        let name = launch
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let numbers = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(Shared {
            hearing: Pending::numbered_from(Arc::clone(&numbers)),
            requests: Pending::numbered_from(Arc::clone(&numbers)),
            ..Shared::default()
        });
        let mut output = Vec::new();
        if let Some(out) = child.stdout.take() {
            output.push(tokio::spawn(log_lines(
                out,
                name.clone(),
                None,
                launch.links.log.clone(),
                launch.path.clone(),
            )));
        }
        if let Some(err) = child.stderr.take() {
            let out_of_memory = Arc::clone(&shared.out_of_memory);
            output.push(tokio::spawn(log_lines(
                err,
                name,
                Some(out_of_memory),
                launch.links.log.clone(),
                launch.path.clone(),
            )));
        }
        let pid = child.id();
        let (stop, stops) = mpsc::unbounded_channel();
        let (hello_sender, hello) = oneshot::channel();
        let connection = Arc::new_cyclic(|weak: &Weak<Connection>| {
            let reader = super::reader::Reader {
                frames: FrameReader::new(parent_end),
                connection: weak.clone(),
                shared: Arc::clone(&shared),
                links: launch.links.clone(),
                path: launch.path.clone(),
                stop: stop.clone(),
            };
            let spawned = std::thread::Builder::new()
                .name("xcsh-plugin-reader".to_owned())
                .spawn(move || reader.run(hello_sender));
            if spawned.is_err() {
                shared.reader_done.cancel();
            }
            Connection {
                path: launch.path.clone(),
                outgoing: FrameWriter::new(writer),
                stop,
                shared: Arc::clone(&shared),
                numbers,
                crash_noted: AtomicBool::new(false),
                last_used: Mutex::new(Instant::now()),
                pid,
                cwd: launch.cwd.clone(),
                refused_writes: RefusedWrites {
                    repository: launch.repository.clone(),
                    writable: launch.sandbox.writable.clone(),
                    log: launch.links.log.clone(),
                },
            }
        });
        tokio::spawn(reap(child, containment, stops, output, Arc::clone(&shared)));
        let handshake = tokio::time::timeout(HANDSHAKE_LIMIT, hello).await;
        let hello = match handshake {
            Ok(Ok(Ok(hello))) => hello,
            Ok(Ok(Err(kind))) => return Err(LoadError::new(&launch.path, kind)),
            Ok(Err(_)) => {
                // The reader ended without a handshake: the child died or spoke garbage.
                let _ =
                    tokio::time::timeout(HANDSHAKE_LIMIT, shared.ended_signal.cancelled()).await;
                let cause = connection.ended().unwrap_or_else(|| "ended".to_owned());
                return Err(fail(format!(
                    "the plugin process {cause} while loading the plugin"
                )));
            }
            Err(_) => {
                connection.kill("it did not report its tools in time");
                return Err(fail(format!(
                    "the plugin process did not report its tools within {}s",
                    HANDSHAKE_LIMIT.as_secs()
                )));
            }
        };
        Ok((connection, hello))
    }

    /// Fires once the child has ended, was reaped, and its output was logged.
    pub(super) fn ended_signal(&self) -> CancelToken {
        self.shared.ended_signal.clone()
    }

    /// How the child ended, once it has.
    pub(super) fn ended(&self) -> Option<String> {
        lock(&self.shared.ended).clone()
    }

    /// Whether the child ended or is being stopped: a new call needs a fresh child.
    pub(super) fn is_finished(&self) -> bool {
        self.ended().is_some() || lock(&self.shared.stopped_by_host).is_some()
    }

    /// Whether the host ended the child for a reason of its own (then its end is not a
    /// crash; a child killed for a malformed message did crash).
    pub(super) fn stopped_by_host(&self) -> bool {
        lock(&self.shared.stopped_by_host).is_some()
            && !self.shared.violated_protocol.load(Ordering::SeqCst)
    }

    /// Whether the child reported an allocation that failed (under its memory limit).
    pub(super) fn ran_out_of_memory(&self) -> bool {
        self.shared.out_of_memory.load(Ordering::SeqCst)
    }

    /// Note that a use of the child (a call, an apply or reject, an action it pushed) just
    /// ended: its idle time starts again now.
    pub(super) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// How long ago the child was last used (see [`Connection::touch`]). Whether something
    /// still uses it is the holder's question: every use holds a handle on the connection.
    pub(super) fn idle_for(&self) -> Duration {
        lock(&self.last_used).elapsed()
    }

    /// Whether the plugin asked not to be stopped while idle.
    pub(super) fn kept_alive(&self) -> bool {
        self.shared.keep_alive.load(Ordering::SeqCst)
    }

    /// Record that the host ends this child for `why` (so its end is never counted as a
    /// crash); dropping the last handle then asks it to exit, and kills it after the grace
    /// period.
    pub(super) fn retire(&self, why: &str) {
        lock(&self.shared.stopped_by_host).get_or_insert_with(|| why.to_owned());
    }

    /// Kill the child now; `why` is recorded so its end is not counted as a crash.
    pub(super) fn kill(&self, why: &str) {
        lock(&self.shared.stopped_by_host).get_or_insert_with(|| why.to_owned());
        let _ = self.stop.send(Stop::Kill);
    }

    /// Send a message; `false` once the child is gone.
    pub(super) fn send(&self, message: HostMessage) -> bool {
        match self.outgoing.try_send(&message) {
            Ok(()) => true,
            Err(error) => {
                // A write that timed out: the child is alive but stopped reading. (Any other
                // failure means it is gone, which the reaper reports.)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) {
                    self.kill("it stopped reading its socket");
                }
                false
            }
        }
    }

    /// Tell the child's `tool` of a session event (not answered).
    pub(super) fn session_event(
        &self,
        tool: String,
        event: crate::services::SessionEvent,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (call, heard) = self.shared.hearing.open();
        // A child already gone is sent nothing; its end closed (or will close) the table, so
        // the wait below ends either way.
        if self.ended().is_none() {
            self.send(HostMessage::SessionEvent { call, tool, event });
        }
        async move {
            // Heard, or the child is gone: either way nothing is left to wait for.
            let _ = heard.await;
        }
    }

    /// A number for a call or a request, from the sequence session events are numbered from.
    fn number(&self) -> u64 {
        self.numbers.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Start a call of `tool`.
    pub(super) fn call(
        &self,
        tool: &str,
        tool_call_id: String,
        arguments: Value,
        updates: Option<UpdateSink>,
        services: crate::services::CallServices,
    ) -> Result<SentCall, String> {
        let facts = services.facts();
        let number = self.number();
        let (sender, end) = oneshot::channel();
        let finished = CancelToken::new();
        {
            // Under the lock that the reaper takes to fail every call: a call is either seen
            // by the reaper or sees the child's end here.
            let mut calls = lock(&self.shared.calls);
            if let Some(cause) = self.ended() {
                return Err(cause);
            }
            calls.insert(
                number,
                CallSlot {
                    end: sender,
                    updates,
                    finished: finished.clone(),
                    services,
                },
            );
        }
        // When this fails, the reaper fails the call with how the child ended.
        self.send(HostMessage::Execute {
            call: number,
            tool: tool.to_owned(),
            tool_call_id,
            arguments,
            facts,
        });
        Ok(SentCall {
            number,
            end,
            finished,
        })
    }

    /// Send an apply or reject (`message` gets the request number) and wait for its answer;
    /// `Err` says how the child ended when it did first. `late` learns how the request ended:
    /// when this future is dropped before the answer, the child is told to cancel the request
    /// (its apply or reject is dropped there), and `late` gets the child's answer when it
    /// comes.
    pub(super) async fn resolve(
        &self,
        message: impl FnOnce(u64) -> HostMessage,
        late: LateAnswer,
        ctx: ActionContext,
    ) -> Result<Resolution, NoAnswer> {
        let (request, answer) = self.shared.requests.open();
        // The child's questions and updates for this request are answered with `ctx` while
        // its caller waits, and refused once it stopped waiting.
        lock(&self.shared.settling).insert(request, ctx);
        let _settled = Forget(&self.shared.settling, request);
        // The reaper sets `ended` before it closes the table: a request opened after that was
        // never sent; one opened before is answered, or fails with how the child ended.
        if let Some(cause) = self.ended() {
            self.shared.requests.withdraw(request);
            late.settle();
            return Err(NoAnswer { cause, sent: false });
        }
        let mut asked = Asked {
            connection: self,
            request,
            answer,
            late,
            taken: false,
        };
        self.send(message(request));
        let outcome = (&mut asked.answer).await;
        asked.taken = true;
        asked.late.settle();
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(_) => Err(self.ended().unwrap_or_else(|| "ended".to_owned())),
        };
        outcome.map_err(|cause| NoAnswer { cause, sent: true })
    }
}

/// Takes an entry out of its map when dropped.
struct Forget<'a, T>(&'a Mutex<HashMap<u64, T>>, u64);

impl<T> Drop for Forget<'_, T> {
    fn drop(&mut self) {
        lock(self.0).remove(&self.1);
    }
}

/// Log each line a child writes to stdout or stderr, prefixed with the plugin's name; on
/// stderr, note Rust's report of a failed allocation in `out_of_memory`.
async fn log_lines(
    stream: impl AsyncRead + Unpin,
    name: String,
    out_of_memory: Option<Arc<AtomicBool>>,
    log: Option<PluginLogSink>,
    path: PathBuf,
) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(flag) = &out_of_memory {
            if line.starts_with("memory allocation of ") && line.ends_with(" failed") {
                flag.store(true, Ordering::SeqCst);
            }
        }
        match &log {
            Some(log) => log(&path, PluginLogLevel::Warn, &line),
            None => tracing::warn!(target: "xcsh_plugin", "[{name}] {line}"),
        }
    }
}

/// Wait for the child to end (killing it when asked), reap it, then fail whatever still
/// waited on it with how it ended.
async fn reap(
    mut child: tokio::process::Child,
    containment: Containment,
    mut stops: mpsc::UnboundedReceiver<Stop>,
    output: Vec<tokio::task::JoinHandle<()>>,
    shared: Arc<Shared>,
) {
    // What the child started and left behind ends with it (its process group, or its job).
    let end_group = || containment.end_all();
    let status = tokio::select! {
        status = child.wait() => status,
        Some(Stop::Kill) = stops.recv() => {
            end_group();
            let _ = child.start_kill();
            child.wait().await
        }
    };
    // Reaped, but the group lives on while it has members, so its id is still its own.
    end_group();
    // Frames the child sent before it ended (a `Done`, a `Push`) are routed first, and what
    // it printed is logged (unless a process it started keeps its pipes open).
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        shared.reader_done.cancelled().await;
        for pump in output {
            let _ = pump.await;
        }
    })
    .await;
    finish(&shared, status);
}

fn finish(shared: &Shared, status: std::io::Result<std::process::ExitStatus>) {
    let how = match status {
        Ok(status) => describe_exit(status),
        Err(error) => format!("could not be waited for ({error})"),
    };
    let cause = match lock(&shared.stopped_by_host).clone() {
        Some(why) => format!("{how}: {why}"),
        None => how,
    };
    let calls: Vec<CallSlot> = {
        let mut calls = lock(&shared.calls);
        *lock(&shared.ended) = Some(cause.clone());
        shared.hearing.close();
        calls.drain().map(|(_, slot)| slot).collect()
    };
    shared.ended_signal.cancel();
    for slot in calls {
        let _ = slot.end.send(CallEnd::Gone(cause.clone()));
        slot.finished.cancel();
    }
    // Every apply or reject still waiting fails with `cause` (its caller reads `ended`), and
    // an abandoned one's late answer will not come.
    shared.requests.close();
}
