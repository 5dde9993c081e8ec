//! The sessions the commands build from their options: [`HostOptions`] (the command line's
//! session options, checked), the built-in tools every session gets, and the two checks that
//! come before anything runs: `--require-all-plugins`, and a tool name the session knows.

use std::path::PathBuf;

use xcsh_loader::render::sanitize;
use xcsh_loader::Session;

use crate::cli::{CwdArg, IdleArg, PluginArgs, SandboxArgs, SessionArgs};
use crate::error::CliError;

/// Options shared by every command that builds a session.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub plugins: Vec<PathBuf>,
    pub default_dirs: bool,
    /// Any load error ends the command before anything runs (`--require-all-plugins`).
    pub require_all: bool,
    /// Leave out the tools compiled into this program (`--no-builtins`).
    pub no_builtins: bool,
    pub cwd: PathBuf,
    pub isolation: xcsh_loader::Isolation,
    /// What plugin processes may do besides the defaults.
    pub sandbox: SandboxOptions,
    /// Reload plugin files that change while the session runs.
    pub reload: bool,
    /// Take isolated plugins' tool definitions from the cache (no `--no-cache`).
    pub definitions_cache: bool,
    /// `--stop-idle-after`, in order (the loader's default when empty).
    pub stop_idle_after: Vec<xcsh_loader::StopIdleAfter>,
}

/// The sandbox options of the command line (see docs/guide/src/isolation.md).
#[derive(Debug, Clone, Default)]
pub struct SandboxOptions {
    pub allow_write: Vec<PathBuf>,
    pub allow_read: Vec<PathBuf>,
    /// `--pass-env` names and prefixes.
    pub pass_env: Vec<String>,
    pub require: bool,
    /// `None`: the loader's default.
    pub memory_limit: Option<u64>,
    pub deny_network: bool,
}

impl SandboxOptions {
    fn from_args(args: &SandboxArgs) -> Self {
        SandboxOptions {
            allow_write: args
                .allow_write
                .iter()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone()))
                .collect(),
            allow_read: args
                .allow_read
                .iter()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone()))
                .collect(),
            pass_env: args.pass_env.clone(),
            require: args.require_sandbox,
            memory_limit: args.memory_limit,
            deny_network: args.deny_network,
        }
    }

    /// `builder` with these options.
    pub fn apply(&self, builder: xcsh_loader::SessionBuilder) -> xcsh_loader::SessionBuilder {
        let mut builder = builder
            .require_sandbox(self.require)
            .deny_network(self.deny_network);
        if let Some(limit) = self.memory_limit {
            builder = builder.memory_limit(Some(limit));
        }
        for path in &self.allow_write {
            builder = builder.allow_write(path);
        }
        for path in &self.allow_read {
            builder = builder.allow_read(path);
        }
        for name in &self.pass_env {
            builder = builder.pass_env(name);
        }
        builder
    }
}

impl HostOptions {
    /// The options of a command that loads plugins (`list`, `describe`, `call`, `mcp`).
    pub fn from_session(args: &SessionArgs, reload: bool) -> Result<Self, CliError> {
        let mut host = Self::place(&args.cwd, &args.sandbox)?;
        let PluginArgs {
            plugins,
            no_default_dirs,
            require_all_plugins,
            no_builtins,
        } = &args.plugins;
        host.no_builtins = *no_builtins;
        host.plugins.clone_from(plugins);
        host.default_dirs = !no_default_dirs;
        host.require_all = *require_all_plugins;
        host.reload = reload;
        host.definitions_cache = !args.cache.no_cache;
        Ok(host)
    }

    /// The options of a command that loads only the files it names (`check`): where the
    /// session runs and its sandbox.
    pub fn place(cwd: &CwdArg, sandbox: &SandboxArgs) -> Result<Self, CliError> {
        Ok(HostOptions {
            plugins: Vec::new(),
            default_dirs: false,
            require_all: false,
            no_builtins: false,
            cwd: session_cwd(cwd.cwd.clone())?,
            isolation: sandbox.isolation.unwrap_or_default(),
            sandbox: SandboxOptions::from_args(sandbox),
            reload: false,
            // `check` learns each plugin's tools from its process, every time.
            definitions_cache: false,
            stop_idle_after: Vec::new(),
        })
    }

