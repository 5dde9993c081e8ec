//! When a session ends, every action still pending gets its `reject` callback, newest first,
//! with the reason `Session ended before this action was resolved.`: through
//! `Session::close` on a real plugin, and in the MCP server when its client goes away.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};

use serde_json::json;
use xcsh_integration_tests::mcp::McpServerProcess;
use xcsh_integration_tests::{listing, plugin, scratch};
use xcsh_loader::messages::SESSION_ENDED;
use xcsh_loader::store::BoxFuture;
use xcsh_loader::{
    AgentToolResult, CallContext, PendingAction, PluginError, Session, Tool, ToolHints, ToolOrigin,
    ToolSpec,
};

#[tokio::test]
async fn close_rejects_what_is_pending_newest_first_with_the_session_end_reason() {
    let dir = scratch(&["a1.txt", "b1.txt"]);
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("batch-rename"))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    for (find, replace) in [("a", "x"), ("b", "y")] {
        let file = format!("{find}1.txt");
        let preview = session
            .call(
                "batch_rename_preview",
                json!({"files": [file], "find": find, "replace": replace}),
            )
            .await;
        assert!(!preview.is_error, "{}", preview.text());
    }
    let outcomes = session.close().await;
    let texts: Vec<String> = outcomes.iter().map(|o| o.text()).collect();
    // The plugin's own reject ran for each, newest (b → y) first, with the reason.
    assert_eq!(
        texts,
        [
            format!("Discarded batch rename. Reason: {SESSION_ENDED}"),
            format!("Discarded batch rename. Reason: {SESSION_ENDED}"),
        ]
    );
    assert!(!session.has_pending());
    // Nothing was applied, and a second close finds nothing.
    assert_eq!(listing(dir.path()), ["a1.txt", "b1.txt"]);
    assert!(session.close().await.is_empty());
}

/// A built-in tool whose actions record which callback ran, to check order and exactly-once.
struct Recorder {
    spec: ToolSpec,
    log: Arc<Mutex<Vec<String>>>,
}

impl Tool for Recorder {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute(
        &self,
        _id: String,
        arguments: serde_json::Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        let name = arguments["name"].as_str().unwrap_or("?").to_owned();
        let (for_apply, for_reject) = (Arc::clone(&self.log), Arc::clone(&self.log));
        let (apply_name, reject_name) = (name.clone(), name.clone());
        let action = PendingAction::new(
            format!("Record: {name}"),
            "record",
            Box::new(move |_reason, _ctx| {
                for_apply
                    .lock()
                    .unwrap()
                    .push(format!("apply {apply_name}"));
                Box::pin(async { Ok(AgentToolResult::text("applied")) })
            }),
        )
        .with_reject(Box::new(move |reason, _ctx| {
            for_reject
                .lock()
                .unwrap()
                .push(format!("reject {reject_name}: {reason}"));
            Box::pin(async { Ok(None) })
        }));
        Box::pin(async move {
            ctx.store
                .ok_or_else(|| PluginError::new("no store"))?
                .push_action(action)?;
            Ok(AgentToolResult::text("recorded"))
        })
    }
}

#[tokio::test]
async fn each_action_gets_exactly_one_of_apply_or_reject() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder {
        spec: ToolSpec {
            name: "record".into(),
            label: "Record".into(),
            description: "Pushes an action that records its callback".into(),
            parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            hidden: false,
            deferrable: true,
            hints: ToolHints::default(),
            origin: ToolOrigin::Builtin,
        },
        log: Arc::clone(&log),
    };
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .builtin(Arc::new(recorder))
        .build();
    for name in ["one", "two", "three"] {
        assert!(!session.call("record", json!({"name": name})).await.is_error);
    }
    let applied = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(!applied.is_error, "{}", applied.text());
    let closed = session.close().await;
    assert_eq!(
        closed.iter().map(|o| o.text()).collect::<Vec<_>>(),
        [
            format!("Discarded: Record: two. Reason: {SESSION_ENDED}"),
            format!("Discarded: Record: one. Reason: {SESSION_ENDED}"),
        ]
    );
    assert_eq!(
        *log.lock().unwrap(),
        [
            "apply three".to_owned(),
            format!("reject two: {SESSION_ENDED}"),
            format!("reject one: {SESSION_ENDED}"),
        ]
    );
}

#[tokio::test]
async fn the_mcp_server_rejects_what_is_pending_when_its_client_goes_away() {
    let dir = scratch(&["a1.txt"]);
    let args: Vec<OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("batch-rename").into(),
        "--cwd".into(),
        dir.path().into(),
    ];
    let server = McpServerProcess::start(args).await;
    let preview = server
        .call(
            "batch_rename_preview",
            json!({"files": ["a1.txt"], "find": "a", "replace": "b"}),
        )
        .await;
    assert_ne!(preview.is_error, Some(true));
    // The client goes away with the action still pending; the server exits 0.
    let stderr = server.stop().await;
    assert!(
        stderr.contains(&format!(
            "rejected a pending action: Discarded batch rename. Reason: {SESSION_ENDED}"
        )),
        "{stderr}"
    );
    assert_eq!(listing(dir.path()), ["a1.txt"]);
}
