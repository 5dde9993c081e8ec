//! [`Session`]: one agent session's tools, its pending-action store, and how calls run.
//!
//! The session owns the store and injects it (or nothing) into every plugin it instantiates,
//! so one session's pending actions are never visible to another. Every call is checked
//! against the tool's JSON Schema first; the tool only ever sees valid arguments.
//!
//! - `builder`: discovery and loading at build time; `isolated`: starting a plugin process;
//! - `definitions`: the cache of isolated plugins' tool definitions (no process at build);
//! - `idle`: how long each plugin's process may stay idle before it is stopped;
//! - `registry`: the tools by name, an immutable snapshot swapped whole on a reload;
//! - `reload`: picking up plugin files that change while the session runs.

mod builder;
mod definitions;
mod idle_policy;
mod isolated;
mod registry;
mod reload;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::isolate::Isolation;
use crate::loading::discovery::Candidate;
use crate::loading::load_checked_with;
use crate::loading::LoadError;
use crate::plugin_abi::{plugin_tools, store_sink, Services};
use crate::resolve::steering::{
    forced_tool_choice, Provider, SteeringMessage, SteeringQueue, ToolChoice,
};
use crate::resolve::{resolve_spec, run_resolve, ResolveArgs, RESOLVE_TOOL_NAME};
use crate::store::{PendingActionSink, PendingActionStore, PushSubscription};
use crate::tool::{
    bounded, drawable, drawable_updates, ActionContext, CallContext, Tool, ToolSpec,
};
use xcsh_plugin_api::__private::lock;

pub use crate::tool::{CallOptions, ToolOutcome};
pub use builder::SessionBuilder;
pub use idle_policy::{parse_idle_time, IdleTimeError, StopIdleAfter, DEFAULT_STOP_IDLE_AFTER};
pub use reload::{PluginReload, ReloadOutcome, SETTLE as RELOAD_SETTLE};

use builder::Loader;
use registry::Registry;

/// A plugin library a session loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedPlugin {
    /// Its canonical path.
    pub path: PathBuf,
    /// The `xcsh-plugin-api` version it was built against.
    pub api_version: xcsh_plugin_api::ffi::ApiVersion,
    /// Where its code runs.
    pub isolation: Isolation,
    /// What its process's sandbox enforces; `None` in-process (no sandbox).
    pub sandbox: Option<crate::sys::sandbox::Confinement>,
}

/// One agent session: its tools, its store, its steering queue.
pub struct Session {
    cwd: PathBuf,
    /// The session's own store; `None` without a store, or when pushes go to the embedder's.
    store: Option<Arc<PendingActionStore>>,
    /// Where plugins' pushes go: `store`, or the embedder's sink (see
    /// [`SessionBuilder::pending_actions_to`]).
    sink: Option<Arc<dyn PendingActionSink>>,
    /// The tools now; replaced whole when a plugin is reloaded.
    registry: RwLock<Arc<Registry>>,
    /// `resolve`, once some tool is deferrable; it stays while the session lives, so whatever
    /// is pending can always be resolved.
    resolve: OnceLock<(ToolSpec, jsonschema::Validator)>,
    load_errors: Vec<LoadError>,
    /// The interrupted applies found in the working directory when the session was built.
    recovered_applies: Vec<xcsh_plugin_api::files::Recovered>,
    plugins: RwLock<Vec<LoadedPlugin>>,
    steering: Arc<SteeringQueue>,
    _reminders: Option<PushSubscription>,
    default_timeout: Option<Duration>,
    /// What the host offers plugins' calls (docs/guide/src/ask.md).
    services: crate::services::SessionServices,
    /// The plugin files to reload when they change.
    watch: reload::Watch,
    /// What ends when the session's plugin processes have exited (see [`Session::close`]).
    children: Mutex<Vec<crate::isolate::plugin::ChildrenGone>>,
    /// The plugins registered from the definitions cache whose child has not started yet,
    /// and those whose process was stopped while idle (shared with their processes, which
    /// add themselves when they stop).
    deferred: isolated::DeferredPlugins,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("cwd", &self.cwd)
            .field(
                "tools",
                &self.registry().specs().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("store", &self.store)
            .field("load_errors", &self.load_errors)
            .finish_non_exhaustive()
    }
}

