//! Benchmark fixture. `bench_echo` is the trivial tool whose call overhead the benchmarks
//! compare (compiled into the host, loaded as this plugin, served over MCP): it parses its
//! JSON arguments and returns a short text. The host-side copy in
//! `tests/src/bench.rs` (`BuiltinEcho`) must keep the same logic. `bench_preview` pushes a
//! pending action whose `apply` only returns a text, so a preview + `resolve` round trip
//! measures the pending-action machinery and nothing else. `bench_confirm` asks the user one
//! `confirm` and returns `yes` or `no`: with `bench_echo`, the cost of one host-services
//! round trip.
//!
//! Benchmarks that need many distinct plugins (issue 28's idle session) copy this file and
//! write a number over [`COPY`]'s placeholder in each copy's bytes: copy `NNN`'s tools are
//! then `bench_echo_NNN` and `bench_preview_NNN` (`tests/src/bench.rs`,
//! `idle::distinct_plugins`).

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    export_plugin, AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction,
    PluginError, ToolContext, ToolSet,
};

/// The copy marker: `---` in this file (tools `bench_echo`, `bench_preview`), a number in a
/// numbered copy. Read through `black_box`, so the compiler keeps the bytes in the file and
/// reads them at run time rather than folding the placeholder in.
static COPY: [u8; 19] = *b"xcsh-bench-copy=---";

/// `base`, or `base_NNN` in copy `NNN`.
fn tool_name(base: &str) -> String {
    let marker: &[u8; 19] = std::hint::black_box(&COPY);
    match std::str::from_utf8(&marker[16..]) {
        Ok(number) if number.bytes().all(|b| b.is_ascii_digit()) => format!("{base}_{number}"),
        _ => base.to_owned(),
    }
}

/// Arguments: the text to echo.
#[derive(Deserialize, JsonSchema)]
struct EchoParams {
    /// Text to echo back.
    text: String,
}

struct BenchEcho {
    name: String,
}

impl CustomTool for BenchEcho {
    type Params = EchoParams;
    fn name(&self) -> &str {
        &self.name
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
    name: String,
    api: CustomToolApi,
}

impl CustomTool for BenchPreview {
    type Params = EchoParams;
    fn name(&self) -> &str {
        &self.name
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

struct BenchConfirm {
    name: String,
}

impl CustomTool for BenchConfirm {
    type Params = EchoParams;
    fn name(&self) -> &str {
        &self.name
    }
    fn label(&self) -> &str {
        "Bench Confirm"
    }
    fn description(&self) -> &str {
        "Asks one confirm and answers yes or no (benchmark fixture)"
    }
    async fn execute(
        &self,
        _id: String,
        params: EchoParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let yes = ctx.ui().confirm("Bench", params.text).await?;
        Ok(AgentToolResult::text(if yes { "yes" } else { "no" }))
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    Ok(ToolSet::new()
        .with(BenchEcho {
            name: tool_name("bench_echo"),
        })
        .with(BenchPreview {
            name: tool_name("bench_preview"),
            api: api.clone(),
        })
        .with(BenchConfirm {
            name: tool_name("bench_confirm"),
        }))
}

export_plugin!(factory);
