//! [`CustomTool`]: the one trait a tool author implements, and [`ToolSet`], what a factory
//! returns.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{ROption, RStr, RString};
use async_ffi::FfiFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ffi::{
    FfiOutcome, FfiToolAnnotations, FfiToolDef, FfiToolResult, ToolContextBox, ToolFfi, ToolFfi_TO,
};
use crate::guard::{drop_quietly, guard};
use crate::{AgentToolResult, CustomToolApi, CustomToolPendingAction, Logger, PluginError};

/// A tool the model can call.
///
/// Parameters are a Rust type declared with [`tool_params!`](crate::tool_params) (which
/// derives `Deserialize` and `JsonSchema`): the host validates the model's arguments against the
/// generated schema before `execute` runs, so `execute` receives well-formed values. For a
/// hand-written schema, set `type Params = serde_json::Value` and override
/// [`CustomTool::parameters_schema`].
///
/// `execute` may use tokio (timers, `tokio::fs`, processes): it runs inside a runtime the plugin
/// library owns. A panic anywhere in it becomes an error result; the host keeps running.
///
/// ```
/// use xcsh_plugin_api::{tool_params, AgentToolResult, CustomTool, PluginError, ToolContext};
///
/// tool_params! {
///     struct Params {
///         /// Who to greet.
///         name: String,
///     }
/// }
///
/// struct Greet;
///
/// impl CustomTool for Greet {
///     type Params = Params;
///     fn name(&self) -> &str { "greet" }
///     fn label(&self) -> &str { "Greet" }
///     fn description(&self) -> &str { "Says hello" }
///     async fn execute(&self, _id: String, params: Params, _ctx: ToolContext)
///         -> Result<AgentToolResult, PluginError> {
///         Ok(AgentToolResult::text(format!("Hello, {}!", params.name)))
///     }
/// }
///
/// let schema = Greet.parameters_schema();
/// assert_eq!(schema["required"], serde_json::json!(["name"]));
/// ```
pub trait CustomTool: Send + Sync + 'static {
    /// The parameter type, deserialized from the model's JSON arguments.
    type Params: DeserializeOwned + JsonSchema + Send + 'static;

    /// Unique name the model calls the tool by (`[a-zA-Z0-9_-]`, at most 64 characters).
    fn name(&self) -> &str;
    /// Short human-readable label.
    fn label(&self) -> &str;
    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the parameters (root must be an object). Derived from
    /// [`CustomTool::Params`] unless overridden.
    fn parameters_schema(&self) -> Value {
        schema_of::<Self::Params>()
    }

    /// Hidden tools are never offered for a user to pick (they are still sent to the model).
    fn hidden(&self) -> bool {
        false
    }

    /// Deferrable tools push pending actions; their presence registers `resolve`.
    fn deferrable(&self) -> bool {
        false
    }

    /// Hint: the tool does not modify its environment (MCP `readOnlyHint`). `None` says
    /// nothing. A deferrable tool's preview only previews, so by default it is read-only.
    fn read_only(&self) -> Option<bool> {
        self.deferrable().then_some(true)
    }

    /// Hint: the tool may destroy or overwrite data (MCP `destructiveHint`; meaningful when
    /// not read-only). A deferrable tool's preview is not destructive by default: the change
    /// happens in `resolve`, which is annotated destructive.
    fn destructive(&self) -> Option<bool> {
        self.deferrable().then_some(false)
    }

    /// Hint: calling again with the same arguments has no further effect (MCP
    /// `idempotentHint`). `None` by default.
    fn idempotent(&self) -> Option<bool> {
        None
    }

    /// Hint: the tool reaches an open world of external entities, such as the web (MCP
    /// `openWorldHint`). `None` by default.
    fn open_world(&self) -> Option<bool> {
        None
    }

    /// How a call of the tool looks where a host draws calls (xcsh's runtime, while the call
    /// runs): a status line filled from the call's arguments ([`crate::view::CallView`]).
    /// `None` by default: the host shows the tool's label.
    fn call_view(&self) -> Option<crate::view::CallView> {
        None
    }

    /// Run the tool. Dropping the returned future cancels the call.
    fn execute(
        &self,
        tool_call_id: String,
        params: Self::Params,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<AgentToolResult, PluginError>> + Send;

    /// Hear a session event (start, switch, branch, tree, shutdown), with the tool's own
    /// earlier results on the current branch, to rebuild state from them as TypeScript tools
    /// do through `ctx.sessionManager`. The default does nothing. An error or a panic is
    /// logged by the host; it never reaches the model. Since `xcsh-plugin-api` 0.6.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use xcsh_plugin_api::*;
    ///
    /// /// Keeps a list in its results' details, and rebuilds it after a branch or a resume.
    /// #[derive(Default)]
    /// struct Todo { items: Mutex<Vec<String>> }
    ///
    /// impl CustomTool for Todo {
    ///     type Params = Value;
    ///     fn name(&self) -> &str { "todo" }
    ///     fn label(&self) -> &str { "Todo" }
    ///     fn description(&self) -> &str { "Adds an item" }
    ///     fn parameters_schema(&self) -> Value { json!({"type": "object"}) }
    ///     async fn execute(&self, _: String, p: Value, _: ToolContext)
    ///         -> Result<AgentToolResult, PluginError> {
    ///         let mut items = self.items.lock().unwrap();
    ///         items.push(p["item"].as_str().unwrap_or("?").to_owned());
    ///         Ok(AgentToolResult::text("added").with_details(json!({"items": *items})))
    ///     }
    ///     async fn on_session(&self, event: SessionEvent) -> Result<(), PluginError> {
    ///         let last = event.results.last().map(|r| r.details["items"].clone());
    ///         *self.items.lock().unwrap() = last
    ///             .and_then(|items| serde_json::from_value(items).ok())
    ///             .unwrap_or_default();
    ///         Ok(())
    ///     }
    /// }
    /// ```
    fn on_session(
        &self,
        event: crate::SessionEvent,
    ) -> impl Future<Output = Result<(), PluginError>> + Send {
        let _ = event;
        async { Ok(()) }
    }
}

