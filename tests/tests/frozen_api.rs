//! A plugin built against a frozen copy of `xcsh-plugin-api` 0.2.0 (`tests/frozen/`) in the
//! current host: it loads, lists, runs, pushes a pending action and resolves it. This is the
//! proof that the ABI grows without breaking plugins already built (see `plugin-api/ABI.md`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::HashMap;

use rmcp::model::Tool;
use rmcp::ServiceExt;
use serde_json::json;
use xcsh_integration_tests::frozen_v0_2_plugin;
use xcsh_loader::{Session, ToolHints, RESOLVE_TOOL_NAME};

fn frozen_session(dir: &std::path::Path) -> Session {
    Session::builder(dir)
        .default_dirs(false)
        .plugin(frozen_v0_2_plugin())
        .build()
}

#[tokio::test]
async fn a_0_2_0_plugin_lists_runs_pushes_and_resolves_in_this_host() {
    let dir = tempfile::tempdir().unwrap();
    let session = frozen_session(dir.path());
    assert!(
        session.load_errors().is_empty(),
        "{:#?}",
        session.load_errors()
    );
    assert_eq!(session.plugins().len(), 1);
    assert_eq!(session.plugins()[0].api_version.to_string(), "0.2.0");

    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["frozen_echo", "frozen_preview", RESOLVE_TOOL_NAME]);
    let preview_spec = session.tools()[1].clone();
    assert_eq!(preview_spec.label, "Frozen Preview");
    assert!(preview_spec.deferrable && !preview_spec.hidden);
    assert_eq!(preview_spec.parameters["required"], json!(["text"]));
    // 0.2.0 predates tool annotations: every hint is absent, even the preview's read-only
    // default that 0.3's `CustomTool` gives deferrable tools.
    for spec in &session.tools()[..2] {
        assert_eq!(spec.hints, ToolHints::default(), "{}", spec.name);
    }
    let capabilities = xcsh_plugin_api::capabilities_of("0.2.0");
    assert!(!capabilities.contains(&"tool-annotations"));
    assert!(
        xcsh_plugin_api::capabilities_of(xcsh_plugin_api::API_VERSION)
            .contains(&"tool-annotations")
    );

    let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
    assert!(!echo.is_error, "{}", echo.text());
    assert_eq!(echo.text(), "echo: hi");
    assert_eq!(echo.result.details, Some(json!({"api": "0.2.0"})));

    // Push, then apply.
    let preview = session.call("frozen_preview", json!({"text": "a"})).await;
    assert!(!preview.is_error, "{}", preview.text());
    let store = session.store().unwrap();
    assert_eq!(store.count(), 1);
    let top = store.peek().unwrap();
    assert_eq!(top.label, "Frozen: write a");
    assert_eq!(top.source_tool_name, "frozen_preview");
    let applied = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(!applied.is_error, "{}", applied.text());
    assert_eq!(applied.text(), "applied a (ok)");
    assert_eq!(
        applied.result.details.unwrap()["sourceToolName"],
        "frozen_preview"
    );

    // Push, then discard through the plugin's reject.
    session.call("frozen_preview", json!({"text": "b"})).await;
    let discarded = session
        .call("resolve", json!({"action": "discard", "reason": "no"}))
        .await;
    assert!(!discarded.is_error, "{}", discarded.text());
    assert_eq!(discarded.text(), "rejected (no)");
    assert_eq!(store.count(), 0);
}

/// Over MCP, a 0.2.0 plugin's tools carry only what the host itself knows (the guide's "MCP",
/// `docs/guide/src/mcp.md`): the title, and for a deferrable tool `destructiveHint: false`; the
/// hints the plugin cannot give are left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_a_0_2_0_plugins_hints_are_absent() {
    let dir = tempfile::tempdir().unwrap();
    let session = frozen_session(dir.path());
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = tokio::spawn(xcsh_loader::mcp::serve(session, server_read, server_write));
    let client = ().serve(client_io).await.expect("MCP handshake");
    let tools = client.list_all_tools().await.expect("tools/list");
    let by_name: HashMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_ref(), t)).collect();

    let echo = serde_json::to_value(by_name["frozen_echo"]).unwrap();
    assert_eq!(echo["annotations"], json!({"title": "Frozen Echo"}));
    let preview = serde_json::to_value(by_name["frozen_preview"]).unwrap();
    assert_eq!(
        preview["annotations"],
        json!({"title": "Frozen Preview", "destructiveHint": false})
    );
    let resolve = by_name[RESOLVE_TOOL_NAME].annotations.clone().unwrap();
    assert_eq!(resolve.destructive_hint, Some(true));

    // And the tool still runs over MCP.
    let arguments = json!({"text": "mcp"}).as_object().cloned().unwrap();
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("frozen_echo").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_ne!(result.is_error, Some(true));
    client.cancel().await.expect("close the client");
    server.await.unwrap().expect("the server ended cleanly");
}

