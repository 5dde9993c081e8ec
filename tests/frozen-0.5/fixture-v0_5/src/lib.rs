//! Test fixture: a plugin built against the frozen `xcsh-plugin-api` 0.5.1, the last API
//! before the host services, as an author wrote it then. `frozen_echo` echoes its argument;
//! `frozen_preview` is deferrable and pushes a retryable pending action (with details and a
//! reject) that `resolve` applies or discards.

use xcsh_plugin_api::{
    json, tool_params, AgentToolResult, CustomTool, CustomToolPendingAction, PluginError,
    ToolContext,
};

tool_params! {
    /// What to echo or preview.
    pub struct Params {
        /// The text.
        pub text: String,
    }
}

#[derive(Default)]
struct Echo;

impl CustomTool for Echo {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_echo"
    }
    fn label(&self) -> &str {
        "Frozen Echo"
    }
    fn description(&self) -> &str {
        "Echoes its text (built against xcsh-plugin-api 0.5.1)"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!("echo: {}", params.text))
            .with_details(json!({"api": xcsh_plugin_api::API_VERSION})))
    }
}

#[derive(Default)]
struct Preview;

impl CustomTool for Preview {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_preview"
    }
    fn label(&self) -> &str {
        "Frozen Preview"
    }
    fn description(&self) -> &str {
        "Previews a change and defers it to resolve"
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
        ctx.push_pending_action(
            CustomToolPendingAction::retryable(format!("Frozen: {text}"), move |reason| {
                let text = text.clone();
                async move { Ok(AgentToolResult::text(format!("applied {text}: {reason}"))) }
            })
            .with_reject(|reason| async move {
                Ok(Some(AgentToolResult::text(format!("rejected: {reason}"))))
            })
            .with_details(json!({"api": "0.5.1"}))
            .with_source_tool_name("frozen_preview"),
        )?;
        Ok(AgentToolResult::text("previewed"))
    }
}

xcsh_plugin_api::export_plugin!(tools: [Echo, Preview]);
