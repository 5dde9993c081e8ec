//! Plugin faults never take the host down: each fault gives a clear error, the process keeps
//! running, and the other tools still work.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::time::Duration;

use serde_json::{json, Value};
use xcsh_integration_tests::plugin;
use xcsh_loader::{render_resolve, CallOptions, CancelToken, RenderStyle, Session};

fn session(dir: &std::path::Path) -> Session {
    Session::builder(dir)
        .default_dirs(false)
        .plugin(plugin("fixture-faults"))
        .plugin(plugin("fixture-multi"))
        .plugin(plugin("fixture-tokio"))
        .build()
}

async fn still_alive(session: &Session) {
    let outcome = session.call("echo", json!({"text": "still here"})).await;
    assert_eq!(outcome.text(), "still here");
}

/// A token that a background task cancels after `delay`.
fn cancel_after(delay: Duration) -> CancelToken {
    let cancel = CancelToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        trigger.cancel();
    });
    cancel
}

fn resolve(action: &str) -> Value {
    json!({"action": action, "reason": "test"})
}

#[tokio::test]
async fn panics_in_execute_become_errors_with_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    for (tool, message) in [
        ("panic_execute", "execute exploded on purpose"),
        ("panic_after_await", "exploded after an await"),
    ] {
        let outcome = session.call(tool, json!({})).await;
        assert!(outcome.is_error, "{tool}");
        assert!(
            outcome.text().contains(message),
            "{tool}: {}",
            outcome.text()
        );
        assert!(
            outcome.text().contains("plugin panicked at"),
            "{}",
            outcome.text()
        );
        still_alive(&session).await;
    }
}

#[tokio::test]
async fn panics_in_apply_and_reject_are_resolve_errors_and_consume_the_action() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    for (tool, action, message) in [
        ("panic_apply_preview", "apply", "apply exploded on purpose"),
        (
            "panic_reject_preview",
            "discard",
            "reject exploded on purpose",
        ),
    ] {
        assert!(!session.call(tool, json!({})).await.is_error);
        let outcome = session.call("resolve", resolve(action)).await;
        assert!(outcome.is_error);
        assert!(outcome.text().contains(message), "{}", outcome.text());
        assert_eq!(outcome.result.details.as_ref().unwrap()["action"], action);
        assert!(!session.has_pending());
        still_alive(&session).await;
    }
}

#[tokio::test]
async fn a_tool_error_is_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let outcome = session.call("fail", json!({})).await;
    assert!(outcome.is_error);
    assert_eq!(outcome.text(), "deliberate failure");
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_the_session_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    for tool in ["hang", "panic_in_drop"] {
        let options = CallOptions {
            timeout: Some(Duration::from_millis(200)),
            ..CallOptions::default()
        };
        let outcome = session.call_with(tool, json!({}), options).await;
        assert!(outcome.is_error);
        assert_eq!(
            outcome.text(),
            format!("Tool \"{tool}\" timed out after 0.2s")
        );
        still_alive(&session).await;
    }
}

#[tokio::test]
async fn a_cancelled_call_ends_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let cancel = cancel_after(Duration::from_millis(50));
    let options = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let outcome = session.call_with("hang", json!({}), options).await;
    assert_eq!(outcome.text(), "Tool \"hang\" was cancelled");
    still_alive(&session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_works_inside_a_plugin_without_the_author_setting_it_up() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let outcome = session
        .call("tokio_io", json!({"file": "t.txt", "sleep_ms": 30}))
        .await;
    assert!(!outcome.is_error, "{}", outcome.text());
    let text = outcome.text();
    assert!(text.contains("read back: written by tokio"), "{text}");
    assert!(text.contains("process said: from a process"), "{text}");
    assert!(text.contains("task gave 42"), "{text}");
    let slept: u64 = text
        .strip_prefix("slept ")
        .and_then(|rest| rest.split("ms").next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(slept >= 30, "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("t.txt")).unwrap(),
        "written by tokio"
    );
}

#[tokio::test]
async fn a_large_result_crosses_the_boundary_intact() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let outcome = session.call("big_result", json!({})).await;
    assert!(!outcome.is_error);
    assert_eq!(outcome.text().len(), 50 * 1024 * 1024);
}

#[tokio::test]
async fn escapes_in_plugin_labels_never_reach_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    session.call("ansi_preview", json!({})).await;
    let outcome = session.call("resolve", resolve("apply")).await;
    assert!(!outcome.is_error);
    let rendered = render_resolve(
        &outcome,
        RenderStyle {
            width: 80,
            color: true,
        },
    );
    let raw_escapes = rendered.matches('\x1b').count();
    // The only escapes are the renderer's own colour codes (colour, bold, reset, italic, reset).
    let own = [
        "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[1m", "\x1b[3m", "\x1b[0m",
    ]
    .iter()
    .map(|code| rendered.matches(code).count())
    .sum::<usize>();
    assert_eq!(raw_escapes, own, "{rendered:?}");
    assert!(
        !rendered.contains('\x07') && !rendered.contains('\t'),
        "{rendered:?}"
    );
    assert!(rendered.contains("␛[2J"), "{rendered:?}");
}

#[tokio::test]
async fn cancelling_or_timing_out_a_resolve_consumes_the_action_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    session.call("hang_apply_preview", json!({})).await;
    let cancel = cancel_after(Duration::from_millis(50));
    let options = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let outcome = session
        .call_with("resolve", resolve("apply"), options)
        .await;
    assert!(outcome.is_error);
    assert_eq!(
        outcome.text(),
        "apply of \"Faults: apply hangs\" was cancelled; the pending action was consumed"
    );
    assert_eq!(
        outcome.result.details.as_ref().unwrap()["label"],
        "Faults: apply hangs"
    );
    assert!(!session.has_pending());

    session.call("hang_apply_preview", json!({})).await;
    let options = CallOptions {
        timeout: Some(Duration::from_millis(100)),
        ..CallOptions::default()
    };
    let outcome = session
        .call_with("resolve", resolve("apply"), options)
        .await;
    assert_eq!(
        outcome.text(),
        "apply of \"Faults: apply hangs\" timed out after 0.1s; the pending action was consumed"
    );
    assert!(!session.has_pending());
    still_alive(&session).await;
}

#[tokio::test]
async fn a_session_default_timeout_applies_to_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("fixture-faults"))
        .default_timeout(Some(Duration::from_millis(150)))
        .build();
    let outcome = session.call("hang", json!({})).await;
    assert_eq!(outcome.text(), "Tool \"hang\" timed out after 0.15s");
    // A call's own timeout wins over the default.
    let options = CallOptions {
        timeout: Some(Duration::from_millis(50)),
        ..CallOptions::default()
    };
    let outcome = session.call_with("hang", json!({}), options).await;
    assert_eq!(outcome.text(), "Tool \"hang\" timed out after 0.05s");
}

#[tokio::test]
async fn panics_while_the_host_drops_plugin_objects_are_contained() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    // An unresolved action whose callback panics when dropped, dropped by an explicit clear.
    session.call("drop_bomb_preview", json!({})).await;
    session.store().unwrap().clear();
    still_alive(&session).await;
    // The same, dropped with the session, along with a tool whose own Drop panics.
    session.call("drop_bomb_preview", json!({})).await;
    drop(session);
    let next = self::session(dir.path());
    still_alive(&next).await;
}
