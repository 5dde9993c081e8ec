//! Test a plugin's tools in-process, without a loader (cargo feature `testing`).
//!
//! [`PluginTest`] plays the host: it implements the host side of the ABI
//! ([`HostApiFfi`](crate::ffi::HostApiFfi), [`ToolContextFfi`](crate::ffi::ToolContextFfi)),
//! builds the tools with the very code [`export_plugin!`](crate::export_plugin) exports (the
//! factory behind the panic guard, each tool converted to its FFI object), validates
//! arguments against each tool's published schema as `xcsh-loader` does, and calls `execute`,
//! `apply` and `reject` through the FFI objects. So what passes here behaves the same when the
//! `.so` is loaded: arguments the host would refuse are refused, panics become errors, results
//! and details cross the same conversions, and tokio works the same way.
//!
//! Shaped after `nu-plugin-test-support`: build the test from the factory, call tools by name
//! with JSON arguments, inspect the outcome.
//!
//! ```
//! use xcsh_plugin_api::testing::PluginTest;
//! use xcsh_plugin_api::*;
//!
//! tool_params! { struct Params { files: Vec<String> } }
//!
//! #[derive(Default)]
//! struct Preview;
//!
//! impl CustomTool for Preview {
//!     type Params = Params;
//!     fn name(&self) -> &str { "preview" }
//!     fn label(&self) -> &str { "Preview" }
//!     fn description(&self) -> &str { "Previews, then applies on resolve" }
//!     fn deferrable(&self) -> bool { true }
//!     async fn execute(&self, _id: String, p: Params, ctx: ToolContext)
//!         -> Result<AgentToolResult, PluginError> {
//!         ctx.update(AgentToolResult::text("planning"));
//!         let n = p.files.len();
//!         ctx.push_pending_action(CustomToolPendingAction::new(format!("Preview: {n} files"),
//!             |reason| async move { Ok(AgentToolResult::text(format!("Applied: {reason}"))) }))?;
//!         Ok(AgentToolResult::text(format!("{n} files")))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let test = PluginTest::new(tools![Preview]);
//! let outcome = test.call("preview", json!({"files": ["a"]})).await?;
//! assert_eq!(outcome.text(), "1 files");
//! assert_eq!(outcome.updates()[0].joined_text(), "planning");
//! assert_eq!(test.pending()[0].label, "Preview: 1 files");
//! let applied = test.apply_newest("looks right").await?;
//! assert_eq!(applied.joined_text(), "Applied: looks right");
//!
//! // Arguments the host would refuse are refused here too.
//! let refused = test.call("preview", json!({"files": "a"})).await.unwrap_err();
//! assert!(matches!(refused, xcsh_plugin_api::testing::TestError::InvalidArguments(_)));
//! # Ok::<(), xcsh_plugin_api::testing::TestError>(())
//! # }).unwrap();
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use serde_json::Value;

mod answers;

pub use answers::Answer;

use crate::export::create_tools_with;
use crate::ffi::{
    details_from_json, FfiLogLevel, FfiPendingAction, FfiToolDef, FfiToolResult, HostApiFfi,
    HostApiFfi_TO, ToolContextFfi, ToolContextFfi_TO,
};
use crate::sync::lock;
use crate::{AgentToolResult, CustomToolApi, PluginError, ToolSet};

pub use crate::STORE_UNAVAILABLE;

/// Why a test step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestError {
    /// The factory failed or panicked: a host would refuse the plugin with this message.
    #[error("the factory failed: {0}")]
    Factory(String),
    /// A tool's definition is one a host would refuse (name, schema).
    #[error("tool \"{tool}\" would be refused by the host: {problem}")]
    BadTool {
        /// The tool's name.
        tool: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No tool of that name.
    #[error("no tool named \"{0}\" (the factory returned: {1})")]
    UnknownTool(String, String),
    /// The arguments do not match the tool's schema; the tool was not called. The message is
    /// the host's.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool, `apply` or `reject` returned an error (or panicked).
    #[error("{0}")]
    Tool(String),
    /// Nothing is pending (or no action at that index).
    #[error("{}", crate::NO_PENDING_ACTION)]
    NothingPending,
}

