//! [`Session`]: one agent session's tools, its pending-action store, and how calls run.
//!
//! The session owns the store and injects it (or nothing) into every plugin it instantiates,
//! so one session's pending actions are never visible to another. Every call is checked
//! against the tool's JSON Schema first; the tool only ever sees valid arguments.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

use crate::discovery::{Candidate, CandidateSource, Discovery};
use crate::library::{load_checked, CheckedFile};
use crate::plugin_tool::instantiate;
use crate::resolve::{resolve_spec, run_resolve, ResolveArgs, RESOLVE_TOOL_NAME};
use crate::steering::{forced_tool_choice, Provider, SteeringMessage, ToolChoice};
use crate::store::{PendingActionStore, PushSubscription};
use crate::tool::{CallContext, CancelToken, Tool, ToolSpec, UpdateSink};
use crate::trust::{TrustStatus, TrustStore};
use crate::LoadError;

/// Called with each plugin's path after it was checked and read, right before its bytes are
/// loaded (tests use it to swap the file at that moment).
type AfterCheckHook = Arc<dyn Fn(&Path) + Send + Sync>;

/// The outcome of a call: a result, flagged when it reports an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The result (for errors, one text block with the message).
    pub result: AgentToolResult,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutcome {
    /// A successful outcome.
    pub fn success(result: AgentToolResult) -> Self {
        Self {
            result,
            is_error: false,
        }
    }

    /// An error outcome carrying `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            result: AgentToolResult::text(message),
            is_error: true,
        }
    }

    /// The same outcome with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.result.details = Some(details);
        self
    }

    /// The non-empty text blocks joined by `\n`.
    pub fn text(&self) -> String {
        self.result.joined_text()
    }
}

/// Why a bounded future did not finish.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Interrupted {
    Cancelled,
    TimedOut(Duration),
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interrupted::Cancelled => f.write_str("was cancelled"),
            Interrupted::TimedOut(limit) => write!(f, "timed out after {}s", limit.as_secs_f64()),
        }
    }
}

