//! The plugin process sandbox (issue 14) through `SessionBuilder`, on the real
//! `fixture-crash` library: the confinement is reported in `Session::plugins()`, writes are
//! confined to the working directory and `allow_write`, `memory_limit` bounds an allocation
//! bomb, and `require_sandbox` refuses in-process plugins. Skips (saying so) where the kernel
//! has no Landlock.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_integration_tests::plugin;
use xcsh_loader::sandbox::Enforcement;
use xcsh_loader::{Isolation, Session, SessionBuilder};

fn builder(dir: &std::path::Path) -> SessionBuilder {
    Session::builder(dir)
        .default_dirs(false)
        .plugin(plugin("fixture-crash"))
}

#[tokio::test]
async fn writes_are_confined_to_the_cwd_and_allow_write() {
    let dir = tempfile::tempdir().unwrap();
    let extra = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let session = builder(dir.path())
        .allow_write(extra.path())
        .require_sandbox(false)
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    let confinement = session.plugins()[0].sandbox.clone().unwrap();
    if confinement.filesystem == Enforcement::None {
        eprintln!("skipped: this kernel has no Landlock");
        return;
    }
    assert!(confinement.landlock_abi >= 1);
    assert_eq!(confinement.network, Enforcement::NotRequested);
    for (path, expected) in [
        (dir.path().join("a.txt"), "wrote"),
        (extra.path().join("b.txt"), "wrote"),
        (
            outside.path().join("c.txt"),
            "error: Permission denied (os error 13)",
        ),
    ] {
        let outcome = session.call("write_file", json!({"path": path})).await;
        assert_eq!(outcome.text(), expected, "{}", path.display());
    }
    assert!(!outside.path().join("c.txt").exists());
    // The session goes on.
    assert_eq!(session.call("ping", json!({})).await.text(), "pong");
    session.shutdown().await;
}

#[tokio::test]
async fn a_memory_limit_turns_an_allocation_bomb_into_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    let session = builder(dir.path()).memory_limit(Some(256 << 20)).build();
    let outcome = session.call("alloc_bomb", json!({})).await;
    assert!(outcome.is_error);
    let path = plugin("fixture-crash").canonicalize().unwrap();
    assert_eq!(
        outcome.text(),
        format!(
            "Plugin {} ran out of its memory limit (256M) while running tool \"alloc_bomb\"",
            path.display()
        )
    );
    // The next call starts a fresh child.
    assert_eq!(session.call("ping", json!({})).await.text(), "pong");
}

#[test]
fn require_sandbox_refuses_in_process_plugins_and_in_process_reports_no_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let refused = builder(dir.path())
        .isolation(Isolation::InProcess)
        .require_sandbox(true)
        .build();
    assert!(refused.plugins().is_empty());
    let error = &refused.load_errors()[0];
    assert_eq!(
        error.kind,
        xcsh_loader::LoadErrorKind::SandboxRequired { in_process: true }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "refusing to run {}: a sandbox is required (--require-sandbox) and in-process plugins have none",
            error.path.display()
        )
    );
    let in_process = builder(dir.path()).isolation(Isolation::InProcess).build();
    assert_eq!(in_process.plugins()[0].sandbox, None);
}
