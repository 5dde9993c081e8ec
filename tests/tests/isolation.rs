//! Process isolation (issue 13), on the real `fixture-crash` library: every fault that no
//! panic guard can contain (a bad write, `abort`, a stack overflow, `exit`, an abort after
//! the call returned, blocking code) ends as a tool error naming the plugin, the session goes
//! on, and timeouts return control in both modes.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use xcsh_integration_tests::plugin;
use xcsh_loader::{CallOptions, Isolation, Session};

fn session(dir: &Path) -> Session {
    let session = Session::builder(dir)
        .default_dirs(false)
        .plugin(plugin("fixture-crash"))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    session
}

fn crash_path() -> String {
    plugin("fixture-crash")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

async fn ping(session: &Session) {
    let outcome = session.call("ping", json!({})).await;
    assert!(!outcome.is_error, "{}", outcome.text());
    assert_eq!(outcome.text(), "pong");
}

fn timeout(limit: Duration) -> CallOptions {
    CallOptions {
        timeout: Some(limit),
        ..CallOptions::default()
    }
}

#[tokio::test]
async fn process_isolation_is_the_default_and_runs_plugins_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    assert_eq!(session.plugins()[0].isolation, Isolation::Process);
    let pid: u32 = session.call("pid", json!({})).await.text().parse().unwrap();
    assert_ne!(pid, std::process::id());
}

#[tokio::test]
async fn each_crash_is_a_tool_error_naming_plugin_tool_and_cause_and_the_next_call_works() {
    let dir = tempfile::tempdir().unwrap();
    for (tool, cause) in [
        ("segfault", "killed by SIGSEGV"),
        ("abort", "killed by SIGABRT"),
        ("stack_overflow", "killed by SIG"),
        ("exit", "exited with status 7"),
    ] {
        let session = session(dir.path());
        let outcome = session.call(tool, json!({})).await;
        assert!(outcome.is_error, "{tool}");
        let expected = format!(
            "Plugin {} crashed while running tool \"{tool}\": its process {cause}",
            crash_path()
        );
        assert!(
            outcome.text().starts_with(&expected),
            "{tool}: {}",
            outcome.text()
        );
        ping(&session).await;
    }
}

#[tokio::test]
async fn an_abort_after_the_call_returned_only_ends_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let outcome = session.call("abort_later", json!({})).await;
    assert!(!outcome.is_error, "{}", outcome.text());
    tokio::time::sleep(Duration::from_millis(600)).await;
    ping(&session).await;
}

#[tokio::test]
async fn three_crashes_within_a_minute_disable_the_plugin_for_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    for attempt in 1..=3 {
        let outcome = session.call("exit", json!({})).await;
        let disabled = outcome.text().contains("is disabled for this session");
        assert_eq!(disabled, attempt == 3, "{}", outcome.text());
    }
    let outcome = session.call("ping", json!({})).await;
    assert!(outcome.is_error);
    assert_eq!(
        outcome.text(),
        format!(
            "Plugin {} crashed 3 times within a minute and is disabled for this session",
            crash_path()
        )
    );
    // Another session starts afresh.
    ping(&self::session(dir.path())).await;
}

#[tokio::test]
async fn blocking_tools_time_out_and_their_process_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    for tool in ["sleep", "spin"] {
        let start = Instant::now();
        let outcome = session
            .call_with(tool, json!({}), timeout(Duration::from_secs(1)))
            .await;
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(
            outcome.text(),
            format!("Tool \"{tool}\" timed out after 1s; its plugin process was stopped")
        );
        ping(&session).await;
    }
}

#[tokio::test]
async fn cancellation_reaches_the_plugin_and_a_tool_that_honours_it_keeps_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let before = session.call("pid", json!({})).await.text();
    let outcome = session
        .call_with(
            "wait_for_cancel",
            json!({}),
            timeout(Duration::from_millis(300)),
        )
        .await;
    assert_eq!(
        outcome.text(),
        "Tool \"wait_for_cancel\" timed out after 0.3s"
    );
    assert_eq!(session.call("pid", json!({})).await.text(), before);
}

#[tokio::test]
async fn pending_actions_are_applied_in_the_child_that_previewed_them() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    assert_eq!(
        session.call("crash_preview", json!({})).await.text(),
        "previewed"
    );
    assert_eq!(session.store().unwrap().count(), 1);
    assert_eq!(session.take_steering_messages().len(), 1);
    let outcome = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(!outcome.is_error, "{}", outcome.text());
    assert_eq!(outcome.text(), "wrote applied.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("applied.txt")).unwrap(),
        "ok"
    );
}

