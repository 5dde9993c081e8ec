//! One isolated plugin library in one session: its tools as the session sees them, the child
//! that currently runs it, and its crash record.
//!
//! A child that dies makes the running calls tool errors naming the plugin file, the tool and
//! the cause; the next call starts a fresh child from the same checked descriptor. Three
//! crashes within a minute disable the plugin for the session.
//!
//! A plugin whose tool definitions came from the definitions cache ([`deferred`]) has no child
//! until a call needs one: its first child starts then, and its handshake ([`Definitions`],
//! kept for the session to compare with what it registered) is authoritative.
//!
//! A child that has been idle for the plugin's idle time is stopped (see the `idle` module);
//! the plugin is then in the same state as one registered from the cache: the session is
//! told ([`IdleStopped`]), and the next call starts a child whose handshake is compared with
//! what was registered. A stop is never counted as a crash.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

use super::connection::{background, CallEnd, Connection, Hello};
pub(crate) use super::connection::{Launch, SessionLinks};
use super::protocol::{HostMessage, ToolDefinition};
use crate::loading::open::still_as_checked;
use crate::loading::{CheckedFile, LoadError, LoadErrorKind};
use crate::messages::{
    plugin_crashed, plugin_disabled, plugin_out_of_memory, PLUGIN_PROCESS_STOPPED,
};
use crate::store::BoxFuture;
use crate::sys::sandbox::Confinement;
use crate::tool::{
    CallContext, CancelToken, PluginError, Tool, ToolOrigin, ToolSpec, GRACE_PERIOD,
};
use xcsh_plugin_api::__private::lock;

/// Told that `plugin`'s idle process was stopped; the definitions are what its last
/// handshake reported (what the session registered).
pub(crate) type IdleStopped = Arc<dyn Fn(PluginProcess, Definitions) + Send + Sync>;

/// Crashes within this window count towards disabling a plugin.
const CRASH_WINDOW: Duration = Duration::from_secs(60);
/// This many crashes within [`CRASH_WINDOW`] disable the plugin for the session.
const CRASH_LIMIT: usize = 3;

/// What a plugin's child reports at its handshake: what a session registers the plugin with,
/// and what the definitions cache keeps for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Definitions {
    /// The `xcsh-plugin-api` version it loaded, as the child spelled it.
    pub(crate) api_version: String,
    /// Its tools, in its order.
    pub(crate) tools: Vec<ToolDefinition>,
    /// What its sandbox enforces; `None` from a child started without one.
    pub(crate) confinement: Option<Confinement>,
}

impl From<Hello> for Definitions {
    fn from(hello: Hello) -> Self {
        Definitions {
            api_version: hello.api_version,
            tools: hello.tools,
            confinement: hello.confinement,
        }
    }
}

/// A child being started at build time; [`Starting::finish`] waits for its handshake.
pub(crate) struct Starting {
    launch: Launch,
    /// Checked again once the child mapped it (see [`still_as_checked`]).
    file: CheckedFile,
    answer: std::sync::mpsc::Receiver<Result<(Arc<Connection>, Hello), LoadError>>,
}

/// Start a child for `launch` (the checked `file`'s descriptor) on the isolation runtime,
/// without waiting for it (so a session's children start in parallel).
pub(crate) fn start(launch: Launch, file: &CheckedFile) -> Result<Starting, LoadError> {
    let runtime = background()
        .map_err(|cause| LoadError::new(&launch.path, LoadErrorKind::PluginProcess { cause }))?;
    let (sender, answer) = std::sync::mpsc::channel();
    let starting = launch.clone();
    runtime.spawn(async move {
        let _ = sender.send(Connection::start(starting).await);
    });
    Ok(Starting {
        launch,
        file: file.clone(),
        answer,
    })
}

impl Starting {
    /// The plugin's canonical path.
    pub(crate) fn path(&self) -> &Path {
        &self.launch.path
    }

    /// Wait for the handshake; the plugin's API version, its tools, and what its sandbox
    /// enforces.
    pub(crate) fn finish(self) -> Result<Handshake, LoadError> {
        let path = self.launch.path.clone();
        let (connection, hello) = self.answer.recv().map_err(|_| {
            LoadError::new(
                &path,
                LoadErrorKind::PluginProcess {
                    cause: "the isolation runtime stopped".to_owned(),
                },
            )
        })??;
        if !still_as_checked(&self.file) {
            drop(connection);
            return Err(LoadError::new(&path, LoadErrorKind::ChangedWhileLoading));
        }
        let definitions = Definitions::from(hello);
        let plugin = PluginProcess::new(self.launch, Some(connection), Some(definitions.clone()));
        Ok(Handshake {
            tools: plugin.tools(&definitions.tools),
            definitions,
        })
    }
}

