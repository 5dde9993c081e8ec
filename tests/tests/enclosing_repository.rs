//! A session in a subdirectory of a repository (issue 52, docs/guide/src/isolation.md), through
//! `xcsh-plugins` on the real `fixture-programs` library in a sandboxed plugin process with default
//! options: git run by the plugin (`ctx.exec`) reads the repository above `--cwd` (`git status`,
//! `git log`, `git branch --merged`), cargo reads the workspace (`cargo metadata` from a member), a
//! `.env` beside the workspace's files stays unreadable, a write into the enclosing `.git` (`git
//! branch -d`) is refused, changes nothing and names `--allow-write`, which then makes it work;
//! `check` lists the read-only parts. Outside a repository nothing changes.
//!
//! Each test skips (with a note on stderr) where the kernel has no Landlock.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use xcsh_integration_tests::{artifacts, landlock_confines, plugin};

/// A repository with a Cargo workspace at its top, its members `sub` (the session's
/// directory) and `crates/other`, a `.env` holding a secret, an untracked `notes/todo.txt`,
/// and branches `merged` and `ahead` besides `main`.
struct Repository {
    _dir: tempfile::TempDir,
    /// Its top (canonical).
    root: PathBuf,
    /// `root/sub`, the session's directory.
    sub: PathBuf,
}

fn git(cwd: &Path, args: &[&str]) -> Output {
    let output = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Tester")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "Tester")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    output
}

