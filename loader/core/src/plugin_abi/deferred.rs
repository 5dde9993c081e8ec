//! In-process plugins whose tool definitions are cached: the library is checked and loaded
//! when the session is built, as always, but its factory runs at the first call of one of
//! its tools, not before.
//!
//! Why: the factory is the first plugin code that runs beyond the library's constructors,
//! and it runs a lot of it (each tool's constructor, the schema generation of its parameters,
//! serde and schemars, the allocator), all over the library's code and data. The kernel maps
//! file pages around each fault in 64 KiB chunks, so a session that listed 50 small plugins
//! in-process held 565 KiB of each plugin's pages against 243 KiB for a bare `dlopen` of the
//! same files. With the factory deferred, a session that only lists tools, or calls the tools
//! of a few plugins, pays for the others about what `dlopen` pays.
//!
//! The definitions come from the user's private cache (see `loading::cache`), under a key that
//! holds what they may depend on: the plugin file's identity, the host's build, the session's
//! working directory and whether it has a store. An entry is only written after the factory
//! ran (in a session that found none), and a hit is never the last word: when the factory
//! finally runs, a tool it no longer defines answers [`tool_no_longer_defined`] and the entry is
//! rewritten with what it defines now (the session keeps its list; the next one lists the new
//! tools).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::{instantiate, KeepAliveSink, PluginTool, PushSink};
use crate::loading::cache::{host_build, PrivateCache};
use crate::loading::{CheckedFile, LoadError, PluginLibrary};
use crate::messages::tool_no_longer_defined;
use crate::plugin_log::PluginLogSink;
use crate::store::BoxFuture;
use crate::tool::definition::ToolDefinition;
use crate::tool::{CallContext, PluginError, Tool, ToolOrigin, ToolSpec};
use xcsh_plugin_api::AgentToolResult;

/// The kind of the cache's entries (see [`PrivateCache::get`]).
const KIND: &str = "in-process-definitions";

/// The in-process definitions cache of one session.
#[derive(Debug, Clone)]
pub(crate) struct InProcessDefinitions {
    cache: PrivateCache,
    context: String,
}

impl InProcessDefinitions {
    /// The cache for a session in `cwd`, with or without a store; `None` when the host's
    /// build is unknown or no cache directory can be named.
    pub(crate) fn for_session(cwd: &Path, store: bool) -> Option<Self> {
        let build = host_build()?;
        let cache = PrivateCache::for_user()?;
        let context = format!(
            "xcsh in-process tool definitions 2\nloader: {build}\ncwd: {}\nstore: {store}",
            cwd.display()
        );
        Some(Self { cache, context })
    }

    fn key(&self, file: &CheckedFile) -> String {
        format!(
            "{}\nplugin: {} {}",
            self.context,
            file.path().display(),
            file.stamp().key()
        )
    }
}

/// What the factory needs, kept until its first call.
pub(crate) struct Services {
    /// The session's working directory.
    pub(crate) cwd: PathBuf,
    /// Where pushed pending actions go.
    pub(crate) sink: Option<PushSink>,
    /// Where the plugin's log lines go.
    pub(crate) logger: Option<PluginLogSink>,
    /// Where keep-alive requests go.
    pub(crate) keep_alive: Option<KeepAliveSink>,
    /// See [`PluginTool::set_inline`].
    pub(crate) inline: bool,
}

/// A plugin's tools for one session: from the cache (the factory deferred) when it holds
/// them, else from the factory, run now (and then cached).
pub(crate) fn plugin_tools(
    library: PluginLibrary,
    file: &CheckedFile,
    cache: Option<&InProcessDefinitions>,
    services: Services,
) -> Result<Vec<Arc<dyn Tool>>, LoadError> {
    let path = file.path().to_owned();
    let origin = ToolOrigin::Plugin(path.clone());
    let cache = cache.map(|cache| (cache.clone(), cache.key(file)));
    let cached: Option<Vec<ToolDefinition>> = cache
        .as_ref()
        .and_then(|(cache, key)| cache.cache.get(KIND, key));
    let plugin = Arc::new(DeferredPlugin {
        library,
        path,
        services,
        cache,
        cached: cached.clone(),
        tools: OnceLock::new(),
    });
    match cached {
        Some(definitions) => Ok(definitions
            .into_iter()
            .map(|definition| {
                Arc::new(DeferredTool {
                    call_view: definition.call_view.clone(),
                    spec: definition.into_spec(origin.clone()),
                    plugin: Arc::clone(&plugin),
                }) as Arc<dyn Tool>
            })
            .collect()),
        None => {
            let tools = plugin.instantiated()?;
            Ok(tools.iter().map(|tool| Arc::clone(tool) as _).collect())
        }
    }
}