/// What a started child reported, and its tools as the session runs them.
pub(crate) struct Handshake {
    pub(crate) definitions: Definitions,
    pub(crate) tools: Vec<IsolatedTool>,
}

/// An isolated plugin registered from cached `definitions`: nothing starts now. Its first
/// child starts when a call needs it, from `launch` (the checked descriptor of `file`, and is
/// refused if the file was written since it was checked); [`PluginProcess::handshake`]
/// then gives what that child reported.
pub(crate) fn deferred(
    launch: Launch,
    file: &CheckedFile,
    definitions: &Definitions,
) -> (PluginProcess, Vec<IsolatedTool>) {
    let plugin = PluginProcess::new(launch, None, None);
    *lock(&plugin.0.unstarted) = Some(file.clone());
    let tools = plugin.tools(&definitions.tools);
    (plugin, tools)
}

/// One isolated plugin library of a session, whatever its tools are: the handle the session
/// keeps on a plugin registered from the definitions cache.
#[derive(Clone)]
pub(crate) struct PluginProcess(Arc<IsolatedPlugin>);

impl PluginProcess {
    /// A plugin run by `launch`'s children: `connection` is the one already running (with the
    /// `definitions` its handshake reported), if any.
    fn new(
        launch: Launch,
        connection: Option<Arc<Connection>>,
        definitions: Option<Definitions>,
    ) -> Self {
        let plugin = Arc::new_cyclic(|me| IsolatedPlugin {
            me: me.clone(),
            current_ended: Arc::new(Mutex::new(connection.as_ref().map(|c| c.ended_signal()))),
            current: tokio::sync::Mutex::new(connection.clone()),
            crashes: Mutex::new(Vec::new()),
            running: Mutex::new(HashMap::new()),
            definitions: Mutex::new(definitions),
            unstarted: Mutex::new(None),
            stopped_idle: AtomicBool::new(false),
            launch,
        });
        if let (Some(connection), Some(after)) = (&connection, plugin.launch.stop_idle_after) {
            super::idle::watch(Arc::downgrade(&plugin), connection, after);
        }
        Self(plugin)
    }

    /// The plugin's key in the definitions cache, if the session uses one.
    pub(crate) fn cache_key(&self) -> Option<&str> {
        self.0.launch.cache_key.as_deref()
    }

    /// The plugin's canonical path.
    pub(crate) fn path(&self) -> &Path {
        &self.0.launch.path
    }

    /// Tools served by this plugin's processes, as `definitions` describe them.
    pub(crate) fn tools(&self, definitions: &[ToolDefinition]) -> Vec<IsolatedTool> {
        let path = &self.0.launch.path;
        definitions
            .iter()
            .cloned()
            .map(|def| IsolatedTool {
                call_view: def.call_view.clone(),
                spec: def.into_spec(ToolOrigin::Plugin(path.clone())),
                plugin: Arc::clone(&self.0),
            })
            .collect()
    }

    /// What [`crate::Session::close`] waits on for this plugin.
    pub(crate) fn children_gone(&self) -> ChildrenGone {
        ChildrenGone {
            plugin: Arc::downgrade(&self.0),
            current: Arc::clone(&self.0.current_ended),
        }
    }

    /// The handshake of the running child, starting one if none runs (a crashed child's
    /// successor reports anew). `Err` is why no child could serve.
    pub(crate) async fn handshake(&self) -> Result<Definitions, String> {
        self.0.connection().await?;
        lock(&self.0.definitions).clone().ok_or_else(|| {
            format!(
                "Plugin {}: its process gave no handshake",
                self.0.launch.path.display()
            )
        })
    }
}

/// Waits until an isolated plugin's current process has exited and its output was logged.
#[derive(Clone)]
pub(crate) struct ChildrenGone {
    plugin: std::sync::Weak<IsolatedPlugin>,
    current: Arc<Mutex<Option<CancelToken>>>,
}

impl ChildrenGone {
    /// Once the plugin (its tools, its session) is gone: wait for its last process to end.
    pub(crate) async fn wait(self) {
        let limit = GRACE_PERIOD + Duration::from_secs(2);
        let _ = tokio::time::timeout(limit, async {
            while self.plugin.strong_count() > 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let ended = lock(&self.current).clone();
            if let Some(ended) = ended {
                ended.cancelled().await;
            }
        })
        .await;
    }
}

/// A call in flight, by tool-call id: its child, its number there, and when it ended.
type RunningCall = (Arc<Connection>, u64, CancelToken);

