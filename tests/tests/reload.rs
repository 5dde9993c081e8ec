//! Reloading a plugin whose file changes while its session runs: under process isolation the
//! next call is served by a new process running the new content (checked again, trusted again
//! for a project plugin), actions the old process pushed still apply there, and a new content
//! that cannot be used makes the tools fail instead of running the old code. In-process a
//! change is only reported.
//!
//! Version 1 and 2 of the plugin are two builds of one source (`plugins/fixture-reload-v*`):
//! version 2 answers "v2" and has one tool more.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use xcsh_integration_tests::reload::{rebuild, version_and_pid};
use xcsh_integration_tests::{lib_name, plugin};
use xcsh_loader::library::CheckedFile;
use xcsh_loader::session::ReloadOutcome;
use xcsh_loader::trust::TrustStore;
use xcsh_loader::{Isolation, Session, SessionBuilder};

/// A private scratch directory, canonical.
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

fn builder(root: &Path, file: &Path) -> SessionBuilder {
    Session::builder(root).default_dirs(false).plugin(file)
}

async fn text_of(session: &Session, tool: &str, arguments: serde_json::Value) -> String {
    let outcome = session.call(tool, arguments).await;
    assert!(!outcome.is_error, "{tool}: {}", outcome.text());
    outcome.text()
}

/// Which build answers `reload_version`, and in which process.
async fn answering(session: &Session) -> (u32, u32) {
    version_and_pid(&text_of(session, "reload_version", json!({})).await)
}

/// `resolve` apply of the newest pending action; its text.
async fn apply(session: &Session) -> String {
    text_of(
        session,
        "resolve",
        json!({"action": "apply", "reason": "ok"}),
    )
    .await
}

fn tool_names(session: &Session) -> Vec<String> {
    session.tools().iter().map(|t| t.name.clone()).collect()
}

/// Whether process `pid` has exited (and was reaped).
fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[tokio::test]
async fn a_rebuilt_plugin_serves_its_new_version_and_old_actions_apply_where_they_were_pushed() {
    let (_tmp, root) = scratch();
    let file = root.join("tools").join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file).build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(
        tool_names(&session),
        ["reload_version", "reload_preview", "resolve"]
    );
    let (version, old_pid) = answering(&session).await;
    assert_eq!(version, 1);
    let previewed = text_of(&session, "reload_preview", json!({"file": "out.txt"})).await;
    assert_eq!(previewed, "previewed by v1");
    let generation = session.tools_generation();

    rebuild("fixture-reload-v2", &file);
    let (version, new_pid) = answering(&session).await;
    assert_eq!(version, 2, "the next call is served by the new content");
    assert_ne!(new_pid, old_pid, "by a new process");
    assert_eq!(
        tool_names(&session),
        [
            "reload_version",
            "reload_preview",
            "reload_added",
            "resolve"
        ]
    );
    assert!(session.tools_generation() > generation);
    assert_eq!(
        text_of(&session, "reload_added", json!({})).await,
        "added in v2"
    );
    assert_eq!(session.plugins().len(), 1);
    assert!(
        !gone(old_pid),
        "the old process still holds a pending action"
    );

    // The action version 1 pushed applies in version 1's process.
    let applied = apply(&session).await;
    assert!(applied.contains("applied by v1"), "{applied}");
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt")).unwrap(),
        "applied by v1"
    );
    // With nothing of it left pending, the old process exits.
    assert!(
        wait_until(Duration::from_secs(10), || gone(old_pid)),
        "process {old_pid} of the old version is still running"
    );
    assert!(!gone(new_pid));
    session.shutdown().await;
    assert!(wait_until(Duration::from_secs(10), || gone(new_pid)));
}

#[tokio::test]
async fn a_file_rewritten_in_place_is_reloaded_and_an_unchanged_tool_list_keeps_its_generation() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file).build();
    assert_eq!(session.reload().await.len(), 0, "nothing changed yet");

    // Written in place (the same inode), as `cp` does.
    std::fs::copy(plugin("fixture-reload-v2"), &file).unwrap();
    let reloads = session.reload().await;
    assert_eq!(reloads.len(), 1, "{reloads:?}");
    assert_eq!(reloads[0].path, file);
    assert!(reloads[0].rewritten_in_place);
    assert!(
        matches!(
            reloads[0].outcome,
            ReloadOutcome::Reloaded {
                tools_changed: true,
                ref errors,
                ..
            } if errors.is_empty()
        ),
        "{reloads:?}"
    );
    let generation = session.tools_generation();
    assert_eq!(answering(&session).await.0, 2);

    // Rebuilt with the same tools: reloaded, but a client's tool list is still right.
    rebuild("fixture-reload-v2", &file);
    let reloads = session.reload().await;
    assert!(!reloads[0].rewritten_in_place, "{reloads:?}");
    assert!(
        matches!(
            reloads.as_slice(),
            [xcsh_loader::session::PluginReload {
                outcome: ReloadOutcome::Reloaded {
                    tools_changed: false,
                    ..
                },
                ..
            }]
        ),
        "{reloads:?}"
    );
    assert_eq!(session.tools_generation(), generation);
}