/// A log line a plugin wrote through its [`Logger`](crate::Logger).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// `debug`, `info`, `warn` or `error`.
    pub level: &'static str,
    /// The message.
    pub message: String,
}

/// A pending action as the harness's store holds it (read with [`PluginTest::pending`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingInfo {
    /// Its label.
    pub label: String,
    /// The tool that produced it.
    pub source_tool_name: String,
    /// Its details, if any.
    pub details: Option<Value>,
    /// Whether it has a `reject` callback.
    pub has_reject: bool,
}

/// The outcome of a successful [`PluginTest::call`]: the result and the partial updates the
/// tool sent with `ctx.update` while it ran.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    result: AgentToolResult,
    updates: Vec<AgentToolResult>,
}

impl CallOutcome {
    /// The result, as the host received it.
    pub fn result(&self) -> &AgentToolResult {
        &self.result
    }

    /// The result's non-empty text blocks joined by `\n`.
    pub fn text(&self) -> String {
        self.result.joined_text()
    }

    /// The result's details.
    pub fn details(&self) -> Option<&Value> {
        self.result.details.as_ref()
    }

    /// The partial updates, in the order they were sent.
    pub fn updates(&self) -> &[AgentToolResult] {
        &self.updates
    }
}

type Factory = Box<dyn FnOnce(&CustomToolApi) -> Result<ToolSet, PluginError>>;

/// A tool and the validator of its arguments.
struct LoadedTool {
    def: FfiToolDef,
    validator: jsonschema::Validator,
}

/// An in-process host for one plugin: one session with its own store and working directory.
///
/// Build it with the plugin's factory — [`tools!`](crate::tools)`[..]` for the tools an
/// `export_plugin!(tools: [..])` exports, or the factory function an `export_plugin!(factory)`
/// exports — then call tools and resolve what they push. The factory runs on first use, so
/// [`PluginTest::cwd`] and [`PluginTest::without_store`] apply to it.
pub struct PluginTest {
    factory: Mutex<Option<Factory>>,
    tools: OnceLock<Result<Vec<LoadedTool>, TestError>>,
    host: Arc<HostState>,
    /// The temporary working directory this test created, removed on drop.
    owned_dir: Option<PathBuf>,
}

impl std::fmt::Debug for PluginTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginTest")
            .field("cwd", &self.host.cwd)
            .field("store", &self.host.has_store)
            .finish_non_exhaustive()
    }
}