/// Run `future` until it finishes, `cancel` fires, or `timeout` passes. An abandoned future is
/// dropped, which cancels plugin code at its next `.await`.
pub(crate) async fn bounded<T>(
    future: impl Future<Output = T>,
    cancel: &CancelToken,
    timeout: Option<Duration>,
) -> Result<T, Interrupted> {
    let limit = async {
        match timeout {
            Some(limit) => {
                tokio::time::sleep(limit).await;
                Interrupted::TimedOut(limit)
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        output = future => Ok(output),
        () = cancel.cancelled() => Err(Interrupted::Cancelled),
        interrupted = limit => Err(interrupted),
    }
}

/// Options for one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// The model's tool-call id (a fresh one is made when absent).
    pub tool_call_id: Option<String>,
    /// Cancels the call.
    pub cancel: CancelToken,
    /// Abandon the call after this long (overrides the session default).
    pub timeout: Option<Duration>,
    /// Receives partial results.
    pub updates: Option<UpdateSink>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("tool_call_id", &self.tool_call_id)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

struct Registered {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

/// Builds a [`Session`]: where to find plugins, whether there is a store, built-in tools.
pub struct SessionBuilder {
    cwd: PathBuf,
    discovery: Discovery,
    with_store: bool,
    builtins: Vec<Arc<dyn Tool>>,
    default_timeout: Option<Duration>,
    after_check: Option<AfterCheckHook>,
}

impl std::fmt::Debug for SessionBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionBuilder")
            .field("cwd", &self.cwd)
            .field("discovery", &self.discovery)
            .field("with_store", &self.with_store)
            .finish_non_exhaustive()
    }
}

impl SessionBuilder {
    /// A session rooted at `cwd`, with a store, searching the default plugin directories.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        Self {
            discovery: Discovery {
                explicit: Vec::new(),
                cwd: cwd.clone(),
                home: std::env::home_dir(),
                default_dirs: true,
            },
            cwd,
            with_store: true,
            builtins: Vec::new(),
            default_timeout: None,
            after_check: None,
        }
    }

    /// Load this plugin file, or every plugin in this directory (searched before the defaults).
    #[must_use]
    pub fn plugin(mut self, path: impl Into<PathBuf>) -> Self {
        self.discovery.explicit.push(path.into());
        self
    }

    /// Search `<cwd>/.xcsh/tools/` and `~/.xcsh/agent/tools/` (default: yes).
    #[must_use]
    pub fn default_dirs(mut self, search: bool) -> Self {
        self.discovery.default_dirs = search;
        self
    }

    /// Use this home directory for `~/.xcsh/agent/tools/` and the trust file
    /// `~/.xcsh/agent/trusted-plugins.json` (default: the user's).
    #[must_use]
    pub fn home(mut self, home: Option<PathBuf>) -> Self {
        self.discovery.home = home;
        self
    }

    /// Run without a pending-action store: pushes fail with the SPEC's exact error.
    #[must_use]
    pub fn without_store(mut self) -> Self {
        self.with_store = false;
        self
    }

    /// Add a tool compiled into the host. Built-ins are registered before plugins.
    #[must_use]
    pub fn builtin(mut self, tool: Arc<dyn Tool>) -> Self {
        self.builtins.push(tool);
        self
    }

    /// Abandon calls that run longer than this unless the call sets its own timeout.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Test hook: run `hook` with each plugin's path after the file was checked and read and
    /// before its bytes are loaded.
    #[doc(hidden)]
    #[must_use]
    pub fn after_check(mut self, hook: impl Fn(&Path) + Send + Sync + 'static) -> Self {
        self.after_check = Some(Arc::new(hook));
        self
    }

    /// Discover and load plugins, instantiate their tools, and build the session. Every load
    /// problem is collected in [`Session::load_errors`]; loading goes on with the next file.
    pub fn build(self) -> Session {
        let store = self.with_store.then(|| Arc::new(PendingActionStore::new()));
        let steering = Arc::new(Mutex::new(Vec::new()));
        let reminders = store.as_ref().map(|store| {
            let queue = Arc::clone(&steering);
            store.subscribe_push(move |action, _count| {
                queue
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(SteeringMessage::resolve_reminder(&action.source_tool_name));
            })
        });
        let mut session = Session {
            cwd: self.cwd.clone(),
            store,
            tools: Vec::new(),
            by_name: HashMap::new(),
            resolve: None,
            load_errors: Vec::new(),
            steering,
            _reminders: reminders,
            default_timeout: self.default_timeout,
        };
        for tool in self.builtins {
            if let Err(error) = session.register(tool) {
                session.load_errors.push(error);
            }
        }
        let (candidates, errors) = self.discovery.candidates();
        session.load_errors.extend(errors);
        let mut loader = Loader {
            home: self.discovery.home.clone(),
            trust: None,
            after_check: self.after_check.clone(),
        };
        for candidate in candidates {
            session.load_plugin(&candidate, &mut loader);
        }
        if session.tools.iter().any(|r| r.tool.spec().deferrable) {
            let spec = resolve_spec();
            session.resolve = jsonschema::validator_for(&spec.parameters)
                .ok()
                .map(|validator| (spec, validator));
        }
        session
    }
}

/// What loading plugins for one session needs besides the candidates: the trust file (read
/// once, when the first project-local plugin comes up) and the test hook.
struct Loader {
    home: Option<PathBuf>,
    /// `None` until needed; `Some(None)` when there is no usable trust file.
    trust: Option<Option<TrustStore>>,
    after_check: Option<AfterCheckHook>,
}