use xcsh_plugin_api::checks::check_arguments;
pub use xcsh_plugin_api::checks::compile_schema;

impl Session {
    /// Start building a session rooted at `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> SessionBuilder {
        SessionBuilder::new(cwd)
    }

    /// The tools now.
    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&xcsh_plugin_api::__private::read(&self.registry))
    }

    /// While building: register `tool` after the others.
    fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), LoadError> {
        let registry = xcsh_plugin_api::__private::rw_get_mut(&mut self.registry);
        Arc::make_mut(registry).register(tool)
    }

    /// Register `resolve` if some tool is deferrable and it is not yet; whether it was. Never
    /// when pushes go to the embedder's store: its runtime has a `resolve` of its own.
    fn register_resolve_if_needed(&self) -> bool {
        if self.resolve.get().is_some()
            || self.embedder_resolves()
            || !self.registry().specs().any(|spec| spec.deferrable)
        {
            return false;
        }
        let spec = resolve_spec();
        match jsonschema::validator_for(&spec.parameters) {
            Ok(validator) => self.resolve.set((spec, validator)).is_ok(),
            Err(_) => false,
        }
    }

    fn load_plugin(&mut self, candidate: &Candidate, loader: &mut Loader) {
        let tools = loader
            .check(candidate, &mut self.load_errors)
            .and_then(|file| {
                let library = load_checked_with(&file, Some(&loader.probe()))?;
                Ok((library, file))
            })
            .and_then(|(library, file)| {
                xcsh_plugin_api::__private::rw_get_mut(&mut self.plugins).push(LoadedPlugin {
                    path: candidate.path.clone(),
                    api_version: library.api_version(),
                    isolation: Isolation::InProcess,
                    sandbox: None,
                });
                plugin_tools(
                    library,
                    &file,
                    loader.in_process_definitions.as_ref(),
                    Services {
                        cwd: self.cwd.clone(),
                        sink: store_sink(self.sink.clone()),
                        logger: loader.plugin_log.clone(),
                        // In-process nothing is stopped, so there is nothing to keep alive.
                        keep_alive: None,
                        inline: loader.inline_calls,
                    },
                )
            });
        match tools {
            Ok(tools) => {
                for tool in tools {
                    if let Err(error) = self.register(tool) {
                        self.load_errors.push(error);
                    }
                }
            }
            Err(error) => self.load_errors.push(error),
        }
    }

    /// While building: register an isolated plugin whose child passed the handshake.
    fn add_isolated(&mut self, accepted: isolated::Accepted) {
        let isolated::Accepted {
            plugin,
            tools,
            children,
            deferred,
        } = accepted;
        if let Some(deferred) = deferred {
            lock(&self.deferred).insert(plugin.path.clone(), Arc::new(deferred));
        }
        xcsh_plugin_api::__private::mutex_get_mut(&mut self.children).extend(children);
        xcsh_plugin_api::__private::rw_get_mut(&mut self.plugins).push(plugin);
        for tool in tools {
            if let Err(error) = self.register(Arc::new(tool)) {
                self.load_errors.push(error);
            }
        }
    }

    /// After a reload: the plugin's new tools replace its old ones (calls already running
    /// keep the old). Returns the tools that could not be registered, and whether the tools
    /// the session offers changed.
    fn replace_plugin(
        &self,
        plugin: LoadedPlugin,
        tools: Vec<Arc<dyn Tool>>,
        children: Option<crate::isolate::plugin::ChildrenGone>,
    ) -> (Vec<LoadError>, bool) {
        lock(&self.children).extend(children);
        {
            let mut plugins = xcsh_plugin_api::__private::write(&self.plugins);
            match plugins.iter_mut().find(|p| p.path == plugin.path) {
                Some(entry) => *entry = plugin.clone(),
                None => plugins.push(plugin.clone()),
            }
        }
        let (errors, changed) = {
            let mut registry = xcsh_plugin_api::__private::write(&self.registry);
            let (replaced, errors, changed) = registry.with_plugin_replaced(&plugin.path, tools);
            *registry = Arc::new(replaced);
            (errors, changed)
        };
        // The first deferrable tool brings `resolve`: the list changed with it.
        let resolve_added = self.register_resolve_if_needed();
        if resolve_added && !changed {
            let mut registry = xcsh_plugin_api::__private::write(&self.registry);
            Arc::make_mut(&mut registry).generation += 1;
        }
        (errors, changed || resolve_added)
    }

    /// End the session for good: first [`Session::close`] (every pending action gets its
    /// `reject`, while the plugin processes that pushed them still run), then its plugin
    /// processes are told to stop (what still runs in them sees `is_cancelled()`, and they are
    /// killed after a grace period), and this waits until each has exited and everything it
    /// printed has reached the log (a few seconds at most). Dropping a session stops its
    /// processes without waiting, and without rejecting what is pending.
    /// Returns what each rejection gave, as [`Session::close`] does.
    pub async fn shutdown(self) -> Vec<ToolOutcome> {
        let rejected = self.close().await;
        self.session_event(crate::services::SessionChange::new(
            crate::services::SessionReason::Shutdown,
        ))
        .await;
        let children = lock(&self.children).clone();
        drop(self);
        for gone in children {
            gone.wait().await;
        }
        rejected
    }

    /// Every plugin library that loaded (its factory may still have failed), in load order;
    /// a reloaded plugin as its current version.
    pub fn plugins(&self) -> Vec<LoadedPlugin> {
        xcsh_plugin_api::__private::read(&self.plugins).clone()
    }

    /// The session's working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The store, if the session has one of its own.
    pub fn store(&self) -> Option<&Arc<PendingActionStore>> {
        self.store.as_ref()
    }

    /// Whether pushes go to the embedder's store ([`SessionBuilder::pending_actions_to`]).
    fn embedder_resolves(&self) -> bool {
        self.store.is_none() && self.sink.is_some()
    }

    /// Every load problem met while building the session.
    pub fn load_errors(&self) -> &[LoadError] {
        &self.load_errors
    }

    /// The applies a killed process had left unfinished in the working directory, finished or
    /// undone (each as a whole) before this session loaded anything; see
    /// [`xcsh_plugin_api::files`].
    pub fn recovered_applies(&self) -> &[xcsh_plugin_api::files::Recovered] {
        &self.recovered_applies
    }

    /// Every tool the model may call now, in registration order, with `resolve` last when it
    /// is registered (hidden tools included: they are still sent to the model). A reloaded
    /// plugin's tools are those of its new version.
    pub fn tools(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self.registry().specs().cloned().collect();
        if let Some((spec, _)) = self.resolve.get() {
            specs.push(spec.clone());
        }
        specs
    }

    /// How a call of tool `name` with `arguments` looks, for a host that draws calls while
    /// they run (xcsh's runtime): the tool's call view filled from the arguments, which may
    /// still be arriving ([`CallView::fill`](xcsh_plugin_api::view::CallView::fill)). `None`
    /// when no such tool is registered or it gives no call view (the host shows its label).
    /// Synchronous and in the host: no plugin code runs, in process or in a plugin process.
    pub fn call_status(
        &self,
        name: &str,
        arguments: &Value,
    ) -> Option<xcsh_plugin_api::view::Status> {
        let registry = self.registry();
        let view = registry.get(name)?.tool.call_view()?;
        Some(view.fill(arguments))
    }

    /// A number that moves on whenever [`Session::tools`] would answer differently (a
    /// reloaded plugin's tools changed): a client holding a copy of the tool list knows to
    /// fetch it again.
    pub fn tools_generation(&self) -> u64 {
        self.registry().generation
    }

    /// Whether `resolve` is registered (some tool is deferrable).
    pub fn has_resolve(&self) -> bool {
        self.resolve.get().is_some()
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

    /// Take the hidden steering messages queued since the last call (one per push; at most
    /// the newest 64 are kept for a runtime that does not take them).
    pub fn take_steering_messages(&self) -> Vec<SteeringMessage> {
        self.steering.take()
    }

    /// Call a tool with default options.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutcome {
        self.call_with(name, arguments, CallOptions::default())
            .await
    }

    /// Call a tool: check `arguments` against its schema, then run it, bounded by the
    /// options' cancellation and timeout. Failures are error outcomes, never panics.
    ///
    /// This is the one place every host's calls are checked (CLI, MCP, the Node binding, in
    /// process or in a plugin process): a `null` for an optional property whose schema refuses
    /// it is taken as the property left out (docs/guide/src/write.md, [`check_arguments`]),
    /// anything else the schema refuses is an error outcome and the tool does not run.
    pub async fn call_with(
        &self,
        name: &str,
        mut arguments: Value,
        options: CallOptions,
    ) -> ToolOutcome {
        let timeout = options.timeout.or(self.default_timeout);
        if name == RESOLVE_TOOL_NAME {
            if let Some((_, validator)) = self.resolve.get() {
                if let Err(message) = check_arguments(name, validator, &mut arguments) {
                    return ToolOutcome::error(message);
                }
                return match serde_json::from_value::<ResolveArgs>(arguments) {
                    Ok(args) => {
                        let ctx = self.action_context(
                            options.services.clone(),
                            options.cancel.clone(),
                            options.updates.clone(),
                        );
                        run_resolve(self.store.as_deref(), args, ctx, timeout).await
                    }
                    Err(error) => ToolOutcome::error(format!(
                        "Invalid arguments for tool \"{name}\": {error}"
                    )),
                };
            }
        }
        let registered = match self.tool_for_call(name).await {
            Ok(Some(registered)) => registered,
            Ok(None) => {
                let known = self.tools();
                let message = crate::messages::tool_not_found(
                    name,
                    &crate::messages::closest_names(name, known.iter().map(|t| t.name.as_str())),
                );
                return ToolOutcome::error(message);
            }
            Err(message) => return ToolOutcome::error(message),
        };
        let registered = match self.settled(name, registered).await {
            Ok(registered) => registered,
            Err(message) => return ToolOutcome::error(message),
        };
        let validator = match registered.validator() {
            Ok(validator) => validator,
            Err(message) => return ToolOutcome::error(message),
        };
        if let Err(message) = check_arguments(name, validator, &mut arguments) {
            return ToolOutcome::error(message);
        }
        let ctx = CallContext {
            cwd: self.cwd.clone(),
            store: self.sink.clone(),
            cancel: options.cancel.clone(),
            updates: options
                .updates
                .clone()
                .map(|updates| drawable_updates(updates, self.cwd.clone())),
            services: self
                .services
                .for_call_with(options.services.clone(), options.cancel.clone()),
        };
        let id = options
            .tool_call_id
            .unwrap_or_else(|| format!("call_{}", next_call_number()));
        let future = registered.tool.execute(id.clone(), arguments, ctx);
        let outcome = bounded(future, &options.cancel, timeout).await;
        if outcome.is_err() {
            options.cancel.cancel();
        }
        match outcome {
            Ok(Ok(result)) => ToolOutcome::success(drawable(result, &self.cwd)),
            Ok(Err(error)) => ToolOutcome::error(error.message()),
            Err(interrupted) => {
                let message = format!("Tool \"{name}\" {interrupted}");
                match registered.tool.interrupted(&id).await {
                    Some(note) => ToolOutcome::error(format!("{message}; {note}")),
                    None => ToolOutcome::error(message),
                }
            }
        }
    }
}

