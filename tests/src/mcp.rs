//! A real `xcsh-plugins mcp` child process with the real `rmcp` client on its stdio, as an
//! agent would run it. Every line the server writes to stdout is kept on its way to the
//! client, so a test can check that nothing but JSON-RPC got there; its stderr is kept and
//! echoed.

#![allow(clippy::unwrap_used)] // Test support: fails loudly on unexpected errors.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;
use tokio::task::JoinHandle;

use crate::artifacts;

/// Generous bound for anything that should be quick, on a loaded machine.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running `xcsh-plugins ... mcp` child and the client connected to it.
pub struct McpServerProcess<H: ClientHandler = ()> {
    /// The initialized client.
    pub client: RunningService<RoleClient, H>,
    /// The server process (killed on drop).
    pub child: Child,
    /// Every line the server wrote to stdout, as written.
    stdout: Arc<Mutex<Vec<Vec<u8>>>>,
    /// Everything the server wrote to stderr.
    stderr: Arc<Mutex<String>>,
    pumps: Vec<JoinHandle<()>>,
}

impl McpServerProcess<()> {
    /// Start `xcsh-plugins <args> mcp` with a client that handles nothing itself.
    pub async fn start<I, S>(args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self::start_with_handler(args, ()).await
    }
}

/// The arguments of a server over one plugin, in `isolation`, at `cwd` (no default plugin
/// directories).
pub fn server_args(isolation: &str, plugin: &Path, cwd: &Path) -> Vec<OsString> {
    vec![
        "--no-default-dirs".into(),
        "--isolation".into(),
        isolation.into(),
        "--plugin".into(),
        plugin.into(),
        "--cwd".into(),
        cwd.into(),
    ]
}