impl Drop for PluginTest {
    fn drop(&mut self) {
        if let Some(dir) = self.owned_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The host's state: what `HostApiFfi` sees.
struct HostState {
    cwd: PathBuf,
    has_store: bool,
    store: Mutex<Vec<FfiPendingAction>>,
    logs: Mutex<Vec<LogLine>>,
    /// The user and model the test scripted.
    services: answers::ScriptedHost,
}

/// The host side of `CustomToolApi`, as the loader implements it.
struct TestHostApi(Arc<HostState>);

impl HostApiFfi for TestHostApi {
    fn cwd(&self) -> RString {
        self.0.cwd.to_string_lossy().as_ref().into()
    }

    fn push_pending_action(&self, action: FfiPendingAction) -> RResult<(), RString> {
        if !self.0.has_store {
            return RResult::RErr(STORE_UNAVAILABLE.into());
        }
        if action.label().as_str().trim().is_empty() {
            return RResult::RErr("pending action label must not be empty".into());
        }
        lock(&self.0.store).push(action);
        RResult::ROk(())
    }

    fn log(&self, level: FfiLogLevel, message: RString) {
        let level = match level {
            FfiLogLevel::DEBUG => "debug",
            FfiLogLevel::INFO => "info",
            FfiLogLevel::WARN => "warn",
            _ => "error",
        };
        lock(&self.0.logs).push(LogLine {
            level,
            message: message.into_string(),
        });
    }
}

/// The host side of `ToolContext` for one call.
struct TestToolContext {
    updates: Arc<Mutex<Vec<AgentToolResult>>>,
    cancelled: Arc<AtomicBool>,
    host: Arc<HostState>,
}

impl ToolContextFfi for TestToolContext {
    fn update(&self, partial: FfiToolResult) {
        lock(&self.updates).push(partial.into());
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn host_facts(&self) -> abi_stable::std_types::ROption<RString> {
        let facts = serde_json::to_string(&self.host.services.facts()).unwrap_or_default();
        abi_stable::std_types::ROption::RSome(facts.into())
    }

    fn host_request(
        &self,
        request_json: RString,
    ) -> async_ffi::FfiFuture<RResult<RString, RString>> {
        let answer = self
            .host
            .services
            .answer(request_json.as_str())
            .and_then(|reply| serde_json::to_string(&reply).map_err(|e| e.to_string()));
        async_ffi::FutureExt::into_ffi(async move {
            match answer {
                Ok(reply) => RResult::ROk(reply.into()),
                Err(message) => RResult::RErr(message.into()),
            }
        })
    }
}

/// A fresh, empty directory under the system's temporary directory.
fn temporary_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir();
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("xcsh-plugin-test-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            // Without a temporary directory the test still runs; a tool that writes there
            // reports the error itself.
            Err(_) => return dir,
        }
    }
}

/// Compile a tool's parameter schema as the host does ([`crate::checks::compile_schema`]),
/// from the JSON text the tool gives.
fn compile_schema(schema_json: &str) -> Result<jsonschema::Validator, String> {
    let schema: Value = serde_json::from_str(schema_json)
        .map_err(|e| format!("the parameter schema is not JSON: {e}"))?;
    crate::checks::compile_schema(&schema)
}

impl PluginTest {
    /// A test of the plugin whose factory is `factory`: [`tools!`](crate::tools)`[A, B]`, or
    /// a factory function `fn(&CustomToolApi) -> Result<T, PluginError>` (`T` one tool or a
    /// [`ToolSet`]). It gets a fresh temporary working directory (removed when the test is
    /// dropped) and a store.
    pub fn new<F, T>(factory: F) -> Self
    where
        F: FnOnce(&CustomToolApi) -> Result<T, PluginError> + 'static,
        T: Into<ToolSet>,
    {
        let dir = temporary_dir();
        Self {
            factory: Mutex::new(Some(Box::new(move |api| {
                crate::export::into_tool_set(factory(api))
            }))),
            tools: OnceLock::new(),
            host: Arc::new(HostState {
                cwd: dir.clone(),
                has_store: true,
                store: Mutex::new(Vec::new()),
                logs: Mutex::new(Vec::new()),
                services: answers::ScriptedHost::default(),
            }),
            owned_dir: Some(dir),
        }
    }

    fn with_host(mut self, change: impl FnOnce(&mut HostState)) -> Self {
        if let Some(host) = Arc::get_mut(&mut self.host) {
            change(host);
        }
        self
    }

    /// Use `dir` as the session's working directory instead of a temporary one (it is not
    /// removed). Call before the first [`PluginTest::call`].
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let Some(owned) = self.owned_dir.take() {
            let _ = std::fs::remove_dir_all(owned);
        }
        let dir = dir.into();
        self.with_host(|host| host.cwd = dir)
    }

    /// Run without a store, like a host that has none: `push_pending_action` fails with
    /// [`STORE_UNAVAILABLE`]. Call before the first [`PluginTest::call`].
    #[must_use]
    pub fn without_store(self) -> Self {
        self.with_host(|host| host.has_store = false)
    }

