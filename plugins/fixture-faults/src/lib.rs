//! Test fixture: tools that fail in every way a plugin can, so tests can prove the host
//! survives each one and the other tools keep working.

#![deny(unsafe_code)]

use std::time::Duration;

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction,
    PluginError, ToolContext, ToolSet, Value,
};

#[derive(Clone, Copy)]
enum Fault {
    PanicInExecute,
    PanicAfterAwait,
    PanicInApply,
    PanicInReject,
    ReturnsError,
    Hangs,
    PanicInDrop,
    AnsiLabel,
    BigResult,
    HangInApply,
    DropBombs,
}

struct FaultTool {
    name: &'static str,
    fault: Fault,
    api: CustomToolApi,
    /// Set for `drop_bomb_preview`: goes off when the host drops the tool.
    _bomb: Option<DropBomb>,
}

/// Panics when dropped: held across an `.await` by `PanicInDrop`.
struct DropBomb;

impl Drop for DropBomb {
    fn drop(&mut self) {
        panic!("drop bomb went off");
    }
}

impl CustomTool for FaultTool {
    type Params = Value;
    fn name(&self) -> &str {
        self.name
    }
    fn label(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "A deliberately faulty tool"
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn deferrable(&self) -> bool {
        matches!(
            self.fault,
            Fault::PanicInApply | Fault::PanicInReject | Fault::AnsiLabel
        )
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        match self.fault {
            Fault::PanicInExecute => panic!("execute exploded on purpose"),
            Fault::PanicAfterAwait => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                panic!("exploded after an await");
            }
            Fault::PanicInApply => {
                self.api.push_pending_action(CustomToolPendingAction::new(
                    "Faults: apply panics",
                    |_reason| async move { panic!("apply exploded on purpose") },
                ))?;
                Ok(AgentToolResult::text("previewed"))
            }
            Fault::PanicInReject => {
                self.api.push_pending_action(
                    CustomToolPendingAction::new("Faults: reject panics", |_reason| async move {
                        Ok(AgentToolResult::text("applied"))
                    })
                    .with_reject(|_reason| async move { panic!("reject exploded on purpose") }),
                )?;
                Ok(AgentToolResult::text("previewed"))
            }
            Fault::ReturnsError => Err(PluginError::new("deliberate failure")),
            Fault::Hangs => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(AgentToolResult::text("woke up"))
            }
            Fault::PanicInDrop => {
                let _bomb = DropBomb;
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(AgentToolResult::text("woke up"))
            }
            Fault::AnsiLabel => {
                self.api.push_pending_action(CustomToolPendingAction::new(
                    "Evil\x1b[2J: clear\x1b]0;owned\x07 screen\tnow",
                    |_reason| async move { Ok(AgentToolResult::text("\x1b[31mred\x1b[0m applied")) },
                ))?;
                Ok(AgentToolResult::text("\x1b[2Jpreview with escapes"))
            }
            Fault::BigResult => Ok(AgentToolResult::text("x".repeat(50 * 1024 * 1024))),
            Fault::DropBombs => {
                // The action's callback owns a bomb: it goes off when the host drops the
                // unresolved action (a cleared store, an ended session).
                let bomb = DropBomb;
                self.api.push_pending_action(CustomToolPendingAction::new(
                    "Faults: dropped unresolved",
                    move |_reason| async move {
                        let _bomb = bomb;
                        Ok(AgentToolResult::text("applied"))
                    },
                ))?;
                Ok(AgentToolResult::text("previewed"))
            }
            Fault::HangInApply => {
                self.api.push_pending_action(CustomToolPendingAction::new(
                    "Faults: apply hangs",
                    |_reason| async move {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        Ok(AgentToolResult::text("woke up"))
                    },
                ))?;
                Ok(AgentToolResult::text("previewed"))
            }
        }
    }
}

fn factory(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    let tools = [
        ("panic_execute", Fault::PanicInExecute),
        ("panic_after_await", Fault::PanicAfterAwait),
        ("panic_apply_preview", Fault::PanicInApply),
        ("panic_reject_preview", Fault::PanicInReject),
        ("fail", Fault::ReturnsError),
        ("hang", Fault::Hangs),
        ("panic_in_drop", Fault::PanicInDrop),
        ("ansi_preview", Fault::AnsiLabel),
        ("big_result", Fault::BigResult),
        ("hang_apply_preview", Fault::HangInApply),
        ("drop_bomb_preview", Fault::DropBombs),
    ];
    Ok(tools
        .into_iter()
        .fold(ToolSet::new(), |set, (name, fault)| {
            set.with(FaultTool {
                name,
                fault,
                api: api.clone(),
                // Lazily: a bomb built and dropped for the other tools would go off here.
                #[allow(clippy::unnecessary_lazy_evaluations)]
                _bomb: matches!(fault, Fault::DropBombs).then(|| DropBomb),
            })
        }))
}

export_plugin!(factory);