impl Session {
    /// `registered` (the tool called `name`), once its plugin's handshake was taken if it was
    /// registered from the definitions cache: then the tool as that handshake defines it
    /// (its arguments are checked against that schema), or an error naming it when the
    /// plugin no longer offers it.
    async fn settled(
        &self,
        name: &str,
        registered: Arc<registry::Registered>,
    ) -> Result<Arc<registry::Registered>, String> {
        let crate::tool::ToolOrigin::Plugin(path) = &registered.tool.spec().origin else {
            return Ok(registered);
        };
        if !self.settle_deferred(path).await? {
            return Ok(registered);
        }
        match self.registry().get(name) {
            Some(fresh) => Ok(Arc::clone(fresh)),
            None => Err(crate::messages::tool_withdrawn(name, path)),
        }
    }

    /// Answer plugins' host-service requests with `services` from now on (see
    /// [`SessionBuilder::host_services`]): for a host that learns what it can offer only once
    /// the session runs (an MCP client's declared capabilities, a runtime's user interface).
    /// Questions already open keep the services they were asked with.
    pub fn set_host_services(&self, services: Arc<dyn crate::services::HostServices>) {
        self.services.replace(services);
    }

    /// Tell every tool of a session event (docs/guide/src/ask.md `on_session`), each with its own
    /// earlier results, and wait until each has heard it (bounded by the session's default timeout,
    /// or 5 seconds). A Rust session sends none by itself: the embedder says when its session
    /// starts, switches, branches or ends ([`Session::shutdown`] sends `shutdown`).
    pub async fn session_event(&self, change: crate::services::SessionChange) {
        let limit = self.default_timeout.unwrap_or(Duration::from_secs(5));
        let tools: Vec<_> = self.registry().tools().collect();
        let heard = tools.iter().map(|tool| {
            let event = change.for_tool(&tool.spec().name);
            tool.on_session(event)
        });
        let all = futures_join_all(heard);
        if tokio::time::timeout(limit, all).await.is_err() {
            tracing::warn!("a tool did not finish hearing the session event within {limit:?}");
        }
    }

