//! Test fixture: a plugin built against the frozen `xcsh-plugin-api` 0.7.0, the last API before
//! tools could describe how their calls and results look (issue 55), as an author writes it
//! with what 0.7 added.
//!
//! - `frozen7_echo` (written with `#[tool]`) echoes its text, with the API version in its
//!   details.
//! - `frozen7_preview` is deferrable and pushes a pending action whose apply asks the user
//!   (`confirm`) and notifies through the context it is handed, and whose reject notifies.

use xcsh_plugin_api::{
    export_plugin, json, tool, tool_params, AgentToolResult, CustomTool, CustomToolPendingAction,
    NotifyLevel, PluginError, ToolContext,
};

/// Echoes its text (built against xcsh-plugin-api 0.7.0)
#[tool(label = "Frozen 0.7 Echo")]
async fn frozen7_echo(
    /// The text.
    text: String,
) -> Result<AgentToolResult, PluginError> {
    Ok(AgentToolResult::text(format!("echo: {text}"))
        .with_details(json!({"api": xcsh_plugin_api::API_VERSION})))
}

tool_params! {
    /// What to preview.
    pub struct Params {
        /// The text.
        pub text: String,
    }
}

#[derive(Default)]
struct Preview;

impl CustomTool for Preview {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen7_preview"
    }
    fn label(&self) -> &str {
        "Frozen 0.7 Preview"
    }
    fn description(&self) -> &str {
        "Pushes an action whose apply asks the user (built against xcsh-plugin-api 0.7.0)"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let text = params.text;
        let label = format!("Frozen 0.7: {text}");
        let action = CustomToolPendingAction::new_in_context(label, move |reason, ctx| {
            let text = text.clone();
            async move {
                let yes = ctx.ui().confirm("Apply", &format!("Apply {text}?")).await?;
                ctx.ui()
                    .notify(format!("applying {text} ({reason})"), NotifyLevel::Info)
                    .await?;
                Ok(AgentToolResult::text(format!(
                    "applied {text}: confirmed={yes}"
                )))
            }
        })
        .with_reject_in_context(|reason, ctx| async move {
            ctx.ui()
                .notify(format!("discarded ({reason})"), NotifyLevel::Warning)
                .await?;
            Ok(None)
        })
        .with_source_tool_name("frozen7_preview");
        ctx.push_pending_action(action)?;
        Ok(AgentToolResult::text("Pushed one action. Call resolve."))
    }
}

export_plugin!(tools: [Frozen7Echo, Preview]);
