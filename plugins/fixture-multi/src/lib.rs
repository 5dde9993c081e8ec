//! Test fixture: one factory returning several tools, including a deferrable tool whose
//! pending action has no `reject`, one that pushes several actions at once, and a hidden tool.
//! `echo` gives every behaviour hint but `destructive`; the previews keep the defaults.

#![deny(unsafe_code)]

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction,
    PluginError, ToolContext, ToolSet,
};

#[derive(Deserialize, JsonSchema)]
struct EchoParams {
    /// Text to echo back.
    text: String,
}

struct Echo;

impl CustomTool for Echo {
    type Params = EchoParams;
    fn name(&self) -> &str {
        "echo"
    }
    fn label(&self) -> &str {
        "Echo"
    }
    fn description(&self) -> &str {
        "Returns its text"
    }
    fn read_only(&self) -> Option<bool> {
        Some(true)
    }
    fn idempotent(&self) -> Option<bool> {
        Some(true)
    }
    fn open_world(&self) -> Option<bool> {
        Some(false)
    }
    async fn execute(
        &self,
        tool_call_id: String,
        params: EchoParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        ctx.update(AgentToolResult::text("echoing"));
        Ok(AgentToolResult::text(params.text).with_details(json!({ "id": tool_call_id })))
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoteParams {
    /// File to write on apply, relative to the session cwd.
    file: String,
    /// Its content.
    content: String,
}

/// Deferrable, and its action has no `reject`; `apply` returns no text.
struct NotePreview {
    api: CustomToolApi,
}

impl CustomTool for NotePreview {
    type Params = NoteParams;
    fn name(&self) -> &str {
        "note_preview"
    }
    fn label(&self) -> &str {
        "Note Preview"
    }
    fn description(&self) -> &str {
        "Previews writing a note; apply writes it"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: NoteParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let path = self.api.resolve_path(&params.file);
        let label = format!("Note: write {}", params.file);
        self.api.push_pending_action(
            CustomToolPendingAction::new(label, move |_reason| async move {
                std::fs::write(&path, params.content)?;
                Ok(AgentToolResult::default())
            })
            .with_details(json!({ "file": params.file })),
        )?;
        Ok(AgentToolResult::text("note previewed"))
    }
}

#[derive(Deserialize, JsonSchema)]
struct StackParams {
    /// How many actions to push.
    count: u32,
}

/// Pushes `count` actions in one call; each one's apply names it.
struct StackPreview {
    api: CustomToolApi,
}

impl CustomTool for StackPreview {
    type Params = StackParams;
    fn name(&self) -> &str {
        "stack_preview"
    }
    fn label(&self) -> &str {
        "Stack Preview"
    }
    fn description(&self) -> &str {
        "Pushes several pending actions"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: StackParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        for i in 1..=params.count {
            self.api.push_pending_action(
                CustomToolPendingAction::new(
                    format!("Stack: item {i}"),
                    move |reason| async move {
                        Ok(AgentToolResult::text(format!(
                            "applied item {i} ({reason})"
                        )))
                    },
                )
                .with_source_tool_name("stack_preview"),
            )?;
        }
        Ok(AgentToolResult::text(format!("pushed {}", params.count)))
    }
}

/// A hidden tool.
struct Secret;

impl CustomTool for Secret {
    type Params = xcsh_plugin_api::Value;
    fn name(&self) -> &str {
        "secret"
    }
    fn label(&self) -> &str {
        "Secret"
    }
    fn description(&self) -> &str {
        "Hidden from users"
    }
    fn parameters_schema(&self) -> xcsh_plugin_api::Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn hidden(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        _params: xcsh_plugin_api::Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text("hidden but callable"))
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    Ok(ToolSet::new()
        .with(Echo)
        .with(NotePreview { api: api.clone() })
        .with(StackPreview { api: api.clone() })
        .with(Secret))
}

export_plugin!(factory);