/// A loaded library whose factory may not have run yet.
struct DeferredPlugin {
    library: PluginLibrary,
    path: PathBuf,
    services: Services,
    /// The cache and this plugin's key in it.
    cache: Option<(InProcessDefinitions, String)>,
    /// What the cache held for it when the session was built (`None`: a miss).
    cached: Option<Vec<ToolDefinition>>,
    /// The factory's tools, once it ran (or why it failed; it does not run again).
    tools: OnceLock<Result<Vec<Arc<PluginTool>>, LoadError>>,
}

impl DeferredPlugin {
    /// The factory's tools: it runs on the first call, and its definitions are cached.
    fn instantiated(&self) -> Result<&[Arc<PluginTool>], LoadError> {
        let tools = self.tools.get_or_init(|| {
            let services = &self.services;
            let tools: Vec<Arc<PluginTool>> = instantiate(
                self.library,
                &self.path,
                &services.cwd,
                services.sink.clone(),
                services.logger.clone(),
                services.keep_alive.clone(),
            )?
            .into_iter()
            .map(|mut tool| {
                tool.set_inline(services.inline);
                Arc::new(tool)
            })
            .collect();
            if let Some((cache, key)) = &self.cache {
                let fresh: Vec<ToolDefinition> = tools
                    .iter()
                    .map(|tool| ToolDefinition::of(tool.as_ref()))
                    .collect();
                if self.cached.as_ref() != Some(&fresh) {
                    if self.cached.is_some() {
                        tracing::info!(
                            "plugin {} defines other tools than its cached definitions; they \
                             are cached again, and listed by the next session",
                            self.path.display()
                        );
                    }
                    cache.cache.put(KIND, key, &fresh);
                }
            }
            Ok(tools)
        });
        tools.as_deref().map_err(Clone::clone)
    }

    /// The tool named `name`, as the factory defines it.
    fn tool(&self, name: &str) -> Result<Arc<PluginTool>, PluginError> {
        let tools = self
            .instantiated()
            .map_err(|error| PluginError::new(error.to_string()))?;
        tools
            .iter()
            .find(|tool| tool.spec().name == name)
            .cloned()
            .ok_or_else(|| PluginError::new(tool_no_longer_defined(name, &self.path)))
    }
}

/// A tool registered from cached definitions; its plugin's factory runs at its first call.
struct DeferredTool {
    spec: ToolSpec,
    call_view: Option<xcsh_plugin_api::view::CallView>,
    plugin: Arc<DeferredPlugin>,
}

impl Tool for DeferredTool {
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
        let plugin = &self.plugin;
        // The factory is plugin code, which may block: off the caller's runtime threads, as
        // the calls themselves are (unless calls are polled inline: then on the caller's).
        let offload = plugin.tools.get().is_none() && !plugin.services.inline;
        let runtime = offload
            .then(|| tokio::runtime::Handle::try_current().ok())
            .flatten();
        let Some(runtime) = runtime else {
            return match plugin.tool(&self.spec.name) {
                Ok(tool) => tool.execute(tool_call_id, arguments, ctx),
                Err(error) => Box::pin(std::future::ready(Err(error))),
            };
        };
        let (plugin, name) = (Arc::clone(plugin), self.spec.name.clone());
        Box::pin(async move {
            let tool = runtime
                .spawn_blocking(move || plugin.tool(&name))
                .await
                .map_err(|error| {
                    PluginError::new(format!("the plugin's factory did not finish: {error}"))
                })??;
            tool.execute(tool_call_id, arguments, ctx).await
        })
    }

    fn interrupted(&self, tool_call_id: &str) -> BoxFuture<Option<String>> {
        // Before the factory ran, no call of this plugin can have run.
        let made = self
            .plugin
            .tools
            .get()
            .and_then(|tools| tools.as_ref().ok());
        match made.and_then(|tools| tools.iter().find(|tool| tool.spec().name == self.spec.name)) {
            Some(tool) => tool.interrupted(tool_call_id),
            None => Box::pin(std::future::ready(None)),
        }
    }
}
