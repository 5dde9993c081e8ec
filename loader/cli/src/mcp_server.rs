//! `xcsh-plugins mcp`: serve the loaded tools over MCP on stdio with
//! [`xcsh_loader::mcp`] (the guide's "MCP", docs/guide/src/mcp.md).
//!
//! One [`xcsh_loader::Session`] (one pending-action store) lives as long as the process.
//! What the server answers is [`xcsh_loader::mcp`]'s: tools, `resolve`, the `_meta` keys, load
//! errors sent to the client as log messages. Here: the process around it. Load errors are
//! also written to stderr; with `--require-all-plugins` any of them ends the command (exit 1)
//! before the protocol starts.
//!
//! Stdout carries JSON-RPC only: logs go to stderr, and on Unix the process's fd 1 is pointed
//! at stderr once the protocol has its own copy of the original stdout, so a plugin that
//! prints cannot corrupt the stream.

use std::io::Write as _;
use std::process::ExitCode;

use xcsh_loader::render::sanitize;

use crate::error::CliError;
use crate::host_options::HostOptions;
use crate::output::QuietOnClose;

/// Run the server until the client closes stdin.
pub fn run(host: &HostOptions) -> Result<ExitCode, CliError> {
    // Before any plugin code runs, so even a factory's prints stay off the protocol stream.
    let output = protocol_output()?;
    // Calls run concurrently and plugin code may block a thread: use worker threads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failure(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(serve(host, output));
    // Without waiting for threads still busy in abandoned in-process plugin calls.
    runtime.shutdown_background();
    outcome
}

async fn serve(host: &HostOptions, output: Output) -> Result<ExitCode, CliError> {
    // Plugin log lines go to the client too (and, as without it, to the log on stderr).
    let logs = std::sync::Arc::new(xcsh_loader::mcp::PluginLogs::new());
    let session = host.session().plugin_log(logs.sink()).build();
    // Under --require-all-plugins, before the first byte of the protocol.
    host.require_all_loaded(&session)?;
    let mut stderr = QuietOnClose::new(std::io::stderr());
    for error in session.load_errors() {
        // A log line: a closed stderr must not end the server.
        let _ = writeln!(stderr, "warning: {}", sanitize(&error.to_string()));
    }
    let reason =
        xcsh_loader::mcp::serve_with_plugin_logs(session, Some(logs), tokio::io::stdin(), output)
            .await
            .map_err(|e| CliError::Failure(e.to_string()))?;
    tracing::info!(?reason, "MCP client disconnected");
    Ok(ExitCode::SUCCESS)
}

/// The writer for protocol messages.
#[cfg(unix)]
type Output = tokio::fs::File;
#[cfg(not(unix))]
type Output = tokio::io::Stdout;

/// Keep a private copy of stdout for the protocol, then point fd 1 at stderr: anything else
/// that writes to stdout (a plugin's `println!`, a C library) lands in the log instead.
#[cfg(unix)]
fn protocol_output() -> Result<Output, CliError> {
    xcsh_loader::mcp::protocol_stdout()
        .map(tokio::fs::File::from_std)
        .map_err(|e| CliError::Failure(format!("cannot keep stdout for the protocol: {e}")))
}

#[cfg(not(unix))]
fn protocol_output() -> Result<Output, CliError> {
    Ok(tokio::io::stdout())
}
