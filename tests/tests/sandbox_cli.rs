//! The plugin process sandbox of issue 14 through `xcsh-plugins`, on the real
//! `fixture-crash` library: writes confined to `--cwd`, the private `TMPDIR` and
//! `--allow-write` (and every way around that we know of is refused), an allocation bomb under
//! `--memory-limit` ends as a tool error naming the plugin and the limit, `--require-sandbox`
//! and `--deny-network`.
//!
//! Each test skips (with a note on stderr) where the kernel has no Landlock: there the
//! sandbox is reported as `unavailable`, which `list_and_check_show_the_sandbox` checks.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use xcsh_integration_tests::{artifacts, landlock_confines, plugin};

fn command(cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("fixture-crash"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_BACKTRACE")
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

/// `call tool arguments` in `cwd`: its exit code and everything it printed.
fn call(cwd: &Path, extra: &[&str], tool: &str, arguments: serde_json::Value) -> (i32, String) {
    let mut args = extra.to_vec();
    let arguments = arguments.to_string();
    args.extend(["call", tool, &arguments]);
    let output = run(cwd, &args);
    (output.status.code().unwrap_or(-1), text(&output))
}

/// Whether this kernel confines plugin processes (`list` says `landlock v`).
fn sandboxed(cwd: &Path) -> bool {
    landlock_confines(&text(&run(cwd, &["list"])))
}

#[test]
fn list_and_check_show_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let listed = run(dir.path(), &["list"]);
    let all = text(&listed);
    assert_eq!(listed.status.code(), Some(0), "{all}");
    assert!(
        all.contains("sandbox: landlock v") || all.contains("sandbox: unavailable"),
        "{all}"
    );
    let in_process = text(&run(dir.path(), &["--isolation", "in-process", "list"]));
    assert!(
        in_process.contains("sandbox: none (in-process)"),
        "{in_process}"
    );
    let json = run(dir.path(), &["--json", "list"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(report["plugins"][0]["sandbox"].is_string(), "{report}");
    let fixture = plugin("fixture-crash");
    // `check` takes the files it checks and --cwd, not --plugin.
    let checked = Command::new(artifacts().cli())
        .args(["check", "--cwd"])
        .arg(dir.path())
        .arg(&fixture)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(text(&checked).contains(", sandbox: "), "{}", text(&checked));
}

#[test]
fn writes_inside_the_cwd_work_and_writes_outside_are_refused() {
    let cwd = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    if !sandboxed(cwd.path()) {
        return;
    }
    let (code, all) = call(
        cwd.path(),
        &[],
        "write_file",
        serde_json::json!({"path": "inside.txt"}),
    );
    assert_eq!((code, all.trim()), (0, "wrote"), "{all}");
    assert!(cwd.path().join("inside.txt").exists());

    let target = outside.path().join("outside.txt");
    let (code, all) = call(
        cwd.path(),
        &[],
        "write_file",
        serde_json::json!({"path": target}),
    );
    // The tool reports the refusal itself; the host goes on (exit 0).
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("error: Permission denied"), "{all}");
    assert!(!target.exists());

    // --allow-write opens that directory too.
    let allowed = outside.path().to_str().unwrap();
    let (code, all) = call(
        cwd.path(),
        &["--allow-write", allowed],
        "write_file",
        serde_json::json!({"path": target}),
    );
    assert_eq!((code, all.trim()), (0, "wrote"), "{all}");

    // In-process there is no sandbox: the same write succeeds.
    let free = outside.path().join("free.txt");
    let (code, all) = call(
        cwd.path(),
        &["--isolation", "in-process"],
        "write_file",
        serde_json::json!({"path": free}),
    );
    assert_eq!((code, all.trim()), (0, "wrote"), "{all}");
}

#[test]
fn escapes_by_symlink_rename_child_process_and_proc_fd_are_refused() {
    let cwd = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    if !sandboxed(cwd.path()) {
        return;
    }
    // A symlink inside the cwd pointing outside.
    std::os::unix::fs::symlink(outside.path(), cwd.path().join("link")).unwrap();
    let (code, all) = call(
        cwd.path(),
        &[],
        "write_file",
        serde_json::json!({"path": "link/through-symlink.txt"}),
    );
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("error: Permission denied"), "symlink: {all}");
    assert!(!outside.path().join("through-symlink.txt").exists());

    // A rename out of the cwd.
    std::fs::write(cwd.path().join("movable.txt"), b"m").unwrap();
    let (code, all) = call(
        cwd.path(),
        &[],
        "rename",
        serde_json::json!({"from": "movable.txt", "to": outside.path().join("moved.txt")}),
    );
    assert_eq!(code, 0, "{all}");
    assert!(all.starts_with("error: "), "rename: {all}");
    assert!(cwd.path().join("movable.txt").exists());
    assert!(!outside.path().join("moved.txt").exists());

    // A process the plugin starts inherits the confinement.
    let spawned = outside.path().join("from-sh.txt");
    let (code, all) = call(
        cwd.path(),
        &[],
        "shell",
        serde_json::json!({"command": format!("echo x > '{}'", spawned.display())}),
    );
    assert_eq!(code, 0, "{all}");
    assert!(!all.starts_with("exit 0"), "child process: {all}");
    assert!(all.contains("Permission denied"), "child process: {all}");
    assert!(!spawned.exists());

    // Reopening an outside file for writing through /proc/self/fd.
    let existing = outside.path().join("existing.txt");
    std::fs::write(&existing, b"original").unwrap();
    let (code, all) = call(
        cwd.path(),
        &[],
        "shell",
        serde_json::json!({"command": format!(
            "exec 3< '{}'; echo overwritten > /proc/self/fd/3",
            existing.display()
        )}),
    );
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("Permission denied"), "/proc/self/fd: {all}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"original");

    // The private TMPDIR is writable, and is not the shared /tmp.
    let (code, all) = call(
        cwd.path(),
        &[],
        "shell",
        serde_json::json!({"command": "case \"$TMPDIR\" in */xcsh-plugins-*) ;; *) echo \"TMPDIR=$TMPDIR\" >&2; exit 3;; esac; echo t > \"$TMPDIR/t\" && stat -c 'tmp-ok %a %n' \"$TMPDIR\" >&2"}),
    );
    assert_eq!(code, 0, "{all}");
    let private = all
        .split("exit 0: tmp-ok 700 ")
        .nth(1)
        .unwrap_or_else(|| panic!("TMPDIR: {all}"))
        .trim();
    // Removed when the session ended.
    assert!(!Path::new(private).exists(), "{private} is left behind");
}

#[test]
fn an_allocation_bomb_under_a_memory_limit_is_a_tool_error_naming_plugin_and_limit() {
    let cwd = tempfile::tempdir().unwrap();
    let path = plugin("fixture-crash").canonicalize().unwrap();
    let started = Instant::now();
    let (code, all) = call(
        cwd.path(),
        &["--memory-limit", "512M"],
        "alloc_bomb",
        serde_json::json!({}),
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{all}");
    assert_eq!(code, 1, "{all}");
    let expected = format!(
        "Plugin {} ran out of its memory limit (512M) while running tool \"alloc_bomb\"",
        path.display()
    );
    assert!(all.contains(&expected), "{all}");
}

#[test]
fn require_sandbox_refuses_what_cannot_be_sandboxed() {
    let cwd = tempfile::tempdir().unwrap();
    let listed = run(cwd.path(), &["--require-sandbox", "list"]);
    let all = text(&listed);
    if all.contains("sandbox: landlock v") {
        assert_eq!(listed.status.code(), Some(0), "{all}");
    } else {
        assert_eq!(listed.status.code(), Some(1), "{all}");
        assert!(all.contains("a sandbox is required"), "{all}");
    }
    let in_process = run(
        cwd.path(),
        &["--isolation", "in-process", "--require-sandbox", "list"],
    );
    let all = text(&in_process);
    assert_eq!(in_process.status.code(), Some(1), "{all}");
    assert!(all.contains("in-process plugins have none"), "{all}");
}

#[test]
fn deny_network_refuses_a_tcp_connect_to_loopback() {
    let cwd = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (code, all) = call(
        cwd.path(),
        &[],
        "connect",
        serde_json::json!({"addr": addr}),
    );
    assert_eq!((code, all.trim()), (0, "connected"), "{all}");
    let listed = text(&run(cwd.path(), &["--deny-network", "list"]));
    if !listed.contains("network denied") {
        eprintln!("skipped: this kernel cannot deny TCP (Landlock ABI < 4)\n{listed}");
        assert!(
            listed.contains("network not enforced") || listed.contains("unavailable"),
            "{listed}"
        );
        return;
    }
    let (code, all) = call(
        cwd.path(),
        &["--deny-network"],
        "connect",
        serde_json::json!({"addr": addr}),
    );
    assert_eq!(code, 0, "{all}");
    assert!(all.contains("error: Permission denied"), "{all}");
}

/// The Landlock ABI `list` reports, `0` without Landlock.
fn landlock_abi(cwd: &Path) -> u32 {
    let listed = text(&run(cwd, &["list"]));
    listed
        .split("sandbox: landlock v")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|abi| abi.parse().ok())
        .unwrap_or(0)
}

#[test]
fn hard_links_truncation_removal_proc_of_the_host_and_signals_to_it_are_refused() {
    let cwd = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let abi = landlock_abi(cwd.path());
    if abi == 0 {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    let existing = outside.path().join("existing.txt");
    std::fs::write(&existing, b"original").unwrap();
    let shell = |command: String| {
        let (code, all) = call(
            cwd.path(),
            &[],
            "shell",
            serde_json::json!({ "command": command }),
        );
        assert_eq!(code, 0, "{all}");
        all
    };
    let quoted = format!("'{}'", existing.display());
    let mut attempts = vec![
        // A hard link into the cwd, then a write through it (Landlock refuses the link:
        // it would gain the file write access).
        format!("ln {quoted} hardlink && echo y >> hardlink"),
        format!("truncate -s 0 {quoted}"),
        format!("rm {quoted}"),
        format!("mkdir '{}'", outside.path().join("dir").display()),
        // The host's working directory through /proc.
        "echo x > /proc/$XCSH_PLUGIN_HOST_PARENT/cwd/through-proc".to_owned(),
    ];
    if abi >= 6 {
        // Signals to processes outside the sandbox (the host).
        attempts.push("kill -0 $XCSH_PLUGIN_HOST_PARENT".to_owned());
    }
    for attempt in attempts {
        let all = shell(attempt.clone());
        assert!(!all.starts_with("exit 0"), "{attempt}: {all}");
    }
    assert_eq!(std::fs::read(&existing).unwrap(), b"original");
    assert!(!outside.path().join("dir").exists());
    // The resource limits: descriptors, address space (KiB), core dumps.
    let all = shell("echo limits $(ulimit -n) $(ulimit -v) $(ulimit -c) >&2".to_owned());
    assert!(all.contains("limits 1024 4194304 0"), "{all}");
}
