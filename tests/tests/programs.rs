//! Programs a plugin runs (issue 44), from a sandboxed plugin process with default options,
//! on the real `fixture-programs` library, through `std::process::Command` and `ctx.exec`:
//! git and a rustup toolchain under the home work, every secret under the home stays
//! unreadable to the plugin and its programs, writes outside the project and sockets under
//! `--deny-network` are refused to the programs too, nothing can prompt for a password, and
//! no program outlives its plugin process (a timeout, a cancel, an idle stop, the host
//! killed with SIGKILL), nor, in process, an `exec` its timeout or cancel.
//!
//! The user's home is a scratch one holding the secrets, with the machine's real rustup
//! toolchain linked in where rustup puts it (`~/.rustup`, `~/.cargo/bin`).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use xcsh_integration_tests::{artifacts, landlock_confines, plugin};
use xcsh_loader::{CallOptions, CancelToken, Isolation, Session, ToolOutcome};

/// Secret files under the home, as tests make them (relative path, content).
const SECRETS: &[&str] = &[
    ".ssh/id_ed25519",
    ".gnupg/private-keys-v1.d/key.key",
    ".aws/credentials",
    ".kube/config",
    ".config/gh/hosts.yml",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".docker/config.json",
];

/// A user's home: the secrets, settings that carry tokens, and the real toolchain linked
/// in. `None` (with a note) where this machine has no rustup toolchain.
fn home_with_secrets() -> Option<tempfile::TempDir> {
    let real_home = std::env::home_dir()?;
    let rustup = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home.join(".cargo"))
        .join("bin");
    if !rustup.is_dir() || !cargo_bin.join("cargo").exists() {
        eprintln!("skipped: no rustup toolchain at {}", rustup.display());
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&rustup, home.path().join(".rustup")).unwrap();
    std::fs::create_dir_all(home.path().join(".cargo")).unwrap();
    std::os::unix::fs::symlink(&cargo_bin, home.path().join(".cargo/bin")).unwrap();
    for secret in SECRETS {
        let path = home.path().join(secret);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("SECRET {secret}\n")).unwrap();
    }
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = Sandboxed Tester\n\temail = t@example.com\n\
         [http \"https://github.com/\"]\n\textraHeader = AUTHORIZATION: basic SECRET-header\n\
         [url \"https://x:SECRET-token@github.com/\"]\n\tinsteadOf = https://github.com/\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".cargo/config.toml"),
        "[registry]\ntoken = \"SECRET-cargo-token\"\n[term]\nquiet = false\n",
    )
    .unwrap();
    Some(home)
}

/// `xcsh-plugins` on `fixture-programs`, as a user whose home is `home` runs it.
fn cli(home: &Path, cwd: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        home.join(".cargo/bin").display()
    );
    command
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("fixture-programs"))
        .arg("--cwd")
        .arg(cwd)
        .args(extra)
        .stdin(Stdio::null());
    command
}

