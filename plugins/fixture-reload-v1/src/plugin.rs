//! The tools of both versions. `reload_version` says which build answers; the action of
//! `reload_preview` writes a file naming the build that pushed it, so a test can tell which
//! process applied it; version 2 adds `reload_added`.

use schemars::JsonSchema;
use serde::Deserialize;
use xcsh_plugin_api::{
    AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction, PluginError, ToolContext,
    ToolSet,
};

use super::VERSION;

#[derive(Deserialize, JsonSchema)]
struct NoParams {}

struct Version;

impl CustomTool for Version {
    type Params = NoParams;
    fn name(&self) -> &str {
        "reload_version"
    }
    fn label(&self) -> &str {
        "Reload Version"
    }
    fn description(&self) -> &str {
        "Says which build of the plugin answers"
    }
    async fn execute(
        &self,
        _id: String,
        _params: NoParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!(
            "v{VERSION} (pid {})",
            host_pid()
        )))
    }
}

#[derive(Deserialize, JsonSchema)]
struct PreviewParams {
    /// File the action writes on apply, relative to the session's working directory.
    file: String,
}

/// Deferrable: its action writes `applied by v<VERSION>` to `file`.
struct Preview {
    api: CustomToolApi,
}

impl CustomTool for Preview {
    type Params = PreviewParams;
    fn name(&self) -> &str {
        "reload_preview"
    }
    fn label(&self) -> &str {
        "Reload Preview"
    }
    fn description(&self) -> &str {
        "Previews writing a file that names this build; apply writes it"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: PreviewParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let path = self.api.resolve_path(&params.file);
        self.api.push_pending_action(CustomToolPendingAction::new(
            format!("Reload: write {} (v{VERSION})", params.file),
            move |_reason| async move {
                std::fs::write(&path, format!("applied by v{VERSION}"))?;
                Ok(AgentToolResult::text(format!("applied by v{VERSION}")))
            },
        ))?;
        Ok(AgentToolResult::text(format!("previewed by v{VERSION}")))
    }
}

/// Only in version 2.
struct Added;

impl CustomTool for Added {
    type Params = NoParams;
    fn name(&self) -> &str {
        "reload_added"
    }
    fn label(&self) -> &str {
        "Reload Added"
    }
    fn description(&self) -> &str {
        "A tool that only version 2 has"
    }
    async fn execute(
        &self,
        _id: String,
        _params: NoParams,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!("added in v{VERSION}")))
    }
}

pub(crate) fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    let tools = ToolSet::new()
        .with(Version)
        .with(Preview { api: api.clone() });
    Ok(if VERSION >= 2 {
        tools.with(Added)
    } else {
        tools
    })
}

/// This process's id as the host sees it: a plugin process lives in a PID namespace of its
/// own, where `std::process::id()` is a small number; `/proc` (the host's) names it by the
/// host's number.
fn host_pid() -> u32 {
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse().ok())
        .unwrap_or_else(std::process::id)
}
