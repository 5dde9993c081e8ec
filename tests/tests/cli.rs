//! The `xcsh-plugins` binary, run as a user would: the core issue's acceptance scenario and
//! the error paths.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use xcsh_integration_tests::{artifacts, plugin};

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("batch-rename"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a1.txt"), "1").unwrap();
    std::fs::write(dir.path().join("a2.txt"), "2").unwrap();
    dir
}

fn exists(dir: &Path, names: &[&str]) -> bool {
    names.iter().all(|n| dir.join(n).exists())
}

const PREVIEW: &str = r#"{"files":["a1.txt","a2.txt"],"find":"a","replace":"b"}"#;

#[test]
fn call_with_apply_renames_the_files() {
    let dir = scratch();
    let output = run(
        &[
            "call",
            "batch_rename_preview",
            PREVIEW,
            "--apply",
            "--reason",
            "ok",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(exists(dir.path(), &["b1.txt", "b2.txt"]) && !exists(dir.path(), &["a1.txt"]));
    let out = text(&output);
    assert!(out.contains("Prepared rename plan for 2 files"), "{out}");
    assert!(out.contains("Batch rename: 2 files"), "{out}");
    assert!(out.contains("Applied batch rename. Reason: ok"), "{out}");
    assert!(out.contains("✔ Accept: 2 files [Batch rename]"), "{out}");
}

#[test]
fn call_with_discard_changes_nothing() {
    let dir = scratch();
    let output = run(
        &[
            "call",
            "batch_rename_preview",
            PREVIEW,
            "--discard",
            "--reason",
            "not now",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output));
    assert!(exists(dir.path(), &["a1.txt", "a2.txt"]) && !exists(dir.path(), &["b1.txt"]));
    assert!(text(&output).contains("Discarded batch rename. Reason: not now"));
}

/// `--discard` without `--reason`: the action's reject gets the documented default reason,
/// not an empty one.
#[test]
fn discard_without_a_reason_passes_the_default_reason() {
    let dir = scratch();
    let output = run(
        &["call", "batch_rename_preview", PREVIEW, "--discard"],
        dir.path(),
    );
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    assert!(exists(dir.path(), &["a1.txt", "a2.txt"]));
    assert!(
        out.contains(&format!(
            "Discarded batch rename. Reason: {}",
            xcsh_loader::messages::DISCARD_FLAG_REASON
        )),
        "{out}"
    );
    assert_eq!(
        xcsh_loader::messages::DISCARD_FLAG_REASON,
        "discarded with --discard"
    );
}

#[test]
fn without_a_decision_nothing_is_applied() {
    let dir = scratch();
    let output = run(&["call", "batch_rename_preview", PREVIEW], dir.path());
    assert!(output.status.success(), "{}", text(&output));
    assert!(exists(dir.path(), &["a1.txt", "a2.txt"]));
    assert!(
        text(&output).contains("Discarded batch rename"),
        "{}",
        text(&output)
    );
}

#[test]
fn no_store_fails_the_push_and_changes_nothing() {
    let dir = scratch();
    let output = run(
        &["call", "batch_rename_preview", PREVIEW, "--no-store"],
        dir.path(),
    );
    assert!(!output.status.success());
    assert!(text(&output)
        .contains("Pending action store unavailable for custom tools in this runtime."));
    assert!(exists(dir.path(), &["a1.txt", "a2.txt"]));
}

#[test]
fn resolve_with_nothing_pending() {
    let dir = scratch();
    let output = run(
        &["call", "resolve", r#"{"action":"apply","reason":"x"}"#],
        dir.path(),
    );
    assert!(!output.status.success());
    assert!(text(&output).contains("No pending action to resolve. Nothing to apply or discard."));
}

#[test]
fn arguments_from_stdin_and_json_output() {
    let dir = scratch();
    let mut child = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--json", "--plugin"])
        .arg(plugin("batch-rename"))
        .arg("--cwd")
        .arg(dir.path())
        .args([
            "call",
            "batch_rename_preview",
            "-",
            "--apply",
            "--reason",
            "stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(PREVIEW.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["isError"], false);
    assert_eq!(doc["pending"], serde_json::json!(["Batch rename: 2 files"]));
    assert_eq!(
        doc["resolutions"][0]["result"]["details"]["reason"],
        "stdin"
    );
    assert!(exists(dir.path(), &["b1.txt", "b2.txt"]));
}

/// docs/guide/src/pending.md: each pending action's `details` reach `call --json`, in
/// `pendingDetails` (newest first, `details` left out for an action without), beside the labels in
/// `pending`.
#[test]
fn call_json_shows_each_pending_actions_details() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--json", "--plugin"])
        .arg(plugin("fixture-multi"))
        .arg("--cwd")
        .arg(dir.path())
        .args([
            "call",
            "note_preview",
            r#"{"file":"n.txt","content":"hi"}"#,
            "--discard",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["pending"], serde_json::json!(["Note: write n.txt"]));
    assert_eq!(
        doc["pendingDetails"],
        serde_json::json!([{
            "label": "Note: write n.txt",
            "sourceToolName": "custom_tool",
            "details": {"file": "n.txt"}
        }])
    );
    assert_eq!(doc["resolutions"][0]["reason"], "discarded with --discard");
    assert!(!dir.path().join("n.txt").exists());

    // An action without details: no `details` key, not `null`.
    let dir = scratch();
    let output = run(
        &[
            "--json",
            "call",
            "batch_rename_preview",
            PREVIEW,
            "--discard",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", text(&output));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        doc["pendingDetails"],
        serde_json::json!([{"label": "Batch rename: 2 files", "sourceToolName": "batch_rename_preview"}])
    );
}

#[test]
fn bad_input_is_a_clear_error_without_a_panic() {
    let dir = scratch();
    for args in [
        vec!["call", "batch_rename_preview", "{not json"],
        vec!["call", "batch_rename_preview", r#"{"files":"x"}"#],
        vec!["call", "no_such_tool"],
        vec!["call", "batch_rename_preview", PREVIEW, "--timeout", "-1"],
    ] {
        let output = run(&args, dir.path());
        let out = text(&output);
        assert!(!output.status.success(), "{args:?}: {out}");
        assert!(out.contains("error: "), "{args:?}: {out}");
        assert!(
            !out.contains("panicked") && !out.contains("RUST_BACKTRACE"),
            "{args:?}: {out}"
        );
    }
    let missing_cwd = Command::new(artifacts().cli())
        .args(["--cwd", "/definitely/not/here", "list"])
        .output()
        .unwrap();
    assert!(!missing_cwd.status.success());
    assert!(String::from_utf8_lossy(&missing_cwd.stderr).contains("/definitely/not/here"));
}

#[test]
fn list_exits_one_on_load_errors_and_speaks_json() {
    let dir = scratch();
    let ok = run(&["list"], dir.path());
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("batch_rename_preview"));

    let junk = dir.path().join(format!(
        "{}junk{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    std::fs::write(&junk, "junk").unwrap();
    let output = Command::new(artifacts().cli())
        .args(["--no-default-dirs", "--json", "--plugin"])
        .arg(plugin("batch-rename"))
        .arg("--plugin")
        .arg(&junk)
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let rename = tools
        .iter()
        .find(|t| t["name"] == "batch_rename_preview")
        .unwrap();
    assert_eq!(rename["deferrable"], true);
    assert!(tools
        .iter()
        .any(|t| t["name"] == "resolve" && t["hidden"] == true));
    assert!(doc["errors"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("junk.so"));
    assert!(doc["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("not a loadable shared library"));
}
