//! Process isolation under `xcsh-plugins mcp`, driven by the real `rmcp` client: the
//! client's session survives every fault of issue 13, blocking calls do not stop the server
//! answering others, and plugin output never reaches the JSON-RPC stream.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use xcsh_integration_tests::{artifacts, plugin};

const PATIENCE: Duration = Duration::from_secs(20);

struct Server {
    client: Arc<RunningService<RoleClient, ()>>,
    child: tokio::process::Child,
    stdout: Arc<Mutex<Vec<Vec<u8>>>>,
    stderr: Arc<Mutex<String>>,
}

async fn start(cwd: &Path, isolation: &str) -> Server {
    let mut child = tokio::process::Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--isolation", isolation, "--plugin"])
        .arg(plugin("fixture-crash"))
        .arg("--cwd")
        .arg(cwd)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let child_stdout = child.stdout.take().unwrap();
    let child_stderr = child.stderr.take().unwrap();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let (client_end, mut tee) = tokio::io::duplex(1 << 16);
    let recorded = Arc::clone(&stdout);
    tokio::spawn(async move {
        let mut reader = BufReader::new(child_stdout);
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    recorded.lock().unwrap().push(line.clone());
                    if tee.write_all(&line).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let stderr = Arc::new(Mutex::new(String::new()));
    let logged = Arc::clone(&stderr);
    tokio::spawn(async move {
        let mut lines = BufReader::new(child_stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("[xcsh-plugins mcp] {line}");
            logged.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let client = tokio::time::timeout(PATIENCE, ().serve((client_end, stdin)))
        .await
        .expect("initialize timed out")
        .expect("initialize failed");
    Server {
        client: Arc::new(client),
        child,
        stdout,
        stderr,
    }
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    name: &str,
) -> Result<CallToolResult, tokio::time::error::Elapsed> {
    let params = CallToolRequestParams::new(name.to_owned());
    tokio::time::timeout(PATIENCE, client.call_tool(params))
        .await
        .map(|result| result.unwrap_or_else(|e| panic!("tools/call {name} failed: {e}")))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Server {
    async fn ping(&self) {
        let result = call(&self.client, "ping").await.expect("ping timed out");
        assert_eq!(text(&result), "pong");
    }

    /// Every line on stdout is a JSON-RPC message; then stop the server.
    async fn stop(mut self) {
        for line in self.stdout.lock().unwrap().iter() {
            let message: Value = serde_json::from_slice(line)
                .unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {line:?}"));
            assert_eq!(message["jsonrpc"], "2.0");
        }
        if let Ok(client) = Arc::try_unwrap(self.client) {
            let _ = tokio::time::timeout(PATIENCE, client.cancel()).await;
        }
        let status = tokio::time::timeout(PATIENCE, self.child.wait()).await;
        assert!(
            status.is_ok(),
            "the server did not exit; stderr:\n{}",
            self.stderr.lock().unwrap()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_session_survives_every_fault_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = plugin("fixture-crash").canonicalize().unwrap();
    for tool in ["segfault", "abort", "stack_overflow", "exit", "abort_later"] {
        let server = start(dir.path(), "process").await;
        let result = call(&server.client, tool).await.unwrap();
        if tool == "abort_later" {
            assert_ne!(result.is_error, Some(true), "{}", text(&result));
            tokio::time::sleep(Duration::from_millis(600)).await;
        } else {
            assert_eq!(result.is_error, Some(true), "{tool}");
            let message = text(&result);
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains(&format!("tool \"{tool}\"")), "{message}");
        }
        server.ping().await;
        server.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_output_never_reaches_the_protocol_stream_in_either_mode() {
    let dir = tempfile::tempdir().unwrap();
    for isolation in ["process", "in-process"] {
        let server = start(dir.path(), isolation).await;
        let result = call(&server.client, "print").await.unwrap();
        assert_eq!(text(&result), "printed");
        server.ping().await;
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
            let client = Arc::clone(&server.client);
            blocked.push(tokio::spawn(async move {
                let params = CallToolRequestParams::new(tool.to_owned());
                let _ = client.call_tool(params).await;
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.ping().await;
        server.ping().await;
        for task in blocked {
            task.abort();
        }
        // The server process (and with it each plugin process) is killed on drop.
        drop(server);
    }
}