#[tokio::test]
async fn a_broken_rebuild_fails_the_tools_until_the_file_is_fixed() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file).build();
    text_of(&session, "reload_preview", json!({"file": "out.txt"})).await;

    // A cut-off library, renamed over the old one.
    let bytes = std::fs::read(plugin("fixture-reload-v2")).unwrap();
    let temp = file.with_extension("new");
    std::fs::write(&temp, &bytes[..4096]).unwrap();
    std::fs::rename(&temp, &file).unwrap();
    let outcome = session.call("reload_version", json!({})).await;
    assert!(outcome.is_error);
    let text = outcome.text();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(
        text.contains("changed while the session ran and its new content cannot be used"),
        "{text}"
    );
    // The old version's pending action is untouched by that.
    let applied = apply(&session).await;
    assert!(applied.contains("applied by v1"), "{applied}");

    rebuild("fixture-reload-v2", &file);
    assert_eq!(answering(&session).await.0, 2);
}

#[tokio::test]
async fn a_rebuilt_project_plugin_runs_only_once_trusted_again() {
    let (_tmp, root) = scratch();
    let cwd = root.join("project");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let file = cwd.join(".xcsh").join("tools").join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let trust = |file: &Path| {
        let mut store = TrustStore::for_home(&home).unwrap();
        store.trust_file(&CheckedFile::read(file).unwrap()).unwrap();
        store.save().unwrap();
    };
    trust(&file);
    let session = Session::builder(&cwd).home(Some(home.clone())).build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(answering(&session).await.0, 1);

    rebuild("fixture-reload-v2", &file);
    let outcome = session.call("reload_version", json!({})).await;
    assert!(outcome.is_error);
    assert!(
        outcome
            .text()
            .contains("project plugin changed since it was trusted"),
        "{}",
        outcome.text()
    );

    trust(&file);
    assert_eq!(
        answering(&session).await.0,
        2,
        "trusted again, the new content loads without another change to the file"
    );
}

#[tokio::test]
async fn with_reload_off_the_content_checked_at_start_keeps_serving() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file).reload_changed_plugins(false).build();
    rebuild("fixture-reload-v2", &file);
    assert!(session.reload().await.is_empty());
    assert_eq!(answering(&session).await.0, 1);
}

#[tokio::test]
async fn in_process_a_change_is_reported_once_and_the_loaded_version_keeps_serving() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file)
        .isolation(Isolation::InProcess)
        .build();
    rebuild("fixture-reload-v2", &file);
    let reloads = session.reload().await;
    assert!(
        matches!(
            reloads.as_slice(),
            [xcsh_loader::session::PluginReload {
                outcome: ReloadOutcome::InProcess,
                ..
            }]
        ),
        "{reloads:?}"
    );
    assert!(
        session.reload().await.is_empty(),
        "reported once per change"
    );
    let (version, pid) = answering(&session).await;
    assert_eq!((version, pid), (1, std::process::id()));
}

#[tokio::test]
async fn a_library_cut_short_in_place_under_its_process_is_reported_as_such() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("reload"));
    rebuild("fixture-reload-v1", &file);
    let session = builder(&root, &file).build();
    text_of(&session, "reload_preview", json!({"file": "out.txt"})).await;
    // Truncated in place: the process of version 1 maps this very file.
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..4096]).unwrap();
    let outcome = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(outcome.is_error);
    let text = outcome.text();
    assert!(text.contains("killed by SIGBUS"), "{text}");
    assert!(text.contains("overwritten in place"), "{text}");
    assert!(text.contains("nothing was applied"), "{text}");
    assert!(!root.join("out.txt").exists());
}

#[tokio::test]
async fn a_plugin_disabled_by_crashes_runs_again_once_rebuilt() {
    let (_tmp, root) = scratch();
    let file = root.join(lib_name("crashy"));
    rebuild("fixture-crash", &file);
    let session = builder(&root, &file).build();
    for _ in 0..3 {
        let outcome = session.call("segfault", json!({})).await;
        assert!(outcome.is_error);
    }
    let disabled = session.call("ping", json!({})).await;
    assert!(
        disabled.text().contains("is disabled for this session"),
        "{}",
        disabled.text()
    );
    // The fixed build (here: the same library, a new file) gets a fresh record.
    rebuild("fixture-crash", &file);
    assert_eq!(text_of(&session, "ping", json!({})).await, "pong");
}