/// The JSON Schema of `T`, as tools publish it (no `$schema` or `title` at the root). An
/// `Option<T>` field is an optional property of type `T`: no `null` in its type, no
/// `"default": null` (docs/guide/src/write.md; a `null` sent for it is taken as absent by the
/// host).
///
/// ```
/// xcsh_plugin_api::tool_params! {
///     struct Params {
///         name: String,
///         /// Keep a backup.
///         backup: Option<bool>,
///     }
/// }
/// let schema = xcsh_plugin_api::schema_of::<Params>();
/// assert_eq!(
///     schema["properties"]["backup"],
///     serde_json::json!({"type": "boolean", "description": "Keep a backup."})
/// );
/// assert_eq!(schema["required"], serde_json::json!(["name"]));
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .with_transform(crate::schema::OptionalIsAbsent)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
    }
    schema
}

/// Per-call services: partial updates, cancellation, questions to the user
/// ([`ToolContext::ui`]), programs ([`ToolContext::exec`]), the session's model, and the host's
/// [`CustomToolApi`] (`ctx.push_pending_action(..)`, `ctx.cwd()`), so a tool need not keep the
/// API itself.
///
/// `execute` gets one, and so do a pending action's `apply` and `reject` when it is built with
/// [`CustomToolPendingAction::new_in_context`] (and its `retryable`/`reject` siblings): the
/// context of the `resolve` call that runs them. A context is valid while the callback it was
/// handed to runs; used after that (kept past its call, or by another call's action), every
/// service fails with an error naming what it belonged to, and `is_cancelled()` is `true`.
pub struct ToolContext {
    pub(crate) host: ToolContextBox,
    api: CustomToolApi,
    /// What the host can do for this call, read at the first question.
    pub(crate) facts: std::sync::OnceLock<crate::host::HostFacts>,
    span: Arc<Span>,
}

