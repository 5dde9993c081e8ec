//! The host side of the plugin ABI: the services a plugin calls ([`HostServices`]), and the
//! adapters that turn a plugin's tools and pending actions into the session's own types.
//! [`builtin_plugin_tools`] does the same for a plugin compiled into the host (the built-in
//! `ast_edit`): no `dlopen`, but the same root module, host object and tool definitions.
//!
//! Code here runs inside abi_stable vtable calls, where a panic would abort the process, so it
//! only does panic-free work: string conversion, JSON parsing with fallbacks, and a store push.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::library::LibHeader;
use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RResult, RString};
use serde_json::Value;
use xcsh_plugin_api::__private::{lib_header, PluginFactory};
use xcsh_plugin_api::ffi::{
    details_from_json, FfiLogLevel, FfiPendingAction, FfiToolDef, FfiToolResult, HostApiFfi,
    HostApiFfi_TO, PendingActionFfi_TO, PluginModuleRef, ToolContextFfi, ToolContextFfi_TO,
    ToolFfi_TO,
};
use xcsh_plugin_api::AgentToolResult;

use crate::library::PluginLibrary;
use crate::store::{BoxFuture, PendingAction, PendingActionStore};
use crate::tool::{CallContext, Tool, ToolError, ToolOrigin, ToolSpec, UpdateSink};
use crate::LoadError;

/// The exact error a push gets when the runtime has no store (SPEC 3).
pub const STORE_UNAVAILABLE: &str =
    "Pending action store unavailable for custom tools in this runtime.";

/// What the host offers one plugin in one session.
struct HostServices {
    cwd: String,
    store: Option<Arc<PendingActionStore>>,
    plugin: PathBuf,
}

impl HostApiFfi for HostServices {
    fn cwd(&self) -> RString {
        self.cwd.as_str().into()
    }

    fn push_pending_action(&self, action: FfiPendingAction) -> RResult<(), RString> {
        let Some(store) = &self.store else {
            return RResult::RErr(STORE_UNAVAILABLE.into());
        };
        match pending_action_from_ffi(action) {
            Ok(action) => {
                store.push(action);
                RResult::ROk(())
            }
            Err(error) => RResult::RErr(error.message().into()),
        }
    }

    fn log(&self, level: FfiLogLevel, message: RString) {
        let plugin = self.plugin.display();
        match level {
            FfiLogLevel::Debug => tracing::debug!(target: "xcsh_plugin", %plugin, "{message}"),
            FfiLogLevel::Info => tracing::info!(target: "xcsh_plugin", %plugin, "{message}"),
            FfiLogLevel::Warn => tracing::warn!(target: "xcsh_plugin", %plugin, "{message}"),
            FfiLogLevel::Error => tracing::error!(target: "xcsh_plugin", %plugin, "{message}"),
        }
    }
}

/// Wrap a plugin's pending action so `resolve` can run it like any other.
fn pending_action_from_ffi(action: FfiPendingAction) -> Result<PendingAction, ToolError> {
    PendingAction::validate_label(action.label.as_str())?;
    let callbacks: Arc<PendingActionFfi_TO<'static, abi_stable::std_types::RBox<()>>> =
        Arc::new(action.callbacks);
    let has_reject = callbacks.has_reject();
    let for_apply = Arc::clone(&callbacks);
    let mut pending = PendingAction::new(
        action.label.into_string(),
        action.source_tool_name.into_string(),
        Box::new(move |reason: String| -> BoxFuture<_> {
            Box::pin(async move {
                match for_apply.apply(reason.into()).await {
                    RResult::ROk(result) => Ok(AgentToolResult::from(result)),
                    RResult::RErr(message) => Err(ToolError::new(message.into_string())),
                }
            })
        }),
    )
    .with_details(details_from_json(action.details_json));
    if has_reject {
        pending = pending.with_reject(Box::new(move |reason: String| -> BoxFuture<_> {
            Box::pin(async move {
                match callbacks.reject(reason.into()).await {
                    RResult::ROk(result) => Ok(result.into_option().map(AgentToolResult::from)),
                    RResult::RErr(message) => Err(ToolError::new(message.into_string())),
                }
            })
        }));
    }
    Ok(pending)
}

