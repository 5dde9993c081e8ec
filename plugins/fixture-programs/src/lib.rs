//! Test fixture: what a plugin's programs may do, tried as an author's tool would.
//! - `run` runs a program through `std::process::Command` (`via: "command"`, the way an
//!   author who does not know `exec` writes it) or `ctx.exec` (`via: "exec"`), and returns
//!   what it did: its output as the text, and `{code, signal, stdout, stderr, killed,
//!   truncated}` in the details;
//! - `spawn` starts a program through `Command::spawn` and returns at once, leaving it
//!   running (what an idle stop must end);
//! - `read` reads a file from the plugin itself.

#![deny(unsafe_code)]

use std::time::Duration;

use xcsh_plugin_api::{
    json, tool_params, AgentToolResult, CustomTool, ExecOptions, PluginError, ToolContext,
};

tool_params! {
    /// A program to run.
    pub struct RunParams {
        /// The program.
        pub program: String,
        /// Its arguments.
        #[serde(default)]
        pub args: Vec<String>,
        /// `command` (std::process::Command::output) or `exec` (ctx.exec).
        #[serde(default = "default_via")]
        pub via: String,
        /// Its working directory, relative to the session's.
        #[serde(default)]
        pub cwd: Option<String>,
        /// `exec` only: its timeout in milliseconds.
        #[serde(default)]
        pub timeout_ms: Option<u64>,
        /// `exec` only: what each output stream keeps.
        #[serde(default)]
        pub max_output: Option<usize>,
    }

    /// A file to read.
    pub struct ReadParams {
        /// Its path.
        pub path: String,
    }
}

fn default_via() -> String {
    "exec".to_owned()
}

/// Runs a program and reports what it did.
#[derive(Default)]
struct Run;

impl CustomTool for Run {
    type Params = RunParams;
    fn name(&self) -> &str {
        "run"
    }
    fn label(&self) -> &str {
        "Run"
    }
    fn description(&self) -> &str {
        "Runs a program through Command or ctx.exec and reports its output and status"
    }
    async fn execute(
        &self,
        _id: String,
        p: RunParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let cwd = ctx.resolve_path(p.cwd.as_deref().unwrap_or("."));
        let details = match p.via.as_str() {
            "command" => {
                let output = std::process::Command::new(&p.program)
                    .args(&p.args)
                    .current_dir(&cwd)
                    .output()
                    .map_err(|e| PluginError::new(format!("cannot run {}: {e}", p.program)))?;
                json!({
                    "code": output.status.code(),
                    "stdout": String::from_utf8_lossy(&output.stdout),
                    "stderr": String::from_utf8_lossy(&output.stderr),
                })
            }
            "exec" => {
                let mut options = ExecOptions::new().cwd(&cwd);
                if let Some(ms) = p.timeout_ms {
                    options = options.timeout(Duration::from_millis(ms));
                }
                if let Some(bytes) = p.max_output {
                    options = options.max_output(bytes);
                }
                let output = ctx.exec(&p.program, &p.args, options).await?;
                json!({
                    "code": output.code,
                    "signal": output.signal,
                    "stdout_len": output.stdout.len(),
                    "stdout": if output.stdout.len() <= 1 << 16 { output.stdout_text() } else { String::new() },
                    "stderr": output.stderr_text(),
                    "killed": output.killed,
                    "truncated": output.truncated,
                })
            }
            other => return Err(PluginError::new(format!("unknown via {other:?}"))),
        };
        let text = details["stdout"].as_str().unwrap_or_default().to_owned();
        Ok(AgentToolResult::text(text).with_details(details))
    }
}

/// Starts a program and returns at once, leaving it running.
#[derive(Default)]
struct Spawn;

impl CustomTool for Spawn {
    type Params = RunParams;
    fn name(&self) -> &str {
        "spawn"
    }
    fn label(&self) -> &str {
        "Spawn"
    }
    fn description(&self) -> &str {
        "Starts a program through Command::spawn and leaves it running"
    }
    async fn execute(
        &self,
        _id: String,
        p: RunParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let child = std::process::Command::new(&p.program)
            .args(&p.args)
            .current_dir(ctx.cwd())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| PluginError::new(format!("cannot start {}: {e}", p.program)))?;
        Ok(AgentToolResult::text(format!("started {}", child.id())))
    }
}

/// Reads a file from the plugin itself.
#[derive(Default)]
struct Read;

impl CustomTool for Read {
    type Params = ReadParams;
    fn name(&self) -> &str {
        "read"
    }
    fn label(&self) -> &str {
        "Read"
    }
    fn description(&self) -> &str {
        "Reads a file"
    }
    async fn execute(
        &self,
        _id: String,
        p: ReadParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let path = ctx.resolve_path(&p.path);
        std::fs::read_to_string(&path)
            .map(AgentToolResult::text)
            .map_err(|e| PluginError::new(format!("cannot read {}: {e}", path.display())))
    }
}

xcsh_plugin_api::export_plugin!(tools: [Run, Spawn, Read]);
