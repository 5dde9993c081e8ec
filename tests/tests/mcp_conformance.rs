//! `xcsh-plugins mcp` as the MCP conformance suite checks it (issue 36), with the fixture
//! plugin that defines the suite's tools: JSON-RPC errors on raw stdio lines, plugin log lines
//! reaching the client (in process and under process isolation), image content and a JSON
//! Schema 2020-12 tool schema end to end. `.ci/mcp-conformance` runs the suite itself.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.

use std::ffi::OsString;
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, ContentBlock, LoggingLevel, SetLevelRequestParams};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use xcsh_integration_tests::mcp::{text, LogRecorder, McpServerProcess, PATIENCE};
use xcsh_integration_tests::{artifacts, plugin};

fn args(isolation: &str) -> Vec<OsString> {
    vec![
        "--no-default-dirs".into(),
        "--isolation".into(),
        isolation.into(),
        "--plugin".into(),
        plugin("fixture-conformance").into(),
    ]
}

/// A raw `xcsh-plugins mcp`: write lines to its stdin, read its answers line by line.
struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Raw {
    fn start() -> Self {
        let mut child = tokio::process::Command::new(artifacts().cli())
            .args(args("in-process"))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The next message the server writes (notifications skipped).
    async fn answer(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(PATIENCE, self.stdout.next_line())
                .await
                .expect("no answer")
                .unwrap()
                .expect("the server closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    async fn ask(&mut self, line: &str) -> Value {
        self.send(line).await;
        self.answer().await
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_errors_on_raw_stdio_are_the_spec_s() {
    let mut raw = Raw::start();

    let early = raw
        .ask(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    assert_eq!(early["id"], 1, "{early}");
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let message = early["error"]["message"].as_str().unwrap();
    assert!(message.contains("not initialized"), "{early}");

    let init = raw.ask(INITIALIZE).await;
    assert_eq!(init["id"], "init");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    let parse = raw.ask("this is not JSON").await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["error"]["message"], "Parse error", "{parse}");
    assert!(parse["id"].is_null(), "{parse}");

    for (line, reason) in [
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#,
            "missing field `name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text","arguments":"text"}}"#,
            "invalid type",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"verbose"}}"#,
            "verbose",
        ),
    ] {
        let answer = raw.ask(line).await;
        assert_eq!(answer["id"], 2, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{line}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{line}: {answer}");
    }

    let invalid = raw.ask(r#"{"jsonrpc":"2.0","id":3}"#).await;
    assert_eq!(invalid["error"]["code"], -32600, "{invalid}");
    assert_eq!(invalid["id"], 3, "{invalid}");

    // The session went on through all of it.
    let call = raw
        .ask(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_simple_text"}}"#)
        .await;
    assert_eq!(call["id"], 4, "{call}");
    assert_eq!(call["result"]["isError"], false, "{call}");

    drop(raw.stdin);
    let status = tokio::time::timeout(PATIENCE, raw.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}

async fn logs_reach_the_client(isolation: &str) {
    let recorder = LogRecorder::default();
    let server = McpServerProcess::start_with_handler(args(isolation), recorder.clone()).await;
    let peer = server.client.peer();

    let result = server.call("test_tool_with_logging", json!({})).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let messages = recorder.wait_for(3).await;
    assert_eq!(messages.len(), 3, "{messages:?}");
    for message in &messages {
        assert_eq!(message.level, LoggingLevel::Info);
        assert_eq!(message.logger.as_deref(), Some("fixture_conformance"));
    }
    assert_eq!(messages[0].data, json!("Tool execution started"));

    // Filtered by logging/setLevel.
    tokio::time::timeout(
        PATIENCE,
        peer.set_level(SetLevelRequestParams::new(LoggingLevel::Warning)),
    )
    .await
    .unwrap()
    .unwrap();
    server.call("test_tool_with_logging", json!({})).await;
    assert_eq!(recorder.messages().len(), 3, "{:?}", recorder.messages());
    tokio::time::timeout(
        PATIENCE,
        peer.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)),
    )
    .await
    .unwrap()
    .unwrap();
    server.call("test_tool_with_logging", json!({})).await;
    recorder.wait_for(6).await;
    // Lines arrive on tasks of their own: give a line the filter let through by mistake
    // time to show up.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(recorder.messages().len(), 6, "{:?}", recorder.messages());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_logs_reach_the_client_in_process() {
    logs_reach_the_client("in-process").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_logs_reach_the_client_under_process_isolation() {
    logs_reach_the_client("process").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_s_tools_behave_as_its_scenarios_check() {
    let server = McpServerProcess::start(args("in-process")).await;

    let simple = server.call("test_simple_text", json!({})).await;
    assert_ne!(simple.is_error, Some(true));
    assert!(!text(&simple).is_empty());

    let error = server.call("test_error_handling", json!({})).await;
    assert_eq!(error.is_error, Some(true));
    assert!(!text(&error).is_empty());

    let image = server.call("test_image_content", json!({})).await;
    match image.content.first() {
        Some(ContentBlock::Image(image)) => {
            assert_eq!(image.mime_type, "image/png");
            assert!(image.data.starts_with("iVBOR"));
        }
        other => panic!("no image block: {other:?}"),
    }

    // The 2020-12 schema as the plugin wrote it, and arguments checked against it.
    let tools = server.client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|tool| tool.name == "json_schema_2020_12_tool")
        .unwrap();
    let schema = Value::Object(tool.input_schema.as_ref().clone());
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["properties"]["address"]["$ref"], "#/$defs/address");
    assert!(schema["$defs"]["address"].is_object(), "{schema}");
    assert_eq!(schema["additionalProperties"], false);
    let fits = json!({"name": "n", "address": {"street": "s", "city": "c"}});
    let ok = server.call("json_schema_2020_12_tool", fits).await;
    assert_ne!(ok.is_error, Some(true), "{}", text(&ok));
    let wrong_ref = json!({"address": {"city": 3}});
    let refused = server.call("json_schema_2020_12_tool", wrong_ref).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    let extra = json!({"name": "n", "other": 1});
    let refused = server.call("json_schema_2020_12_tool", extra).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));

    // Progress: three updates, each its own notification (checked by the suite; here, that the
    // call with a progress token completes).
    let params = CallToolRequestParams::new("test_tool_with_progress".to_owned());
    let progress = tokio::time::timeout(PATIENCE, server.client.call_tool(params))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(progress.is_error, Some(true));
    server.stop().await;
}