fn repository() -> Repository {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("repo");
    let sub = root.join("sub");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\nmembers = [\"sub\", \"crates/*\"]\nresolver = \"2\"\n",
    )
    .unwrap();
    for (dir, name) in [("sub", "member"), ("crates/other", "other")] {
        std::fs::create_dir_all(root.join(dir).join("src")).unwrap();
        std::fs::write(
            root.join(dir).join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        std::fs::write(root.join(dir).join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    }
    std::fs::write(
        root.join("Cargo.lock"),
        "version = 4\n\n[[package]]\nname = \"member\"\nversion = \"0.1.0\"\n\n\
         [[package]]\nname = \"other\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".env\ntarget/\n").unwrap();
    std::fs::write(root.join(".env"), "TOKEN=SECRET-dotenv\n").unwrap();
    git(&root, &["init", "-q", "-b", "main", "."]);
    // Older than the index git writes next: no entry is "racily clean", which git would
    // re-read to compare (and, for a file above `--cwd` it may not read, call modified).
    let touched = Command::new("touch")
        .args([
            "-d",
            "2020-01-01 00:00:00",
            "Cargo.toml",
            "Cargo.lock",
            ".gitignore",
        ])
        .args(["sub/Cargo.toml", "sub/src/lib.rs"])
        .args(["crates/other/Cargo.toml", "crates/other/src/lib.rs"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(touched.success());
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "first"]);
    git(&root, &["branch", "merged"]);
    git(&root, &["checkout", "-q", "-b", "ahead"]);
    git(&root, &["commit", "-q", "--allow-empty", "-m", "ahead"]);
    git(&root, &["checkout", "-q", "main"]);
    std::fs::create_dir(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/todo.txt"), "untracked\n").unwrap();
    Repository {
        _dir: dir,
        root,
        sub,
    }
}

fn cli(cwd: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(["--no-default-dirs", "--plugin"])
        .arg(plugin("fixture-programs"))
        .arg("--cwd")
        .arg(cwd)
        .args(extra)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

/// `call TOOL` with `arguments` and `--json`: the report, and what the host logged.
fn call(cwd: &Path, extra: &[&str], tool: &str, arguments: Value) -> (Value, String) {
    let output = cli(cwd, extra)
        .args(["--json", "call", tool, &arguments.to_string()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}{stderr}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    (report, stderr)
}

/// `git ARGS` run by the plugin through `ctx.exec` in `cwd`: the program's details, the
/// result's text blocks, what the host logged.
fn plugin_git(cwd: &Path, extra: &[&str], args: &[&str]) -> (Value, Vec<String>, String) {
    let (report, log) = call(
        cwd,
        extra,
        "run",
        json!({"program": "git", "args": args, "via": "exec"}),
    );
    assert_eq!(report["isError"], false, "{report}\n{log}");
    let texts = report["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str().map(str::to_owned))
        .collect();
    (report["result"]["details"].clone(), texts, log)
}

fn sandboxed(cwd: &Path) -> bool {
    let listed = cli(cwd, &["list"]).output().unwrap();
    landlock_confines(&String::from_utf8_lossy(&listed.stdout))
}

fn branches(root: &Path) -> String {
    String::from_utf8(git(root, &["branch", "--format=%(refname:short)"]).stdout).unwrap()
}

#[test]
fn git_reads_the_repository_above_a_subdirectory_and_writes_to_its_git_directory_need_allow_write()
{
    let repo = repository();
    if !sandboxed(&repo.sub) {
        return;
    }
    let (merged, _, log) = plugin_git(&repo.sub, &[], &["branch", "--merged"]);
    assert_eq!(merged["code"], 0, "{merged}\n{log}");
    assert_eq!(merged["stdout"], "* main\n  merged\n", "{merged}");
    // The whole working tree is listed (names only) for what is untracked.
    let (status, _, _) = plugin_git(&repo.sub, &[], &["status", "--porcelain"]);
    assert_eq!(
        (&status["code"], &status["stdout"], &status["stderr"]),
        (&json!(0), &json!("?? notes/\n"), &json!("")),
        "{status}"
    );
    let (logged, _, _) = plugin_git(&repo.sub, &[], &["log", "--format=%s", "ahead"]);
    assert_eq!(
        (&logged["code"], &logged["stdout"]),
        (&json!(0), &json!("ahead\nfirst\n")),
        "{logged}"
    );

    // The rest of the repository is not granted: the `.env` beside the workspace's files,
    // an untracked file, another member's source.
    for path in ["../.env", "../notes/todo.txt", "../crates/other/src/lib.rs"] {
        let (read, _) = call(&repo.sub, &[], "read", json!({"path": path}));
        assert_eq!(read["isError"], true, "{read}");
        let refused = read["result"]["content"][0]["text"].as_str().unwrap();
        assert!(refused.contains("Permission denied"), "{refused}");
        assert!(!refused.contains("SECRET"), "{refused}");
    }

    // A write into the enclosing `.git`: refused, nothing deleted, the flag named in the
    // result the model sees and in the host's log.
    let (deleted, texts, log) = plugin_git(&repo.sub, &[], &["branch", "-d", "merged"]);
    assert_ne!(deleted["code"], 0, "{deleted}");
    let stderr = deleted["stderr"].as_str().unwrap();
    assert!(stderr.contains("Permission denied"), "{stderr}");
    let hint_end = format!(
        "is read-only in this sandbox (the enclosing repository {root} may be read, not written, \
         by plugin processes); grant it with --allow-write {root}",
        root = repo.root.display()
    );
    let hint = texts.last().unwrap();
    assert!(
        hint.starts_with(&format!("{}/", repo.root.join(".git").display()))
            && hint.ends_with(&hint_end),
        "{texts:?}"
    );
    assert!(log.contains(&hint_end), "{log}");
    assert_eq!(branches(&repo.root), "ahead\nmain\nmerged\n");

    // Granted, it works (the repository's top holds its `.git`), and no hint is added.
    let root = repo.root.display().to_string();
    let (deleted, texts, log) = plugin_git(
        &repo.sub,
        &["--allow-write", &root],
        &["branch", "-d", "merged"],
    );
    assert_eq!(deleted["code"], 0, "{deleted}\n{log}");
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(!log.contains("read-only in this sandbox"), "{log}");
    assert_eq!(branches(&repo.root), "ahead\nmain\n");
}

#[test]
fn cargo_metadata_reads_the_workspace_from_a_member() {
    let repo = repository();
    if !sandboxed(&repo.sub) {
        return;
    }
    let (report, log) = call(
        &repo.sub,
        &[],
        "run",
        json!({
            "program": "cargo",
            "args": ["metadata", "--no-deps", "--offline", "--format-version", "1"],
            "via": "exec",
            "timeout_ms": 120000,
        }),
    );
    let details = &report["result"]["details"];
    if report["isError"] == true || details["code"] == 127 {
        eprintln!("skipped: no cargo for plugin processes here: {report}\n{log}");
        return;
    }
    assert_eq!(details["code"], 0, "{details}\n{log}");
    let metadata: Value = serde_json::from_str(details["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(
        metadata["workspace_root"].as_str(),
        Some(repo.root.to_str().unwrap()),
        "{metadata}"
    );
    let mut names: Vec<&str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|package| package["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["member", "other"], "{metadata}");
}

#[test]
fn check_lists_the_read_only_parts_of_the_enclosing_repository() {
    let repo = repository();
    let root = repo.root.display().to_string();
    let check = |extra: &[&str]| {
        let output = Command::new(artifacts().cli())
            .args(["check", "--cwd"])
            .arg(&repo.sub)
            .args(extra)
            .arg(plugin("fixture-programs"))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let text = check(&[]);
    if !text.contains("sandbox: landlock v") {
        eprintln!("skipped: this kernel has no Landlock\n{text}");
        return;
    }
    assert!(
        text.contains(&format!(
            "\n  enclosing repository: {root}; names listable: {root}; read-only: {root}/.git, \
             {root}/.gitignore, {root}/Cargo.toml, {root}/crates/other/Cargo.toml, \
             {root}/Cargo.lock (writable with --allow-write {root})\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            ", {root} (enclosing repository: names only), {root}/.git (enclosing repository),"
        )),
        "{text}"
    );
    let json: Value = serde_json::from_str(&check(&["--json"])).unwrap();
    let repository = &json["files"][0]["policy"]["repository"];
    assert_eq!(
        repository,
        &json!({
            "root": root,
            "listable": root,
            "readOnly": [
                format!("{root}/.git"),
                format!("{root}/.gitignore"),
                format!("{root}/Cargo.toml"),
                format!("{root}/crates/other/Cargo.toml"),
                format!("{root}/Cargo.lock"),
            ],
            "writable": [],
            "grant": [root],
            "withheld": null,
        })
    );
    let granted: Value = serde_json::from_str(&check(&["--json", "--allow-write", &root])).unwrap();
    let repository = &granted["files"][0]["policy"]["repository"];
    assert_eq!(repository["readOnly"], json!([]), "{repository}");
    assert_eq!(
        repository["writable"][0],
        format!("{root}/.git"),
        "{repository}"
    );
    assert!(check(&["--allow-write", &root]).contains(&format!(
        "enclosing repository: {root}; names listable: {root}; writable: {root}/.git, "
    )));

    // Outside a repository: nothing about one.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = Command::new(artifacts().cli())
        .args(["check", "--json", "--cwd"])
        .arg(elsewhere.path())
        .arg(plugin("fixture-programs"))
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        json["files"][0]["policy"]["repository"],
        Value::Null,
        "{json}"
    );
}

/// The MCP server builds its session as the CLI does: the same reads, the same hint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_mcp_git_reads_the_repository_and_a_refused_write_names_allow_write() {
    use xcsh_integration_tests::mcp::{text, McpServerProcess};
    let repo = repository();
    if !sandboxed(&repo.sub) {
        return;
    }
    let args: Vec<std::ffi::OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("fixture-programs").into(),
        "--cwd".into(),
        repo.sub.clone().into(),
    ];
    let server = McpServerProcess::start(args).await;
    let merged = server
        .call(
            "run",
            json!({"program": "git", "args": ["branch", "--merged"]}),
        )
        .await;
    assert_eq!(text(&merged), "* main\n  merged\n");
    let deleted = server
        .call(
            "run",
            json!({"program": "git", "args": ["branch", "-d", "merged"]}),
        )
        .await;
    let shown = text(&deleted);
    assert!(
        shown.ends_with(&format!(
            "grant it with --allow-write {}",
            repo.root.display()
        )) && shown.contains(&format!("{}/", repo.root.join(".git").display())),
        "{shown}"
    );
    assert_eq!(branches(&repo.root), "ahead\nmain\nmerged\n");
    server.stop().await;
}
