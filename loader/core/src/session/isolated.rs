//! Starting one plugin library in a process of its own for a session, when the session is
//! built and again when a changed plugin file is reloaded: check and trust the file, start
//! the child on its checked content, then accept its handshake (the sandbox it got, the API
//! version it loaded, its tools).
//!
//! At build time a plugin whose definitions are in the definitions cache (see the
//! `definitions` module) gets every check but no process: its tools are registered from the
//! cache, and its child starts at the first call of one of them ([`Session::settle_deferred`]),
//! whose handshake then replaces the cached definitions if they differ.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::isolate::plugin::{
    ChildrenGone, Definitions, Handshake, IsolatedTool, Launch, PluginProcess, SessionLinks,
    Starting,
};
use crate::isolate::Isolation;
use crate::loading::discovery::Candidate;
use crate::loading::open::descriptor_for_child;
use crate::loading::{LoadError, LoadErrorKind};
use crate::sys::sandbox::Enforcement;
use crate::sys::sandbox::{EnclosingRepository, SandboxPolicy};

use super::builder::Loader;
use super::definitions::DefinitionsCache;
use super::{LoadedPlugin, Session};

/// What every plugin process of one session is started with.
pub(super) struct ProcessSettings {
    /// The `xcsh-plugin-host` executable, or why there is none.
    pub(super) host: Result<PathBuf, String>,
    /// Its writable directories include the working directory (and, in each child's copy,
    /// the private temporary directory).
    pub(super) sandbox: SandboxPolicy,
    /// The repository the working directory is in, whose reads `sandbox` holds: what a
    /// refused write there is explained by.
    pub(super) repository: Option<Arc<EnclosingRepository>>,
    /// The private temporary directory and home, made for the first child (see
    /// [`PrivateDirs`]).
    pub(super) private: std::sync::OnceLock<PrivateDirs>,
    /// Refuse a child whose sandbox is not in force instead of warning.
    pub(super) require_sandbox: bool,
    pub(super) cwd: PathBuf,
    /// Where the session's pushes and plugin log lines go.
    pub(super) links: SessionLinks,
    /// Where handshakes are remembered; `None` when the session uses no cache
    /// ([`super::SessionBuilder::definitions_cache`], or nothing can be cached).
    pub(super) definitions: Option<DefinitionsCache>,
    /// When each plugin's idle process is stopped.
    pub(super) idle: super::idle_policy::IdlePolicy,
    /// Where project-plugin trust is read from when a plugin is started again (a reload).
    pub(super) home: Option<PathBuf>,
}

/// The session's private temporary directory (0700, each child's `TMPDIR`, removed with the
/// session) and the private home in it ([`crate::sys::program_home`]). Made when the first
/// plugin is about to be started, not with the session: a session with no plugin to run in
/// a process (none found, only the built-in `ast_edit`) makes no directory and reads nothing
/// of the home's toolchains.
pub(super) struct PrivateDirs {
    /// The directory, removed when this is dropped; `None` when it could not be made.
    dir: Option<tempfile::TempDir>,
    /// The private home's variables (`HOME`, `CARGO_HOME`, ...), set for each child.
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// The toolchain directories the children may read.
    readable: Vec<PathBuf>,
}

impl PrivateDirs {
    fn make() -> Self {
        let mut builder = tempfile::Builder::new();
        builder.prefix("xcsh-plugins-");
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let dir = builder
            .tempdir()
            .inspect_err(|error| {
                tracing::warn!(
                    "cannot create a private temporary directory for plugin processes: {error}"
                );
            })
            .ok();
        #[cfg(unix)]
        let (env, readable) = {
            let home = match (&dir, std::env::home_dir()) {
                (Some(private), Some(home)) => {
                    crate::sys::program_home::prepare(&home, private.path())
                        .inspect_err(|error| {
                            tracing::warn!(
                                "cannot prepare the private home of plugin processes: {error}"
                            );
                        })
                        .ok()
                }
                _ => None,
            };
            home.map_or_else(Default::default, |home| (home.env, home.readable))
        };
        // No private home where no sandbox keeps the real one unreadable (Windows): it
        // would protect nothing there.
        #[cfg(not(unix))]
        let (env, readable) = (Vec::new(), Vec::new());
        Self { dir, env, readable }
    }

    fn path(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.path().to_owned())
    }
}

/// A plugin being started: its child, or its definitions from the cache.
pub(super) enum Started {
    /// A child was started; its handshake is remembered under the key, if any.
    Child(Box<Starting>, Option<String>),
    /// Nothing was started: the definitions cached under the key.
    Cached {
        process: PluginProcess,
        tools: Vec<IsolatedTool>,
        definitions: Definitions,
        key: String,
    },
}