/// Call `tool` with `arguments`: the result's details (or the error's text as a string).
fn call(home: &Path, cwd: &Path, extra: &[&str], tool: &str, arguments: Value) -> Value {
    let output: Output = cli(home, cwd, extra)
        .args(["--json", "call", tool, &arguments.to_string()])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    if report["isError"] == true {
        return Value::String(
            report["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .into(),
        );
    }
    report["result"]["details"].clone()
}

fn run(home: &Path, cwd: &Path, via: &str, program: &str, args: &[&str]) -> Value {
    call(
        home,
        cwd,
        &[],
        "run",
        json!({"program": program, "args": args, "via": via}),
    )
}

fn sandboxed(home: &Path, cwd: &Path) -> bool {
    let listed = cli(home, cwd, &["list"]).output().unwrap();
    landlock_confines(&String::from_utf8_lossy(&listed.stdout))
}

fn git(cwd: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn git_and_a_rustup_toolchain_work_and_every_secret_stays_unreadable() {
    let Some(home) = home_with_secrets() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path();
    if !sandboxed(home.path(), cwd) {
        return;
    }
    git(cwd, &["init", "-q", "."]);
    std::fs::write(cwd.join("notes.txt"), "hi\n").unwrap();
    let krate = cwd.join("hello");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        krate.join("src/main.rs"),
        "fn main() { println!(\"hi\"); }\n",
    )
    .unwrap();
    let hello = krate.display().to_string();
    for via in ["command", "exec"] {
        let status = run(home.path(), cwd, via, "git", &["status", "--porcelain"]);
        assert_eq!(status["code"], 0, "{via}: {status}");
        assert!(
            status["stdout"].as_str().unwrap().contains("?? notes.txt"),
            "{status}"
        );
        let name = run(
            home.path(),
            cwd,
            via,
            "git",
            &["config", "--global", "user.name"],
        );
        assert_eq!(name["stdout"], "Sandboxed Tester\n", "{via}: {name}");
        let settings = run(
            home.path(),
            cwd,
            via,
            "git",
            &["config", "--global", "--list"],
        );
        assert!(
            !settings.to_string().contains("SECRET"),
            "{via}: {settings}"
        );
        let metadata = call(
            home.path(),
            cwd,
            &[],
            "run",
            json!({"program": "cargo", "args": ["metadata", "--no-deps", "--format-version", "1"], "via": via, "cwd": hello}),
        );
        assert_eq!(metadata["code"], 0, "{via}: {metadata}");
        assert!(metadata["stdout"]
            .as_str()
            .unwrap()
            .contains("\"name\":\"hello\""));
        let build = call(
            home.path(),
            cwd,
            &[],
            "run",
            json!({"program": "cargo", "args": ["build", "--offline", "--quiet"], "via": via, "cwd": hello}),
        );
        assert_eq!(build["code"], 0, "{via}: {build}");
        assert!(krate.join("target/debug/hello").exists());
        std::fs::remove_dir_all(krate.join("target")).unwrap();
    }
    let mut secrets: Vec<String> = SECRETS.iter().map(|s| (*s).to_owned()).collect();
    secrets.extend([".gitconfig".to_owned(), ".cargo/config.toml".to_owned()]);
    for secret in &secrets {
        let path = home.path().join(secret).display().to_string();
        let read = call(home.path(), cwd, &[], "read", json!({"path": path}));
        assert!(
            read.as_str()
                .is_some_and(|e| e.contains("Permission denied")),
            "the plugin read {secret}: {read}"
        );
        for via in ["command", "exec"] {
            let cat = run(home.path(), cwd, via, "cat", &[&path]);
            assert_ne!(cat["code"], 0, "{via} read {secret}: {cat}");
            assert!(
                !cat["stdout"].as_str().unwrap_or("").contains("SECRET"),
                "{cat}"
            );
        }
    }
    // Writes outside the project, by a program.
    let outside = format!("/var/tmp/xcsh-programs-{}", std::process::id());
    let write = run(
        home.path(),
        cwd,
        "exec",
        "sh",
        &["-c", &format!("echo x > {outside}")],
    );
    assert_ne!(write["code"], 0, "{write}");
    assert!(!Path::new(&outside).exists());
}

#[test]
fn sockets_are_refused_to_programs_under_deny_network() {
    let Some(home) = home_with_secrets() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    if !sandboxed(home.path(), project.path()) {
        return;
    }
    for (kind, script) in [
        ("tcp", "import socket; s = socket.socket(); s.settimeout(2); s.connect(('127.0.0.1', 9))"),
        ("udp", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))"),
    ] {
        let refused = call(
            home.path(),
            project.path(),
            &["--deny-network"],
            "run",
            json!({"program": "/usr/bin/python3", "args": ["-c", script]}),
        );
        assert_ne!(refused["code"], 0, "{kind}: {refused}");
        let stderr = refused["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("PermissionError") || stderr.contains("Operation not permitted"),
            "{kind}: {stderr}"
        );
    }
}

