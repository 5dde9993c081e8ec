//! Issue 27: a plugin cannot leak the user's secrets. The hostile `fixture-secrets` plugin,
//! under process isolation, through the `xcsh-plugins` CLI and its MCP server:
//!
//! - it does not see the host's `GITHUB_TOKEN` and `..._API_KEY` (control: `--pass-env`);
//! - it cannot read `~/.ssh/id_test` of a home outside the working directory, nor a file in
//!   the shared temporary directory, nor the host's `/proc/PID/environ` (control:
//!   `--allow-read`);
//! - under `--deny-network` it cannot send a UDP datagram, connect to a pathname or abstract
//!   Unix socket, open a raw, packet or netlink socket, sendto through a datagram socket pair,
//!   or set up an io_uring; a Unix stream pair still works (control: without
//!   `--deny-network`, the same calls reach their listeners).
//!
//! Every scratch directory lies under the shared temporary directory, which plugin processes
//! may not read: the working directory is readable because it is the session's, the fake home
//! and the other files because they are not.
//!
//! Where the kernel lacks Landlock (reads) or a seccomp filter (the network), the tests that
//! need them say so on stderr and check that the report says "not enforced" instead.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use xcsh_integration_tests::mcp::{text as mcp_text, McpServerProcess};
use xcsh_integration_tests::{artifacts, plugin};

const TOKEN: &str = "ghp_issue27_test_token";
const API_KEY: &str = "sk-issue27-test-key";
const SECRET: &str = "-----BEGIN TEST KEY-----";

/// A user's world: a working directory, a home of its own (outside the working directory)
/// with `.ssh/id_test`, a file in the shared temporary directory, and the host's secrets in
/// its environment.
struct Scene {
    _root: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
    key: PathBuf,
    shared: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let cwd = base.join("work");
        let home = base.join("home");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let key = home.join(".ssh").join("id_test");
        std::fs::write(&key, SECRET).unwrap();
        let shared = base.join("other-program.txt");
        std::fs::write(&shared, "another program's file").unwrap();
        std::fs::write(cwd.join("project.txt"), "the project's file").unwrap();
        Scene {
            _root: root,
            root: base,
            cwd,
            home,
            key,
            shared,
        }
    }

    /// The environment the host runs with: the secrets an agent runtime has, and the fake home.
    fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("GITHUB_TOKEN".into(), TOKEN.into()),
            ("OPENAI_API_KEY".into(), API_KEY.into()),
            ("MYTOOL_MODE".into(), "fast".into()),
            ("HOME".into(), self.home.clone().into()),
        ]
    }

    /// `xcsh-plugins --no-default-dirs --plugin fixture-secrets --cwd work <extra> call tool
    /// arguments`: exit code, stdout, stderr.
    fn call(&self, extra: &[&str], tool: &str, arguments: Value) -> (i32, String, String) {
        let output = self
            .cli(extra)
            .args(["call", tool, &arguments.to_string()])
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    fn cli(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(artifacts().cli());
        command
            .args(["--no-default-dirs", "--plugin"])
            .arg(plugin("fixture-secrets"))
            .arg("--cwd")
            .arg(&self.cwd)
            .args(extra)
            .envs(self.env())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        command
    }

    /// `list --json` with `extra`: the plugin's entry.
    fn listed(&self, extra: &[&str]) -> Value {
        let output: Output = self.cli(extra).args(["--json", "list"]).output().unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["plugins"][0].clone()
    }
}

/// Whether plugin processes' reads are confined on this kernel (Landlock).
fn reads_confined(scene: &Scene) -> bool {
    let listed = scene.listed(&[]);
    let confined = listed["confinement"]["reads"] == "full";
    if !confined {
        eprintln!("skipped: this kernel has no Landlock; reads are reported: {listed}");
        assert!(
            listed["sandbox"]
                .as_str()
                .unwrap()
                .starts_with("unavailable"),
            "{listed}"
        );
    }
    confined
}