/// A plugin whose child started and passed the handshake, or whose cached definitions passed
/// the same checks.
pub(super) struct Accepted {
    pub(super) plugin: LoadedPlugin,
    pub(super) tools: Vec<IsolatedTool>,
    /// What ends when its processes have exited; `None` when it offers no tool.
    pub(super) children: Option<ChildrenGone>,
    /// Registered from the cache: its child has not started yet.
    pub(super) deferred: Option<Deferred>,
}

/// A plugin registered from the definitions cache, until its first child's handshake was
/// taken.
pub(super) struct Deferred {
    pub(super) process: PluginProcess,
    /// What was registered.
    pub(super) definitions: Definitions,
    /// Its key in the definitions cache (`None`: the session uses none).
    pub(super) key: Option<String>,
    /// Set once the handshake was taken (held while it is being taken).
    pub(super) settled: tokio::sync::Mutex<bool>,
}

impl ProcessSettings {
    /// Check the candidate (and its trust) and start its child, without waiting for it; or,
    /// with `use_cache` and its definitions in the cache, take those and start nothing.
    pub(super) fn start(
        &self,
        loader: &mut Loader,
        candidate: &Candidate,
        errors: &mut Vec<LoadError>,
        use_cache: bool,
    ) -> Result<Started, LoadError> {
        let file = loader.check(candidate, errors)?;
        // Headers and version marker: checked whether or not anything starts.
        let descriptor = descriptor_for_child(&file)?;
        let host_binary = self
            .host
            .clone()
            .map_err(|cause| LoadError::new(file.path(), LoadErrorKind::PluginProcess { cause }))?;
        // Readable besides the session's paths: the plugin's own directory (its file, and
        // what it ships beside it) and the host executable.
        let private = self.private.get_or_init(PrivateDirs::make);
        let temp_dir = private.path();
        let mut sandbox = self.sandbox.clone();
        sandbox
            .readable
            .extend(file.path().parent().map(Path::to_path_buf));
        sandbox.readable.push(host_binary.clone());
        sandbox.writable.extend(temp_dir.clone());
        sandbox.readable.extend(private.readable.iter().cloned());
        let key = self.definitions.as_ref().map(|cache| cache.key(&file));
        let launch = Launch {
            host_binary,
            path: file.path().to_owned(),
            descriptor: Arc::new(descriptor),
            cwd: self.cwd.clone(),
            links: self.links.clone(),
            sandbox,
            repository: self.repository.clone(),
            temp_dir,
            program_env: private.env.clone(),
            stop_idle_after: self.idle.for_plugin(file.path()),
            cache_key: key.clone(),
        };
        let cached = key
            .as_ref()
            .filter(|_| use_cache)
            .zip(self.definitions.as_ref())
            .and_then(|(key, cache)| cache.get(key));
        if let (Some(definitions), Some(key)) = (cached, key.clone()) {
            let (process, tools) = crate::isolate::plugin::deferred(launch, &file, &definitions);
            return Ok(Started::Cached {
                process,
                tools,
                definitions,
                key,
            });
        }
        let starting = crate::isolate::plugin::start(launch, &file)?;
        Ok(Started::Child(Box::new(starting), key))
    }

    /// Wait for a started child's handshake (or take the cached one) and accept it: see
    /// [`Self::admit`]. A child's handshake is then remembered in the cache.
    pub(super) fn accept(&self, started: Started) -> Result<Accepted, LoadError> {
        match started {
            Started::Child(starting, key) => {
                let path = starting.path().to_owned();
                let Handshake { definitions, tools } = starting.finish()?;
                let plugin = self.admit(&path, &definitions)?;
                if let (Some(cache), Some(key)) = (&self.definitions, key) {
                    cache.put(&key, &definitions);
                }
                Ok(Accepted {
                    children: tools.first().map(IsolatedTool::children_gone),
                    plugin,
                    tools,
                    deferred: None,
                })
            }
            Started::Cached {
                process,
                tools,
                definitions,
                key,
            } => {
                let plugin = self.admit(process.path(), &definitions)?;
                // Without tools nothing will ever call it, so nothing will ever start.
                let callable = !tools.is_empty();
                Ok(Accepted {
                    plugin,
                    tools,
                    children: callable.then(|| process.children_gone()),
                    deferred: callable.then(|| Deferred {
                        process,
                        definitions,
                        key: Some(key),
                        settled: tokio::sync::Mutex::new(false),
                    }),
                })
            }
        }
    }

    /// Whether a plugin may run with what its handshake reported: its sandbox must be in
    /// force (or only warned about), and the API version it reports must parse. The plugin
    /// as the session lists it.
    fn admit(&self, path: &Path, definitions: &Definitions) -> Result<LoadedPlugin, LoadError> {
        let Definitions {
            api_version,
            confinement,
            ..
        } = definitions;
        let confined = confinement
            .as_ref()
            .is_some_and(|c| matches!(c.filesystem, Enforcement::Full | Enforcement::Partial));
        if !confined {
            if self.require_sandbox {
                // Dropping its tools stops the process.
                return Err(LoadError::new(
                    path,
                    LoadErrorKind::SandboxRequired { in_process: false },
                ));
            }
            tracing::warn!("{}", crate::messages::sandbox_unavailable_warning(path));
        }
        // The parent checked the marker before the child started; the child reports what it
        // loaded.
        let Some(api_version) = xcsh_plugin_api::ffi::ApiVersion::parse(api_version) else {
            return Err(LoadError::new(
                path,
                LoadErrorKind::IncompatibleAbi {
                    cause: format!("its plugin process reported API version {api_version:?}"),
                },
            ));
        };
        Ok(LoadedPlugin {
            path: path.to_owned(),
            api_version,
            isolation: Isolation::Process,
            sandbox: confinement.clone(),
        })
    }

