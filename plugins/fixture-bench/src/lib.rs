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

#![deny(unsafe_code)]

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    export_plugin, tool, tool_params, AgentToolResult, CustomTool, CustomToolApi,
    CustomToolPendingAction, PluginError, ToolContext, ToolSet,
};

/// The copy marker: `---` in this file (tools `bench_echo`, `bench_preview`), a number in a
/// numbered copy. Read through `black_box`, so the compiler keeps the bytes in the file and
/// reads them at run time rather than folding the placeholder in.
static COPY: [u8; 19] = *b"xcsh-bench-copy=---";

/// `NNN` in copy `NNN`; `None` in this file.
fn copy_number() -> Option<&'static str> {
    let marker: &'static [u8; 19] = std::hint::black_box(&COPY);
    std::str::from_utf8(&marker[16..])
        .ok()
        .filter(|number| number.bytes().all(|b| b.is_ascii_digit()))
}

/// `base`, or `base_NNN` in copy `NNN`.
fn tool_name(base: &str) -> String {
    match copy_number() {
        Some(number) => format!("{base}_{number}"),
        None => base.to_owned(),
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

/// Returns its text (benchmark fixture, written with `#[tool]`)
#[tool(label = "Bench Macro")]
async fn bench_macro(
    /// Text to echo back.
    text: String,
) -> Result<String, PluginError> {
    Ok(format!("echo: {text}"))
}

tool_params! {
    /// Arguments: the text to echo.
    struct TraitParams {
        /// Text to echo back.
        text: String,
    }
}

/// `bench_macro` written by hand: what `#[tool]` writes for it, as an author would.
struct BenchTrait;

impl CustomTool for BenchTrait {
    type Params = TraitParams;
    fn name(&self) -> &str {
        "bench_trait"
    }
    fn label(&self) -> &str {
        "Bench Trait"
    }
    fn description(&self) -> &str {
        "Returns its text (benchmark fixture, written by hand)"
    }
    async fn execute(
        &self,
        _id: String,
        params: TraitParams,
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
    let tools = ToolSet::new()
        .with(BenchEcho {
            name: tool_name("bench_echo"),
        })
        .with(BenchPreview {
            name: tool_name("bench_preview"),
            api: api.clone(),
        })
        .with(BenchConfirm {
            name: tool_name("bench_confirm"),
        });
    // Only in this file: `#[tool]` fixes its tool's name at compile time, and numbered copies
    // are loaded side by side (their names must differ).
    Ok(match copy_number() {
        None => tools.with(BenchMacro).with(BenchTrait),
        Some(_) => tools,
    })
}

export_plugin!(factory);