/// Whether `--deny-network` refuses every socket on this kernel (seccomp).
fn network_denied(scene: &Scene) -> bool {
    let listed = scene.listed(&["--deny-network"]);
    let denied = listed["confinement"]["network"] == "full";
    if !denied {
        eprintln!("skipped: this kernel has no seccomp filter; the network is reported: {listed}");
        let summary = listed["sandbox"].as_str().unwrap();
        assert!(
            summary.contains("network partly denied (TCP only)")
                || summary.contains("network not enforced"),
            "{listed}"
        );
    }
    denied
}

#[test]
fn the_plugin_sees_only_the_allowed_environment_and_named_variables() {
    let scene = Scene::new();
    let (code, out, err) = scene.call(&[], "env", json!({}));
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains(TOKEN), "the token leaked:\n{out}");
    assert!(!out.contains(API_KEY), "the API key leaked:\n{out}");
    assert!(!out.contains("MYTOOL_MODE"), "{out}");
    // A private home, in the session's private temporary directory (issue 44).
    let home = out
        .lines()
        .find_map(|line| line.strip_prefix("HOME="))
        .unwrap();
    assert!(
        home.contains("/xcsh-plugins-") && home.ends_with("/home"),
        "{out}"
    );
    assert!(out.lines().any(|line| line.starts_with("PATH=")), "{out}");
    assert!(out.contains("/xcsh-plugins-"), "its own TMPDIR:\n{out}");
    let names: Vec<&str> = out
        .lines()
        .filter_map(|line| line.split('=').next())
        .collect();
    for name in names {
        let allowed = ["PATH", "HOME", "USER", "LANG", "TERM", "TZ", "TMPDIR"].contains(&name)
            || name.starts_with("LC_")
            || name == "XCSH_PLUGIN_HOST_PARENT"
            || xcsh_loader::sandbox::PROGRAM_ENVIRONMENT.contains(&name);
        assert!(allowed, "{name} reached the plugin:\n{out}");
    }

    // Control: named variables, by name and by prefix.
    let (code, out, err) = scene.call(
        &["--pass-env", "GITHUB_TOKEN", "--pass-env", "MYTOOL_*"],
        "env",
        json!({}),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("GITHUB_TOKEN={TOKEN}")), "{out}");
    assert!(out.contains("MYTOOL_MODE=fast"), "{out}");
    assert!(!out.contains(API_KEY), "only what was named:\n{out}");

    // `*` alone is refused before anything runs.
    let (code, _, err) = scene.call(&["--pass-env", "*"], "env", json!({}));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("names no variable"), "{err}");

    // In-process plugins remain unconfined (documented): they share the host's environment.
    let (code, out, err) = scene.call(&["--isolation", "in-process"], "env", json!({}));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(TOKEN), "{out}");
}

#[test]
fn the_home_and_the_shared_temporary_directory_are_unreadable_unless_named() {
    let scene = Scene::new();
    if !reads_confined(&scene) {
        return;
    }
    let key = scene.key.to_str().unwrap();
    let (code, out, err) = scene.call(&[], "read_file", json!({ "path": key }));
    assert_eq!(code, 1, "{out}{err}");
    assert!(!out.contains(SECRET), "the key leaked: {out}");
    assert!(
        err.contains(&format!(
            "error: cannot read {key}: Permission denied (os error 13)"
        )),
        "{err}"
    );
    assert!(err.contains("add `--allow-read PATH`"), "{err}");

    // Another program's file in the shared temporary directory.
    let shared = scene.shared.to_str().unwrap();
    let (code, out, err) = scene.call(&[], "read_file", json!({ "path": shared }));
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Permission denied (os error 13)"), "{err}");

    // What stays readable: the project, the system.
    let (code, out, err) = scene.call(&[], "read_file", json!({ "path": "project.txt" }));
    assert_eq!((code, out.trim()), (0, "the project's file"), "{err}");
    let (code, out, err) = scene.call(&[], "read_file", json!({ "path": "/etc/passwd" }));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("root:"), "{out}");

    // Control: --allow-read opens the named path, and only it.
    let ssh = scene.home.join(".ssh");
    let allow = ["--allow-read", ssh.to_str().unwrap()];
    let (code, out, err) = scene.call(&allow, "read_file", json!({ "path": key }));
    assert_eq!((code, out.trim()), (0, SECRET), "{err}");
    let (code, _, err) = scene.call(&allow, "read_file", json!({ "path": shared }));
    assert_eq!(code, 1, "{err}");

    // check shows the policy.
    let output = Command::new(artifacts().cli())
        .args(["check", "--cwd"])
        .arg(&scene.cwd)
        .arg(plugin("fixture-secrets"))
        .envs(scene.env())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{shown}");
    assert!(
        shown.contains("reads confined, writes confined, environment filtered"),
        "{shown}"
    );
    assert!(
        shown.contains(
            "  environment: PATH, USER, LANG, LC_*, TERM, TZ, TMPDIR (private), HOME, XDG_CONFIG_HOME"
        ),
        "{shown}"
    );
    assert!(shown.contains("  reads: /usr"), "{shown}");
    assert!(shown.contains("  network: allowed"), "{shown}");
}

