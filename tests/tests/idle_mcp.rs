//! Issue 28 through a real MCP client: idle plugin processes are stopped after the configured
//! time and their next call answers from a new process; nothing in use is stopped (a pending
//! action keeps its process until resolved, and apply runs there; a long call completes); a
//! stop is not a crash; `off` and a plugin's opt-out keep the process; a 0.2 plugin is stopped
//! and restarted like any other.
//!
//! Process ids come from fixture-crash's `pid`-answering tools and from the server's children
//! (`/proc/PID/task/*/children`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use xcsh_integration_tests::mcp::{text, McpServerProcess, PATIENCE};
use xcsh_integration_tests::{child_pids, frozen_v0_2_plugin, plugin};

/// The idle time the tests configure.
const IDLE: Duration = Duration::from_millis(300);

/// Start `xcsh-plugins mcp` over `plugins` in `cwd` (its own definitions cache, debug logs of
/// the stop policy on), with these extra options.
async fn serve(cwd: &Path, plugins: &[&Path], options: &[&str]) -> McpServerProcess {
    let mut args: Vec<OsString> = vec!["--no-default-dirs".into(), "--cwd".into(), cwd.into()];
    for plugin in plugins {
        args.push("--plugin".into());
        args.push(plugin.into());
    }
    args.extend(options.iter().map(OsString::from));
    let env = vec![
        ("XCSH_CACHE_DIR".into(), cwd.join("cache").into()),
        (
            "XCSH_LOG".into(),
            "xcsh_loader::mcp=info,xcsh_loader::session=info,xcsh_loader::isolate=debug".into(),
        ),
    ];
    McpServerProcess::start_with_env(args, (), env).await
}

fn crash() -> std::path::PathBuf {
    plugin("fixture-crash")
}

/// The plugin processes of `server` now.
fn children(server: &McpServerProcess) -> Vec<u32> {
    child_pids(server.child.id().unwrap())
}

/// A tool's answer, which must not be an error.
async fn answer(server: &McpServerProcess, tool: &str, arguments: serde_json::Value) -> String {
    let result = server.call(tool, arguments).await;
    assert_ne!(result.is_error, Some(true), "{tool}: {}", text(&result));
    text(&result)
}

/// The process id a `pid`-answering tool gave (its first line: a preview's answer ends with
/// the resolve reminder).
async fn pid_of(server: &McpServerProcess, tool: &str, arguments: serde_json::Value) -> u32 {
    let answer = answer(server, tool, arguments).await;
    answer
        .lines()
        .next()
        .unwrap_or_default()
        .parse()
        .unwrap_or_else(|_| panic!("{tool} answered {answer:?}, not a pid"))
}

/// Wait until `pid` is no longer a child of the server; how long that took.
async fn wait_until_stopped(server: &McpServerProcess, pid: u32) -> Duration {
    wait_for_children(
        server,
        &format!("plugin process {pid} was never stopped"),
        |pids| !pids.contains(&pid),
    )
    .await
}

