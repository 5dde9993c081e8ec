//! The host side of the plugin ABI: the services a plugin calls ([`HostApi`]), and the
//! adapters that turn a plugin's tools and pending actions into the session's own types.
//! [`builtin_plugin_tools`] does the same for a plugin compiled into the host (the built-in
//! `ast_edit`): no `dlopen`, but the same root module, host object and tool definitions.
//!
//! Code here runs inside abi_stable vtable calls, where a panic would abort the process, so it
//! only does panic-free work: string conversion, JSON parsing with fallbacks, and a store push.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use xcsh_plugin_api::view::CallView;

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use serde_json::Value;
use xcsh_plugin_api::ffi::{
    details_from_json, FfiLogLevel, FfiPendingAction, FfiToolDef, FfiToolResult, HostApiFfi,
    HostApiFfi_TO, ToolContextBox, ToolContextFfi, ToolContextFfi_TO,
};
use xcsh_plugin_api::AgentToolResult;

use crate::loading::{LoadError, LoadErrorKind, PluginLibrary};
use crate::messages::STORE_UNAVAILABLE;
use crate::plugin_log::{plugin_log, PluginLogSink};
use crate::store::{BoxFuture, PendingAction, PendingActionSink};
use crate::tool::{
    ActionContext, CallContext, PluginError, Tool, ToolHints, ToolOrigin, ToolSpec, UpdateSink,
};

/// Where a plugin's pushed pending actions go: the session's sink in-process, or (in a
/// plugin child) a registry that tells the host and waits for its answer. `None` in a runtime
/// without a store. An `Err` is the message the plugin's push fails with.
pub type PushSink = Arc<dyn Fn(PendingAction) -> Result<(), PluginError> + Send + Sync>;

/// Where a plugin's [`HostApiFfi::keep_alive`] requests go: in a plugin child, to the host,
/// which then does not stop the idle process. `None` in-process, where nothing is stopped.
pub type KeepAliveSink = Arc<dyn Fn(bool) + Send + Sync>;

/// The push sink of an in-process plugin: the session's store, or its embedder's.
pub(crate) fn store_sink(store: Option<Arc<dyn PendingActionSink>>) -> Option<PushSink> {
    store.map(|store| Arc::new(move |action| store.push_action(action)) as PushSink)
}

mod builtin;
mod deferred;
mod offload;

pub(crate) use deferred::{plugin_tools, InProcessDefinitions, Services};

#[cfg(feature = "ast-edit")]
pub use builtin::ast_edit_tool;
pub use builtin::{builtin_plugin_tools, BuiltinPluginTool};

/// What the host offers one plugin in one session.
struct HostApi {
    cwd: String,
    sink: Option<PushSink>,
    /// Where its log lines go (a session's plugin log, or the host in a plugin child);
    /// `None`: this process's `tracing`.
    logger: Option<PluginLogSink>,
    plugin: PathBuf,
    /// Where its keep-alive requests go (`None`: nothing to keep alive).
    keep_alive: Option<KeepAliveSink>,
}

impl HostApiFfi for HostApi {
    fn cwd(&self) -> RString {
        self.cwd.as_str().into()
    }

    fn push_pending_action(&self, action: FfiPendingAction) -> RResult<(), RString> {
        let Some(sink) = &self.sink else {
            return RResult::RErr(STORE_UNAVAILABLE.into());
        };
        match pending_action_from_ffi(action).and_then(|action| sink(action)) {
            Ok(()) => RResult::ROk(()),
            Err(error) => RResult::RErr(error.message().into()),
        }
    }

    fn log(&self, level: FfiLogLevel, message: RString) {
        plugin_log(self.logger.as_ref(), &self.plugin, level.into(), &message);
    }

    fn keep_alive(&self, keep: bool) {
        if let Some(sink) = &self.keep_alive {
            sink(keep);
        }
    }
}

