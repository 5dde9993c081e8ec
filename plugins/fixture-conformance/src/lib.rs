//! Test fixture: the tools the MCP conformance suite (`@modelcontextprotocol/conformance`)
//! calls by name, each with the behaviour its scenario checks, written against the plugin API
//! like any author's plugin (`.ci/mcp-conformance` runs the suite against it).
//!
//! - `test_simple_text`: one text block.
//! - `test_error_handling`: a failed call (an `isError` result with its message).
//! - `test_tool_with_progress`: three partial results (`ctx.update`), paced so that each goes
//!   out as its own progress notification.
//! - `test_image_content`: a 1×1 red PNG image block with its MIME type.
//! - `test_tool_with_logging`: three log lines (`ctx.logger()`) during the call.
//! - `json_schema_2020_12_tool`: a JSON Schema 2020-12 parameter schema of its own (`$schema`,
//!   `$defs`, `$ref`, `additionalProperties: false`), given as written.
//! - `test_elicitation`, `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
//!   `test_sampling`, `test_audio_content`, `test_embedded_resource`,
//!   `test_multiple_content_types`: the host services (module `services`).

#![deny(unsafe_code)]

use std::time::Duration;

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, Content, CustomTool, PluginError, ToolContext, Value,
};

/// A tool without parameters: an empty object schema.
fn no_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}

#[derive(Default)]
struct SimpleText;

impl CustomTool for SimpleText {
    type Params = Value;
    fn name(&self) -> &str {
        "test_simple_text"
    }
    fn label(&self) -> &str {
        "Simple text"
    }
    fn description(&self) -> &str {
        "Returns one text block"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(
            "This is a simple text response for testing.",
        ))
    }
}

#[derive(Default)]
struct ErrorHandling;

impl CustomTool for ErrorHandling {
    type Params = Value;
    fn name(&self) -> &str {
        "test_error_handling"
    }
    fn label(&self) -> &str {
        "Error handling"
    }
    fn description(&self) -> &str {
        "Always fails, with a message"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Err(PluginError::new(
            "This tool intentionally returns an error for testing",
        ))
    }
}

#[derive(Default)]
struct WithProgress;

impl CustomTool for WithProgress {
    type Params = Value;
    fn name(&self) -> &str {
        "test_tool_with_progress"
    }
    fn label(&self) -> &str {
        "With progress"
    }
    fn description(&self) -> &str {
        "Reports progress three times before it returns"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        for step in [0, 50, 100] {
            ctx.update(AgentToolResult::text(format!("{step}% done")));
            // Longer than the host's pacing of partial results (100 ms), so each is sent.
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Ok(AgentToolResult::text("Progress complete"))
    }
}

/// A 1×1 red PNG, base64.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[derive(Default)]
struct ImageContent;

impl CustomTool for ImageContent {
    type Params = Value;
    fn name(&self) -> &str {
        "test_image_content"
    }
    fn label(&self) -> &str {
        "Image content"
    }
    fn description(&self) -> &str {
        "Returns a 1x1 red PNG"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult {
            content: vec![Content::Image {
                data: RED_PIXEL_PNG.to_owned(),
                mime_type: "image/png".to_owned(),
            }],
            details: None,
            view: None,
        })
    }
}

#[derive(Default)]
struct WithLogging;

impl CustomTool for WithLogging {
    type Params = Value;
    fn name(&self) -> &str {
        "test_tool_with_logging"
    }
    fn label(&self) -> &str {
        "With logging"
    }
    fn description(&self) -> &str {
        "Logs three lines while it runs"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let logger = ctx.logger();
        logger.info("Tool execution started");
        tokio::time::sleep(Duration::from_millis(50)).await;
        logger.info("Tool processing data");
        tokio::time::sleep(Duration::from_millis(50)).await;
        logger.info("Tool execution completed");
        Ok(AgentToolResult::text("Logged three lines"))
    }
}

#[derive(Default)]
struct JsonSchema202012;

impl CustomTool for JsonSchema202012 {
    type Params = Value;
    fn name(&self) -> &str {
        "json_schema_2020_12_tool"
    }
    fn label(&self) -> &str {
        "JSON Schema 2020-12"
    }
    fn description(&self) -> &str {
        "Tool with JSON Schema 2020-12 features"
    }
    fn parameters_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"}
                    }
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        })
    }
    async fn execute(
        &self,
        _id: String,
        params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!("Received {params}")))
    }
}

mod services;

export_plugin!(tools: [
    SimpleText,
    ErrorHandling,
    WithProgress,
    ImageContent,
    WithLogging,
    JsonSchema202012,
    services::Elicitation,
    services::ElicitationDefaults,
    services::ElicitationEnums,
    services::Sampling,
    services::AudioContent,
    services::EmbeddedResourceContent,
    services::MixedContent,
]);
