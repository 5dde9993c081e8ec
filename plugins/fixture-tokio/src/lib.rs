//! Test fixture: `execute` uses tokio timers, files, processes and tasks, with no runtime
//! set up by the author. The plugin API provides one. `progress_steps` reports partial
//! results with `ctx.update` as fast as asked (the progress tests).

#![deny(unsafe_code)]

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    export_plugin, AgentToolResult, CustomTool, CustomToolApi, PluginError, ToolContext, ToolSet,
};

#[derive(Deserialize, JsonSchema)]
struct Params {
    /// File to write (relative to the session cwd).
    file: String,
    /// Milliseconds to sleep first.
    sleep_ms: u64,
}

struct TokioIo {
    api: CustomToolApi,
}

impl CustomTool for TokioIo {
    type Params = Params;
    fn name(&self) -> &str {
        "tokio_io"
    }
    fn label(&self) -> &str {
        "Tokio I/O"
    }
    fn description(&self) -> &str {
        "Sleeps, writes and reads a file, runs a process and a task, all with tokio"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let started = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(params.sleep_ms)).await;
        let slept = started.elapsed();
        let path = self.api.resolve_path(&params.file);
        tokio::fs::write(&path, b"written by tokio").await?;
        let back = tokio::fs::read_to_string(&path).await?;
        let output = tokio::process::Command::new("echo")
            .arg("from a process")
            .output()
            .await?;
        let task = tokio::spawn(async { 21 * 2 })
            .await
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(AgentToolResult::text(format!(
            "slept {}ms; read back: {back}; process said: {}; task gave {task}",
            slept.as_millis(),
            String::from_utf8_lossy(&output.stdout).trim()
        )))
    }
}

#[derive(Deserialize, JsonSchema)]
struct StepsParams {
    /// How many partial results to report.
    steps: u32,
    /// Milliseconds to wait after each.
    pause_ms: u64,
}

struct ProgressSteps;

impl CustomTool for ProgressSteps {
    type Params = StepsParams;
    fn name(&self) -> &str {
        "progress_steps"
    }
    fn label(&self) -> &str {
        "Progress Steps"
    }
    fn description(&self) -> &str {
        "Reports `steps` partial results, pausing after each"
    }
    async fn execute(
        &self,
        _id: String,
        params: StepsParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        for step in 1..=params.steps {
            ctx.update(AgentToolResult::text(format!(
                "step {step} of {}",
                params.steps
            )));
            tokio::time::sleep(Duration::from_millis(params.pause_ms)).await;
        }
        Ok(AgentToolResult::text(format!("did {} steps", params.steps)))
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    api.logger().info("fixture-tokio loaded");
    Ok(ToolSet::new()
        .with(TokioIo { api: api.clone() })
        .with(ProgressSteps))
}

export_plugin!(factory);
