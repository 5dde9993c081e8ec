//! Test fixture: a plugin built against the frozen `xcsh-plugin-api` 0.2.0, as a plugin author
//! wrote it then. `frozen_echo` echoes its argument; `frozen_preview` is deferrable and pushes
//! a pending action (with details and a reject) that `resolve` applies or discards.

use xcsh_plugin_api::{
    export_plugin, json, tool_params, AgentToolResult, CustomTool, CustomToolApi,
    CustomToolPendingAction, PluginError, ToolContext, ToolSet,
};

tool_params! {
    /// What to echo or preview.
    pub struct Params {
        /// The text.
        pub text: String,
    }
}

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
        "Echoes its text (built against xcsh-plugin-api 0.2.0)"
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

struct Preview {
    api: CustomToolApi,
}

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
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let text = params.text;
        let applied = text.clone();
        self.api.push_pending_action(
            CustomToolPendingAction::new(format!("Frozen: write {text}"), move |reason| async move {
                // A text starting with "fail" makes apply fail: what a 0.2 plugin's failed
                // apply leaves behind (its apply took the reject too) is tested on it.
                if applied.starts_with("fail") {
                    return Err(PluginError::new(format!("apply of {applied} failed on purpose")));
                }
                Ok(AgentToolResult::text(format!("applied {applied} ({reason})")))
            })
            .with_reject(|reason| async move {
                Ok(Some(AgentToolResult::text(format!("rejected ({reason})"))))
            })
            .with_details(json!({"text": text}))
            .with_source_tool_name("frozen_preview"),
        )?;
        Ok(AgentToolResult::text("previewed"))
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    Ok(ToolSet::new().with(Echo).with(Preview { api: api.clone() }))
}

export_plugin!(factory);
