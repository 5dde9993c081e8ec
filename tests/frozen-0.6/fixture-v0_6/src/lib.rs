//! Test fixture: a plugin built against the frozen `xcsh-plugin-api` 0.6.0, the last API
//! before pending actions' apply and reject got a host context, as an author wrote it then.
//!
//! - `frozen_echo` echoes its argument; its `on_session` records what it heard (the reason and
//!   the call ids of its own earlier results), shown in the echo's details.
//! - `frozen_ask` uses the host services: `confirm`, then `select`, then `notify`.
//! - `frozen_exec` runs `echo` with `ctx.exec`.
//! - `frozen_media` answers with audio and an embedded resource.
//! - `frozen_preview` is deferrable and pushes a retryable pending action (with details and a
//!   reject) whose apply fails on its first attempt for the text `fail-me`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use xcsh_plugin_api::{
    json, tool_params, AgentToolResult, Content, CustomTool, CustomToolPendingAction,
    EmbeddedResource, ExecOptions, NotifyLevel, PluginError, SessionEvent, SessionReason,
    ToolContext,
};

tool_params! {
    /// What to echo, ask about, run or preview.
    pub struct Params {
        /// The text.
        pub text: String,
    }
}

#[derive(Default)]
struct Echo {
    heard: Mutex<Vec<String>>,
}

impl CustomTool for Echo {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_echo"
    }
    fn label(&self) -> &str {
        "Frozen Echo"
    }
    fn description(&self) -> &str {
        "Echoes its text (built against xcsh-plugin-api 0.6.0)"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let heard = self.heard.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(AgentToolResult::text(format!("echo: {}", params.text))
            .with_details(json!({"api": xcsh_plugin_api::API_VERSION, "heard": heard})))
    }
    async fn on_session(&self, event: SessionEvent) -> Result<(), PluginError> {
        let reason = match &event.reason {
            SessionReason::Start => "start".to_owned(),
            SessionReason::Switch => "switch".to_owned(),
            SessionReason::Branch => "branch".to_owned(),
            SessionReason::Tree => "tree".to_owned(),
            SessionReason::Shutdown => "shutdown".to_owned(),
            SessionReason::Other(other) => other.clone(),
        };
        let ids: Vec<&str> = event
            .results
            .iter()
            .map(|r| r.tool_call_id.as_str())
            .collect();
        self.heard
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(format!("{reason} [{}]", ids.join(",")));
        Ok(())
    }
}

#[derive(Default)]
struct Ask;

impl CustomTool for Ask {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_ask"
    }
    fn label(&self) -> &str {
        "Frozen Ask"
    }
    fn description(&self) -> &str {
        "Asks the user to confirm, then to pick a colour, and tells them the answer"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let text = params.text;
        let ui = ctx.ui();
        if !ui
            .confirm("Frozen ask", format!("Go on with {text}?"))
            .await?
        {
            return Ok(AgentToolResult::text(format!("declined {text}")));
        }
        let colour = ui.select("Frozen colour", &["red", "green"]).await?;
        let colour = colour.unwrap_or_else(|| "none".to_owned());
        ui.notify(format!("{text} is {colour}"), NotifyLevel::Info)
            .await?;
        Ok(AgentToolResult::text(format!("{text}: {colour}")))
    }
}

#[derive(Default)]
struct Exec;

impl CustomTool for Exec {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_exec"
    }
    fn label(&self) -> &str {
        "Frozen Exec"
    }
    fn description(&self) -> &str {
        "Runs echo with its text"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let output = ctx
            .exec("echo", ["frozen", params.text.as_str()], ExecOptions::new())
            .await?;
        Ok(AgentToolResult::text(format!(
            "exec: {} (code {:?})",
            output.stdout_text().trim_end(),
            output.code
        )))
    }
}

#[derive(Default)]
struct Media;

impl CustomTool for Media {
    type Params = Params;
    fn name(&self) -> &str {
        "frozen_media"
    }
    fn label(&self) -> &str {
        "Frozen Media"
    }
    fn description(&self) -> &str {
        "Answers with audio and an embedded resource"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult {
            content: vec![
                Content::Text {
                    text: format!("media: {}", params.text),
                },
                Content::Audio {
                    data: "UklGRiQAAABXQVZF".to_owned(),
                    mime_type: "audio/wav".to_owned(),
                },
                Content::Resource {
                    resource: EmbeddedResource {
                        uri: "file:///frozen/notes.txt".to_owned(),
                        mime_type: Some("text/plain".to_owned()),
                        text: Some(params.text),
                        blob: None,
                    },
                },
            ],
            details: None,
        })
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
        let attempts = Arc::new(AtomicUsize::new(0));
        let for_apply = text.clone();
        let for_reject = text.clone();
        ctx.push_pending_action(
            CustomToolPendingAction::retryable(format!("Frozen: {text}"), move |reason| {
                let text = for_apply.clone();
                let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if text == "fail-me" && attempt == 1 {
                        return Err(PluginError::new(format!(
                            "apply of {text} failed on purpose (attempt {attempt})"
                        )));
                    }
                    Ok(AgentToolResult::text(format!(
                        "applied {text}: {reason} (attempt {attempt})"
                    )))
                }
            })
            .with_reject(move |reason| async move {
                Ok(Some(AgentToolResult::text(format!(
                    "rejected {for_reject}: {reason}"
                ))))
            })
            .with_details(json!({"api": "0.6.0", "text": text}))
            .with_source_tool_name("frozen_preview"),
        )?;
        Ok(AgentToolResult::text(format!("previewed {text}")))
    }
}

xcsh_plugin_api::export_plugin!(tools: [Echo, Ask, Exec, Media, Preview]);
