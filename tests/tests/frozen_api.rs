//! A plugin built against a frozen copy of `xcsh-plugin-api` 0.2.0 (`tests/frozen/`) in the
//! current host: it loads, lists, runs, pushes a pending action and resolves it. This is the
//! proof that the ABI grows without breaking plugins already built (see `plugin-api/ABI.md`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_integration_tests::frozen_v0_2_plugin;
use xcsh_loader::{Session, RESOLVE_TOOL_NAME};

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

    let names: Vec<&str> = session.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["frozen_echo", "frozen_preview", RESOLVE_TOOL_NAME]);
    let preview_spec = session.tools()[1].clone();
    assert_eq!(preview_spec.label, "Frozen Preview");
    assert!(preview_spec.deferrable && !preview_spec.hidden);
    assert_eq!(preview_spec.parameters["required"], json!(["text"]));

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
