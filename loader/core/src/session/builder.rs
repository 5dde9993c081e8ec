//! [`SessionBuilder`]: where a session finds its plugins, whether it has a store, its
//! built-in tools; and the per-session loading of plugins (check, trust, load the checked
//! bytes, instantiate, register).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::isolate::find_plugin_host;
use crate::isolate::Isolation;
use crate::loading::discovery::{Candidate, CandidateSource, Discovery};
use crate::loading::safety::FileStamp;
use crate::loading::trust::{TrustStatus, TrustStore};
use crate::loading::{CheckedFile, LoadError, LoadErrorKind};
use crate::plugin_abi::InProcessDefinitions;
use crate::plugin_log::PluginLogSink;
use crate::resolve::steering::{SteeringMessage, SteeringQueue};
use crate::store::{PendingActionSink, PendingActionStore};
use crate::sys::sandbox::EnclosingRepository;
use crate::sys::sandbox::{SandboxPolicy, DEFAULT_MAX_OPEN_FILES, DEFAULT_MEMORY_LIMIT};
use crate::tool::Tool;

use super::definitions::DefinitionsCache;
use super::isolated::ProcessSettings;
use super::reload::Watch;
use super::Session;

/// Called with each plugin's path after it was checked and read, right before its bytes are
/// loaded (tests use it to swap the file at that moment).
type AfterCheckHook = Arc<dyn Fn(&Path) + Send + Sync>;

