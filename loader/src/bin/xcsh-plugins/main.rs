//! `xcsh-plugins`: the command-line host for xcsh native plugins.
//!
//! It loads plugins like an agent runtime would (explicit `--plugin` paths, then the project's
//! and the user's tool directories), lists them, and runs one tool call in a fresh session,
//! finishing any pending action it leaves with an explicit decision.
//!
//! The binary is a thin layer over the library: each command computes a plain report
//! (`report`) from `xcsh_loader`'s public API and hands it to `output`, the one place that
//! writes text or `--json`. A command that cannot produce a report returns a [`CliError`],
//! which `main` reports once. Exit codes are the README's: 0 success, 1 a tool error, a
//! failed resolve or a load problem, 2 bad usage.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod call;
mod check;
mod decide;
mod demo;
mod error;
mod list;
#[cfg(feature = "mcp")]
mod mcp;
mod new;
mod output;
mod report;
mod trust;

use error::CliError;
use output::{Output, Text};
use report::Report;

/// Load, inspect and run xcsh native tool plugins.
#[derive(Debug, Parser)]
#[command(name = "xcsh-plugins", version, about)]
struct Cli {
    /// A plugin file, or a directory of plugins (repeatable; searched first).
    #[arg(long = "plugin", value_name = "PATH", global = true)]
    plugins: Vec<PathBuf>,
    /// Do not search the project's .xcsh/tools/ (under --cwd) nor ~/.xcsh/agent/tools/.
    #[arg(long, global = true)]
    no_default_dirs: bool,
    /// The session's working directory; relative paths in tool arguments resolve against it.
    #[arg(long, value_name = "DIR", global = true)]
    cwd: Option<PathBuf>,
    /// Machine-readable output: one JSON document on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Where plugin code runs: `process` (each plugin library in a child process of its own;
    /// the default on Linux) or `in-process` (inside this process; the only mode elsewhere).
    #[arg(long, value_name = "MODE", global = true)]
    isolation: Option<xcsh_loader::Isolation>,
    /// Let plugin processes write under PATH too (repeatable); by default they may write only
    /// under --cwd and a private temporary directory.
    #[arg(long = "allow-write", value_name = "PATH", global = true)]
    allow_write: Vec<PathBuf>,
    /// Refuse to load plugins that cannot be sandboxed (no Landlock, or --isolation in-process)
    /// instead of warning.
    #[arg(long, global = true)]
    require_sandbox: bool,
    /// The address-space limit of each plugin process: bytes, or with K, M, G (default 4G).
    #[arg(long, value_name = "SIZE", global = true, value_parser = xcsh_loader::sandbox::parse_size)]
    memory_limit: Option<u64>,
    /// Deny plugin processes TCP connects and listens (Landlock ABI 4, Linux 6.7 and later).
    #[arg(long, global = true)]
    deny_network: bool,
    /// Keep running the plugin content checked at start, even when a plugin file changes (by
    /// default, under process isolation, a changed plugin is checked again and reloaded).
    #[arg(long, global = true)]
    no_reload: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load everything and print each tool and each load error (exit 1 on any load error).
    List,
    /// Run one tool in a fresh session, then resolve what it left pending.
    Call(call::CallArgs),
    /// Serve the loaded tools over MCP on stdio (one session per process).
    #[cfg(feature = "mcp")]
    Mcp,
    /// Load each plugin alone and validate it (ABI, tools, schemas); exit 1 on any problem.
    Check(check::CheckArgs),
    /// Scaffold a plugin crate that builds and loads as is.
    New(new::NewArgs),
    /// Walk through preview, resolve and rendering on the bundled plugins in a scratch directory.
    Demo(demo::DemoArgs),
    /// Let project-local plugins (.xcsh/tools/ under --cwd) load: record each file's path and SHA-256.
    Trust(trust::TrustArgs),
    /// Remove trust entries (files, or every entry under a directory).
    Untrust(trust::UntrustArgs),
}