    /// The context an action's apply or reject gets when this session's embedder settles it
    /// itself (as the Node-API binding does): `services` answer its questions (the session's
    /// own when `None`), under the session's one-question-at-a-time rule; `cancel` ends it.
    pub fn action_context(
        &self,
        services: Option<Arc<dyn crate::services::HostServices>>,
        cancel: crate::tool::CancelToken,
        updates: Option<crate::tool::UpdateSink>,
    ) -> ActionContext {
        ActionContext {
            services: self.services.for_call_with(services, cancel.clone()),
            cancel,
            updates,
        }
    }

    /// End the session: every action still pending gets its `reject` callback, newest first,
    /// with the reason [`crate::messages::SESSION_ENDED`], so each action ever pushed gets
    /// exactly one of `apply` or `reject`. Each callback is bounded by the session's default
    /// timeout. Returns what each rejection gave, newest first (empty when nothing was
    /// pending). Calling it again finds nothing left to reject.
    pub async fn close(&self) -> Vec<ToolOutcome> {
        let mut outcomes = Vec::new();
        loop {
            // A discard through `resolve`, so the texts and details are `resolve`'s own.
            let args = ResolveArgs {
                action: crate::resolve::ResolveAction::Discard,
                reason: crate::messages::SESSION_ENDED.to_owned(),
            };
            // The session's own services answer what a reject asks while it closes.
            let ctx = self.action_context(None, crate::tool::CancelToken::new(), None);
            let outcome = run_resolve(self.store.as_deref(), args, ctx, self.default_timeout).await;
            if outcome.is_error && outcome.text() == crate::messages::NO_PENDING_ACTION {
                return outcomes;
            }
            outcomes.push(outcome);
        }
    }
}

/// Wait for every future, concurrently.
async fn futures_join_all<F: std::future::Future<Output = ()>>(futures: impl Iterator<Item = F>) {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    std::future::poll_fn(|cx| {
        set.retain_mut(|future| future.as_mut().poll(cx).is_pending());
        if set.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}

fn next_call_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

// Sessions are shared between tasks (the MCP server runs calls concurrently).
const _: fn() = || {
    fn check<T: Send + Sync>() {}
    check::<Session>();
};