impl Loader {
    /// Check and read the candidate, require trust for a project-local one, then load exactly
    /// the bytes that were checked. An untrusted file is never loaded: its constructors do not
    /// run.
    fn load(
        &mut self,
        candidate: &Candidate,
        errors: &mut Vec<LoadError>,
    ) -> Result<crate::library::PluginLibrary, LoadError> {
        let file = CheckedFile::read(&candidate.path)?;
        if candidate.source == CandidateSource::Project {
            let status = match self.trust_store(errors) {
                Some(store) => store.status_of(&file),
                None => TrustStatus::Untrusted,
            };
            if status != TrustStatus::Trusted {
                return Err(LoadError::Untrusted {
                    path: file.path().to_owned(),
                    changed: status == TrustStatus::Changed,
                });
            }
        }
        if let Some(hook) = &self.after_check {
            hook(file.path());
        }
        load_checked(&file)
    }

    /// The user's trust file, read once; a problem with it is reported once and trusts
    /// nothing.
    fn trust_store(&mut self, errors: &mut Vec<LoadError>) -> Option<&TrustStore> {
        let home = &self.home;
        self.trust
            .get_or_insert_with(|| {
                let home = home.as_deref()?;
                TrustStore::for_home(home)
                    .map_err(|error| errors.push(error))
                    .ok()
            })
            .as_ref()
    }
}

/// One agent session: its tools, its store, its steering queue.
pub struct Session {
    cwd: PathBuf,
    store: Option<Arc<PendingActionStore>>,
    tools: Vec<Registered>,
    by_name: HashMap<String, usize>,
    resolve: Option<(ToolSpec, jsonschema::Validator)>,
    load_errors: Vec<LoadError>,
    steering: Arc<Mutex<Vec<SteeringMessage>>>,
    _reminders: Option<PushSubscription>,
    default_timeout: Option<Duration>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cwd", &self.cwd)
            .field("tools", &self.by_name.keys().collect::<Vec<_>>())
            .field("store", &self.store)
            .field("load_errors", &self.load_errors)
            .finish_non_exhaustive()
    }
}

/// Tool names providers accept: `[A-Za-z0-9_-]{1,64}`.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("name must be 1 to 64 characters".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "name contains {bad:?}; use only letters, digits, '_' and '-'"
        ));
    }
    Ok(())
}

/// Check a parameter schema: an object at the root, and a valid JSON Schema.
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    let Some(object) = schema.as_object() else {
        return Err(format!("the schema must be a JSON object, found {schema}"));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema's root must have \"type\": \"object\"".to_owned());
    }
    jsonschema::meta::validate(schema).map_err(|error| error.to_string())?;
    jsonschema::validator_for(schema).map_err(|error| error.to_string())
}

