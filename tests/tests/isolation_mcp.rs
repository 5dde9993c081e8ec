//! Process isolation under `xcsh-plugins mcp`, driven by the real `rmcp` client: the
//! client's session survives every fault of issue 13, blocking calls do not stop the server
//! answering others, and plugin output never reaches the JSON-RPC stream.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RoleClient};
use xcsh_integration_tests::mcp::{server_args, text, McpServerProcess, PATIENCE};
use xcsh_integration_tests::plugin;

type Server = McpServerProcess;

async fn start(cwd: &Path, isolation: &str) -> Server {
    McpServerProcess::start(server_args(isolation, &plugin("fixture-crash"), cwd)).await
}

/// `tools/call` without arguments; `Err` when it takes longer than [`PATIENCE`].
async fn call(
    client: &Peer<RoleClient>,
    name: &str,
) -> Result<CallToolResult, tokio::time::error::Elapsed> {
    let params = CallToolRequestParams::new(name.to_owned());
    tokio::time::timeout(PATIENCE, client.call_tool(params))
        .await
        .map(|result| result.unwrap_or_else(|e| panic!("tools/call {name} failed: {e}")))
}

async fn ping(server: &Server) {
    let result = call(server.client.peer(), "ping")
        .await
        .expect("ping timed out");
    assert_eq!(text(&result), "pong");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_survives_every_fault_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = plugin("fixture-crash").canonicalize().unwrap();
    for tool in ["segfault", "abort", "stack_overflow", "exit", "abort_later"] {
        let server = start(dir.path(), "process").await;
        let result = call(server.client.peer(), tool).await.unwrap();
        if tool == "abort_later" {
            assert_ne!(result.is_error, Some(true), "{}", text(&result));
            tokio::time::sleep(Duration::from_millis(600)).await;
        } else {
            assert_eq!(result.is_error, Some(true), "{tool}");
            let message = text(&result);
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains(&format!("tool \"{tool}\"")), "{message}");
        }
        ping(&server).await;
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_output_never_reaches_the_protocol_stream_in_either_mode() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ["process", "in-process"] {
        let server = start(dir.path(), isolation).await;
        let result = call(server.client.peer(), "print").await.unwrap();
        assert_eq!(text(&result), "printed");
        ping(&server).await;
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_blocking_calls_at_once_do_not_stop_the_server_answering() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ["process", "in-process"] {
        let server = start(dir.path(), isolation).await;
        let mut blocked = Vec::new();
        for tool in ["sleep", "spin", "sleep"] {
            let client = server.client.peer().clone();
            blocked.push(tokio::spawn(async move {
                let params = CallToolRequestParams::new(tool.to_owned());
                let _ = client.call_tool(params).await;
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        ping(&server).await;
        ping(&server).await;
        for task in blocked {
            task.abort();
        }
        // The server process (and with it each plugin process) is killed on drop.
        drop(server);
    }
}