/// Wrap a plugin's pending action so `resolve` can run it like any other.
fn pending_action_from_ffi(action: FfiPendingAction) -> Result<PendingAction, PluginError> {
    PendingAction::validate_label(action.label().as_str())?;
    let label = action.label().to_string();
    let source_tool_name = action.source_tool_name().to_string();
    let details = details_from_json(action.details_json());
    let callbacks: Arc<FfiPendingAction> = Arc::new(action);
    let has_reject = callbacks.has_reject();
    let for_retry = Arc::clone(&callbacks);
    let mut pending = PendingAction::new(label, source_tool_name, ffi_apply(&callbacks))
        .with_details(details)
        // After a failed apply, the plugin says whether its apply may run again (`false` from
        // a plugin before ABI 1.2, whose apply ran once whatever its outcome).
        .with_retry(Arc::new(move || {
            for_retry.can_apply().then(|| ffi_apply(&for_retry))
        }));
    if has_reject {
        pending = pending.with_reject(Box::new(move |reason: String, ctx| -> BoxFuture<_> {
            // Built here, outside the future: see `action_context`.
            let context = action_context(ctx);
            Box::pin(async move {
                match callbacks.reject_in(reason.into(), context).await {
                    RResult::ROk(result) => Ok(result.into_option().map(AgentToolResult::from)),
                    RResult::RErr(message) => Err(PluginError::new(message.into_string())),
                }
            })
        }));
    }
    Ok(pending)
}

/// The plugin's `apply` of `action`, as the store's callback.
fn ffi_apply(action: &Arc<FfiPendingAction>) -> crate::store::ApplyFn {
    let action = Arc::clone(action);
    Box::new(move |reason: String, ctx| -> BoxFuture<_> {
        // Built here, outside the future: see `action_context`.
        let context = action_context(ctx);
        Box::pin(async move {
            match action.apply_in(reason.into(), context).await {
                RResult::ROk(result) => Ok(AgentToolResult::from(result)),
                RResult::RErr(message) => Err(PluginError::new(message.into_string())),
            }
        })
    })
}

/// The host side of the context a plugin's apply or reject gets: the services of the call
/// that settles the action (docs/guide/src/pending.md), answered as an `execute`'s are. Built when
/// the callback is started, as `execute`'s context is when the call starts: the runtime its
/// requests are answered on is the caller's, if it runs in one. Inside the future, a plugin
/// process's worker (which polls with `Handle::block_on`, where tasks spawned on that runtime never
/// run) would be taken for one.
fn action_context(ctx: ActionContext) -> ToolContextBox {
    ToolContextFfi_TO::from_value(
        HostToolContext {
            updates: ctx.updates,
            cancel: ctx.cancel,
            services: ctx.services,
            runtime: tokio::runtime::Handle::try_current().ok(),
        },
        TD_Opaque,
    )
}

/// A tool loaded from a plugin library.
pub struct PluginTool {
    spec: ToolSpec,
    /// How a call of it looks (`None` from a plugin before 0.8, or one that gives none).
    call_view: Option<CallView>,
    tool: Arc<FfiToolDef>,
    /// Poll the plugin's future on the caller's task (lowest latency; blocking plugin code
    /// then blocks the caller) instead of on a blocking-pool thread of its own.
    inline: bool,
    /// Calls running off the caller's runtime, by tool-call id, with a flag set when each
    /// ends (see [`Tool::interrupted`]).
    running: offload::Running,
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_view(&self) -> Option<CallView> {
        self.call_view.clone()
    }

    fn execute(
        &self,
        tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        let context = ToolContextFfi_TO::from_value(
            HostToolContext {
                updates: ctx.updates.clone(),
                cancel: ctx.cancel.clone(),
                services: ctx.services.clone(),
                runtime: tokio::runtime::Handle::try_current().ok(),
            },
            TD_Opaque,
        );
        if !self.inline {
            return offload::execute(
                Arc::clone(&self.tool),
                &self.running,
                tool_call_id,
                arguments,
                context,
                ctx.cancel,
            );
        }
        let future = self
            .tool
            .execute(tool_call_id.into(), arguments.to_string().into(), context);
        Box::pin(async move {
            match future.await {
                RResult::ROk(result) => Ok(AgentToolResult::from(result)),
                RResult::RErr(message) => Err(PluginError::new(message.into_string())),
            }
        })
    }

    fn interrupted(&self, tool_call_id: &str) -> BoxFuture<Option<String>> {
        self.running.interrupted(tool_call_id)
    }

    fn on_session(&self, event: crate::services::SessionEvent) -> BoxFuture<()> {
        let tool = Arc::clone(&self.tool);
        Box::pin(async move {
            // The event was built from the session's own types: it always encodes.
            let json = serde_json::to_string(&event).unwrap_or_default();
            tool.on_session(json.into()).await;
        })
    }
}

impl PluginTool {
    /// Poll this tool's futures on the caller's task (see [`PluginTool`]).
    pub fn set_inline(&mut self, inline: bool) {
        self.inline = inline;
    }
}