/// A tool loaded from a plugin library.
pub struct PluginTool {
    spec: ToolSpec,
    tool: ToolFfi_TO<'static, abi_stable::std_types::RBox<()>>,
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute(
        &self,
        tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, ToolError>> {
        let context = ToolContextFfi_TO::from_value(
            CallServices {
                updates: ctx.updates.clone(),
                cancel: ctx.cancel.clone(),
            },
            TD_Opaque,
        );
        let future = self
            .tool
            .execute(tool_call_id.into(), arguments.to_string().into(), context);
        Box::pin(async move {
            match future.await {
                RResult::ROk(result) => Ok(AgentToolResult::from(result)),
                RResult::RErr(message) => Err(ToolError::new(message.into_string())),
            }
        })
    }
}

/// Per-call services offered to a running plugin tool.
struct CallServices {
    updates: Option<UpdateSink>,
    cancel: crate::CancelToken,
}

impl ToolContextFfi for CallServices {
    fn update(&self, partial: FfiToolResult) {
        if let Some(updates) = &self.updates {
            updates(AgentToolResult::from(partial));
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// Run a library's factory for one session and wrap its tools.
pub(crate) fn instantiate(
    library: PluginLibrary,
    path: &Path,
    cwd: &Path,
    store: Option<Arc<PendingActionStore>>,
) -> Result<Vec<PluginTool>, LoadError> {
    let host = HostApiFfi_TO::from_value(
        HostServices {
            cwd: cwd.to_string_lossy().into_owned(),
            store,
            plugin: path.to_owned(),
        },
        TD_Opaque,
    );
    let defs = library.module().create_tools()(host)
        .into_result()
        .map_err(|message| LoadError::Factory {
            path: path.to_owned(),
            message: message.into_string(),
        })?;
    let origin = ToolOrigin::Plugin(path.to_owned());
    Ok(defs
        .into_iter()
        .map(|def| plugin_tool(def, origin.clone()))
        .collect())
}

fn plugin_tool(def: FfiToolDef, origin: ToolOrigin) -> PluginTool {
    // An unparsable schema is kept as a string; the session's schema check reports it.
    let parameters = serde_json::from_str(def.parameters_json.as_str())
        .unwrap_or_else(|_| Value::String(def.parameters_json.to_string()));
    PluginTool {
        spec: ToolSpec {
            name: def.name.into_string(),
            label: def.label.into_string(),
            description: def.description.into_string(),
            parameters,
            hidden: def.hidden,
            deferrable: def.deferrable,
            origin,
        },
        tool: def.tool,
    }
}

/// The path built-in tools are reported under (logs, load errors).
const BUILTIN_PATH: &str = "<builtin>";

/// A tool of a plugin compiled into the host, written against `xcsh-plugin-api`.
///
/// Built-ins are registered before a session has its store, and a built-in may be shared by
/// several sessions, so the factory runs again for each call with that call's working
/// directory and store: a push always lands in the calling session's store (SPEC 4), exactly
/// as it would for a loaded plugin instantiated by that session.
pub struct BuiltinPluginTool {
    spec: ToolSpec,
    module: PluginModuleRef,
}

/// Instantiate a compiled-in plugin factory `F` through the plugin ABI, without `dlopen`: its
/// root module passes the same layout and version checks as a loaded library's, and its tools
/// are wrapped like a loaded plugin's, with [`ToolOrigin::Builtin`].
pub fn builtin_plugin_tools<F: PluginFactory>() -> Result<Vec<Arc<dyn Tool>>, LoadError> {
    let path = PathBuf::from(BUILTIN_PATH);
    let header: LibHeader = lib_header::<F>();
    let module = header
        .init_root_module::<PluginModuleRef>()
        .map_err(|error| LoadError::Factory {
            path: path.clone(),
            message: error.to_string(),
        })?;
    // The specs come from one instantiation without a store; its tools are then dropped.
    let defs = create_builtin(module, Path::new(""), None)?;
    Ok(defs
        .into_iter()
        .map(|def| {
            let spec = plugin_tool(def, ToolOrigin::Builtin).spec;
            Arc::new(BuiltinPluginTool { spec, module }) as Arc<dyn Tool>
        })
        .collect())
}

/// Run a compiled-in factory with a host bound to `cwd` and `store`.
fn create_builtin(
    module: PluginModuleRef,
    cwd: &Path,
    store: Option<Arc<PendingActionStore>>,
) -> Result<Vec<FfiToolDef>, LoadError> {
    let host = HostApiFfi_TO::from_value(
        HostServices {
            cwd: cwd.to_string_lossy().into_owned(),
            store,
            plugin: PathBuf::from(BUILTIN_PATH),
        },
        TD_Opaque,
    );
    // The API installs a panic hook of its own on its first factory call, meant for a cdylib's
    // private copy of std; in process it would silence the host's panic messages, so the
    // host's hook is put back.
    let host_hook = std::panic::take_hook();
    let created = module.create_tools()(host).into_result();
    std::panic::set_hook(host_hook);
    created
        .map(|defs| defs.into_iter().collect())
        .map_err(|message| LoadError::Factory {
            path: PathBuf::from(BUILTIN_PATH),
            message: message.into_string(),
        })
}

impl Tool for BuiltinPluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute(
        &self,
        tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, ToolError>> {
        let tool = create_builtin(self.module, &ctx.cwd, ctx.store.clone())
            .map_err(|error| ToolError::new(error.to_string()))
            .and_then(|defs| {
                defs.into_iter()
                    .find(|def| def.name.as_str() == self.spec.name)
                    .map(|def| plugin_tool(def, ToolOrigin::Builtin))
                    .ok_or_else(|| {
                        ToolError::new(format!("built-in tool {} is gone", self.spec.name))
                    })
            });
        Box::pin(async move {
            let tool = tool?;
            tool.execute(tool_call_id, arguments, ctx).await
        })
    }
}

/// The built-in `ast_edit` (the `xcsh-ast-edit` plugin crate, compiled in).
#[cfg(feature = "ast-edit")]
pub fn ast_edit_tool() -> Result<Arc<dyn Tool>, LoadError> {
    builtin_plugin_tools::<xcsh_ast_edit::AstEditPlugin>()?
        .pop()
        .ok_or_else(|| LoadError::Factory {
            path: PathBuf::from(BUILTIN_PATH),
            message: "the ast_edit plugin made no tool".to_owned(),
        })
}