/// What a [`ToolContext`] belongs to, and whether that has ended.
struct Span {
    ended: AtomicBool,
    /// `the call of tool "x"`, `the apply of "label"`.
    owner: String,
}

/// Ends a [`ToolContext`]'s [`Span`] when dropped: held by the future of the callback the
/// context was handed to, so it ends when that callback returns or is cancelled.
pub(crate) struct ContextEnd(Arc<Span>);

impl Drop for ContextEnd {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::SeqCst);
    }
}

/// The host side of a context where the host gave none (an action applied through the ABI's
/// plain `apply`, by a host that predates `apply_in`): no user, no model, never cancelled.
struct NoHost;

impl crate::ffi::ToolContextFfi for NoHost {
    fn update(&self, partial: FfiToolResult) {
        drop(partial);
    }

    fn is_cancelled(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext").finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context over `host` for the callback `owner` names, and what ends it.
    pub(crate) fn new(
        host: ToolContextBox,
        api: CustomToolApi,
        owner: String,
    ) -> (Self, ContextEnd) {
        let span = Arc::new(Span {
            ended: AtomicBool::new(false),
            owner,
        });
        let ctx = Self {
            host,
            api,
            facts: std::sync::OnceLock::new(),
            span: Arc::clone(&span),
        };
        (ctx, ContextEnd(span))
    }

    /// A context with no host behind it (see [`NoHost`]).
    pub(crate) fn without_host(api: CustomToolApi, owner: String) -> (Self, ContextEnd) {
        Self::new(
            crate::ffi::ToolContextFfi_TO::from_value(NoHost, TD_Opaque),
            api,
            owner,
        )
    }

    /// `Err` once the callback this context was handed to has ended.
    pub(crate) fn check_live(&self) -> Result<(), PluginError> {
        if self.span.ended.load(Ordering::SeqCst) {
            return Err(PluginError::new(format!(
                "this context belongs to {}, which has ended: use the context handed to the \
                 callback that is running (an action's apply and reject get their own)",
                self.span.owner
            )));
        }
        Ok(())
    }

    /// Report a partial result while the tool (or the action's apply) is still running.
    /// After its callback ended, the update is dropped and the plugin's log says so.
    pub fn update(&self, partial: AgentToolResult) {
        match self.check_live() {
            Ok(()) => self.host.update(partial.into()),
            Err(error) => self.api.logger().warn(format!("update dropped: {error}")),
        }
    }

    /// Whether the host has cancelled the call. Cancellation also drops the `execute` future at
    /// its next `.await`; check this in long synchronous loops. `true` once the callback this
    /// context was handed to has ended.
    pub fn is_cancelled(&self) -> bool {
        self.span.ended.load(Ordering::SeqCst) || self.host.is_cancelled()
    }

    /// The host's services, as the factory received them.
    pub fn api(&self) -> &CustomToolApi {
        &self.api
    }

    /// The session's working directory (see [`CustomToolApi::cwd`]).
    pub fn cwd(&self) -> &Path {
        self.api.cwd()
    }

    /// Resolve `path` against the working directory (see [`CustomToolApi::resolve_path`]).
    pub fn resolve_path(&self, path: impl AsRef<Path>) -> PathBuf {
        self.api.resolve_path(path)
    }

    /// Push a pending action (see [`CustomToolApi::push_pending_action`]).
    ///
    /// # Errors
    /// Fails with `Pending action store unavailable for custom tools in this runtime.` when the
    /// host runs without a store, and when the label is empty.
    pub fn push_pending_action(&self, action: CustomToolPendingAction) -> Result<(), PluginError> {
        self.api.push_pending_action(action)
    }

    /// A logger whose lines reach the host's log (see [`CustomToolApi::logger`]).
    pub fn logger(&self) -> Logger {
        self.api.logger()
    }
}

/// A tool [`export_plugin!`](crate::export_plugin)`(tools: [..])` and
/// [`tools!`](crate::tools) can build from the host's [`CustomToolApi`].
///
/// Every `Default` tool has it. A tool that needs setup when the plugin loads (read a
/// configuration file, fail early) implements it instead of `Default`:
///
/// ```
/// use xcsh_plugin_api::*;
///
/// struct Templates { dir: std::path::PathBuf }
///
/// impl FromApi for Templates {
///     fn from_api(api: &CustomToolApi) -> Result<Self, PluginError> {
///         Ok(Self { dir: api.resolve_path(".templates") })
///     }
/// }
/// # impl CustomTool for Templates {
/// #     type Params = Value;
/// #     fn name(&self) -> &str { "templates" }
/// #     fn label(&self) -> &str { "Templates" }
/// #     fn description(&self) -> &str { "Lists templates" }
/// #     async fn execute(&self, _: String, _: Value, _: ToolContext)
/// #         -> Result<AgentToolResult, PluginError> {
/// #         Ok(AgentToolResult::text(self.dir.display().to_string()))
/// #     }
/// # }
/// export_plugin!(tools: [Templates]);
/// # fn main() {}
/// ```
pub trait FromApi: Sized {
    /// Build the tool when the plugin loads.
    ///
    /// # Errors
    /// An error refuses the whole plugin, with this message.
    fn from_api(api: &CustomToolApi) -> Result<Self, PluginError>;
}

impl<T: Default> FromApi for T {
    fn from_api(_api: &CustomToolApi) -> Result<Self, PluginError> {
        Ok(T::default())
    }
}

/// The tools a factory returns: one tool converts into a set, several are chained with
/// [`ToolSet::with`].
///
/// ```
/// # use xcsh_plugin_api::*;
/// # struct A; struct B;
/// # impl CustomTool for A { type Params = serde_json::Value; fn name(&self) -> &str { "a" }
/// #   fn label(&self) -> &str { "A" } fn description(&self) -> &str { "a" }
/// #   async fn execute(&self, _: String, _: serde_json::Value, _: ToolContext)
/// #     -> Result<AgentToolResult, PluginError> { Ok(AgentToolResult::default()) } }
/// # impl CustomTool for B { type Params = serde_json::Value; fn name(&self) -> &str { "b" }
/// #   fn label(&self) -> &str { "B" } fn description(&self) -> &str { "b" }
/// #   async fn execute(&self, _: String, _: serde_json::Value, _: ToolContext)
/// #     -> Result<AgentToolResult, PluginError> { Ok(AgentToolResult::default()) } }
/// let one: ToolSet = A.into();
/// let two = ToolSet::new().with(A).with(B);
/// assert_eq!((one.len(), two.len()), (1, 2));
/// ```
#[derive(Default)]
pub struct ToolSet {
    tools: Vec<Box<dyn IntoToolDef>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("len", &self.tools.len())
            .finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set with one more tool.
    #[must_use]
    pub fn with(mut self, tool: impl CustomTool) -> Self {
        self.tools.push(Box::new(tool));
        self
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub(crate) fn into_defs(self, api: &CustomToolApi) -> Vec<FfiToolDef> {
        self.tools
            .into_iter()
            .map(|tool| tool.into_def(api.clone()))
            .collect()
    }
}

impl<T: CustomTool> From<T> for ToolSet {
    fn from(tool: T) -> Self {
        ToolSet::new().with(tool)
    }
}

/// Type erasure from a typed [`CustomTool`] to its FFI definition.
trait IntoToolDef {
    fn into_def(self: Box<Self>, api: CustomToolApi) -> FfiToolDef;
}

impl<T: CustomTool> IntoToolDef for T {
    fn into_def(self: Box<Self>, api: CustomToolApi) -> FfiToolDef {
        let definition = Definition {
            name: self.name().to_owned(),
            label: self.label().to_owned(),
            description: self.description().to_owned(),
            parameters_json: self.parameters_schema().to_string(),
            hidden: self.hidden(),
            deferrable: self.deferrable(),
            annotations: FfiToolAnnotations {
                read_only: self.read_only().into(),
                destructive: self.destructive().into(),
                idempotent: self.idempotent().into(),
                open_world: self.open_world().into(),
            },
            call_view_json: self
                .call_view()
                .and_then(|view| serde_json::to_string(&view).ok()),
        };
        ToolFfi_TO::from_value(
            ToolAdapter {
                definition,
                tool: Some(Arc::<T>::from(self)),
                api,
            },
            TD_Opaque,
        )
    }
}

/// A tool's definition, read once from the author's tool when the factory returns.
struct Definition {
    name: String,
    label: String,
    description: String,
    parameters_json: String,
    hidden: bool,
    deferrable: bool,
    annotations: FfiToolAnnotations,
    call_view_json: Option<String>,
}

/// The plugin-side vtable of a tool: answers its definition, parses arguments and runs
/// `execute` behind the guard.
struct ToolAdapter<T> {
    definition: Definition,
    /// `None` only while being dropped.
    tool: Option<Arc<T>>,
    /// The host's services, handed to each call's [`ToolContext`].
    api: CustomToolApi,
}

impl<T> Drop for ToolAdapter<T> {
    fn drop(&mut self) {
        // The host drops tools when its session ends; a panicking `Drop` of the author's tool
        // must not unwind into it.
        if let Some(tool) = self.tool.take() {
            drop_quietly(tool);
        }
    }
}

impl<T: CustomTool> ToolFfi for ToolAdapter<T> {
    fn name(&self) -> RStr<'_> {
        self.definition.name.as_str().into()
    }

