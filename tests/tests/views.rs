//! How a result looks (issue 55, first step): a plugin's view crosses the plugin ABI (and, for a
//! plugin process, the link to it) beside its content, never inside it, in both isolation
//! modes (a plugin built before views gives none: `frozen_api`'s 0.7.0 test). Drawing them is
//! the hosts' next step.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_integration_tests::plugin;
use xcsh_loader::{Content, Isolation, Session};
use xcsh_plugin_api::view::{Block, Role, State};

fn session(dir: &std::path::Path, isolation: Isolation, package: &str) -> Session {
    let session = Session::builder(dir)
        .default_dirs(false)
        .isolation(isolation)
        .plugin(plugin(package))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    session
}

#[tokio::test]
async fn a_preview_s_view_arrives_beside_its_text_in_both_isolation_modes() {
    for isolation in [Isolation::Process, Isolation::InProcess] {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (1..=7).map(|i| format!("a{i}.txt")).collect();
        for name in &names {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        let session = session(dir.path(), isolation, "batch-rename");
        // Before it runs, as the model streams its arguments: the call's status line, filled
        // in the host from what has arrived.
        let streaming = session
            .call_status(
                "batch_rename_preview",
                &json!({"find": "a", "files": ["a1.txt"]}),
            )
            .expect("a call view");
        assert_eq!(streaming.title, "Batch Rename");
        assert_eq!(
            streaming.description, None,
            "{isolation}: `replace` not there yet"
        );
        assert_eq!(streaming.meta, ["1 files"]);
        let called = session
            .call_status(
                "batch_rename_preview",
                &json!({"find": "a", "replace": "b", "files": names}),
            )
            .unwrap();
        assert_eq!(called.description.as_deref(), Some("a → b"));
        assert_eq!(called.meta, ["7 files"]);
        assert_eq!(session.call_status("no_such_tool", &json!({})), None);
        let preview = session
            .call(
                "batch_rename_preview",
                json!({"files": names, "find": "a", "replace": "b"}),
            )
            .await;
        assert!(!preview.is_error, "{isolation}: {}", preview.text());
        assert!(
            preview
                .result
                .content
                .iter()
                .all(|block| matches!(block, Content::Text { .. })),
            "{isolation}: the view is not content: {:?}",
            preview.result.content
        );
        assert!(preview
            .text()
            .starts_with("Prepared rename plan for 7 files"));

        let view = preview.result.view.clone().expect("a view");
        let status = view.status.as_ref().unwrap();
        assert_eq!(status.state, State::Pending, "{isolation}");
        assert_eq!(status.description.as_deref(), Some("a → b"));
        assert_eq!(status.badge.as_ref().unwrap().role, Role::Warning);
        let Block::Section {
            collapsed,
            expanded,
        } = &view.blocks[0]
        else {
            panic!("{isolation}: {view:?}")
        };
        let Block::Table { rows, .. } = &collapsed[0] else {
            panic!("{collapsed:?}")
        };
        assert_eq!(rows.len(), 5, "{isolation}: the first five, collapsed");
        assert_eq!(collapsed[1], Block::line("… 2 more renames", Role::Muted));
        let Block::Table { rows, .. } = &expanded[0] else {
            panic!("{expanded:?}")
        };
        assert_eq!(rows[6], vec!["a7.txt".to_owned(), "b7.txt".to_owned()]);
        assert_eq!(view.check_paths(dir.path()), Ok(()));
        session.shutdown().await;
    }
}

/// A plugin process's definitions kept in the cache (the next session starts no process until
/// a call) keep its tools' call views.
#[tokio::test]
async fn a_call_view_survives_the_definitions_cache() {
    let cache = tempfile::tempdir().unwrap();
    // This test binary's only test that loads plugins with a cache of its own.
    std::env::set_var("XCSH_CACHE_DIR", cache.path());
    let dir = tempfile::tempdir().unwrap();
    for round in ["learned from the process", "read from the cache"] {
        let session = session(dir.path(), Isolation::Process, "batch-rename");
        let status = session
            .call_status(
                "batch_rename_preview",
                &json!({"find": "x", "replace": "y"}),
            )
            .unwrap_or_else(|| panic!("{round}: no call view"));
        assert_eq!(status.description.as_deref(), Some("x → y"), "{round}");
        session.shutdown().await;
    }
    let entries = std::fs::read_dir(cache.path()).unwrap().count();
    assert!(entries > 0, "the definitions were cached");
}