/// A web server on loopback that asks every request for a password.
fn password_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(false).unwrap();
        for _ in 0..4 {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"x\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (port, server)
}

#[test]
fn a_program_that_asks_for_a_password_fails_at_once() {
    let Some(home) = home_with_secrets() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    if !sandboxed(home.path(), project.path()) {
        return;
    }
    let (port, _server) = password_server();
    let url = format!("http://127.0.0.1:{port}/repository.git");
    for via in ["command", "exec"] {
        let started = Instant::now();
        let asked = call(
            home.path(),
            project.path(),
            &[],
            "run",
            json!({"program": "git", "args": ["ls-remote", url], "via": via, "timeout_ms": 60000}),
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{via}: {:?}",
            started.elapsed()
        );
        assert_ne!(asked["code"], 0, "{via}: {asked}");
        let stderr = asked["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("terminal prompts disabled")
                || stderr.contains("could not read Username"),
            "{via}: {stderr}"
        );
    }
}

static MARKERS: AtomicU32 = AtomicU32::new(0);

/// A sleep duration no other process has: how the test finds the processes it started.
fn marker() -> String {
    format!(
        "1000.{}{:03}",
        std::process::id(),
        MARKERS.fetch_add(1, Ordering::SeqCst)
    )
}

/// The live processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if !state.starts_with('Z') && !state.is_empty() {
            found.push(pid);
        }
    }
    found
}

/// Wait until `marker`'s processes are `count` (or at least `count`, with `at_least`), or
/// the time is up: their number.
fn wait_for(marker: &str, count: usize, limit: Duration) -> usize {
    wait_until(marker, |n| n == count, limit)
}

fn wait_until(marker: &str, done: impl Fn(usize) -> bool, limit: Duration) -> usize {
    let started = Instant::now();
    loop {
        let now = running(marker).len();
        if done(now) || started.elapsed() > limit {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `sh -c 'sleep M & sleep M'` (one more detached with `setsid`): four processes (the
/// shell and three sleeps) that must all end.
fn sleeper(marker: &str) -> Value {
    let script = format!("sleep {marker} & setsid sleep {marker} & sleep {marker}");
    json!({"program": "sh", "args": ["-c", script], "via": "command"})
}

#[test]
fn a_call_timeout_and_a_killed_host_leave_no_program_behind() {
    let Some(home) = home_with_secrets() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    if !sandboxed(home.path(), project.path()) {
        return;
    }
    let timed_out = marker();
    let output = cli(
        home.path(),
        project.path(),
        &["call", "--timeout", "2", "run"],
    )
    .arg(sleeper(&timed_out).to_string())
    .output()
    .unwrap();
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("timed out after 2s"),
        "{output:?}"
    );
    assert_eq!(wait_for(&timed_out, 0, Duration::from_secs(5)), 0);

    let killed = marker();
    let mut host = cli(home.path(), project.path(), &["call", "run"])
        .arg(sleeper(&killed).to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The host's own command line holds the marker too: itself, the shell and three sleeps.
    assert_eq!(wait_for(&killed, 5, Duration::from_secs(20)), 5);
    host.kill().unwrap();
    host.wait().unwrap();
    assert_eq!(
        wait_for(&killed, 0, Duration::from_secs(5)),
        0,
        "left behind: {:?}",
        running(&killed)
    );
}

/// The idle time of the sessions here: long enough to see a spawned program start first.
const IDLE: Duration = Duration::from_secs(2);

fn session(dir: &Path, isolation: Isolation) -> Session {
    let session = Session::builder(dir)
        .default_dirs(false)
        .isolation(isolation)
        .stop_idle_after(Some(IDLE))
        .plugin(plugin("fixture-programs"))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    session
}

#[tokio::test]
async fn a_cancel_and_an_idle_stop_leave_no_program_behind() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), Isolation::Process);
    let cancelled = marker();
    let outcome = cancel_once_running(&session, sleeper(&cancelled), &cancelled, 4).await;
    assert!(outcome.is_error, "{}", outcome.text());
    assert_eq!(wait_for(&cancelled, 0, Duration::from_secs(10)), 0);

    let idle = marker();
    let started = session
        .call("spawn", json!({"program": "sleep", "args": [idle]}))
        .await;
    assert!(!started.is_error, "{}", started.text());
    assert_eq!(
        wait_for(&idle, 1, Duration::from_millis(1500)),
        1,
        "the spawned program runs after its call"
    );
    assert_eq!(
        wait_for(&idle, 0, Duration::from_secs(10)),
        0,
        "the idle stop ended it"
    );
}

#[tokio::test]
async fn in_process_an_exec_timeout_and_cancel_leave_no_program_behind() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), Isolation::InProcess);
    let timed_out = marker();
    let script = format!("sleep {timed_out} & sleep {timed_out}");
    let outcome = session
        .call(
            "run",
            json!({"program": "sh", "args": ["-c", script], "timeout_ms": 500}),
        )
        .await;
    assert!(!outcome.is_error, "{}", outcome.text());
    let details = outcome.result.details.clone().unwrap();
    assert_eq!(
        (details["killed"].clone(), details["signal"].clone()),
        (json!(true), json!("SIGKILL"))
    );
    assert_eq!(wait_for(&timed_out, 0, Duration::from_secs(5)), 0);

    let cancelled = marker();
    let script = format!("sleep {cancelled} & sleep {cancelled}");
    let arguments = json!({"program": "sh", "args": ["-c", script]});
    cancel_once_running(&session, arguments, &cancelled, 3).await;
    assert_eq!(wait_for(&cancelled, 0, Duration::from_secs(5)), 0);
}

