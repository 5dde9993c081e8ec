//! The tool-definitions cache under process isolation, on real plugin files through
//! `xcsh-plugins`: a plugin whose definitions are cached starts no process until one of its
//! tools is called; its first process's handshake is authoritative (other tools replace the
//! cached ones, and a tool it no longer offers is an error naming it); a corrupt,
//! foreign-owned or group-writable entry is ignored (and replaced); a changed plugin file
//! misses; `--no-cache` starts every process at once; a lazily started process that crashes
//! is handled as before.
//!
//! Every test has a cache directory of its own (`XCSH_CACHE_DIR`), never the user's.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use rmcp::ClientHandler;
use serde_json::{json, Value};
use xcsh_integration_tests::mcp::{text, ListChanges, McpServerProcess};
use xcsh_integration_tests::reload::{rebuild, version_and_pid};
use xcsh_integration_tests::{artifacts, child_pids, lib_name, plugin};

/// A scratch root (canonical) holding the session's working directory and the cache.
struct Scratch {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("work")).unwrap();
        Scratch { _tmp: tmp, root }
    }

    fn cwd(&self) -> PathBuf {
        self.root.join("work")
    }

    fn cache(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// `package`'s library installed (as cargo would) at `<root>/<dir>/lib<stem>.so`.
    fn install(&self, package: &str, dir: &str) -> PathBuf {
        let file = self.root.join(dir).join(lib_name("reload_fixture"));
        rebuild(package, &file);
        file
    }

    fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("XCSH_CACHE_DIR".into(), self.cache().into()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }

    /// `xcsh-plugins <command> --no-default-dirs --plugin <file> --cwd <work> <args>`.
    fn run(&self, command: &str, file: &Path, args: &[&str]) -> Output {
        Command::new(artifacts().cli())
            .arg(command)
            .args(["--no-default-dirs", "--plugin"])
            .arg(file)
            .arg("--cwd")
            .arg(self.cwd())
            .args(args)
            .envs(self.env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `list --json`'s tool names for `file`, checking it succeeded.
    fn list(&self, file: &Path) -> Vec<String> {
        let output = self.run("list", file, &["--json"]);
        assert!(output.status.success(), "{}", all_text(&output));
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|tool| tool["origin"] != "builtin")
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The cache's entries, by file name.
    fn entries(&self) -> Vec<PathBuf> {
        let Ok(dir) = std::fs::read_dir(self.cache()) else {
            return Vec::new();
        };
        let mut entries: Vec<PathBuf> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("definitions-"))
            })
            .collect();
        entries.sort();
        entries
    }

    /// The one entry `list` of `file` writes (on an empty cache for it).
    fn entry_written_for(&self, file: &Path) -> PathBuf {
        let before = self.entries();
        self.list(file);
        let after = self.entries();
        let new: Vec<&PathBuf> = after.iter().filter(|e| !before.contains(e)).collect();
        assert_eq!(new.len(), 1, "entries before {before:?}, after {after:?}");
        new[0].clone()
    }

    async fn mcp<H: ClientHandler>(
        &self,
        file: &Path,
        extra: &[&str],
        handler: H,
    ) -> McpServerProcess<H> {
        let mut args: Vec<OsString> = vec![
            "--no-default-dirs".into(),
            "--plugin".into(),
            file.into(),
            "--cwd".into(),
            self.cwd().into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        McpServerProcess::start_with_env(args, handler, self.env()).await
    }
}

fn all_text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The inode of `path` (a cache write is a rename: a new inode).
fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().ino()
}

/// Rewrite the entry at `path` to hold the answer of the entry at `from` (its key kept):
/// definitions that differ from what the plugin's process will report.
fn forge(path: &Path, from: &Path) {
    let mut entry: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let other: Value = serde_json::from_slice(&std::fs::read(from).unwrap()).unwrap();
    entry["value"] = other["value"].clone();
    std::fs::write(path, serde_json::to_vec(&entry).unwrap()).unwrap();
}

