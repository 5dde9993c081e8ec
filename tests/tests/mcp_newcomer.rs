//! What `xcsh-plugins mcp` tells a real MCP client (rmcp) that a user would otherwise only
//! find on the server's stderr: each plugin file that failed to load arrives as an `error`
//! log message once the client is initialised, while the plugins that loaded are served;
//! `--require-all-plugins` ends the server before it serves; `xcsh/pending` reads 0 when
//! nothing is pending; a plugin's notification arrives as a log message from `xcsh/notify`.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.

use std::ffi::OsString;
use std::process::Stdio;

use rmcp::model::LoggingLevel;
use serde_json::json;
use xcsh_integration_tests::mcp::{server_args, LogRecorder, McpServerProcess, PATIENCE};
use xcsh_integration_tests::{artifacts, plugin};

fn args(dir: &std::path::Path, extra: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("batch-rename").into(),
        "--plugin".into(),
        "/nope/libx.so".into(),
        "--cwd".into(),
        dir.into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_error_reaches_the_client_as_an_error_log_and_the_rest_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let recorder = LogRecorder::default();
    let server =
        McpServerProcess::start_with_handler(args(dir.path(), &[]), recorder.clone()).await;
    let capabilities = server.client.peer_info().unwrap().capabilities.clone();
    assert!(
        capabilities.logging.is_some(),
        "the server declares logging"
    );

    let messages = recorder.wait_for(1).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    let log = &messages[0];
    assert_eq!(log.level, LoggingLevel::Error);
    assert_eq!(log.logger.as_deref(), Some("xcsh-plugins"));
    assert_eq!(log.data["path"], "/nope/libx.so");
    let message = log.data["message"].as_str().unwrap();
    assert!(
        message.starts_with("/nope/libx.so: ") && message.contains("No such file"),
        "{message}"
    );

    // The plugin that loaded is served, and the first result says nothing is pending.
    let names = server.tool_names().await;
    assert!(
        names.contains(&"batch_rename_preview".to_owned()),
        "{names:?}"
    );
    let result = server.call("ast_edit", json!({"ops": []})).await;
    let meta = result.meta.as_ref().unwrap();
    assert_eq!(meta.0["xcsh/pending"], json!(0), "{result:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_all_plugins_ends_the_server_before_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(artifacts().cli())
        .arg("mcp")
        .args(args(dir.path(), &["--require-all-plugins"]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
        .wait_with_output();
    // Exit 1 with nothing on stdout; without the option the same server serves (and exits 0
    // at the end of its input).
    let output = tokio::time::timeout(PATIENCE, output)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "nothing served on stdout");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--require-all-plugins is set") && stderr.contains("/nope/libx.so"),
        "{stderr}"
    );
}

/// A notification a plugin sends from its action's reject (docs/guide/src/pending.md) reaches the
/// client as a log message from `xcsh/notify`, whether the plugin runs in its own process (where
/// the host shows it on the thread that reads the plugin's messages) or in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_notification_reaches_the_client_as_a_log_in_either_isolation() {
    for isolation in ["process", "in-process"] {
        let dir = tempfile::tempdir().unwrap();
        let recorder = LogRecorder::default();
        let args = server_args(isolation, &plugin("fixture-action-context"), dir.path());
        let server = McpServerProcess::start_with_handler(args, recorder.clone()).await;
        let pushed = server.call("ask_on_apply", json!({})).await;
        assert_ne!(pushed.is_error, Some(true), "{isolation}: {pushed:?}");
        let rejected = server
            .call("resolve", json!({"action": "discard", "reason": "not now"}))
            .await;
        assert_ne!(rejected.is_error, Some(true), "{isolation}: {rejected:?}");
        let note = recorder.wait_for_logger("xcsh/notify").await;
        assert_eq!(note.level, LoggingLevel::Warning, "{isolation}");
        assert_eq!(note.data, json!("discarded (not now)"), "{isolation}");
        server.stop().await;
    }
}