/// The host side of a running plugin call's `ToolContextFfi`: its updates, cancellation and
/// host services.
struct HostToolContext {
    updates: Option<UpdateSink>,
    cancel: crate::tool::CancelToken,
    services: crate::services::CallServices,
    /// The host's runtime, where host requests run (the plugin polls its futures inside a
    /// runtime of its own, whose timers and I/O the host's code cannot use).
    runtime: Option<tokio::runtime::Handle>,
}

impl ToolContextFfi for HostToolContext {
    fn update(&self, partial: FfiToolResult) {
        if let Some(updates) = &self.updates {
            updates(AgentToolResult::from(partial));
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn host_facts(&self) -> abi_stable::std_types::ROption<RString> {
        let facts = serde_json::to_string(&self.services.facts()).unwrap_or_default();
        abi_stable::std_types::ROption::RSome(facts.into())
    }

    fn host_request(
        &self,
        request_json: RString,
    ) -> async_ffi::FfiFuture<RResult<RString, RString>> {
        let services = self.services.clone();
        let runtime = self.runtime.clone();
        async_ffi::FutureExt::into_ffi(async move {
            let reply = serve_request(services, runtime, request_json.into_string()).await;
            match reply {
                Ok(reply) => RResult::ROk(reply.into()),
                Err(message) => RResult::RErr(message.into()),
            }
        })
    }
}

/// Answer one host request (JSON in, JSON out) on the host's runtime; dropping the returned
/// future aborts it there (the question is withdrawn).
pub(crate) async fn serve_request(
    services: crate::services::CallServices,
    runtime: Option<tokio::runtime::Handle>,
    request_json: String,
) -> Result<String, String> {
    let request: crate::services::HostRequest =
        serde_json::from_str(&request_json).map_err(|e| {
            format!("the plugin sent a host request this host does not understand: {e}")
        })?;
    let work = async move {
        let reply = services.request(request).await?;
        serde_json::to_string(&reply).map_err(|e| e.to_string())
    };
    let Some(runtime) = runtime else {
        return work.await;
    };
    let mut task = AbortOnDrop(runtime.spawn(work));
    match (&mut task.0).await {
        Ok(reply) => reply,
        Err(error) => Err(format!("the host's answer failed: {error}")),
    }
}

/// A spawned task aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run a library's factory for one session and wrap its tools.
pub fn instantiate(
    library: PluginLibrary,
    path: &Path,
    cwd: &Path,
    sink: Option<PushSink>,
    logger: Option<PluginLogSink>,
    keep_alive: Option<KeepAliveSink>,
) -> Result<Vec<PluginTool>, LoadError> {
    let host = HostApiFfi_TO::from_value(
        HostApi {
            cwd: cwd.to_string_lossy().into_owned(),
            sink,
            logger,
            plugin: path.to_owned(),
            keep_alive,
        },
        TD_Opaque,
    );
    let defs = library.module().create_tools()(host)
        .into_result()
        .map_err(|message| {
            LoadError::new(
                path.to_owned(),
                LoadErrorKind::Factory {
                    message: message.into_string(),
                },
            )
        })?;
    let origin = ToolOrigin::Plugin(path.to_owned());
    Ok(defs
        .into_iter()
        .map(|def| plugin_tool(def, origin.clone()))
        .collect())
}

fn plugin_tool(def: FfiToolDef, origin: ToolOrigin) -> PluginTool {
    // An unparsable schema is kept as a string; the session's schema check reports it.
    let parameters_json = def.parameters_json();
    let parameters = serde_json::from_str(parameters_json.as_str())
        .unwrap_or_else(|_| Value::String(parameters_json.to_string()));
    PluginTool {
        spec: ToolSpec {
            name: def.name().to_string(),
            label: def.label().to_string(),
            description: def.description().to_string(),
            parameters,
            hidden: def.hidden(),
            deferrable: def.deferrable(),
            // Absent (all `None`) for a plugin built before xcsh-plugin-api 0.3: its vtable
            // has no `annotations`, and the call answers the method's default, `RNone`.
            hints: def
                .annotations()
                .into_option()
                .map(|a| ToolHints {
                    read_only: a.read_only.get(),
                    destructive: a.destructive.get(),
                    idempotent: a.idempotent.get(),
                    open_world: a.open_world.get(),
                })
                .unwrap_or_default(),
            origin,
        },
        // A plugin before 0.8 has no such method: its default answers `RNone`. One that is not
        // a call view is left out (the label shows instead).
        call_view: def
            .call_view_json()
            .into_option()
            .and_then(|json| serde_json::from_str(json.as_str()).ok()),
        tool: Arc::new(def),
        inline: false,
        running: offload::Running::default(),
    }
}