    /// These options with `--stop-idle-after` (for the commands that keep a session open).
    pub fn stopping_idle(mut self, idle: &IdleArg) -> Self {
        self.stop_idle_after.clone_from(&idle.stop_idle_after);
        self
    }

    /// A session builder for these options, with the built-in tools.
    pub fn session(&self) -> xcsh_loader::SessionBuilder {
        let builder = Session::builder(&self.cwd)
            .default_dirs(self.default_dirs)
            .isolation(self.isolation)
            .reload_changed_plugins(self.reload)
            .definitions_cache(self.definitions_cache);
        let mut builder = self.sandbox.apply(builder);
        for setting in &self.stop_idle_after {
            builder = match &setting.plugin {
                Some(plugin) => builder.stop_idle_after_for(plugin, setting.after),
                None => builder.stop_idle_after(setting.after),
            };
        }
        for plugin in &self.plugins {
            builder = builder.plugin(plugin);
        }
        if self.no_builtins {
            builder
        } else {
            with_builtins(builder)
        }
    }

    /// Under `--require-all-plugins`, the load errors of `session` as the command's error
    /// (exit 1, every error named), before anything runs.
    pub fn require_all_loaded(&self, session: &Session) -> Result<(), CliError> {
        let errors = session.load_errors();
        if !self.require_all || errors.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = errors
            .iter()
            .map(|e| format!("  {}", sanitize(&e.to_string())))
            .collect();
        Err(CliError::Failure(format!(
            "{} plugin file(s) failed to load and --require-all-plugins is set; nothing was run:\n{}",
            errors.len(),
            lines.join("\n")
        )))
    }
}

/// Add the tools compiled into this host.
pub fn with_builtins(builder: xcsh_loader::SessionBuilder) -> xcsh_loader::SessionBuilder {
    #[cfg(feature = "ast-edit")]
    let builder = match xcsh_loader::ast_edit_tool() {
        Ok(tool) => builder.builtin(tool),
        Err(error) => {
            tracing::error!("the built-in ast_edit is unavailable: {error}");
            builder
        }
    };
    builder
}

/// The session's working directory: `--cwd`, which must be an existing directory, or the
/// process's own.
pub fn session_cwd(cwd: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let Some(dir) = cwd else {
        return std::env::current_dir()
            .map_err(|e| CliError::Failure(format!("cannot read the current directory: {e}")));
    };
    let canonical = dunce::canonicalize(&dir).map_err(|e| {
        let cause = match e.kind() {
            std::io::ErrorKind::NotFound => "no such directory".to_owned(),
            _ => e.to_string(),
        };
        CliError::Usage(format!("--cwd {}: {cause}", dir.display()))
    })?;
    if !canonical.is_dir() {
        return Err(CliError::Usage(format!(
            "--cwd {}: not a directory",
            dir.display()
        )));
    }
    Ok(canonical)
}

/// Refuse a tool the session does not have, before anything runs, naming the closest tools
/// it does have.
pub fn ensure_known(session: &Session, tool: &str) -> Result<(), CliError> {
    let tools = session.tools();
    if tools.iter().any(|spec| spec.name == tool) {
        return Ok(());
    }
    let closest = xcsh_loader::messages::closest_names(tool, tools.iter().map(|t| t.name.as_str()));
    let suggestion = xcsh_loader::messages::did_you_mean(&closest)
        .map(|s| s + " ")
        .unwrap_or_default();
    let message = match session.load_errors().len() {
        0 => format!(
            "unknown tool \"{tool}\": no loaded tool has that name; {suggestion}\
             `xcsh-plugins list` shows the tools"
        ),
        failed => format!(
            "unknown tool \"{tool}\": no loaded tool has that name, and {failed} plugin \
             file(s) failed to load; {suggestion}`xcsh-plugins list` shows the tools and the \
             load errors"
        ),
    };
    Err(CliError::Usage(message))
}