#[tokio::test]
async fn a_pending_action_whose_process_died_fails_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    session.call("crash_preview", json!({})).await;
    assert!(session.call("exit", json!({})).await.is_error);
    let outcome = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(outcome.is_error);
    assert!(
        outcome.text().contains("nothing was applied"),
        "{}",
        outcome.text()
    );
    assert!(
        outcome.text().contains("Crash: write applied.txt"),
        "{}",
        outcome.text()
    );
    assert!(!dir.path().join("applied.txt").exists());
    assert!(!session.has_pending());
    ping(&session).await;
}

#[tokio::test]
async fn without_a_store_the_child_refuses_pushes_with_the_contract_message() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("fixture-crash"))
        .without_store()
        .build();
    let outcome = session.call("crash_preview", json!({})).await;
    assert!(outcome.is_error);
    assert_eq!(outcome.text(), xcsh_loader::STORE_UNAVAILABLE);
}

#[test]
fn a_missing_plugin_host_is_a_load_error_that_says_how_to_provide_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("fixture-crash"))
        .plugin_host(dir.path().join("no-such-host"))
        .build();
    let message = session.load_errors()[0].to_string();
    assert!(message.contains("XCSH_PLUGIN_HOST"), "{message}");
    assert!(message.contains("in-process"), "{message}");
}

/// In-process, blocking plugin code runs off the caller's runtime: the timeout still returns
/// control, and says the call was abandoned.
#[test]
fn in_process_a_blocking_tool_is_abandoned_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let session = Session::builder(dir.path())
            .default_dirs(false)
            .plugin(plugin("fixture-crash"))
            .isolation(Isolation::InProcess)
            .build();
        assert!(
            session.load_errors().is_empty(),
            "{:?}",
            session.load_errors()
        );
        assert_eq!(session.plugins()[0].isolation, Isolation::InProcess);
        for tool in ["sleep", "spin"] {
            let start = Instant::now();
            let outcome = session
                .call_with(tool, json!({}), timeout(Duration::from_millis(300)))
                .await;
            assert!(start.elapsed() < Duration::from_secs(3));
            assert_eq!(
                outcome.text(),
                format!("Tool \"{tool}\" timed out after 0.3s; the call was abandoned")
            );
            ping(&session).await;
        }
        let outcome = session
            .call_with(
                "wait_for_cancel",
                json!({}),
                timeout(Duration::from_millis(200)),
            )
            .await;
        assert_eq!(
            outcome.text(),
            "Tool \"wait_for_cancel\" timed out after 0.2s"
        );
    });
    // The abandoned threads are still busy: do not wait for them.
    runtime.shutdown_background();
}

/// The built-in `ast_edit` searches on the thread its call is polled on, not on one of its
/// own: a timeout still returns control, and the search stops at the cancellation it watches,
/// so that thread is free soon after (dropping the runtime waits for it).
#[test]
fn a_cut_ast_edit_preview_stops_its_search() {
    let dir = tempfile::tempdir().unwrap();
    let line = "export const v = foo(bar(1), baz(2));\n".repeat(200);
    for i in 0..3000 {
        std::fs::write(dir.path().join(format!("m{i:04}.ts")), &line).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    runtime.block_on(async {
        let session = Session::builder(dir.path())
            .default_dirs(false)
            .builtin(xcsh_loader::ast_edit_tool().unwrap())
            .build();
        let ops = json!({"ops": [{"pat": "foo($A)", "out": "qux($A)"}]});
        let outcome = session
            .call_with("ast_edit", ops, timeout(Duration::from_millis(100)))
            .await;
        assert_eq!(outcome.text(), "Tool \"ast_edit\" timed out after 0.1s");
        assert!(!session.has_pending(), "a cut preview defers nothing");
    });
    drop(runtime);
    // The whole search takes over 20 s in a debug build, about 1 s in a release build.
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn a_child_that_sends_a_malformed_frame_is_killed_and_counted_as_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let outcome = session.call("garble", json!({})).await;
    assert!(outcome.is_error, "{}", outcome.text());
    let expected = format!(
        "Plugin {} crashed while running tool \"garble\": its process killed by SIGKILL: sent a malformed or oversized message",
        crash_path()
    );
    assert!(outcome.text().starts_with(&expected), "{}", outcome.text());
    ping(&session).await;
    // Two more crashes disable it: the malformed frame counted as one.
    session.call("exit", json!({})).await;
    let third = session.call("exit", json!({})).await;
    assert!(
        third.text().contains("is disabled for this session"),
        "{}",
        third.text()
    );
}

#[tokio::test]
async fn closing_a_session_waits_until_its_plugin_processes_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path());
    let pid: u32 = session.call("pid", json!({})).await.text().parse().unwrap();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    session.shutdown().await;
    // Reaped: not even a zombie is left.
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