pub(super) struct IsolatedPlugin {
    /// This plugin, for the idle watcher of each process it starts.
    me: Weak<IsolatedPlugin>,
    launch: Launch,
    /// Fires when the current process has ended and its output was logged.
    current_ended: Arc<Mutex<Option<CancelToken>>>,
    current: tokio::sync::Mutex<Option<Arc<Connection>>>,
    crashes: Mutex<Vec<Instant>>,
    running: Mutex<HashMap<String, RunningCall>>,
    /// What the latest child reported at its handshake (`None` before the first).
    definitions: Mutex<Option<Definitions>>,
    /// The checked file of a plugin registered from the cache, until its first child
    /// started: that child must have mapped what was checked.
    unstarted: Mutex<Option<CheckedFile>>,
    /// Its last process was stopped while idle (the next start is a restart, for the log).
    stopped_idle: AtomicBool,
}

impl IsolatedPlugin {
    /// Count `connection`'s end as a crash unless the host stopped it or it was counted;
    /// returns whether the plugin is now disabled.
    fn note_end(&self, connection: &Connection) -> bool {
        let counts = connection.ended().is_some()
            && !connection.stopped_by_host()
            && !connection
                .crash_noted
                .swap(true, std::sync::atomic::Ordering::SeqCst);
        let mut crashes = lock(&self.crashes);
        if counts {
            crashes.push(Instant::now());
        }
        crashes.retain(|at| at.elapsed() < CRASH_WINDOW);
        crashes.len() >= CRASH_LIMIT
    }

    fn disabled(&self) -> bool {
        lock(&self.crashes).len() >= CRASH_LIMIT
            && lock(&self.crashes)
                .iter()
                .all(|at| at.elapsed() < CRASH_WINDOW)
    }

    /// The running child, or a fresh one when the last one ended.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut current = self.current.lock().await;
        if let Some(connection) = current.as_ref() {
            if !connection.is_finished() {
                return Ok(Arc::clone(connection));
            }
            // Wait for the reaper, so the crash (if it was one) is counted.
            let ended = connection.ended_signal();
            let _ = tokio::time::timeout(Duration::from_secs(2), ended.cancelled()).await;
            if self.note_end(connection) {
                return Err(plugin_disabled(&self.launch.path));
            }
            *current = None;
        }
        if self.disabled() {
            return Err(plugin_disabled(&self.launch.path));
        }
        let runtime = background()?;
        let launch = self.launch.clone();
        let started = runtime
            .spawn(Connection::start(launch))
            .await
            .map_err(|e| e.to_string())?;
        let (connection, hello) = started.map_err(|error| error.to_string())?;
        let unstarted = lock(&self.unstarted).clone();
        if let Some(file) = unstarted {
            if !still_as_checked(&file) {
                drop(connection);
                return Err(
                    LoadError::new(&self.launch.path, LoadErrorKind::ChangedWhileLoading)
                        .to_string(),
                );
            }
            *lock(&self.unstarted) = None;
        }
        *lock(&self.definitions) = Some(Definitions::from(hello));
        *lock(&self.current_ended) = Some(connection.ended_signal());
        *current = Some(Arc::clone(&connection));
        if self.stopped_idle.swap(false, Ordering::SeqCst) {
            tracing::debug!(
                plugin = %self.launch.path.display(),
                pid = connection.pid,
                "restarted the plugin's process, stopped while idle, for a call"
            );
        }
        if let Some(after) = self.launch.stop_idle_after {
            super::idle::watch(self.me.clone(), &connection, after);
        }
        Ok(connection)
    }

    /// Stop `watched` if it is still this plugin's current process and has been idle for
    /// `after`: nothing but the plugin holds it (no call, apply, reject or pending action of
    /// its own), it was last used `after` ago or more, and the plugin did not ask to be kept
    /// alive. Then the session is told, and the next call starts a new process.
    pub(super) async fn stop_if_idle(
        &self,
        watched: &Weak<Connection>,
        after: Duration,
    ) -> super::idle::IdleCheck {
        use super::idle::IdleCheck;
        let mut current = self.current.lock().await;
        let Some(connection) = current.as_ref() else {
            return IdleCheck::Gone;
        };
        if !std::ptr::eq(Arc::as_ptr(connection), watched.as_ptr()) || connection.is_finished() {
            return IdleCheck::Gone;
        }
        // Every use of the process holds a handle on it; the plugin's is the only one left
        // when nothing uses it. (Holding `current` keeps a new call from taking one now.)
        if connection.kept_alive()
            || Arc::strong_count(connection) > 1
            || connection.idle_for() < after
        {
            return IdleCheck::Busy;
        }
        let Some(connection) = current.take() else {
            return IdleCheck::Gone;
        };
        let idle = super::idle::human(after);
        connection.retire(&format!("stopped after {idle} idle"));
        let pid = connection.pid;
        // The last handle: the child is asked to exit, and killed after the grace period.
        drop(connection);
        if let Ok(runtime) = background() {
            crate::sys::heap::release_after_stop(runtime, GRACE_PERIOD);
        }
        self.stopped_idle.store(true, Ordering::SeqCst);
        drop(current);
        tracing::debug!(
            plugin = %self.launch.path.display(),
            pid,
            "stopped the plugin's process after {idle} idle; its next call starts it again"
        );
        let definitions = lock(&self.definitions).clone();
        if let (Some(stopped), Some(definitions), Some(me)) = (
            self.launch.links.idle_stopped.as_ref(),
            definitions,
            self.me.upgrade(),
        ) {
            stopped(PluginProcess(me), definitions);
        }
        IdleCheck::Stopped
    }

    /// The error of a call whose child ended: the crash, and whether it disabled the plugin.
    fn crash_error(&self, connection: &Connection, tool: &str, cause: &str) -> PluginError {
        let out_of_memory = connection
            .ran_out_of_memory()
            .then_some(self.launch.sandbox.memory_limit)
            .flatten();
        let mut message = match out_of_memory {
            Some(limit) => plugin_out_of_memory(&self.launch.path, tool, limit),
            None => plugin_crashed(&self.launch.path, tool, cause),
        };
        if self.note_end(connection) {
            message = format!("{message}. {}", plugin_disabled(&self.launch.path));
        }
        PluginError::new(message)
    }
}