/// A UDP listener on loopback: its address, and whether a datagram arrives within `wait`.
struct Udp(std::net::UdpSocket);

impl Udp {
    fn new() -> Self {
        Udp(std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
    }
    fn addr(&self) -> String {
        self.0.local_addr().unwrap().to_string()
    }
    fn received(&self, wait: Duration) -> Option<Vec<u8>> {
        self.0.set_read_timeout(Some(wait)).unwrap();
        let mut buffer = [0u8; 256];
        self.0.recv(&mut buffer).ok().map(|n| buffer[..n].to_vec())
    }
}

/// A Unix stream listener (pathname or abstract) whose accepted connections' bytes are kept.
fn accept_one(listener: UnixListener) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (sender, received) = std::sync::mpsc::channel();
    listener.set_nonblocking(false).unwrap();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut bytes = Vec::new();
            let _ = stream.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        }
    });
    received
}

#[test]
fn deny_network_refuses_udp_unix_abstract_raw_packet_netlink_and_io_uring() {
    let scene = Scene::new();
    if !network_denied(&scene) {
        return;
    }
    let deny = ["--deny-network"];
    let refused = |extra: &[&str], tool: &str, arguments: Value| {
        let (code, out, err) = scene.call(extra, tool, arguments);
        assert_eq!(code, 1, "{tool}: {out}{err}");
        assert!(
            err.contains("Permission denied (os error 13)"),
            "{tool}: {err}"
        );
        err
    };

    // UDP: refused under --deny-network, and nothing arrives; the control's datagram does.
    let udp = Udp::new();
    let arguments = json!({"addr": udp.addr(), "text": TOKEN});
    let err = refused(&deny, "send_udp", arguments.clone());
    assert!(err.contains("cannot send a UDP datagram"), "{err}");
    assert_eq!(udp.received(Duration::from_millis(200)), None);
    let (code, out, err) = scene.call(&[], "send_udp", arguments);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sent"), "{out}");
    assert_eq!(
        udp.received(Duration::from_secs(5)).as_deref(),
        Some(TOKEN.as_bytes())
    );

    // A pathname Unix socket outside the working directory (an SSH agent's, a daemon's).
    let socket_path = scene.root.join("agent.sock");
    let arguments = json!({"path": socket_path, "text": TOKEN});
    let listener = UnixListener::bind(&socket_path).unwrap();
    let received = accept_one(listener);
    let err = refused(&deny, "connect_unix", arguments.clone());
    assert!(err.contains("cannot connect to"), "{err}");
    assert!(received.recv_timeout(Duration::from_millis(200)).is_err());
    let (code, out, err) = scene.call(&[], "connect_unix", arguments);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("connected"), "{out}");
    assert_eq!(
        received.recv_timeout(Duration::from_secs(5)).unwrap(),
        TOKEN.as_bytes()
    );

    // An abstract Unix socket.
    let name = format!("xcsh-issue27-{}", std::process::id());
    let listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let received = accept_one(listener);
    let arguments = json!({"name": name, "text": TOKEN});
    refused(&deny, "connect_abstract", arguments.clone());
    assert!(received.recv_timeout(Duration::from_millis(200)).is_err());
    let (code, out, err) = scene.call(&[], "connect_abstract", arguments);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("connected"), "{out}");
    assert_eq!(
        received.recv_timeout(Duration::from_secs(5)).unwrap(),
        TOKEN.as_bytes()
    );

    // Raw, packet, netlink and Unix sockets. The control may lack the privilege for raw and
    // packet sockets (`Operation not permitted`, EPERM): the refusal is the sandbox's EACCES.
    for kind in ["raw", "packet", "netlink", "unix"] {
        let arguments = json!({ "kind": kind });
        refused(&deny, "open_socket", arguments.clone());
        let (code, out, err) = scene.call(&[], "open_socket", arguments);
        assert!(
            (code == 0 && out.contains("opened")) || err.contains("(os error 1)"),
            "{kind}: {out}{err}"
        );
    }

    // A datagram socket pair could sendto a datagram socket outside: refused. A stream pair
    // (what the child and its runtimes use) still works.
    let log = scene.root.join("log.dgram");
    let dgram = UnixDatagram::bind(&log).unwrap();
    dgram
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let arguments = json!({"kind": "dgram", "path": log});
    refused(&deny, "socket_pair", arguments.clone());
    let mut buffer = [0u8; 16];
    assert!(dgram.recv(&mut buffer).is_err());
    let (code, out, err) = scene.call(&[], "socket_pair", arguments);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sent"), "{out}");
    let (code, out, err) = scene.call(&deny, "socket_pair", json!({"kind": "stream"}));
    assert_eq!(
        (code, out.trim()),
        (0, "made a stream socket pair"),
        "{err}"
    );

    // io_uring, which seccomp cannot see into.
    refused(&deny, "io_uring", json!({}));

    // What was enforced, part by part.
    let listed = scene.listed(&deny);
    let confinement = &listed["confinement"];
    assert_eq!(confinement["network"], "full", "{listed}");
    assert_eq!(confinement["seccomp"], true, "{listed}");
    assert_eq!(confinement["environment"], "full", "{listed}");
    assert!(
        listed["sandbox"]
            .as_str()
            .unwrap()
            .ends_with("network denied"),
        "{listed}"
    );
    let listed = scene.listed(&[]);
    assert_eq!(
        listed["confinement"]["network"], "not-requested",
        "{listed}"
    );
    assert_eq!(listed["confinement"]["seccomp"], false, "{listed}");
}

