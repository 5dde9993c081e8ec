//! Process isolation through `xcsh-plugins`, run as a user would: each fault of issue 13 is
//! a tool error with exit 1, `--timeout` returns in both modes, plugin output reaches the log
//! with the plugin's name, and a host killed with SIGKILL leaves no plugin process behind.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use xcsh_integration_tests::{artifacts, child_pids, plugin};

fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("fixture-crash"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    command(cwd, args).output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn each_fault_is_a_tool_error_with_exit_1_in_process_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let path = plugin("fixture-crash").canonicalize().unwrap();
    for isolation in [&[][..], &["--isolation", "process"][..]] {
        for (tool, cause) in [
            ("segfault", "SIGSEGV"),
            ("abort", "SIGABRT"),
            ("stack_overflow", "killed by SIG"),
            ("exit", "exited with status 7"),
        ] {
            let mut args = isolation.to_vec();
            args.extend(["call", tool]);
            let output = run(dir.path(), &args);
            let all = text(&output);
            assert_eq!(output.status.code(), Some(1), "{tool}: {all}");
            assert!(all.contains(&path.display().to_string()), "{tool}: {all}");
            assert!(all.contains(&format!("tool \"{tool}\"")), "{tool}: {all}");
            assert!(all.contains(cause), "{tool}: {all}");
        }
    }
}

#[test]
fn timeout_returns_within_seconds_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, note) in [
        ("process", "its plugin process was stopped"),
        ("in-process", "the call was abandoned"),
    ] {
        for tool in ["sleep", "spin"] {
            let start = Instant::now();
            let output = run(
                dir.path(),
                &["--isolation", mode, "call", tool, "--timeout", "2"],
            );
            let elapsed = start.elapsed();
            let all = text(&output);
            assert!(
                elapsed < Duration::from_secs(8),
                "{mode} {tool}: {elapsed:?}"
            );
            assert_eq!(output.status.code(), Some(1), "{all}");
            assert!(
                all.contains(&format!("Tool \"{tool}\" timed out after 2s; {note}")),
                "{mode} {tool}: {all}"
            );
        }
    }
}

#[test]
fn plugin_output_reaches_the_log_prefixed_with_the_plugin_name() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["--json", "call", "print"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["result"]["content"][0]["text"], "printed");
    let name = plugin("fixture-crash");
    let name = name.file_name().unwrap().to_string_lossy();
    for stream in ["stdout", "stderr"] {
        let line = format!("[{name}] crash fixture says hello on {stream}");
        assert!(stderr.contains(&line), "{stderr}");
    }
}

#[test]
fn list_and_check_show_each_plugins_mode() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(dir.path(), &["list"]);
    assert!(text(&output).contains("(process)"), "{}", text(&output));
    let output = run(dir.path(), &["--isolation", "in-process", "list"]);
    assert!(text(&output).contains("(in-process)"), "{}", text(&output));
    let output = run(dir.path(), &["--json", "list"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = json["tools"].as_array().unwrap();
    let ping = tools.iter().find(|t| t["name"] == "ping").unwrap();
    assert_eq!(ping["isolation"], "process");
    let ast_edit = tools.iter().find(|t| t["name"] == "ast_edit").unwrap();
    assert_eq!(ast_edit["isolation"], "in-process");
    let library = plugin("fixture-crash");
    // `check` takes the files it checks, not --plugin.
    let output = Command::new(artifacts().cli())
        .args(["check", "--json", library.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["files"][0]["isolation"], "process");
    let output = run(dir.path(), &["--isolation", "sideways", "list"]);
    assert_eq!(output.status.code(), Some(2));
}

/// Whether `pid` is still running (a zombie waiting for a reaper is not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn a_host_killed_with_sigkill_leaves_no_plugin_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut host = command(dir.path(), &["call", "sleep"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let plugin_children = loop {
        let found = child_pids(host.id());
        if !found.is_empty() {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "the host started no plugin process"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let the call reach the child's blocking sleep.
    std::thread::sleep(Duration::from_millis(300));
    host.kill().unwrap();
    host.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while plugin_children.iter().any(|&pid| running(pid)) {
        assert!(
            Instant::now() < deadline,
            "plugin processes outlived their host: {plugin_children:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