#[test]
fn check_json_reports_the_0_2_0_version_its_capabilities_and_absent_hints() {
    let dir = tempfile::tempdir().unwrap();
    let lib = frozen_v0_2_plugin();
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args(["--json", "check"])
        .arg(&lib)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(file["apiVersion"], "0.2.0");
    assert_eq!(file["capabilities"], json!(["tools", "pending-actions"]));
    assert_eq!(
        file["tools"][0]["annotations"],
        json!({"readOnly": null, "destructive": null, "idempotent": null, "openWorld": null})
    );
}

/// A host with a user who would say yes, and a model: what a 0.5 plugin never asks for.
struct Everything;

impl xcsh_loader::services::HostServices for Everything {
    fn has_ui(&self) -> bool {
        true
    }
    fn can_complete(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_0_5_1_plugin_runs_unchanged_in_this_host_in_both_isolation_modes() {
    use xcsh_loader::services::{SessionChange, SessionReason, ToolResultEntry};
    for isolation in [
        xcsh_loader::Isolation::Process,
        xcsh_loader::Isolation::InProcess,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::builder(dir.path())
            .default_dirs(false)
            .isolation(isolation)
            .host_services(std::sync::Arc::new(Everything))
            .plugin(xcsh_integration_tests::frozen_v0_5_plugin())
            .build();
        assert!(
            session.load_errors().is_empty(),
            "{:#?}",
            session.load_errors()
        );
        assert_eq!(session.plugins()[0].api_version.to_string(), "0.5.1");
        assert_eq!(session.plugins()[0].isolation, isolation);
        let capabilities = xcsh_plugin_api::capabilities_of("0.5.1");
        assert!(!capabilities.contains(&"host-services"), "{capabilities:?}");

        // Session events reach a plugin that predates them: ignored (the ABI's default body).
        let mut start = SessionChange::new(SessionReason::Start);
        start.results.push(ToolResultEntry {
            tool_name: "frozen_echo".into(),
            tool_call_id: "old".into(),
            details: json!({"n": 1}),
        });
        session.session_event(start).await;

        let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
        assert!(!echo.is_error, "{isolation:?}: {}", echo.text());
        assert_eq!(echo.text(), "echo: hi");
        assert_eq!(echo.result.details, Some(json!({"api": "0.5.1"})));

        let preview = session.call("frozen_preview", json!({"text": "a"})).await;
        assert_eq!(preview.text(), "previewed", "{isolation:?}");
        let applied = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "apply", "reason": "ok"}),
            )
            .await;
        assert_eq!(applied.text(), "applied a: ok", "{isolation:?}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_0_2_0_plugin_runs_in_process_too_with_host_services_offered() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .isolation(xcsh_loader::Isolation::InProcess)
        .host_services(std::sync::Arc::new(Everything))
        .plugin(frozen_v0_2_plugin())
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:#?}",
        session.load_errors()
    );
    session
        .session_event(xcsh_loader::services::SessionChange::new(
            xcsh_loader::services::SessionReason::Branch,
        ))
        .await;
    let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
    assert_eq!(echo.text(), "echo: hi");
    let preview = session.call("frozen_preview", json!({"text": "a"})).await;
    assert!(!preview.is_error, "{}", preview.text());
    let discarded = session
        .call(
            RESOLVE_TOOL_NAME,
            json!({"action": "discard", "reason": "no"}),
        )
        .await;
    assert!(!discarded.is_error, "{}", discarded.text());
    session.shutdown().await;
}
