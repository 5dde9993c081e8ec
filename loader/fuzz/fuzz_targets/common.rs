//! A session for fuzzing: an `echo` tool with a strict schema and a deferrable `preview` tool
//! whose pending action does nothing, so `resolve` is registered and can apply or discard.

use std::sync::Arc;

use serde_json::{json, Value};
use xcsh_loader::store::BoxFuture;
use xcsh_loader::{
    AgentToolResult, CallContext, PendingAction, PluginError, Session, Tool, ToolHints, ToolOrigin,
    ToolSpec,
};

struct Echo(ToolSpec);

impl Tool for Echo {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn execute(
        &self,
        _: String,
        args: Value,
        _: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        // Arguments were validated against the schema, so `text` is a string.
        let text = args["text"].as_str().map(str::to_owned);
        Box::pin(async move {
            text.map(AgentToolResult::text)
                .ok_or_else(|| PluginError::new("validated arguments lost `text`"))
        })
    }
}

struct Preview(ToolSpec);

impl Tool for Preview {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn execute(
        &self,
        _: String,
        args: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        let label = args["label"].as_str().unwrap_or("Fuzz: preview").to_owned();
        Box::pin(async move {
            PendingAction::validate_label(&label)?;
            let store = ctx
                .store
                .ok_or_else(|| PluginError::new(xcsh_loader::STORE_UNAVAILABLE))?;
            store.push_action(PendingAction::new(
                label,
                "preview",
                Box::new(|reason, _ctx| Box::pin(async move { Ok(AgentToolResult::text(reason)) })),
            ))?;
            Ok(AgentToolResult::text("previewed"))
        })
    }
}

fn spec(name: &str, parameters: Value, deferrable: bool) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        label: name.to_owned(),
        description: "fuzz".to_owned(),
        parameters,
        hidden: false,
        deferrable,
        hints: ToolHints::default(),
        origin: ToolOrigin::Builtin,
    }
}

pub fn session() -> Session {
    let echo = spec(
        "echo",
        json!({"type":"object","properties":{"text":{"type":"string","maxLength":64}},"required":["text"],"additionalProperties":false}),
        false,
    );
    let preview = spec(
        "preview",
        json!({"type":"object","properties":{"label":{"type":"string"}}}),
        true,
    );
    Session::builder(std::env::temp_dir())
        .default_dirs(false)
        .builtin(Arc::new(Echo(echo)))
        .builtin(Arc::new(Preview(preview)))
        .build()
}