#[test]
fn check_json_reports_what_was_enforced_and_the_policy() {
    let scene = Scene::new();
    let output = Command::new(artifacts().cli())
        .args([
            "check",
            "--json",
            "--deny-network",
            "--pass-env",
            "MYTOOL_*",
        ])
        .args(["--allow-read", scene.home.to_str().unwrap(), "--cwd"])
        .arg(&scene.cwd)
        .arg(plugin("fixture-secrets"))
        .envs(scene.env())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(file["ok"], true, "{report:#}");
    for part in ["environment", "reads", "writes", "network"] {
        let enforced = file["confinement"][part].as_str().unwrap_or_default();
        assert!(
            ["full", "partial", "none"].contains(&enforced),
            "{part}: {report:#}"
        );
    }
    assert_eq!(file["confinement"]["environment"], "full", "{report:#}");
    let policy = &file["policy"];
    assert_eq!(policy["network"], "denied");
    assert!(
        policy["environment"]
            .as_array()
            .unwrap()
            .contains(&json!("MYTOOL_*")),
        "{policy}"
    );
    let reads: Vec<&str> = policy["reads"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        reads.contains(&scene.cwd.to_str().unwrap())
            && reads.contains(&scene.home.to_str().unwrap()),
        "{policy}"
    );
    assert_eq!(policy["writes"][0], scene.cwd.to_str().unwrap());
    // In-process: nothing confined, no policy.
    let output = Command::new(artifacts().cli())
        .args(["check", "--json", "--isolation", "in-process", "--cwd"])
        .arg(&scene.cwd)
        .arg(plugin("fixture-secrets"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["files"][0]["confinement"], Value::Null, "{report:#}");
    assert_eq!(report["files"][0]["policy"], Value::Null, "{report:#}");
    assert_eq!(report["files"][0]["sandbox"], "none (in-process)");
}

async fn mcp(scene: &Scene, extra: &[&str]) -> McpServerProcess {
    let mut args: Vec<OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("fixture-secrets").into(),
        "--cwd".into(),
        scene.cwd.clone().into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    McpServerProcess::start_with_env(args, (), scene.env()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_mcp_each_refusal_holds_and_each_control_succeeds() {
    let scene = Scene::new();
    let confined = reads_confined(&scene);
    let denied = network_denied(&scene);
    let key = scene.key.to_str().unwrap().to_owned();
    let udp = Udp::new();

    // The defaults: no secrets in the environment, no reading the home or the host's
    // environment through /proc; the network is open (the control).
    let server = mcp(&scene, &[]).await;
    let result = server.call("env", json!({})).await;
    let env = mcp_text(&result);
    assert_ne!(result.is_error, Some(true), "{env}");
    assert!(!env.contains(TOKEN) && !env.contains(API_KEY), "{env}");
    if confined {
        let result = server.call("read_file", json!({ "path": key })).await;
        assert_eq!(result.is_error, Some(true));
        let message = mcp_text(&result);
        assert!(
            message.contains(&format!("cannot read {key}: Permission denied")),
            "{message}"
        );
        // The host's own environment, through /proc: Landlock refuses a sandboxed process
        // ptrace access to processes outside its sandbox.
        let host = server.child.id().unwrap();
        let result = server
            .call(
                "read_file",
                json!({ "path": format!("/proc/{host}/environ") }),
            )
            .await;
        assert_eq!(result.is_error, Some(true), "{}", mcp_text(&result));
        assert!(!mcp_text(&result).contains(TOKEN));
    }
    let result = server
        .call("send_udp", json!({"addr": udp.addr(), "text": "control"}))
        .await;
    assert_ne!(result.is_error, Some(true), "{}", mcp_text(&result));
    assert_eq!(
        udp.received(Duration::from_secs(5)).as_deref(),
        Some(&b"control"[..])
    );
    server.stop().await;

    // Named variables and paths pass; the network is denied.
    let ssh = scene.home.join(".ssh");
    let server = mcp(
        &scene,
        &[
            "--pass-env",
            "GITHUB_TOKEN",
            "--allow-read",
            ssh.to_str().unwrap(),
            "--deny-network",
        ],
    )
    .await;
    let env = mcp_text(&server.call("env", json!({})).await);
    assert!(env.contains(&format!("GITHUB_TOKEN={TOKEN}")), "{env}");
    assert!(!env.contains(API_KEY), "{env}");
    let result = server.call("read_file", json!({ "path": key })).await;
    assert_eq!(mcp_text(&result).trim(), SECRET);
    if denied {
        let result = server
            .call("send_udp", json!({"addr": udp.addr(), "text": TOKEN}))
            .await;
        assert_eq!(result.is_error, Some(true));
        assert!(
            mcp_text(&result).contains("Permission denied (os error 13)"),
            "{}",
            mcp_text(&result)
        );
        assert_eq!(udp.received(Duration::from_millis(200)), None);
        let socket_path = scene.root.join("mcp-agent.sock");
        let _listener = UnixListener::bind(&socket_path).unwrap();
        for (tool, arguments) in [
            ("connect_unix", json!({"path": socket_path, "text": TOKEN})),
            (
                "connect_abstract",
                json!({"name": "xcsh-issue27-mcp", "text": TOKEN}),
            ),
            ("open_socket", json!({"kind": "raw"})),
            ("open_socket", json!({"kind": "netlink"})),
        ] {
            let result = server.call(tool, arguments).await;
            assert_eq!(result.is_error, Some(true), "{tool}");
            assert!(
                mcp_text(&result).contains("Permission denied (os error 13)"),
                "{tool}: {}",
                mcp_text(&result)
            );
        }
    }
    server.stop().await;
}