    /// Play a user who answers the tools' questions with `answers`, in order: `has_ui()` is
    /// then true, and each question takes the next answer (an answer that does not fit its
    /// question fails the call as a host would fail it). Without it no one can answer, as in
    /// every host without a user interface. Call before the first [`PluginTest::call`].
    ///
    /// ```
    /// use xcsh_plugin_api::testing::{Answer, PluginTest};
    /// use xcsh_plugin_api::*;
    ///
    /// #[derive(Default)]
    /// struct Clean;
    /// impl CustomTool for Clean {
    ///     type Params = Value;
    ///     fn name(&self) -> &str { "clean" }
    ///     fn label(&self) -> &str { "Clean" }
    ///     fn description(&self) -> &str { "Deletes the build directory" }
    ///     fn parameters_schema(&self) -> Value { json!({"type": "object"}) }
    ///     async fn execute(&self, _: String, _: Value, ctx: ToolContext)
    ///         -> Result<AgentToolResult, PluginError> {
    ///         let yes = ctx.ui().confirm("Clean", "Delete target/?").await?;
    ///         Ok(AgentToolResult::text(if yes { "deleted" } else { "kept" }))
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let said_no = PluginTest::new(tools![Clean]).with_ui([Answer::Confirm(false)]);
    /// assert_eq!(said_no.call("clean", json!({})).await?.text(), "kept");
    /// assert_eq!(said_no.asked().len(), 1);
    /// // No one to ask: `confirm` is false without asking.
    /// let headless = PluginTest::new(tools![Clean]);
    /// assert_eq!(headless.call("clean", json!({})).await?.text(), "kept");
    /// assert!(headless.asked().is_empty());
    /// # Ok::<(), xcsh_plugin_api::testing::TestError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn with_ui(self, answers: impl IntoIterator<Item = Answer>) -> Self {
        let answers: Vec<Answer> = answers.into_iter().collect();
        self.with_host(|host| {
            host.services.has_ui = true;
            host.services.script(answers);
        })
    }

    /// Give the session a model: `ctx.model()` answers it, and each `ctx.complete(..)` takes
    /// the next [`Answer::Completion`] (scripted here or with [`PluginTest::with_ui`]).
    /// Without it `complete` fails with [`NO_MODEL`](crate::NO_MODEL).
    #[must_use]
    pub fn with_model(
        self,
        model: crate::ModelInfo,
        completions: impl IntoIterator<Item = String>,
    ) -> Self {
        let answers: Vec<Answer> = completions.into_iter().map(Answer::Completion).collect();
        self.with_host(|host| {
            host.services.model = Some(model);
            host.services.script(answers);
        })
    }

    /// Stand in for the programs the tools run with [`ToolContext::exec`](crate::ToolContext::exec):
    /// `script` gets each one (program, arguments, resolved working directory, input,
    /// variables) and says what it printed and how it ended, or the error `exec` fails with
    /// (`command not found: git`). So "git failed" is tested without git. Every exec is also
    /// in [`PluginTest::asked`]. Without it, programs really run.
    ///
    /// ```
    /// use xcsh_plugin_api::testing::PluginTest;
    /// use xcsh_plugin_api::{json, tools, AgentToolResult, CustomTool, ExecOptions, ExecOutput,
    ///     PluginError, ToolContext, Value};
    ///
    /// #[derive(Default)]
    /// struct Branch;
    /// impl CustomTool for Branch {
    ///     type Params = Value;
    ///     fn name(&self) -> &str { "branch" }
    ///     fn label(&self) -> &str { "Branch" }
    ///     fn description(&self) -> &str { "The current git branch" }
    ///     fn parameters_schema(&self) -> Value { json!({"type": "object"}) }
    ///     async fn execute(&self, _: String, _: Value, ctx: ToolContext)
    ///         -> Result<AgentToolResult, PluginError> {
    ///         let git = ctx.exec("git", ["branch", "--show-current"], ExecOptions::new()).await?;
    ///         if !git.success() {
    ///             return Err(PluginError::new(format!("git failed: {}", git.stderr_text())));
    ///         }
    ///         Ok(AgentToolResult::text(git.stdout_text().trim()))
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let not_a_repository = PluginTest::new(tools![Branch]).with_programs(|_| {
    ///     Ok(ExecOutput {
    ///         stderr: b"fatal: not a git repository".to_vec(),
    ///         code: Some(128),
    ///         ..ExecOutput::default()
    ///     })
    /// });
    /// let error = not_a_repository.call("branch", json!({})).await.unwrap_err();
    /// assert!(error.to_string().contains("git failed: fatal: not a git repository"));
    /// # });
    /// ```
    #[must_use]
    pub fn with_programs(
        self,
        script: impl Fn(&crate::ExecRequest) -> Result<crate::ExecOutput, String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.with_host(|host| host.services.programs = Some(Box::new(script)))
    }

    /// Every request the tools sent to the host so far (questions, notifications, statuses,
    /// completions), oldest first.
    pub fn asked(&self) -> Vec<crate::host::HostRequest> {
        self.host.services.asked()
    }

    /// Send a session event to every tool's `on_session`, as a host does (a failure is
    /// logged: see [`PluginTest::logs`]).
    ///
    /// # Errors
    /// As [`PluginTest::tool_names`].
    pub async fn session_event(&self, event: crate::SessionEvent) -> Result<(), TestError> {
        let json = serde_json::to_string(&event).map_err(|e| TestError::Tool(e.to_string()))?;
        for tool in self.tools()? {
            tool.def.on_session(json.as_str().into()).await;
        }
        Ok(())
    }

    /// The session's working directory.
    pub fn working_dir(&self) -> &Path {
        &self.host.cwd
    }

    /// Run the factory (once) and check the tools as a host would.
    fn tools(&self) -> Result<&[LoadedTool], TestError> {
        let loaded = self.tools.get_or_init(|| {
            let Some(factory) = lock(&self.factory).take() else {
                return Err(TestError::Factory("the factory already ran".into()));
            };
            let host = HostApiFfi_TO::from_value(TestHostApi(Arc::clone(&self.host)), TD_Opaque);
            let defs = create_tools_with(host, factory, true)
                .into_result()
                .map_err(|message| TestError::Factory(message.into_string()))?;
            let mut tools = Vec::with_capacity(defs.len());
            let mut names = std::collections::HashSet::new();
            for def in defs {
                let name = def.name().as_str().to_owned();
                let refuse = |problem: String| TestError::BadTool {
                    tool: name.clone(),
                    problem,
                };
                crate::checks::check_tool_name(&name).map_err(refuse)?;
                if !names.insert(name.clone()) {
                    return Err(refuse("two tools have this name".into()));
                }
                let validator = compile_schema(def.parameters_json().as_str()).map_err(refuse)?;
                tools.push(LoadedTool { def, validator });
            }
            Ok(tools)
        });
        loaded.as_deref().map_err(Clone::clone)
    }

    /// The names of the plugin's tools, in the factory's order.
    ///
    /// # Errors
    /// [`TestError::Factory`] or [`TestError::BadTool`] when a host would refuse the plugin.
    pub fn tool_names(&self) -> Result<Vec<String>, TestError> {
        Ok(self
            .tools()?
            .iter()
            .map(|tool| tool.def.name().as_str().to_owned())
            .collect())
    }

    /// The published JSON Schema of a tool's parameters.
    ///
    /// # Errors
    /// As [`PluginTest::tool_names`], and [`TestError::UnknownTool`].
    pub fn schema(&self, tool: &str) -> Result<Value, TestError> {
        let tool = self.find(tool)?;
        serde_json::from_str(tool.def.parameters_json().as_str())
            .map_err(|e| TestError::Tool(e.to_string()))
    }

    fn find(&self, name: &str) -> Result<&LoadedTool, TestError> {
        let tools = self.tools()?;
        tools
            .iter()
            .find(|tool| tool.def.name().as_str() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = tools.iter().map(|t| t.def.name().as_str()).collect();
                TestError::UnknownTool(name.to_owned(), names.join(", "))
            })
    }

    /// Call a tool with JSON arguments, as the host would: checked against its schema first
    /// ([`crate::checks::check_arguments`]: a `null` for an optional property is taken as
    /// absent), then `execute` through the tool's FFI object.
    ///
    /// # Errors
    /// [`TestError::InvalidArguments`] (the tool did not run), [`TestError::Tool`] when
    /// `execute` fails or panics, and the errors of [`PluginTest::tool_names`] and
    /// [`PluginTest::schema`].
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<CallOutcome, TestError> {
        self.call_with(tool, arguments, Arc::new(AtomicBool::new(false)))
            .await
    }

    /// Call a tool as [`PluginTest::call`] does, and cancel the call after `after` (the
    /// tool's `ctx.is_cancelled()` turns true; its programs end): what a host does when the
    /// user interrupts.
    ///
    /// # Errors
    /// As [`PluginTest::call`].
    pub async fn call_cancelled_after(
        &self,
        tool: &str,
        arguments: Value,
        after: std::time::Duration,
    ) -> Result<CallOutcome, TestError> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        std::thread::spawn(move || {
            std::thread::sleep(after);
            flag.store(true, Ordering::SeqCst);
        });
        self.call_with(tool, arguments, cancelled).await
    }

    async fn call_with(
        &self,
        tool: &str,
        mut arguments: Value,
        cancelled: Arc<AtomicBool>,
    ) -> Result<CallOutcome, TestError> {
        let loaded = self.find(tool)?;
        crate::checks::check_arguments(tool, &loaded.validator, &mut arguments)
            .map_err(TestError::InvalidArguments)?;
        let updates = Arc::new(Mutex::new(Vec::new()));
        let ctx = ToolContextFfi_TO::from_value(
            TestToolContext {
                updates: Arc::clone(&updates),
                cancelled,
                host: Arc::clone(&self.host),
            },
            TD_Opaque,
        );
        let call_id = format!("test-call-{}", next_call_number());
        let outcome = loaded
            .def
            .execute(call_id.into(), arguments.to_string().into(), ctx)
            .await;
        let updates = std::mem::take(&mut *lock(&updates));
        match outcome {
            RResult::ROk(result) => Ok(CallOutcome {
                result: result.into(),
                updates,
            }),
            RResult::RErr(message) => Err(TestError::Tool(message.into_string())),
        }
    }

    /// The pending actions, oldest first (the newest is last, and resolved first).
    pub fn pending(&self) -> Vec<PendingInfo> {
        lock(&self.host.store)
            .iter()
            .map(|action| PendingInfo {
                label: action.label().as_str().to_owned(),
                source_tool_name: action.source_tool_name().as_str().to_owned(),
                details: details_from_json(action.details_json()),
                has_reject: action.has_reject(),
            })
            .collect()
    }

    /// Make the next commit of [`FileChanges`](crate::files::FileChanges) in this test's
    /// working directory stop dead after step `step` (counted from 1), leaving the disk as a
    /// process killed there would: the `apply` that commits fails with a "simulated crash"
    /// error. Then [`PluginTest::recover`] runs what the next session would. A commit with
    /// fewer steps completes normally, so a loop over `1..` ends when an apply succeeds:
    ///
    /// ```
    /// # use xcsh_plugin_api::{*, testing::PluginTest};
    /// # tool_params! { struct Params {} }
    /// # #[derive(Default)] struct Rename;
    /// # impl CustomTool for Rename {
    /// #     type Params = Params;
    /// #     fn name(&self) -> &str { "rename" }
    /// #     fn label(&self) -> &str { "Rename" }
    /// #     fn description(&self) -> &str { "Renames a and b" }
    /// #     async fn execute(&self, _id: String, _p: Params, ctx: ToolContext)
    /// #         -> Result<AgentToolResult, PluginError> {
    /// #         let cwd = ctx.cwd().to_owned();
    /// #         ctx.push_pending_action(CustomToolPendingAction::new("Rename", move |_| async move {
    /// #             let mut changes = files::FileChanges::new(&cwd);
    /// #             changes.rename("a", "a2").rename("b", "b2");
    /// #             changes.commit().await?;
    /// #             Ok(AgentToolResult::text("renamed"))
    /// #         }))?;
    /// #         Ok(AgentToolResult::text("planned"))
    /// #     }
    /// # }
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// for step in 1.. {
    ///     let test = PluginTest::new(tools![Rename]);
    ///     let dir = test.working_dir();
    ///     std::fs::write(dir.join("a"), "a").unwrap();
    ///     std::fs::write(dir.join("b"), "b").unwrap();
    ///     test.call("rename", json!({})).await.unwrap();
    ///     test.crash_commit_at(step);
    ///     if test.apply_newest("ok").await.is_ok() {
    ///         break; // every step has been tried
    ///     }
    ///     test.recover().unwrap();
    ///     let all_old = dir.join("a").exists() && dir.join("b").exists();
    ///     let all_new = dir.join("a2").exists() && dir.join("b2").exists();
    ///     assert!(all_old != all_new, "after a crash at step {step}");
    ///     assert!(!dir.join(".xcsh").exists(), "nothing left behind");
    /// }
    /// # });
    /// ```
    pub fn crash_commit_at(&self, step: u32) {
        crate::files::simulate_crash_at(self.working_dir(), step);
    }

    /// Finish or undo the commits a crash left in the working directory, as the next session
    /// would before running any tool (see [`crate::files::recover`]).
    ///
    /// # Errors
    /// When the journal directory cannot be read.
    pub fn recover(&self) -> std::io::Result<Vec<crate::files::Recovered>> {
        crate::files::recover(self.working_dir())
    }

    /// The lines the plugin logged, in order.
    pub fn logs(&self) -> Vec<LogLine> {
        lock(&self.host.logs).clone()
    }

    fn take(&self, index: Option<usize>) -> Result<FfiPendingAction, TestError> {
        let mut store = lock(&self.host.store);
        let index = match index {
            Some(index) if index < store.len() => index,
            None if !store.is_empty() => store.len() - 1,
            _ => return Err(TestError::NothingPending),
        };
        Ok(store.remove(index))
    }

    /// Remove the newest pending action and run its `apply(reason)`, as `resolve` does.
    ///
    /// # Errors
    /// [`TestError::NothingPending`], or [`TestError::Tool`] when `apply` fails or panics (the
    /// action is consumed either way, as in the host).
    pub async fn apply_newest(&self, reason: &str) -> Result<AgentToolResult, TestError> {
        let action = self.take(None)?;
        self.run_apply(action, reason).await
    }

    /// Remove the pending action at `index` ([`PluginTest::pending`]'s order) and apply it.
    ///
    /// # Errors
    /// As [`PluginTest::apply_newest`].
    pub async fn apply(&self, index: usize, reason: &str) -> Result<AgentToolResult, TestError> {
        let action = self.take(Some(index))?;
        self.run_apply(action, reason).await
    }

    /// Remove the newest pending action and run its `reject(reason)`, as `resolve` discards:
    /// `None` when it has no `reject` or its `reject` returns nothing (the host then answers
    /// `Discarded: {label}. Reason: {reason}`).
    ///
    /// # Errors
    /// [`TestError::NothingPending`], or [`TestError::Tool`] when `reject` fails or panics.
    pub async fn reject_newest(&self, reason: &str) -> Result<Option<AgentToolResult>, TestError> {
        let action = self.take(None)?;
        self.run_reject(action, reason).await
    }

    /// Remove the pending action at `index` ([`PluginTest::pending`]'s order) and reject it.
    ///
    /// # Errors
    /// As [`PluginTest::reject_newest`].
    pub async fn reject(
        &self,
        index: usize,
        reason: &str,
    ) -> Result<Option<AgentToolResult>, TestError> {
        let action = self.take(Some(index))?;
        self.run_reject(action, reason).await
    }

    /// The host side of a context for one callback: its updates go nowhere a test reads
    /// (an apply's progress is not what `apply` returns), its questions and programs are
    /// answered by the test's script, as `execute`'s are.
    fn action_context(&self) -> crate::ffi::ToolContextBox {
        ToolContextFfi_TO::from_value(
            TestToolContext {
                updates: Arc::new(Mutex::new(Vec::new())),
                cancelled: Arc::new(AtomicBool::new(false)),
                host: Arc::clone(&self.host),
            },
            TD_Opaque,
        )
    }

    async fn run_apply(
        &self,
        action: FfiPendingAction,
        reason: &str,
    ) -> Result<AgentToolResult, TestError> {
        match action.apply_in(reason.into(), self.action_context()).await {
            RResult::ROk(result) => Ok(result.into()),
            RResult::RErr(message) => Err(TestError::Tool(message.into_string())),
        }
    }

    async fn run_reject(
        &self,
        action: FfiPendingAction,
        reason: &str,
    ) -> Result<Option<AgentToolResult>, TestError> {
        if !action.has_reject() {
            return Ok(None);
        }
        match action.reject_in(reason.into(), self.action_context()).await {
            RResult::ROk(result) => Ok(result.into_option().map(Into::into)),
            RResult::RErr(message) => Err(TestError::Tool(message.into_string())),
        }
    }
}

fn next_call_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