impl Session {
    /// Start building a session rooted at `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> SessionBuilder {
        SessionBuilder::new(cwd)
    }

    fn origin_path(tool: &dyn Tool) -> PathBuf {
        match &tool.spec().origin {
            crate::ToolOrigin::Plugin(path) => path.clone(),
            crate::ToolOrigin::Builtin => PathBuf::from("<builtin>"),
        }
    }

    fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), LoadError> {
        let spec = tool.spec();
        let path = Self::origin_path(tool.as_ref());
        check_name(&spec.name).map_err(|cause| LoadError::InvalidTool {
            path: path.clone(),
            tool: spec.name.clone(),
            cause,
        })?;
        if spec.name == RESOLVE_TOOL_NAME || self.by_name.contains_key(&spec.name) {
            return Err(LoadError::NameConflict {
                path,
                name: spec.name.clone(),
            });
        }
        let validator =
            compile_schema(&spec.parameters).map_err(|cause| LoadError::InvalidSchema {
                path: path.clone(),
                tool: spec.name.clone(),
                cause,
            })?;
        self.by_name.insert(spec.name.clone(), self.tools.len());
        self.tools.push(Registered { tool, validator });
        Ok(())
    }

    fn load_plugin(&mut self, candidate: &Candidate, loader: &mut Loader) {
        let tools = loader
            .load(candidate, &mut self.load_errors)
            .and_then(|library| {
                instantiate(library, &candidate.path, &self.cwd, self.store.clone())
            });
        match tools {
            Ok(tools) => {
                for tool in tools {
                    if let Err(error) = self.register(Arc::new(tool)) {
                        self.load_errors.push(error);
                    }
                }
            }
            Err(error) => self.load_errors.push(error),
        }
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The store, if the session has one.
    pub fn store(&self) -> Option<&Arc<PendingActionStore>> {
        self.store.as_ref()
    }

    /// Every load problem met while building the session.
    pub fn load_errors(&self) -> &[LoadError] {
        &self.load_errors
    }

    /// Every tool the model may call, in registration order, with `resolve` last when it is
    /// registered (hidden tools included: they are still sent to the model).
    pub fn tools(&self) -> Vec<&ToolSpec> {
        let mut specs: Vec<&ToolSpec> = self.tools.iter().map(|r| r.tool.spec()).collect();
        if let Some((spec, _)) = &self.resolve {
            specs.push(spec);
        }
        specs
    }

    /// Whether `resolve` is registered (some tool is deferrable).
    pub fn has_resolve(&self) -> bool {
        self.resolve.is_some()
    }

    /// Whether anything is pending.
    pub fn has_pending(&self) -> bool {
        self.store.as_ref().is_some_and(|s| s.has_pending())
    }

    /// The tool choice for the next model request: "call `resolve`" while something is
    /// pending, `None` otherwise (the caller's own choice stands).
    pub fn tool_choice(&self, provider: Provider) -> Option<ToolChoice> {
        self.has_pending()
            .then(|| forced_tool_choice(provider, RESOLVE_TOOL_NAME))
    }

    /// Take the hidden steering messages queued since the last call (one per push).
    pub fn take_steering_messages(&self) -> Vec<SteeringMessage> {
        std::mem::take(&mut *self.steering.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Call a tool with default options.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutcome {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// Call a tool: validate `arguments` against its schema, then run it, bounded by the
    /// options' cancellation and timeout. Failures are error outcomes, never panics.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> ToolOutcome {
        let timeout = options.timeout.or(self.default_timeout);
        if name == RESOLVE_TOOL_NAME {
            if let Some((_, validator)) = &self.resolve {
                if let Err(message) = validate(name, validator, &arguments) {
                    return ToolOutcome::error(message);
                }
                return match serde_json::from_value::<ResolveArgs>(arguments) {
                    Ok(args) => {
                        run_resolve(self.store.as_deref(), args, &options.cancel, timeout).await
                    }
                    Err(error) => ToolOutcome::error(format!(
                        "Invalid arguments for tool \"{name}\": {error}"
                    )),
                };
            }
        }
        let Some(registered) = self.by_name.get(name).map(|&i| &self.tools[i]) else {
            return ToolOutcome::error(format!("Tool \"{name}\" not found"));
        };
        if let Err(message) = validate(name, &registered.validator, &arguments) {
            return ToolOutcome::error(message);
        }
        let ctx = CallContext {
            cwd: self.cwd.clone(),
            store: self.store.clone(),
            cancel: options.cancel.clone(),
            updates: options.updates.clone(),
        };
        let id = options
            .tool_call_id
            .unwrap_or_else(|| format!("call_{}", next_call_number()));
        let future = registered.tool.execute(id, arguments, ctx);
        let outcome = bounded(future, &options.cancel, timeout).await;
        if outcome.is_err() {
            options.cancel.cancel();
        }
        match outcome {
            Ok(Ok(result)) => ToolOutcome::success(result),
            Ok(Err(error)) => ToolOutcome::error(error.message()),
            Err(interrupted) => ToolOutcome::error(format!("Tool \"{name}\" {interrupted}")),
        }
    }
}

fn next_call_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Check arguments; the error names the tool and the offending path.
fn validate(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(5)
        .map(|error| {
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            format!("at {path}: {error}")
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Invalid arguments for tool \"{name}\": {}",
            problems.join("; ")
        ))
    }
}

// Sessions are shared between tasks (the MCP server runs calls concurrently).
const _: fn() = || {
    fn check<T: Send + Sync>() {}
    check::<Session>();
};