impl<H: ClientHandler> McpServerProcess<H> {
    /// Start `xcsh-plugins <args> mcp` (logging `xcsh_loader::mcp` and `::session` at info) and initialize
    /// `handler`'s client on its stdio.
    pub async fn start_with_handler<I, S>(args: I, handler: H) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self::start_with_env(args, handler, Vec::new()).await
    }

    /// [`Self::start_with_handler`] with these environment variables set for the server.
    pub async fn start_with_env<I, S>(args: I, handler: H, env: Vec<(OsString, OsString)>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        // The default log filter, unless the test sets one.
        let log = (!env.iter().any(|(key, _)| key == "XCSH_LOG")).then_some((
            OsString::from("XCSH_LOG"),
            OsString::from("xcsh_loader::mcp=info,xcsh_loader::session=info"),
        ));
        let mut child = tokio::process::Command::new(artifacts().cli())
            .args(args.into_iter().map(Into::into))
            .arg("mcp")
            .envs(log)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cannot start xcsh-plugins mcp");
        let stdin = child.stdin.take().unwrap();
        let child_stdout = child.stdout.take().unwrap();
        let child_stderr = child.stderr.take().unwrap();

        // stdout -> (recorded) -> the client's end of an in-memory pipe.
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let (client_end, mut tee) = tokio::io::duplex(1 << 16);
        let recorded = Arc::clone(&stdout);
        let stdout_pump = tokio::spawn(async move {
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
        let stderr_pump = tokio::spawn(async move {
            let mut lines = BufReader::new(child_stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[xcsh-plugins mcp] {line}");
                let mut logged = logged.lock().unwrap();
                logged.push_str(&line);
                logged.push('\n');
            }
        });

        let client = tokio::time::timeout(PATIENCE, handler.serve((client_end, stdin)))
            .await
            .expect("initialize timed out")
            .expect("initialize failed");
        Self {
            client,
            child,
            stdout,
            stderr,
            pumps: vec![stdout_pump, stderr_pump],
        }
    }

    /// `tools/call` with an object of arguments; panics on a timeout or a protocol error
    /// (a tool's failure is an `isError` result, not a protocol error).
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments must be an object");
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        tokio::time::timeout(PATIENCE, self.client.call_tool(params))
            .await
            .unwrap_or_else(|_| panic!("tools/call {name} timed out"))
            .unwrap_or_else(|e| panic!("tools/call {name} failed at the protocol level: {e}"))
    }

    /// The names `tools/list` gives now.
    pub async fn tool_names(&self) -> Vec<String> {
        tokio::time::timeout(PATIENCE, self.client.list_all_tools())
            .await
            .expect("tools/list timed out")
            .expect("tools/list failed")
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect()
    }

    /// The JSON-RPC messages the server wrote to stdout so far, parsed (lines that are not
    /// JSON are left out; `stop` fails on them).
    pub fn sent(&self) -> Vec<Value> {
        let lines = self.stdout.lock().unwrap();
        lines
            .iter()
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect()
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait until the server's stderr holds `needle`.
    pub async fn wait_for_log(&self, needle: &str) {
        let found = tokio::time::timeout(PATIENCE, async {
            while !self.stderr.lock().unwrap().contains(needle) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "the server never logged {needle:?}; stderr:\n{}",
            self.stderr()
        );
    }

    /// Close the client (stdin EOF), check the server exits 0 and wrote only JSON-RPC to
    /// stdout, in whole lines. Returns everything it wrote to stderr.
    pub async fn stop(mut self) -> String {
        let _ = tokio::time::timeout(PATIENCE, self.client.cancel())
            .await
            .expect("closing the client timed out");
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the server did not exit after stdin closed")
            .unwrap();
        assert!(status.success(), "the server exited with {status}");
        for pump in self.pumps {
            pump.await.unwrap();
        }
        let lines = self.stdout.lock().unwrap();
        assert!(!lines.is_empty(), "the server wrote nothing to stdout");
        for line in lines.iter() {
            let text = String::from_utf8_lossy(line);
            assert!(
                line.ends_with(b"\n"),
                "stdout ended with a partial line: {text:?}"
            );
            let message: Value = serde_json::from_str(text.trim_end())
                .unwrap_or_else(|e| panic!("non-JSON line on stdout ({e}): {text:?}"));
            assert_eq!(
                message["jsonrpc"], "2.0",
                "not a JSON-RPC message on stdout: {text}"
            );
        }
        drop(lines);
        let stderr = self.stderr.lock().unwrap().clone();
        stderr
    }
}

/// The text blocks of a result, joined with newlines.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
pub struct ListChanges {
    seen: Arc<std::sync::atomic::AtomicUsize>,
}

impl ClientHandler for ListChanges {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl ListChanges {
    /// How many have come so far.
    pub fn count(&self) -> usize {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until `count` have come (fails after [`PATIENCE`]).
    pub async fn wait_for(&self, count: usize) {
        let arrived = tokio::time::timeout(PATIENCE, async {
            while self.count() < count {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(arrived.is_ok(), "no notifications/tools/list_changed came");
    }
}

/// A client that keeps every log message (`notifications/message`) the server sends.
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.
#[derive(Clone, Default)]
pub struct LogRecorder {
    messages: Arc<Mutex<Vec<rmcp::model::LoggingMessageNotificationParam>>>,
}

#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.
impl ClientHandler for LogRecorder {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.messages.lock().unwrap().push(params);
    }
}

#[allow(deprecated)] // As above.
impl LogRecorder {
    /// Every message so far.
    pub fn messages(&self) -> Vec<rmcp::model::LoggingMessageNotificationParam> {
        self.messages.lock().unwrap().clone()
    }

    /// Wait (up to [`PATIENCE`]) until `count` messages arrived, and return every one so far;
    /// fails the test if fewer came.
    pub async fn wait_for(
        &self,
        count: usize,
    ) -> Vec<rmcp::model::LoggingMessageNotificationParam> {
        let arrived = self.wait_until(|messages| messages.len() >= count).await;
        let messages = self.messages();
        assert!(arrived, "{count} log message(s) expected, got {messages:?}");
        messages
    }

    /// Wait (up to [`PATIENCE`]) for the first message from `logger`; fails the test, showing
    /// every message that came, if none did.
    pub async fn wait_for_logger(
        &self,
        logger: &str,
    ) -> rmcp::model::LoggingMessageNotificationParam {
        let from =
            |m: &rmcp::model::LoggingMessageNotificationParam| m.logger.as_deref() == Some(logger);
        self.wait_until(|messages| messages.iter().any(from)).await;
        let messages = self.messages();
        match messages.iter().find(|m| from(m)) {
            Some(message) => message.clone(),
            None => panic!("no log message from {logger:?} came; logs: {messages:?}"),
        }
    }

    /// Whether `done` held of the messages within [`PATIENCE`].
    async fn wait_until(
        &self,
        done: impl Fn(&[rmcp::model::LoggingMessageNotificationParam]) -> bool,
    ) -> bool {
        tokio::time::timeout(PATIENCE, async {
            while !done(&self.messages.lock().unwrap()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .is_ok()
    }
}
