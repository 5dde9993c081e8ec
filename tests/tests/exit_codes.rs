//! The `xcsh-plugins` exit codes as the guide documents them (docs/guide/src/cli.md, "Exit codes") (0 success, 1 a tool error, a
//! failed resolve or a load problem, 2 bad usage), each usage error as one `error:` line on
//! stderr, and a reader that closes stdout early, run on the real binary.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, ExitStatus, Output, Stdio};

use xcsh_integration_tests::{artifacts, lib_name, plugin, scratch};

const PREVIEW: &str = r#"{"files":["a1.txt","a2.txt"],"find":"a","replace":"b"}"#;

/// `xcsh-plugins --no-default-dirs --plugin <batch-rename> --cwd <cwd> ARGS...`, not yet run.
fn command(args: &[&str], cwd: &Path) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("batch-rename"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

fn run(args: &[&str], cwd: &Path) -> Output {
    command(args, cwd).output().unwrap()
}

/// `xcsh-plugins ARGS...` without the session options (for `check`, which takes none of them).
fn run_bare(args: &[&str], cwd: &Path) -> Output {
    Command::new(artifacts().cli())
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_no_panic(stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
}

/// Exit 2 with exactly one `error: ...` line on stderr that contains each of `named`.
fn assert_usage_error(output: &Output, named: &[&str]) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: "), "{err}");
    for name in named {
        assert!(err.contains(name), "{name:?} not in {err}");
    }
    assert!(output.stdout.is_empty(), "{}", stderr(output));
}

#[test]
fn arguments_that_are_not_json_are_a_usage_error() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let output = run(&["call", "batch_rename_preview", "{not json"], dir.path());
    assert_usage_error(&output, &["batch_rename_preview", "not valid JSON"]);
}

#[test]
fn an_unknown_tool_is_a_usage_error() {
    let dir = scratch(&[]);
    let output = run(&["call", "no_such_tool", "{}"], dir.path());
    assert_usage_error(&output, &["\"no_such_tool\"", "unknown tool"]);
    // When plugins failed to load, the message says so: the tool may be in one of them.
    let junk = dir.path().join(lib_name("junk"));
    std::fs::write(&junk, "junk").unwrap();
    let output = run(
        &["--plugin", junk.to_str().unwrap(), "call", "no_such_tool"],
        dir.path(),
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.starts_with("warning: "), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("1 plugin file(s) failed to load"), "{err}");
}

#[test]
fn a_missing_cwd_is_a_usage_error() {
    let dir = scratch(&[]);
    let missing = dir.path().join("not-here");
    let output = run(&["list"], &missing);
    assert_usage_error(&output, &["--cwd", "not-here", "no such directory"]);

    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let output = run(&["list"], &file);
    assert_usage_error(&output, &["--cwd", "not a directory"]);
}

#[test]
fn a_bad_flag_or_timeout_is_a_usage_error() {
    let dir = scratch(&[]);
    let output = run(&["list", "--no-such-flag"], dir.path());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--no-such-flag"),
        "{}",
        stderr(&output)
    );
    let output = run(
        &["call", "batch_rename_preview", "--timeout", "0"],
        dir.path(),
    );
    assert_usage_error(&output, &["--timeout"]);
}