    fn label(&self) -> RStr<'_> {
        self.definition.label.as_str().into()
    }

    fn description(&self) -> RStr<'_> {
        self.definition.description.as_str().into()
    }

    fn parameters_json(&self) -> RStr<'_> {
        self.definition.parameters_json.as_str().into()
    }

    fn hidden(&self) -> bool {
        self.definition.hidden
    }

    fn deferrable(&self) -> bool {
        self.definition.deferrable
    }

    fn annotations(&self) -> ROption<FfiToolAnnotations> {
        ROption::RSome(self.definition.annotations)
    }

    fn call_view_json(&self) -> ROption<RString> {
        match &self.definition.call_view_json {
            Some(json) => ROption::RSome(json.as_str().into()),
            None => ROption::RNone,
        }
    }

    fn on_session(&self, event_json: RString) -> FfiFuture<()> {
        let Some(tool) = self.tool.clone() else {
            return async_ffi::FutureExt::into_ffi(async {});
        };
        let logger = self.api.logger();
        let heard = guard(
            async move {
                let event: crate::SessionEvent = serde_json::from_str(event_json.as_str())
                    .map_err(|e| PluginError::new(format!("unreadable session event: {e}")))?;
                tool.on_session(event).await?;
                Ok(AgentToolResult::default())
            },
            FfiToolResult::from,
        );
        async_ffi::FutureExt::into_ffi(async move {
            if let abi_stable::std_types::RResult::RErr(message) = heard.await {
                logger.error(format!("on_session failed: {message}"));
            }
        })
    }

    fn execute(
        &self,
        tool_call_id: RString,
        params_json: RString,
        ctx: ToolContextBox,
    ) -> FfiFuture<FfiOutcome> {
        let api = self.api.clone();
        let Some(tool) = self.tool.clone() else {
            return guard(
                async { Err::<AgentToolResult, _>(PluginError::new("tool was dropped")) },
                FfiToolResult::from,
            );
        };
        guard(
            async move {
                let params: T::Params =
                    serde_json::from_str(params_json.as_str()).map_err(|e| {
                        PluginError::new(format!(
                            "invalid arguments for tool \"{}\": {e}",
                            tool.name()
                        ))
                    })?;
                let owner = format!("the call of tool \"{}\"", tool.name());
                let (ctx, _end) = ToolContext::new(ctx, api, owner);
                tool.execute(tool_call_id.into_string(), params, ctx).await
            },
            FfiToolResult::from,
        )
    }
}