/// Wait (up to [`PATIENCE`]) until the server's children satisfy `done`; how long that took.
/// Fails the test with `what`, the children and the server's stderr otherwise.
async fn wait_for_children(
    server: &McpServerProcess,
    what: &str,
    done: impl Fn(&[u32]) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let pids = children(server);
        if done(&pids) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < PATIENCE,
            "{what}: {pids:?}; stderr:\n{}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_plugin_is_stopped_and_its_next_call_answers_from_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "300ms"]).await;
    // Timed from before the call: the server's idle time starts when the call ends there,
    // which is before its answer reaches this side (timing from the answer flaked at 299 ms).
    let called = Instant::now();
    let first = pid_of(&server, "pid", json!({})).await;
    assert!(children(&server).contains(&first));
    wait_until_stopped(&server, first).await;
    assert!(
        called.elapsed() >= IDLE,
        "stopped {:?} after the call, before the idle time",
        called.elapsed()
    );
    // The plugin process ended; the two above it in its PID namespace (`xcsh_loader_process`'s `contain`) end
    // right after it.
    wait_for_children(&server, "still running after the stop", <[u32]>::is_empty).await;
    let second = pid_of(&server, "pid", json!({})).await;
    assert_ne!(
        first, second,
        "the call was answered by the stopped process"
    );
    assert_eq!(children(&server), [second]);
    let file = crash().file_name().unwrap().to_string_lossy().into_owned();
    server
        .wait_for_log("stopped the plugin's process after 300ms idle")
        .await;
    server.wait_for_log("restarted the plugin's process").await;
    let stderr = server.stop().await;
    assert!(stderr.contains(&file), "the log does not name {file}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_is_not_a_crash_three_cycles_in_a_minute_leave_the_plugin_enabled() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "300ms"]).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let pid = pid_of(&server, "pid", json!({})).await;
        assert!(!seen.contains(&pid), "{pid} answered twice");
        seen.push(pid);
        wait_until_stopped(&server, pid).await;
    }
    assert_eq!(answer(&server, "ping", json!({})).await, "pong");
    let stderr = server.stop().await;
    assert!(!stderr.contains("crashed"), "{stderr}");
    assert!(!stderr.contains("disabled"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_action_keeps_its_process_until_resolved_and_applies_there() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "300ms"]).await;
    // Applied.
    let pusher = pid_of(&server, "pid_preview", json!({})).await;
    tokio::time::sleep(IDLE * 4).await;
    assert!(children(&server).contains(&pusher), "stopped while pending");
    let applied = answer(
        &server,
        "resolve",
        json!({"action": "apply", "reason": "go"}),
    )
    .await;
    assert_eq!(applied, format!("applied in {pusher}"));
    wait_until_stopped(&server, pusher).await;
    // Discarded: the reject runs in the process that pushed, too.
    let pusher = pid_of(&server, "pid_preview", json!({})).await;
    tokio::time::sleep(IDLE * 4).await;
    assert!(children(&server).contains(&pusher), "stopped while pending");
    let rejected = answer(
        &server,
        "resolve",
        json!({"action": "discard", "reason": "no"}),
    )
    .await;
    assert_eq!(rejected, format!("rejected in {pusher}"));
    wait_until_stopped(&server, pusher).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_longer_than_the_idle_time_completes() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "300ms"]).await;
    let first = pid_of(&server, "pid", json!({})).await;
    let started = Instant::now();
    let napped = pid_of(&server, "nap", json!({"ms": 1200})).await;
    assert!(started.elapsed() >= Duration::from_millis(1200));
    assert_eq!(napped, first, "the nap ran in another process");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_never_stops_and_a_per_plugin_setting_overrides_the_session_s() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "off"]).await;
    let first = pid_of(&server, "pid", json!({})).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(children(&server), [first]);
    assert_eq!(pid_of(&server, "pid", json!({})).await, first);
    server.stop().await;

    let file = crash().file_name().unwrap().to_string_lossy().into_owned();
    let one = format!("{file}=300ms");
    let server = serve(
        dir.path(),
        &[&crash()],
        &["--stop-idle-after", "off", "--stop-idle-after", &one],
    )
    .await;
    let first = pid_of(&server, "pid", json!({})).await;
    wait_until_stopped(&server, first).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_opted_out_is_not_stopped_until_it_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &[&crash()], &["--stop-idle-after", "300ms"]).await;
    let kept = pid_of(&server, "keep_alive", json!({"keep": true})).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        children(&server),
        [kept],
        "an opted-out process was stopped"
    );
    assert_eq!(pid_of(&server, "pid", json!({})).await, kept);
    assert_eq!(
        pid_of(&server, "keep_alive", json!({"keep": false})).await,
        kept
    );
    let waited = wait_until_stopped(&server, kept).await;
    assert!(waited >= IDLE, "stopped {waited:?} after letting go");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_2_plugin_is_stopped_and_restarted_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let frozen = frozen_v0_2_plugin();
    let server = serve(dir.path(), &[&frozen], &["--stop-idle-after", "300ms"]).await;
    assert_eq!(
        answer(&server, "frozen_echo", json!({"text": "one"})).await,
        "echo: one"
    );
    let first = children(&server);
    assert_eq!(first.len(), 1, "{first:?}");
    wait_until_stopped(&server, first[0]).await;
    assert_eq!(
        answer(&server, "frozen_echo", json!({"text": "two"})).await,
        "echo: two"
    );
    let second = children(&server);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(first, second);
    // Its pending action keeps it too, and applies there.
    answer(&server, "frozen_preview", json!({"text": "held"})).await;
    tokio::time::sleep(IDLE * 4).await;
    assert_eq!(children(&server), second, "stopped while pending");
    let applied = answer(
        &server,
        "resolve",
        json!({"action": "apply", "reason": "ok"}),
    )
    .await;
    assert_eq!(applied, "applied held (ok)");
    wait_until_stopped(&server, second[0]).await;
    server.stop().await;
}
