//! `xcsh-plugins mcp` as the MCP conformance suite checks it (issue 36), with the fixture
//! plugin that defines the suite's tools: JSON-RPC errors on raw stdio lines.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use xcsh_integration_tests::mcp::PATIENCE;
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
