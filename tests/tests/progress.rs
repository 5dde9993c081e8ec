//! A tool's partial results (`ctx.update`) reach the user: over MCP as
//! `notifications/progress` for a request that carried a progress token, rate-limited, with
//! the partial text as the message.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient};
use rmcp::ClientHandler;
use serde_json::json;
use xcsh_integration_tests::mcp::{McpServerProcess, PATIENCE};
use xcsh_integration_tests::plugin;

/// A client that records every progress notification it gets.
#[derive(Clone, Default)]
struct Recorder {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

/// Call `progress_steps` through a real rmcp client, which puts a progress token of its own in
/// every request's `_meta`; return the progress notifications the client received.
async fn call_with_progress(steps: u32, pause_ms: u64) -> Vec<ProgressNotificationParam> {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("fixture-tokio").into(),
        "--cwd".into(),
        dir.path().into(),
    ];
    let recorder = Recorder::default();
    let server = McpServerProcess::start_with_handler(args, recorder.clone()).await;
    let arguments = json!({"steps": steps, "pause_ms": pause_ms});
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("progress_steps")
            .with_arguments(arguments.as_object().unwrap().clone()),
    ));
    let handle = server
        .client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, handle.await_response())
        .await
        .unwrap()
        .unwrap();
    let ServerResult::CallToolResult(result) = response else {
        panic!("not a tool result: {response:?}");
    };
    assert_ne!(result.is_error, Some(true), "{result:?}");
    // Notifications sent before the response have been handled by now; give stragglers a
    // moment anyway before closing.
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.stop().await;
    let progress = recorder.progress.lock().unwrap().clone();
    progress
}

#[tokio::test]
async fn updates_become_progress_notifications_with_the_partial_text() {
    let progress = call_with_progress(3, 300).await;
    let messages: Vec<&str> = progress
        .iter()
        .map(|p| p.message.as_deref().unwrap_or(""))
        .collect();
    // Each step is 300 ms apart, more than the rate limit: every one goes out, in order.
    assert_eq!(messages, ["step 1 of 3", "step 2 of 3", "step 3 of 3"]);
    for (n, param) in progress.iter().enumerate() {
        assert_eq!(param.progress_token, progress[0].progress_token);
        assert_eq!(param.progress, (n + 1) as f64, "progress must increase");
    }
}

#[tokio::test]
async fn a_chatty_tool_is_rate_limited_and_its_last_update_still_arrives() {
    let progress = call_with_progress(400, 0).await;
    assert!(!progress.is_empty());
    // 400 updates in a few milliseconds: at most a handful of notifications.
    assert!(progress.len() <= 10, "{} notifications", progress.len());
    assert_eq!(
        progress.last().unwrap().message.as_deref(),
        Some("step 400 of 400")
    );
    let values: Vec<f64> = progress.iter().map(|p| p.progress).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
}

/// The same call as raw JSON-RPC lines, without a progress token: the MCP specification says a
/// server sends progress only for requests that asked for it.
#[tokio::test]
async fn without_a_progress_token_no_progress_is_sent() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let artifacts = xcsh_integration_tests::artifacts();
    let mut child = tokio::process::Command::new(artifacts.cli())
        .args(["--no-default-dirs", "--plugin"])
        .arg(artifacts.plugin("fixture-tokio"))
        .arg("--cwd")
        .arg(dir.path())
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "progress_steps", "arguments": {"steps": 3, "pause_ms": 10}}}),
    ];
    for request in &requests {
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let answered = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            let done = message["id"] == 2;
            seen.push(message);
            if done {
                return;
            }
        }
    })
    .await;
    assert!(answered.is_ok(), "no answer to tools/call: {seen:#?}");
    assert!(
        seen.iter().all(|m| m["method"] != "notifications/progress"),
        "{seen:#?}"
    );
    assert_eq!(
        seen.last().unwrap()["result"]["content"][0]["text"],
        "did 3 steps"
    );
    drop(stdin);
    let _ = child.wait().await;
}