/// Builds a [`Session`]: where to find plugins, whether there is a store, built-in tools.
pub struct SessionBuilder {
    cwd: PathBuf,
    discovery: Discovery,
    with_store: bool,
    /// The embedder's store, when pushes go there instead of to a store of the session's.
    external_sink: Option<Arc<dyn PendingActionSink>>,
    /// Where plugins' log lines go instead of `tracing`.
    plugin_log: Option<PluginLogSink>,
    builtins: Vec<Arc<dyn Tool>>,
    default_timeout: Option<Duration>,
    after_check: Option<AfterCheckHook>,
    isolation: Isolation,
    plugin_host: Option<PathBuf>,
    inline_calls: bool,
    /// The plugin processes' sandbox, except their writable directories, which are the
    /// session's working directory, its private temporary directory and these.
    sandbox: SandboxPolicy,
    require_sandbox: bool,
    /// Pick up plugin files that change while the session runs.
    reload: bool,
    /// Register isolated plugins from the definitions cache when it has them.
    definitions_cache: bool,
    /// When idle plugin processes are stopped.
    idle: super::idle_policy::IdlePolicy,
    /// What the host offers plugins' calls: a user, a model (none by default).
    services: crate::services::SessionServices,
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
            external_sink: None,
            plugin_log: None,
            builtins: Vec::new(),
            default_timeout: None,
            after_check: None,
            isolation: Isolation::default(),
            plugin_host: None,
            inline_calls: false,
            sandbox: SandboxPolicy {
                writable: Vec::new(),
                readable: Vec::new(),
                listable: Vec::new(),
                pass_env: Vec::new(),
                deny_network: false,
                memory_limit: Some(DEFAULT_MEMORY_LIMIT),
                max_open_files: Some(DEFAULT_MAX_OPEN_FILES),
                max_processes: None,
            },
            require_sandbox: false,
            reload: true,
            definitions_cache: true,
            idle: super::idle_policy::IdlePolicy::default(),
            services: crate::services::SessionServices::default(),
        }
    }

    /// What this host offers plugins besides the store (docs/guide/src/ask.md): a user to ask,
    /// where notifications go, the session's model. Without it no one can answer (`has_ui()` is
    /// false, questions get their defaults) and `complete` fails with
    /// [`NO_MODEL`](crate::services::NO_MODEL).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use xcsh_loader_core::services::{HostReply, HostRequest, HostServices};
    /// use xcsh_loader_core::store::BoxFuture;
    /// use xcsh_loader_core::{Session, PluginError};
    ///
    /// /// A user who says yes to everything.
    /// struct AlwaysYes;
    /// impl HostServices for AlwaysYes {
    ///     fn has_ui(&self) -> bool { true }
    ///     fn ask(&self, _question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
    ///         Box::pin(async { Ok(HostReply::Confirmed { yes: true }) })
    ///     }
    /// }
    ///
    /// let session = Session::builder(".").default_dirs(false).host_services(Arc::new(AlwaysYes)).build();
    /// # drop(session);
    /// ```
    #[must_use]
    pub fn host_services(mut self, services: Arc<dyn crate::services::HostServices>) -> Self {
        self.services = crate::services::SessionServices::new(services);
        self
    }

    /// Under process isolation, stop a plugin's process once it has been idle this long
    /// (default [`DEFAULT_STOP_IDLE_AFTER`](super::DEFAULT_STOP_IDLE_AFTER), 30 seconds;
    /// `None` never stops one). Idle means: no call of its tools running, no `apply` or
    /// `reject` running, and no pending action it pushed still unresolved. The next call of
    /// one of its tools starts a new process, whose handshake is taken as for a plugin
    /// registered from the definitions cache (other definitions replace the registered ones).
    /// A stop is never counted as a crash; a plugin that called
    /// `CustomToolApi::keep_alive(true)` is not stopped. In-process nothing is stopped.
    #[must_use]
    pub fn stop_idle_after(mut self, after: Option<Duration>) -> Self {
        self.idle.set_default(after);
        self
    }

    /// [`Self::stop_idle_after`] for one plugin: the plugin files named `plugin` (a file name
    /// such as `libfoo.so`), or the one at that path (when `plugin` holds a path separator).
    /// Overrides the session's idle time; the last setting for a plugin wins.
    #[must_use]
    pub fn stop_idle_after_for(mut self, plugin: &str, after: Option<Duration>) -> Self {
        self.idle.set_for(plugin, after);
        self
    }

    /// Use the user's cache of plugins' tool definitions (default: yes). In-process, a plugin
    /// whose definitions are cached (for this very file, host build, working directory, and
    /// store or none) is checked and loaded at build time, but its factory runs at the first
    /// call of one of its tools (a tool it no longer defines then fails with
    /// [`crate::messages::tool_no_longer_defined`], and the entry is rewritten); on a miss the
    /// factory runs at build time and its definitions are remembered. Under process
    /// isolation, a plugin whose definitions are cached (for this very file, host build, working
    /// directory and sandbox) passes every check at build time but starts no process: its
    /// tools are registered from the cache, and its process starts at the first call of one
    /// of them, whose handshake is authoritative (other definitions replace the cached ones,
    /// and [`Session::tools_generation`] moves on when the tools changed). On a miss every
    /// plugin's process starts at build time, as before, and its handshake is remembered
    /// (reloads too). Off, the cache is neither read nor written. It lives under
    /// `$XCSH_CACHE_DIR`, else `$XDG_CACHE_HOME/xcsh-plugins`, else `~/.cache/xcsh-plugins`.
    #[must_use]
    pub fn definitions_cache(mut self, use_cache: bool) -> Self {
        self.definitions_cache = use_cache;
        self
    }

    /// Reload a plugin whose file changes while the session runs (default: yes). Under process
    /// isolation its new content is checked again and served by a new process on the next
    /// call of its tools (or at [`Session::reload`]); in-process a change is only reported.
    /// Off, each plugin runs the content checked at build time for the whole session.
    #[must_use]
    pub fn reload_changed_plugins(mut self, reload: bool) -> Self {
        self.reload = reload;
        self
    }

    /// Let plugin processes write under `path` too (besides the working directory and their
    /// private temporary directory). Repeatable. No effect in-process (no sandbox there).
    pub fn allow_write(mut self, path: impl Into<PathBuf>) -> Self {
        self.sandbox.writable.push(path.into());
        self
    }

    /// Let plugin processes read under `path` too (besides the system's directories, the
    /// working directory, the plugin's own directory, their private temporary directory and
    /// the [`Self::allow_write`] paths; everything else, the user's home first, is refused).
    /// Repeatable. No effect in-process (no sandbox there).
    pub fn allow_read(mut self, path: impl Into<PathBuf>) -> Self {
        self.sandbox.readable.push(path.into());
        self
    }

    /// Pass the host's environment variable `name` to plugin processes (besides `PATH`,
    /// `HOME`, `USER`, `LANG`, `LC_*`, `TERM`, `TZ`, and the `TMPDIR` the loader sets); a
    /// trailing `*` passes every variable with that prefix (`MYTOOL_*`). Repeatable. No effect
    /// in-process (a plugin there shares the host's environment).
    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        self.sandbox.pass_env.push(name.into());
        self
    }

    /// Refuse to load a plugin whose process cannot be sandboxed (a kernel without Landlock)
    /// instead of warning (default: warn).
    pub fn require_sandbox(mut self, require: bool) -> Self {
        self.require_sandbox = require;
        self
    }

    /// The address-space limit of each plugin process, in bytes (default
    /// [`DEFAULT_MEMORY_LIMIT`], 4 GiB; `None` keeps the host's own limit).
    pub fn memory_limit(mut self, bytes: Option<u64>) -> Self {
        self.sandbox.memory_limit = bytes;
        self
    }

    /// The open-descriptor limit of each plugin process (default
    /// [`DEFAULT_MAX_OPEN_FILES`]; `None` keeps the host's own limit).
    pub fn max_open_files(mut self, limit: Option<u64>) -> Self {
        self.sandbox.max_open_files = limit;
        self
    }

    /// `RLIMIT_NPROC` for each plugin process (default: unset). The kernel counts it over
    /// all of the user's processes and threads, and root is exempt: set it well above what
    /// the user already runs.
    pub fn max_processes(mut self, limit: Option<u64>) -> Self {
        self.sandbox.max_processes = limit;
        self
    }

    /// Deny plugin processes every socket but a Unix stream pair: no TCP, UDP, raw, packet or
    /// netlink socket, and no connection to a pathname or abstract Unix socket (a seccomp
    /// filter, with Landlock's TCP rules as a further layer; reported as partly enforced or
    /// not enforced where the kernel lacks them).
    pub fn deny_network(mut self, deny: bool) -> Self {
        self.sandbox.deny_network = deny;
        self
    }

    /// Where plugin code runs (default: [`Isolation::Process`] on Linux, macOS and Windows, where it is
    /// available; elsewhere a request for it falls back to in-process, with a warning).
    #[must_use]
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// The `xcsh-plugin-host` executable for process isolation (default: `$XCSH_PLUGIN_HOST`,
    /// or the one next to the running executable).
    #[must_use]
    pub fn plugin_host(mut self, path: impl Into<PathBuf>) -> Self {
        self.plugin_host = Some(path.into());
        self
    }

    /// In-process mode only: poll plugin futures on the caller's task, as a plain `await`
    /// would (lowest latency), instead of on a blocking-pool thread of their own. Blocking
    /// plugin code then blocks the caller's thread, and a timeout cannot return before it
    /// yields. Default: off.
    #[must_use]
    pub fn inline_plugin_calls(mut self, inline: bool) -> Self {
        self.inline_calls = inline;
        self
    }

    /// Load this plugin file, or every plugin in this directory (searched before the defaults).
    /// A relative path is taken relative to the process's current directory, now, like any
    /// path a program is given; the session's working directory plays no part in it.
    #[must_use]
    pub fn plugin(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        self.discovery
            .explicit
            .push(std::path::absolute(&path).unwrap_or(path));
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

    /// Run without a pending-action store: pushes fail with [`crate::STORE_UNAVAILABLE`].
    #[must_use]
    pub fn without_store(mut self) -> Self {
        self.with_store = false;
        self.external_sink = None;
        self
    }

    /// Send every pending action the session's tools push to `sink` (the store of the runtime
    /// embedding this session, such as a TypeScript runtime's through the Node-API binding)
    /// instead of to a store of the session's own. The session then has no store of its own
    /// ([`Session::store`] is `None`), registers no `resolve` (the embedder resolves), and a
    /// push `sink` refuses fails in the plugin with the refusal's message. Under process
    /// isolation each push waits for `sink`'s answer before the plugin goes on, so a call
    /// ends only after its pushes reached `sink`, in push order.
    #[must_use]
    pub fn pending_actions_to(mut self, sink: Arc<dyn PendingActionSink>) -> Self {
        self.with_store = false;
        self.external_sink = Some(sink);
        self
    }

    /// Send what plugins log (and, under process isolation, what their processes print, at
    /// [`PluginLogLevel::Warn`](crate::plugin_log::PluginLogLevel::Warn)) to `sink`, with the
    /// plugin's file, instead of to `tracing`.
    #[must_use]
    pub fn plugin_log(mut self, sink: PluginLogSink) -> Self {
        self.plugin_log = Some(sink);
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
    /// before its bytes are loaded, while the session is built (not on reloads).
    #[doc(hidden)]
    #[must_use]
    pub fn after_check(mut self, hook: impl Fn(&Path) + Send + Sync + 'static) -> Self {
        self.after_check = Some(Arc::new(hook));
        self
    }

    /// Finish or undo any apply a killed process left in the working directory
    /// ([`Session::recovered_applies`]), then discover and load plugins, instantiate their
    /// tools, and build the session. Every load problem is collected in
    /// [`Session::load_errors`]; loading goes on with the next file.
    pub fn build(mut self) -> Session {
        // Before any tool runs or any plugin is loaded: the tree as a whole, old or new.
        let recovered_applies = crate::recovery::recover_interrupted_applies(&self.cwd);
        let store = self.with_store.then(|| Arc::new(PendingActionStore::new()));
        let steering = Arc::new(SteeringQueue::default());
        let reminders = store.as_ref().map(|store| {
            let queue = Arc::clone(&steering);
            store.subscribe_push(move |action, _count| {
                queue.push(SteeringMessage::resolve_reminder(&action.source_tool_name));
            })
        });
        let sink = match (&store, self.external_sink.take()) {
            (Some(store), _) => Some(Arc::clone(store) as Arc<dyn PendingActionSink>),
            (None, external) => external,
        };
        let mut session = Session {
            cwd: self.cwd.clone(),
            store,
            sink,
            registry: Default::default(),
            resolve: OnceLock::new(),
            load_errors: Vec::new(),
            recovered_applies,
            plugins: Default::default(),
            steering,
            _reminders: reminders,
            default_timeout: self.default_timeout,
            services: self.services.clone(),
            watch: Watch::default(),
            children: Default::default(),
            deferred: Default::default(),
        };
        for tool in std::mem::take(&mut self.builtins) {
            if let Err(error) = session.register(tool) {
                session.load_errors.push(error);
            }
        }
        let (candidates, errors) = self.discovery.candidates();
        session.load_errors.extend(errors);
        let mut loader = Loader::new(
            self.discovery.home.clone(),
            self.after_check.clone(),
            self.inline_calls,
        );
        loader.plugin_log = self.plugin_log.clone();
        loader.plugin_host = self.plugin_host.clone();
        let isolation = self.isolation;
        // Each file as it is before it is checked: a change after this is reloaded.
        let reload = self.reload;
        let watch = |session: &mut Session, candidate: &Candidate| {
            if reload {
                session
                    .watch
                    .add(candidate, isolation, FileStamp::of_path(&candidate.path));
            }
        };
        match isolation {
            Isolation::Process => {
                let settings = Arc::new(self.process_settings(&mut session));
                // Every child starts before the first handshake is awaited: they load in
                // parallel.
                let started: Vec<_> = candidates
                    .iter()
                    .map(|candidate| {
                        watch(&mut session, candidate);
                        settings.start(&mut loader, candidate, &mut session.load_errors, true)
                    })
                    .collect();
                for starting in started {
                    match starting.and_then(|starting| settings.accept(starting)) {
                        Ok(accepted) => session.add_isolated(accepted),
                        Err(error) => session.load_errors.push(error),
                    }
                }
                session.watch.processes = Some(settings);
            }
            Isolation::InProcess => {
                loader.in_process_definitions = self
                    .definitions_cache
                    .then(|| {
                        InProcessDefinitions::for_session(&session.cwd, session.sink.is_some())
                    })
                    .flatten();
                for candidate in candidates {
                    if self.require_sandbox {
                        // In-process there is no sandbox to require.
                        session.load_errors.push(LoadError::new(
                            &candidate.path,
                            LoadErrorKind::SandboxRequired { in_process: true },
                        ));
                        continue;
                    }
                    watch(&mut session, &candidate);
                    session.load_plugin(&candidate, &mut loader);
                }
            }
        }
        session.register_resolve_if_needed();
        session
    }

    /// How this session's plugin processes start: the host executable, and the sandbox,
    /// whose writable directories are the working directory, those of [`Self::allow_write`]
    /// and a private temporary directory (made for the first child: see
    /// [`super::isolated::PrivateDirs`]). The one place the sandbox's reads of the enclosing
    /// repository are decided (every host builds its session here): what git, cargo and npm
    /// read above the working directory ([`EnclosingRepository`]), read-only unless an
    /// [`Self::allow_write`] path holds it.
    fn process_settings(&self, session: &mut Session) -> ProcessSettings {
        let mut sandbox = self.sandbox.clone();
        sandbox.writable.insert(0, session.cwd.clone());
        let repository = EnclosingRepository::find(&session.cwd);
        if let Some(repository) = &repository {
            // Said at debug only: a session under a home that is a dotfiles repository
            // would hear it every time; `check` shows it.
            if let Some(why) = &repository.withheld {
                tracing::debug!(
                    "the enclosing repository {} is not readable by plugin processes: {why}",
                    repository.root.display()
                );
            }
            sandbox
                .readable
                .extend(repository.readable().map(Path::to_path_buf));
            sandbox.listable.extend(repository.listable.clone());
        }
        let host = find_plugin_host(self.plugin_host.as_ref());
        // Keyed on the sandbox without the temporary directory, which is new in each session.
        let definitions = host
            .as_ref()
            .ok()
            .filter(|_| self.definitions_cache)
            .and_then(|host| {
                DefinitionsCache::for_session(host, &session.cwd, &sandbox, session.sink.is_some())
            });
        let idle_stopped = super::isolated::on_idle_stop(&session.deferred);
        ProcessSettings {
            host,
            definitions,
            idle: self.idle.clone(),
            home: self.discovery.home.clone(),
            sandbox,
            repository: repository.map(Arc::new),
            private: std::sync::OnceLock::new(),
            require_sandbox: self.require_sandbox,
            cwd: session.cwd.clone(),
            links: crate::isolate::plugin::SessionLinks {
                store: session.sink.clone(),
                log: self.plugin_log.clone(),
                idle_stopped: Some(idle_stopped),
            },
        }
    }
}

/// What loading plugins for one session needs besides the candidates: the trust file (read
/// once, when the first project-local plugin comes up) and the test hook.
pub(super) struct Loader {
    home: Option<PathBuf>,
    /// `None` until needed; `Some(None)` when there is no usable trust file.
    trust: Option<Option<TrustStore>>,
    after_check: Option<AfterCheckHook>,
    /// See [`SessionBuilder::inline_plugin_calls`].
    pub(super) inline_calls: bool,
    /// See [`SessionBuilder::plugin_log`].
    pub(super) plugin_log: Option<PluginLogSink>,
    /// Where in-process plugins' tool definitions are cached, so their factories run at their
    /// first call (`None`: each factory runs at build; see [`SessionBuilder::definitions_cache`]).
    pub(super) in_process_definitions: Option<InProcessDefinitions>,
    /// The plugin host that loads a file first, before it is opened in this process
    /// ([`SessionBuilder::plugin_host`]; found as for process isolation when `None`).
    pub(super) plugin_host: Option<PathBuf>,
}

impl Loader {
    /// A loader reading the trust file under `home` when it first needs it.
    pub(super) fn new(
        home: Option<PathBuf>,
        after_check: Option<AfterCheckHook>,
        inline_calls: bool,
    ) -> Self {
        Self {
            home,
            trust: None,
            after_check,
            inline_calls,
            plugin_log: None,
            in_process_definitions: None,
            plugin_host: None,
        }
    }

    /// What loads a file elsewhere before this process maps it for the first time: a
    /// throwaway plugin process (by [`SessionBuilder::plugin_host`]'s program).
    pub(super) fn probe(&self) -> impl crate::loading::Probe {
        crate::isolate::probe::ProcessProbe {
            host: self.plugin_host.clone(),
        }
    }

    /// Check and open the candidate, and require trust for a project-local one: the file a
    /// library may be loaded from (in this process or in a plugin child).
    pub(super) fn check(
        &mut self,
        candidate: &Candidate,
        errors: &mut Vec<LoadError>,
    ) -> Result<CheckedFile, LoadError> {
        let file = CheckedFile::read(&candidate.path)?;
        if candidate.source == CandidateSource::Project {
            let status = match self.trust_store(errors) {
                Some(store) => store.status_of(&file)?,
                None => TrustStatus::Untrusted,
            };
            if status != TrustStatus::Trusted {
                return Err(LoadError::new(
                    file.path().to_owned(),
                    LoadErrorKind::Untrusted {
                        changed: status == TrustStatus::Changed,
                    },
                ));
            }
        }
        if let Some(hook) = &self.after_check {
            hook(file.path());
        }
        Ok(file)
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