/// A tool of an isolated plugin, as the session runs it.
pub(crate) struct IsolatedTool {
    spec: ToolSpec,
    call_view: Option<xcsh_plugin_api::view::CallView>,
    plugin: Arc<IsolatedPlugin>,
}

impl IsolatedTool {
    /// What [`crate::Session::close`] waits on for this tool's plugin.
    pub(crate) fn children_gone(&self) -> ChildrenGone {
        ChildrenGone {
            plugin: Arc::downgrade(&self.plugin),
            current: Arc::clone(&self.plugin.current_ended),
        }
    }
}

impl Tool for IsolatedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_view(&self) -> Option<xcsh_plugin_api::view::CallView> {
        self.call_view.clone()
    }

    fn execute(
        &self,
        tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        let plugin = Arc::clone(&self.plugin);
        let tool = self.spec.name.clone();
        Box::pin(async move {
            let connection = plugin.connection().await.map_err(PluginError::new)?;
            let sent = connection
                .call(
                    &tool,
                    tool_call_id.clone(),
                    arguments,
                    ctx.updates.clone(),
                    ctx.services.clone(),
                )
                .map_err(|cause| plugin.crash_error(&connection, &tool, &cause))?;
            lock(&plugin.running).insert(
                tool_call_id.clone(),
                (Arc::clone(&connection), sent.number, sent.finished.clone()),
            );
            let end = sent.end.await;
            lock(&plugin.running).remove(&tool_call_id);
            // The call held the process busy; its idle time starts now.
            connection.touch();
            match end {
                // A write the sandbox refused in the enclosing repository: the flag that
                // grants it, in what the model reads and in the log.
                Ok(CallEnd::Done(Ok(mut result))) => {
                    connection.explain_in_result(&mut result);
                    Ok(result)
                }
                Ok(CallEnd::Done(Err(message))) => {
                    Err(PluginError::new(connection.explain_in_error(message)))
                }
                Ok(CallEnd::Gone(cause)) => Err(plugin.crash_error(&connection, &tool, &cause)),
                Err(_) => Err(plugin.crash_error(&connection, &tool, "ended")),
            }
        })
    }

    fn on_session(&self, event: crate::services::SessionEvent) -> BoxFuture<()> {
        let plugin = Arc::clone(&self.plugin);
        let tool = self.spec.name.clone();
        Box::pin(async move {
            // A process that is not running now (not started yet, or stopped while idle)
            // holds no state to rebuild: it is not started for an event.
            let current = plugin.current.lock().await.clone();
            if let Some(connection) = current {
                connection.session_event(tool, event).await;
            }
        })
    }

    fn interrupted(&self, tool_call_id: &str) -> BoxFuture<Option<String>> {
        let running = lock(&self.plugin.running).remove(tool_call_id);
        Box::pin(async move {
            let (connection, call, finished) = running?;
            connection.send(HostMessage::Cancel { call });
            if tokio::time::timeout(GRACE_PERIOD, finished.cancelled())
                .await
                .is_ok()
            {
                return None;
            }
            connection.kill("a call was interrupted and did not end within the grace period");
            Some(PLUGIN_PROCESS_STOPPED.to_owned())
        })
    }
}

/// Run blocking work (checking a plugin file, waiting for a handshake) on the isolation
/// runtime's blocking threads, from any async context.
pub(crate) async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    background()?
        .spawn_blocking(work)
        .await
        .map_err(|error| format!("the isolation runtime lost the work: {error}"))
}
