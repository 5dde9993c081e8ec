//! Benchmark fixture. `bench_echo` is the trivial tool whose call overhead the benchmarks
//! compare (compiled into the host, loaded as this plugin, served over MCP): it parses its
//! JSON arguments and returns a short text. The host-side copy in
//! `tests/src/bench.rs` (`BuiltinEcho`) must keep the same logic. `bench_preview` pushes a
//! pending action whose `apply` only returns a text, so a preview + `resolve` round trip
//! measures the pending-action machinery and nothing else.

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    export_plugin, AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction,
    PluginError, ToolContext, ToolSet,
};

/// Arguments: the text to echo.
#[derive(Deserialize, JsonSchema)]
struct EchoParams {
    /// Text to echo back.
    text: String,
}

struct BenchEcho;

impl CustomTool for BenchEcho {
    type Params = EchoParams;
    fn name(&self) -> &str {
        "bench_echo"
    }
    fn label(&self) -> &str {
        "Bench Echo"
    }
    fn description(&self) -> &str {
        "Returns its text (benchmark fixture)"
    }
    async fn execute(
        &self,
        _id: String,
        params: EchoParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!("echo: {}", params.text)))
    }
}

struct BenchPreview {
    api: CustomToolApi,
}

impl CustomTool for BenchPreview {
    type Params = EchoParams;
    fn name(&self) -> &str {
        "bench_preview"
    }
    fn label(&self) -> &str {
        "Bench Preview"
    }
    fn description(&self) -> &str {
        "Previews nothing; apply returns a text (benchmark fixture)"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: EchoParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let text = params.text;
        self.api.push_pending_action(
            CustomToolPendingAction::new("Bench: no-op", move |reason| async move {
                Ok(AgentToolResult::text(format!("applied {text} ({reason})")))
            })
            .with_source_tool_name("bench_preview"),
        )?;
        Ok(AgentToolResult::text("previewed"))
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    Ok(ToolSet::new()
        .with(BenchEcho)
        .with(BenchPreview { api: api.clone() }))
}

export_plugin!(factory);