/// Options shared by every command that builds a session.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub plugins: Vec<PathBuf>,
    pub default_dirs: bool,
    pub cwd: PathBuf,
    pub isolation: xcsh_loader::Isolation,
    /// What plugin processes may do besides the defaults.
    pub sandbox: SandboxOptions,
    /// Reload plugin files that change while the session runs.
    pub reload: bool,
}

/// The sandbox options of the command line (see the README's "Isolation").
#[derive(Debug, Clone, Default)]
pub struct SandboxOptions {
    pub allow_write: Vec<PathBuf>,
    pub require: bool,
    /// `None`: the loader's default.
    pub memory_limit: Option<u64>,
    pub deny_network: bool,
}

impl SandboxOptions {
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
        builder
    }
}

impl HostOptions {
    /// A session builder for these options, with the built-in tools.
    pub fn session(&self) -> xcsh_loader::SessionBuilder {
        let builder = xcsh_loader::Session::builder(&self.cwd)
            .default_dirs(self.default_dirs)
            .isolation(self.isolation)
            .reload_changed_plugins(self.reload);
        let mut builder = self.sandbox.apply(builder);
        for plugin in &self.plugins {
            builder = builder.plugin(plugin);
        }
        with_builtins(builder)
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    let mut output = Output::new(cli.json);
    match run(cli, &mut output) {
        Ok(code) => code,
        Err(error) => {
            output.error(&error);
            error.exit_code()
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XCSH_LOG")
        // Reloads are told by default: a user who rebuilt a plugin sees it was picked up.
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,xcsh_loader::session=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(output::stderr_color())
        .try_init();
}

/// The session's working directory: `--cwd`, which must be an existing directory, or the
/// process's own.
fn session_cwd(cwd: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let Some(dir) = cwd else {
        return std::env::current_dir()
            .map_err(|e| CliError::Failure(format!("cannot read the current directory: {e}")));
    };
    let canonical = dir.canonicalize().map_err(|e| {
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

/// Show a command's report and give the exit code it implies.
fn show<R: Report + Text>(output: &mut Output, report: &R) -> Result<ExitCode, CliError> {
    output.emit(report)?;
    Ok(exit_code(report))
}

/// 1 for a report that describes a failure, 0 otherwise.
fn exit_code<R: Report>(report: &R) -> ExitCode {
    if report.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn run(cli: Cli, output: &mut Output) -> Result<ExitCode, CliError> {
    let host = HostOptions {
        plugins: cli.plugins,
        default_dirs: !cli.no_default_dirs,
        cwd: session_cwd(cli.cwd)?,
        isolation: cli.isolation.unwrap_or_default(),
        sandbox: SandboxOptions {
            allow_write: cli
                .allow_write
                .iter()
                .map(|path| std::path::absolute(path).unwrap_or_else(|_| path.clone()))
                .collect(),
            require: cli.require_sandbox,
            memory_limit: cli.memory_limit,
            deny_network: cli.deny_network,
        },
        reload: !cli.no_reload,
    };
    // Two workers: while the interactive prompt of `call` blocks one, the other still sees a
    // Ctrl-C and ends the session properly (see `call`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::Failure(format!("cannot start the async runtime: {e}")))?;
    let code = match cli.command {
        Command::List => show(output, &list::run(&host)),
        Command::Check(args) => show(output, &check::run(args, &host)),
        Command::Call(args) => {
            let report = runtime.block_on(call::run(&host, args, output))?;
            Ok(exit_code(&report))
        }
        Command::Trust(args) => show(output, &trust::trust(args)?),
        Command::Untrust(args) => show(output, &trust::untrust(args)?),
        #[cfg(feature = "mcp")]
        Command::Mcp => mcp::run(&host),
        Command::New(args) => new::run(args, &host.cwd, output.stdout()),
        Command::Demo(args) => runtime.block_on(demo::run(&host, args, output.stdout())),
    };
    // Without waiting for threads still busy in plugin code that was abandoned (an in-process
    // call that timed out while blocking).
    runtime.shutdown_background();
    let code = code?;
    // Anything still buffered is written now, while a failure can still be reported.
    output.flush()?;
    Ok(code)
}