/// Call `run` with `arguments`, cancel the call once `count` processes carrying `marker` run
/// (it fails the test if they never do), and return how the call ended.
async fn cancel_once_running(
    session: &Session,
    arguments: Value,
    marker: &str,
    count: usize,
) -> ToolOutcome {
    let cancel = CancelToken::new();
    let call = session.call_with(
        "run",
        arguments,
        CallOptions {
            cancel: cancel.clone(),
            ..CallOptions::default()
        },
    );
    let watcher = {
        let marker = marker.to_owned();
        tokio::task::spawn_blocking(move || {
            let seen = wait_for(&marker, count, Duration::from_secs(20));
            cancel.cancel();
            seen
        })
    };
    let outcome = call.await;
    assert_eq!(watcher.await.unwrap(), count, "the programs never all ran");
    outcome
}

#[test]
fn check_shows_what_programs_may_read() {
    let Some(home) = home_with_secrets() else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    if !sandboxed(home.path(), project.path()) {
        return;
    }
    let path = format!("{}:/usr/bin:/bin", home.path().join(".cargo/bin").display());
    let output = Command::new(artifacts().cli())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", path)
        .arg("--cwd")
        .arg(project.path())
        .arg("check")
        .arg(plugin("fixture-programs"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let rustup = std::fs::canonicalize(home.path().join(".rustup")).unwrap();
    assert!(
        text.contains(&format!("{} (toolchain)", rustup.display())),
        "{text}"
    );
    assert!(text.contains("HOME (private"), "{text}");
    assert!(
        text.contains("programs: no terminal, empty input; end with the plugin process"),
        "{text}"
    );
    assert!(!text.contains(".ssh"), "{text}");
}

#[tokio::test]
async fn exec_refuses_a_working_directory_the_plugin_may_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let session = session(dir.path(), Isolation::Process);
    let outcome = session
        .call("run", json!({"program": "ls", "cwd": "/etc"}))
        .await;
    assert!(outcome.is_error);
    let text = outcome.text();
    assert!(
        text.contains("cannot run ls in /etc: it is outside what this plugin may write"),
        "{text}"
    );
    let missing = session
        .call("run", json!({"program": "no-such-program-xcsh"}))
        .await;
    assert!(
        missing
            .text()
            .contains("command not found: no-such-program-xcsh"),
        "{}",
        missing.text()
    );
}
