//! A plugin rebuilt while `xcsh-plugins mcp` serves it, seen by the real `rmcp` client: the
//! next call is served by the new version, the client is sent
//! `notifications/tools/list_changed` and lists the new tools, and an action the old version
//! pushed still applies in the old version's process.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use xcsh_integration_tests::lib_name;
use xcsh_integration_tests::mcp::{text, ListChanges, McpServerProcess};
use xcsh_integration_tests::reload::{rebuild, version_and_pid};

async fn start(
    root: &Path,
    file: &Path,
    isolation: &str,
    changes: ListChanges,
) -> McpServerProcess<ListChanges> {
    let args: Vec<PathBuf> = vec![
        "--no-default-dirs".into(),
        "--isolation".into(),
        isolation.into(),
        "--plugin".into(),
        file.into(),
        "--cwd".into(),
        root.into(),
    ];
    McpServerProcess::start_with_handler(args, changes).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_rebuilt_during_an_mcp_session_serves_its_new_version_and_old_actions_still_apply()
{
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let file = root.join("target").join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let changes = ListChanges::default();
    let server = start(&root, &file, "process", changes.clone()).await;
    assert_eq!(
        server.tool_names().await,
        ["ast_edit", "reload_version", "reload_preview", "resolve"]
    );
    let first = server.call("reload_version", json!({})).await;
    let (version, old_pid) = version_and_pid(&text(&first));
    assert_eq!(version, 1);
    let previewed = server
        .call("reload_preview", json!({"file": "out.txt"}))
        .await;
    assert_eq!(previewed.is_error, Some(false));
    assert!(text(&previewed).starts_with("previewed by v1"));

    // Rebuilt while the session runs, and called right away: the call itself reloads.
    rebuild("fixture-reload-v2", &file);
    let next = server.call("reload_version", json!({})).await;
    assert_eq!(next.is_error, Some(false), "{}", text(&next));
    let (version, new_pid) = version_and_pid(&text(&next));
    assert_eq!(version, 2, "the next call is served by the new version");
    assert_ne!(new_pid, old_pid);
    changes.wait_for(1).await;
    assert_eq!(
        server.tool_names().await,
        [
            "ast_edit",
            "reload_version",
            "reload_preview",
            "reload_added",
            "resolve"
        ]
    );
    let added = server.call("reload_added", json!({})).await;
    assert!(
        text(&added).starts_with("added in v2\n"),
        "{}",
        text(&added)
    );
    server.wait_for_log("reloaded plugin").await;

    // The action version 1 pushed still applies, in version 1's process.
    let applied = server
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert_eq!(applied.is_error, Some(false), "{}", text(&applied));
    assert!(
        text(&applied).contains("applied by v1"),
        "{}",
        text(&applied)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).unwrap(),
        "applied by v1"
    );

    // Rebuilt again with the same tools: reloaded without a new notification.
    let notified = changes.count();
    rebuild("fixture-reload-v2", &file);
    let again = server.call("reload_version", json!({})).await;
    let (version, newest_pid) = version_and_pid(&text(&again));
    assert_eq!(version, 2);
    assert_ne!(newest_pid, new_pid);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(changes.count(), notified, "the tools did not change");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_the_server_reports_a_rebuilt_plugin_and_keeps_serving_the_loaded_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let changes = ListChanges::default();
    let server = start(&root, &file, "in-process", changes.clone()).await;
    rebuild("fixture-reload-v2", &file);
    server
        .wait_for_log("changed on disk; it runs in this process")
        .await;
    let answer = server.call("reload_version", json!({})).await;
    assert_eq!(version_and_pid(&text(&answer)).0, 1);
    assert_eq!(changes.count(), 0);
    server.stop().await;
}
