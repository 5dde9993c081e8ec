//! Test fixture for "Host services in `apply` and `reject`" (docs/guide/src/pending.md):
//! `ask_on_apply` pushes an action whose apply asks the user, notifies and runs a program through
//! the context it is handed, and whose reject notifies; the apply keeps its context, and
//! `use_stale_context` then tries it, to show that a context used after its action settled is a
//! clear error.

#![deny(unsafe_code)]

use std::sync::Mutex;

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolPendingAction, ExecOptions,
    NotifyLevel, PluginError, ToolContext, Value,
};

/// The context of the last apply, kept past its end on purpose.
static KEPT: Mutex<Option<ToolContext>> = Mutex::new(None);

#[derive(Default)]
struct AskOnApply;

impl CustomTool for AskOnApply {
    type Params = Value;

    fn name(&self) -> &str {
        "ask_on_apply"
    }

    fn label(&self) -> &str {
        "Ask on apply"
    }

    fn description(&self) -> &str {
        "Pushes an action whose apply asks the user, notifies and runs echo"
    }

    fn deferrable(&self) -> bool {
        true
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn execute(
        &self,
        _id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let action = CustomToolPendingAction::new_in_context(
            "Ask on apply: one question",
            |reason, ctx| async move {
                let yes = ctx.ui().confirm("Apply", "Really apply?").await?;
                ctx.ui()
                    .notify(format!("applying ({reason})"), NotifyLevel::Info)
                    .await?;
                let echo = ctx.exec("echo", ["from-apply"], ExecOptions::new()).await?;
                let text = format!(
                    "has_ui={} confirmed={yes} echo={}",
                    ctx.ui().has_ui(),
                    echo.stdout_text().trim()
                );
                *KEPT.lock().unwrap_or_else(|p| p.into_inner()) = Some(ctx);
                Ok(AgentToolResult::text(text))
            },
        )
        .with_reject_in_context(|reason, ctx| async move {
            ctx.ui()
                .notify(format!("discarded ({reason})"), NotifyLevel::Warning)
                .await?;
            Ok(Some(AgentToolResult::text(format!(
                "rejected with has_ui={}",
                ctx.ui().has_ui()
            ))))
        })
        .with_source_tool_name("ask_on_apply");
        ctx.push_pending_action(action)?;
        Ok(AgentToolResult::text("Pushed one action. Call resolve."))
    }
}

#[derive(Default)]
struct UseStaleContext;

impl CustomTool for UseStaleContext {
    type Params = Value;

    fn name(&self) -> &str {
        "use_stale_context"
    }

    fn label(&self) -> &str {
        "Use a stale context"
    }

    fn description(&self) -> &str {
        "Uses the context the last apply kept past its end"
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let kept = KEPT.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(stale) = kept else {
            return Err(PluginError::new("no context was kept: apply first"));
        };
        let question = stale.ui().confirm("Again", "Still there?").await;
        let program = stale.exec("echo", ["late"], ExecOptions::new()).await;
        let describe = |outcome: Result<String, PluginError>| match outcome {
            Ok(text) => format!("ok: {text}"),
            Err(error) => format!("error: {error}"),
        };
        Ok(AgentToolResult::text(format!(
            "confirm {}\nexec {}\ncancelled={}",
            describe(question.map(|yes| yes.to_string())),
            describe(program.map(|out| out.stdout_text())),
            stale.is_cancelled()
        )))
    }
}

export_plugin!(tools: [AskOnApply, UseStaleContext]);

#[cfg(test)]
mod tests {
    use super::*;
    use xcsh_plugin_api::testing::{Answer, PluginTest};
    use xcsh_plugin_api::{tools, ExecOutput};

    #[tokio::test]
    async fn the_harness_scripts_what_an_apply_asks_and_runs() {
        let test = PluginTest::new(tools![AskOnApply, UseStaleContext])
            .with_ui([Answer::Confirm(true)])
            .with_programs(|program| {
                assert_eq!(program.program, "echo");
                Ok(ExecOutput {
                    stdout: b"scripted\n".to_vec(),
                    code: Some(0),
                    ..ExecOutput::default()
                })
            });
        test.call("ask_on_apply", json!({})).await.unwrap();
        let applied = test.apply_newest("ok").await.unwrap();
        // The apply's question, notification and program went through the test's script.
        assert_eq!(test.asked().len(), 3, "{:?}", test.asked());
        assert_eq!(
            applied.joined_text(),
            "has_ui=true confirmed=true echo=scripted"
        );
        let stale = test.call("use_stale_context", json!({})).await.unwrap();
        let text = stale.text();
        assert!(
            text.starts_with(
                "confirm error: this context belongs to the apply of \"Ask on apply: one question\", which has ended"
            ),
            "{text}"
        );
        assert!(
            text.contains("exec error: this context belongs to"),
            "{text}"
        );
        assert!(text.ends_with("cancelled=true"), "{text}");
    }
}