#[test]
fn with_json_a_usage_error_is_also_a_json_document() {
    let dir = scratch(&[]);
    let output = run(&["--json", "call", "no_such_tool"], dir.path());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(stderr(&output).lines().count(), 1, "{}", stderr(&output));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let message = doc["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("no_such_tool"), "{message}");
}

#[test]
fn a_tool_error_exits_one() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    // Arguments that are JSON but break the tool's schema: the tool's error, not usage.
    let invalid = run(
        &["call", "batch_rename_preview", r#"{"files":"x"}"#],
        dir.path(),
    );
    assert_eq!(invalid.status.code(), Some(1), "{}", stderr(&invalid));
    assert!(stderr(&invalid).starts_with("error: Invalid arguments for tool"));
    // A push without a store fails inside the tool.
    let no_store = run(
        &["call", "batch_rename_preview", PREVIEW, "--no-store"],
        dir.path(),
    );
    assert_eq!(no_store.status.code(), Some(1), "{}", stderr(&no_store));
    // A resolve with nothing pending.
    let resolve = run(
        &["call", "resolve", r#"{"action":"apply","reason":"x"}"#],
        dir.path(),
    );
    assert_eq!(resolve.status.code(), Some(1), "{}", stderr(&resolve));
    for output in [&invalid, &no_store, &resolve] {
        assert_no_panic(&stderr(output));
    }
}

#[test]
fn a_load_failure_exits_one() {
    let dir = scratch(&[]);
    let junk = dir.path().join(lib_name("junk"));
    std::fs::write(&junk, "junk").unwrap();
    let junk = junk.to_str().unwrap();
    let listed = run(&["--plugin", junk, "list"], dir.path());
    assert_eq!(listed.status.code(), Some(1), "{}", stderr(&listed));
    assert!(
        stderr(&listed).contains("load error: "),
        "{}",
        stderr(&listed)
    );
    let checked = run_bare(&["check", junk], dir.path());
    assert_eq!(checked.status.code(), Some(1), "{}", stderr(&checked));
}

#[test]
fn success_exits_zero() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let listed = run(&["list"], dir.path());
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let checked = run_bare(
        &["check", plugin("batch-rename").to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(checked.status.code(), Some(0), "{}", stderr(&checked));
    let called = run(
        &["call", "batch_rename_preview", PREVIEW, "--apply"],
        dir.path(),
    );
    assert_eq!(called.status.code(), Some(0), "{}", stderr(&called));
    assert!(dir.path().join("b1.txt").exists());
}

/// Spawn with stdout a pipe whose reader is gone before the program writes anything.
fn run_with_stdout_closed(mut command: Command) -> (ExitStatus, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    (output.status, stderr(&output))
}

/// A closed stdout (`xcsh-plugins list | head -1`) is not an error: no panic, no message, not
/// killed by SIGPIPE, and the exit code is the command's own.
#[test]
fn a_closed_stdout_ends_the_output_quietly() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    for args in [&["list"][..], &["--json", "list"], &["check", "--help"]] {
        let (status, err) = run_with_stdout_closed(command(args, dir.path()));
        assert_no_panic(&err);
        assert!(
            !err.to_lowercase().contains("broken pipe"),
            "{args:?}: {err}"
        );
        assert_eq!(status.code(), Some(0), "{args:?}: {status} {err}");
    }
    // The command still does what it was asked: the rename is applied.
    let (status, err) = run_with_stdout_closed(command(
        &["call", "batch_rename_preview", PREVIEW, "--apply"],
        dir.path(),
    ));
    assert_no_panic(&err);
    assert_eq!(status.code(), Some(0), "{status} {err}");
    assert!(dir.path().join("b1.txt").exists() && dir.path().join("b2.txt").exists());
    // A failing command keeps its exit code.
    let (status, err) = run_with_stdout_closed(command(
        &["call", "resolve", r#"{"action":"apply","reason":"x"}"#],
        dir.path(),
    ));
    assert_no_panic(&err);
    assert_eq!(status.code(), Some(1), "{status} {err}");
}

/// Reading one line and then closing the pipe ends the output quietly as well.
#[test]
fn a_reader_that_stops_after_one_line_gets_no_panic() {
    use std::io::BufRead;
    let dir = scratch(&[]);
    let mut child = command(&["--json", "list"], dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first.trim(), "{");
    let output = child.wait_with_output().unwrap();
    assert_no_panic(&stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A closed stderr does not turn a load error into a panic either.
#[test]
fn a_closed_stderr_keeps_the_exit_code() {
    let dir = scratch(&[]);
    let junk = dir.path().join(lib_name("junk"));
    std::fs::write(&junk, "junk").unwrap();
    let mut child = command(&["--plugin", junk.to_str().unwrap(), "list"], dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    assert_eq!(child.wait().unwrap().code(), Some(1));
}
