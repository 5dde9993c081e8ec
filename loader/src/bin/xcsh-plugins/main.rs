//! `xcsh-plugins`: the command-line host for xcsh native plugins.
//!
//! It loads plugins like an agent runtime would (explicit `--plugin` paths, then the project's
//! and the user's tool directories), lists them, and runs one tool call in a fresh session,
//! finishing any pending action it leaves with an explicit decision.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod call;
mod check;
mod demo;
mod list;
#[cfg(feature = "mcp")]
mod mcp;
mod new;
mod output;
mod trust;

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
    pub json: bool,
}

impl HostOptions {
    /// A session builder for these options, with the built-in tools.
    pub fn session(&self) -> xcsh_loader::SessionBuilder {
        let mut builder = xcsh_loader::Session::builder(&self.cwd).default_dirs(self.default_dirs);
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
    match run(cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XCSH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(output::stderr_color())
        .try_init();
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    let cwd = match cli.cwd {
        Some(dir) => dir
            .canonicalize()
            .map_err(|e| format!("--cwd {}: {e}", dir.display()))?,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    if !cwd.is_dir() {
        return Err(format!("--cwd {}: not a directory", cwd.display()));
    }
    let host = HostOptions {
        plugins: cli.plugins,
        default_dirs: !cli.no_default_dirs,
        cwd,
        json: cli.json,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    match cli.command {
        Command::List => Ok(list::run(&host)),
        Command::Call(args) => runtime.block_on(call::run(&host, args)),
        #[cfg(feature = "mcp")]
        Command::Mcp => mcp::run(&host),
        Command::Check(args) => Ok(check::run(args, &host.cwd, host.json)),
        Command::New(args) => new::run(args, &host.cwd).map(|()| ExitCode::SUCCESS),
        Command::Demo(args) => runtime
            .block_on(demo::run(&host, args))
            .map(|()| ExitCode::SUCCESS),
        Command::Trust(args) => Ok(trust::trust(args, &host)),
        Command::Untrust(args) => Ok(trust::untrust(args, &host)),
    }
}
