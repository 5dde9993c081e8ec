//! Plugins compiled into the host (the built-in `ast_edit`): written against
//! `xcsh-plugin-api` like any plugin, and run through the same plugin ABI, without `dlopen`.
//!
//! The root module is built in process from the plugin's factory (the same `lib_header` the
//! exported static of `export_plugin!` holds), its version checked by abi_stable like a loaded
//! library's (its layout is this binary's own, so it is not walked: issue 53), and its tools
//! are wrapped like a loaded plugin's, with [`ToolOrigin::Builtin`]. That keeps one path for
//! every tool: what a built-in can do, a plugin can do, and the other way round.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi_stable::library::LibHeader;
use abi_stable::sabi_trait::TD_Opaque;
use serde_json::Value;
use xcsh_plugin_api::__private::{lib_header, PluginFactory};
use xcsh_plugin_api::ffi::{FfiToolDef, HostApiFfi_TO, PluginModuleRef};
use xcsh_plugin_api::AgentToolResult;

use super::{plugin_tool, store_sink, HostApi};
use crate::loading::{LoadError, LoadErrorKind};
use crate::store::{BoxFuture, PendingActionSink};
use crate::tool::{CallContext, PluginError, Tool, ToolOrigin, ToolSpec};

/// The path built-in tools are reported under (logs, load errors).
const BUILTIN_PATH: &str = "<builtin>";

fn factory_error(message: String) -> LoadError {
    LoadError::new(BUILTIN_PATH, LoadErrorKind::Factory { message })
}

/// A tool of a plugin compiled into the host.
///
/// Built-ins are registered before a session has its store, and a built-in may be shared by
/// several sessions, so the factory runs again for each call with that call's working
/// directory and store: a push always lands in the calling session's store, exactly as it
/// would for a loaded plugin instantiated by that session.
pub struct BuiltinPluginTool {
    spec: ToolSpec,
    call_view: Option<xcsh_plugin_api::view::CallView>,
    module: PluginModuleRef,
}

/// Instantiate a compiled-in plugin factory `F` through the plugin ABI, without `dlopen`.
pub fn builtin_plugin_tools<F: PluginFactory>() -> Result<Vec<Arc<dyn Tool>>, LoadError> {
    let header: LibHeader = lib_header::<F>();
    let module = crate::loading::init_compiled_in_root_module(&header)
        .map_err(|error| factory_error(error.to_string()))?;
    // The specs come from one instantiation without a store; its tools are then dropped.
    let defs = create_builtin(module, Path::new(""), None)?;
    Ok(defs
        .into_iter()
        .map(|def| {
            let tool = plugin_tool(def, ToolOrigin::Builtin);
            let (spec, call_view) = (tool.spec().clone(), tool.call_view());
            Arc::new(BuiltinPluginTool {
                spec,
                call_view,
                module,
            }) as Arc<dyn Tool>
        })
        .collect())
}

/// Run a compiled-in factory with a host bound to `cwd` and `store`.
fn create_builtin(
    module: PluginModuleRef,
    cwd: &Path,
    store: Option<Arc<dyn PendingActionSink>>,
) -> Result<Vec<FfiToolDef>, LoadError> {
    let host = HostApiFfi_TO::from_value(
        HostApi {
            cwd: cwd.to_string_lossy().into_owned(),
            sink: store_sink(store),
            logger: None,
            plugin: PathBuf::from(BUILTIN_PATH),
            keep_alive: None,
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
        .map_err(|message| factory_error(message.into_string()))
}

impl Tool for BuiltinPluginTool {
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
        let tool = create_builtin(self.module, &ctx.cwd, ctx.store.clone())
            .map_err(|error| PluginError::new(error.to_string()))
            .and_then(|defs| {
                defs.into_iter()
                    .find(|def| def.name().as_str() == self.spec.name)
                    .map(|def| plugin_tool(def, ToolOrigin::Builtin))
                    .ok_or_else(|| {
                        PluginError::new(format!("built-in tool {} is gone", self.spec.name))
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
        .ok_or_else(|| factory_error("the ast_edit plugin made no tool".to_owned()))
}

#[cfg(all(test, feature = "ast-edit"))]
mod tests {
    /// A built-in's schema is compiled on its first call, not when it is registered (see the
    /// session's registry): this is where a schema that does not compile would be caught.
    #[test]
    fn the_builtin_ast_edits_schema_compiles() {
        let tool = super::ast_edit_tool().expect("the built-in ast_edit is made");
        let spec = tool.spec();
        assert_eq!(spec.name, "ast_edit");
        if let Err(cause) = xcsh_plugin_api::checks::compile_schema(&spec.parameters) {
            panic!("ast_edit's schema does not compile: {cause}");
        }
    }
}