/// The tool names in the entry at `path`.
fn cached_tools(path: &Path) -> Vec<String> {
    let entry: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    entry["value"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The plugin's tools `tools/list` gives now (without the built-ins), sorted.
async fn plugin_tools<H: ClientHandler>(server: &McpServerProcess<H>) -> Vec<String> {
    let mut names: Vec<String> = server
        .tool_names()
        .await
        .into_iter()
        .filter(|name| name.starts_with("reload_"))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_plugin_starts_no_process_until_one_of_its_tools_is_called() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    // Cold: the process starts to learn the tools, and the handshake is remembered.
    let entry = scratch.entry_written_for(&file);
    assert_eq!(
        std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(cached_tools(&entry), ["reload_version", "reload_preview"]);

    // Warm: the session is served from the cache, with no plugin process.
    let server = scratch.mcp(&file, &[], ()).await;
    let pid = server.child.id().unwrap();
    let names = plugin_tools(&server).await;
    assert_eq!(names, ["reload_preview", "reload_version"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        child_pids(pid),
        Vec::<u32>::new(),
        "a process started early"
    );

    // The first call starts it.
    let answer = server.call("reload_version", json!({})).await;
    assert_ne!(answer.is_error, Some(true), "{}", text(&answer));
    let (version, child) = version_and_pid(&text(&answer));
    assert_eq!(version, 1);
    assert_eq!(child_pids(pid), [child]);
    // ... and it serves the next call too.
    let again = server.call("reload_version", json!({})).await;
    assert_eq!(version_and_pid(&text(&again)), (1, child));
    server.stop().await;

    // `--no-cache` starts it at once, cache or not, and leaves the cache alone.
    let written = inode(&entry);
    let server = scratch.mcp(&file, &["--no-cache"], ()).await;
    let pid = server.child.id().unwrap();
    assert_eq!(child_pids(pid).len(), 1, "--no-cache started no process");
    server.stop().await;
    assert_eq!(inode(&entry), written, "--no-cache wrote the cache");
    assert_eq!(scratch.entries(), [entry]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_whose_tools_changed_is_seen_with_its_new_tools_at_its_first_call() {
    let scratch = Scratch::new();
    let old = scratch.install("fixture-reload-v1", "old");
    let new = scratch.install("fixture-reload-v2", "new");
    let old_entry = scratch.entry_written_for(&old);
    let new_entry = scratch.entry_written_for(&new);
    assert_eq!(
        cached_tools(&new_entry),
        ["reload_version", "reload_preview", "reload_added"]
    );
    // The cache says the v2 file has v1's tools (as if they had changed since).
    forge(&new_entry, &old_entry);

    let changes = ListChanges::default();
    let server = scratch.mcp(&new, &[], changes.clone()).await;
    let names = plugin_tools(&server).await;
    assert_eq!(
        names,
        ["reload_preview", "reload_version"],
        "served from the cache"
    );

    let answer = server.call("reload_version", json!({})).await;
    assert_ne!(answer.is_error, Some(true), "{}", text(&answer));
    assert_eq!(version_and_pid(&text(&answer)).0, 2);
    // The handshake's tools replace the cached ones, and the client is told.
    changes.wait_for(1).await;
    let names = plugin_tools(&server).await;
    assert_eq!(names, ["reload_added", "reload_preview", "reload_version"]);
    let added = server.call("reload_added", json!({})).await;
    assert_eq!(text(&added), "added in v2");
    server.stop().await;
    // ... and the cache now holds them.
    assert_eq!(
        cached_tools(&new_entry),
        ["reload_version", "reload_preview", "reload_added"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_tool_the_plugin_no_longer_offers_is_an_error_naming_it() {
    let scratch = Scratch::new();
    let old = scratch.install("fixture-reload-v1", "old");
    let new = scratch.install("fixture-reload-v2", "new");
    let old_entry = scratch.entry_written_for(&old);
    let new_entry = scratch.entry_written_for(&new);
    // The cache says the v1 file has v2's tools, `reload_added` among them.
    forge(&old_entry, &new_entry);

    let changes = ListChanges::default();
    let server = scratch.mcp(&old, &[], changes.clone()).await;
    assert!(plugin_tools(&server)
        .await
        .contains(&"reload_added".to_owned()));
    let answer = server.call("reload_added", json!({})).await;
    assert_eq!(answer.is_error, Some(true), "{}", text(&answer));
    let message = text(&answer);
    assert!(message.contains("\"reload_added\""), "{message}");
    assert!(message.contains("no longer offered"), "{message}");
    assert!(
        message.contains(&old.display().to_string()),
        "names the plugin: {message}"
    );
    changes.wait_for(1).await;
    let names = plugin_tools(&server).await;
    assert_eq!(names, ["reload_preview", "reload_version"]);
    server.stop().await;
}

#[test]
fn a_corrupt_foreign_or_group_writable_entry_is_ignored_and_replaced() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    let entry = scratch.entry_written_for(&file);

    // A hit reads the entry and writes nothing.
    let written = inode(&entry);
    assert_eq!(scratch.list(&file), ["reload_version", "reload_preview"]);
    assert_eq!(inode(&entry), written, "a hit rewrote the entry");

    // Corrupt: ignored (the process starts) and replaced by a good entry.
    std::fs::write(&entry, b"{\"key\": 12, \"value\": [").unwrap();
    assert_eq!(scratch.list(&file), ["reload_version", "reload_preview"]);
    assert_ne!(inode(&entry), written, "a corrupt entry was not replaced");
    assert_eq!(cached_tools(&entry), ["reload_version", "reload_preview"]);

    // Group-writable: not believed, replaced.
    let written = inode(&entry);
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o620)).unwrap();
    // (Its content says the plugin has no tools: believed, the listing would be empty.)
    let mut forged: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    forged["value"]["tools"] = json!([]);
    std::fs::write(&entry, serde_json::to_vec(&forged).unwrap()).unwrap();
    assert_eq!(scratch.list(&file), ["reload_version", "reload_preview"]);
    assert_ne!(
        inode(&entry),
        written,
        "a group-writable entry was believed"
    );
    assert_eq!(
        std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Foreign-owned (only root can give a file away): not believed, replaced.
    let written = inode(&entry);
    std::fs::write(&entry, serde_json::to_vec(&forged).unwrap()).unwrap();
    if std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).is_ok() {
        assert_eq!(scratch.list(&file), ["reload_version", "reload_preview"]);
        assert_ne!(inode(&entry), written, "a foreign-owned entry was believed");
        assert_eq!(
            std::fs::metadata(&entry).unwrap().uid(),
            std::fs::metadata(scratch.cache()).unwrap().uid()
        );
    } else {
        eprintln!("not root: the foreign-owned case is not tested");
    }
}

#[test]
fn a_changed_plugin_file_misses_the_cache() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    scratch.entry_written_for(&file);
    // Rebuilt (a new file renamed over the old one): a miss, learned from its process.
    rebuild("fixture-reload-v2", &file);
    assert_eq!(
        scratch.list(&file),
        ["reload_version", "reload_preview", "reload_added"]
    );
    assert_eq!(scratch.entries().len(), 2);
    // Rewritten in place with the same bytes: its change time moved, a miss again.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, bytes).unwrap();
    scratch.list(&file);
    assert_eq!(scratch.entries().len(), 3);
    // Another working directory is another key.
    let elsewhere = scratch.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let output = Command::new(artifacts().cli())
        .args(["list", "--no-default-dirs", "--plugin"])
        .arg(&file)
        .arg("--cwd")
        .arg(&elsewhere)
        .envs(scratch.env())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", all_text(&output));
    assert_eq!(scratch.entries().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_plugin_rebuilt_before_its_first_call_serves_its_new_version() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    scratch.entry_written_for(&file);
    let changes = ListChanges::default();
    let server = scratch.mcp(&file, &[], changes.clone()).await;
    assert_eq!(child_pids(server.child.id().unwrap()), Vec::<u32>::new());
    rebuild("fixture-reload-v2", &file);
    tokio::time::sleep(xcsh_loader::session::RELOAD_SETTLE * 2).await;
    let answer = server.call("reload_version", json!({})).await;
    assert_eq!(version_and_pid(&text(&answer)).0, 2, "{}", text(&answer));
    changes.wait_for(1).await;
    assert!(plugin_tools(&server)
        .await
        .contains(&"reload_added".to_owned()));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lazily_started_process_that_crashes_is_a_tool_error_and_is_restarted() {
    let scratch = Scratch::new();
    let file = plugin("fixture-crash").canonicalize().unwrap();
    let warm = scratch.run("list", &file, &[]);
    assert!(warm.status.success(), "{}", all_text(&warm));
    assert_eq!(scratch.entries().len(), 1);

    // `call`: the process starts at the call, and its crash is the call's error.
    let output = scratch.run("call", &file, &["segfault"]);
    let all = all_text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    assert!(all.contains(&file.display().to_string()), "{all}");
    assert!(all.contains("tool \"segfault\""), "{all}");
    assert!(all.contains("SIGSEGV"), "{all}");

    // In a session: the next call after the crash starts a fresh process.
    let server = scratch.mcp(&file, &[], ()).await;
    let host = server.child.id().unwrap();
    assert_eq!(child_pids(host), Vec::<u32>::new());
    let crashed = server.call("segfault", json!({})).await;
    assert_eq!(crashed.is_error, Some(true), "{}", text(&crashed));
    assert!(text(&crashed).contains("SIGSEGV"), "{}", text(&crashed));
    let answer = server.call("pid", json!({})).await;
    assert_ne!(answer.is_error, Some(true), "{}", text(&answer));
    let pid: u32 = text(&answer).trim().parse().unwrap();
    assert_eq!(child_pids(host), [pid]);
    server.stop().await;
}

#[test]
fn in_process_nothing_is_cached() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    let output = scratch.run("list", &file, &["--isolation", "in-process"]);
    assert!(output.status.success(), "{}", all_text(&output));
    assert_eq!(scratch.entries(), Vec::<PathBuf>::new());
}

#[test]
fn check_learns_the_tools_from_the_process_whatever_the_cache_holds() {
    let scratch = Scratch::new();
    let file = scratch.install("fixture-reload-v1", "tools");
    let entry = scratch.entry_written_for(&file);
    let mut forged: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
    forged["value"]["tools"] = json!([]);
    std::fs::write(&entry, serde_json::to_vec(&forged).unwrap()).unwrap();
    let output = Command::new(artifacts().cli())
        .arg("check")
        .arg(&file)
        .arg("--cwd")
        .arg(scratch.cwd())
        .envs(scratch.env())
        .output()
        .unwrap();
    let all = all_text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains("reload_version"), "{all}");
    assert_eq!(
        cached_tools(&entry),
        Vec::<String>::new(),
        "check wrote the cache"
    );
    // `--no-cache` is where it changes something, and only there.
    let output = Command::new(artifacts().cli())
        .args(["check", "--no-cache"])
        .arg(&file)
        .envs(scratch.env())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", all_text(&output));
}