    /// Check, start and accept one plugin, blocking until its handshake (or failure).
    pub(super) fn start_and_accept(
        &self,
        loader: &mut Loader,
        candidate: &Candidate,
    ) -> Result<Accepted, LoadError> {
        // A problem with the trust file itself is the error of this load.
        let mut errors = Vec::new();
        let started = self.start(loader, candidate, &mut errors, false);
        if let Some(error) = errors.into_iter().next() {
            return Err(error);
        }
        self.accept(started?)
    }
}

/// The plugins whose child has not started yet (registered from the definitions cache) or
/// was stopped while idle, by path: their next call takes the new child's handshake
/// ([`Session::settle_deferred`]).
pub(super) type DeferredPlugins =
    Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<Deferred>>>>;

/// What a plugin process tells the session when it stopped an idle child: the plugin is
/// deferred again, with the definitions it was registered with. Holds the session's map
/// weakly (the map holds the plugins, which hold this).
pub(super) fn on_idle_stop(deferred: &DeferredPlugins) -> crate::isolate::plugin::IdleStopped {
    let deferred = Arc::downgrade(deferred);
    Arc::new(move |process: PluginProcess, definitions: Definitions| {
        let Some(deferred) = deferred.upgrade() else {
            return;
        };
        let entry = Deferred {
            key: process.cache_key().map(str::to_owned),
            definitions,
            settled: tokio::sync::Mutex::new(false),
            process,
        };
        super::lock(&deferred).insert(entry.process.path().to_owned(), Arc::new(entry));
    })
}

impl Session {
    /// Before a call of a tool of the plugin at `path`: if the plugin was registered from the
    /// definitions cache, or its process was stopped while idle, and its (new) handshake was
    /// not taken yet, start its child and take it.
    /// When it reports other definitions than were registered, they replace the registered
    /// ones (the tools generation moves on when the tools changed) and the cache entry.
    /// Returns whether the plugin was settled by this call; `Err` is the call's answer (the
    /// child could not start, or may not run), and the next call tries again.
    pub(super) async fn settle_deferred(&self, path: &Path) -> Result<bool, String> {
        let deferred = {
            let all = super::lock(&self.deferred);
            // Every call of a plugin tool comes here: with nothing deferred (in process, or
            // once each plugin settled) no path is hashed.
            if all.is_empty() {
                return Ok(false);
            }
            all.get(path).cloned()
        };
        let Some(deferred) = deferred else {
            return Ok(false);
        };
        let mut settled = deferred.settled.lock().await;
        if *settled {
            return Ok(false);
        }
        let fresh = deferred.process.handshake().await?;
        *settled = true;
        {
            let mut all = super::lock(&self.deferred);
            if all.get(path).is_some_and(|d| Arc::ptr_eq(d, &deferred)) {
                all.remove(path);
            }
        }
        if fresh == deferred.definitions {
            return Ok(true);
        }
        let settings = self.watch.processes.clone();
        let admitted = match settings.as_deref() {
            Some(settings) => settings.admit(path, &fresh),
            None => Err(LoadError::new(
                path,
                LoadErrorKind::PluginProcess {
                    cause: "this session starts no plugin processes".to_owned(),
                },
            )),
        };
        let (plugin, tools) = match admitted {
            Ok(plugin) => {
                if let (Some(cache), Some(key)) = (
                    settings.as_ref().and_then(|s| s.definitions.as_ref()),
                    &deferred.key,
                ) {
                    cache.put(key, &fresh);
                }
                (plugin, deferred.process.tools(&fresh.tools))
            }
            Err(error) => {
                // Its tools go: the process may not run them.
                if let Some(plugin) = self.plugins().into_iter().find(|p| p.path == path) {
                    self.replace_plugin(plugin, Vec::new(), None);
                }
                return Err(error.to_string());
            }
        };
        tracing::info!(
            "plugin {} reports other tool definitions than were registered; its handshake's \
             replace them",
            path.display()
        );
        let tools = tools
            .into_iter()
            .map(|tool| Arc::new(tool) as Arc<dyn crate::tool::Tool>)
            .collect();
        let (errors, _changed) = self.replace_plugin(plugin, tools, None);
        for error in errors {
            tracing::warn!("{error}");
        }
        Ok(true)
    }
}
