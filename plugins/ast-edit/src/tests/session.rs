//! `ast_edit` in a session: registration, LIFO of previews, no store.

use serde_json::json;

use super::{edit, ok_text, read, resolve, session, tree};
use xcsh_loader::{Session, STORE_UNAVAILABLE};

#[test]
fn registers_as_a_deferrable_builtin_with_resolve() {
    let dir = tree(&[]);
    let s = session(dir.path());
    assert!(s.load_errors().is_empty(), "{:?}", s.load_errors());
    assert!(s.has_resolve());
    let spec = s.tools().into_iter().find(|t| t.name == "ast_edit");
    let spec = spec.expect("ast_edit is registered");
    assert!(spec.deferrable && !spec.hidden);
    assert_eq!(spec.label, "AST Edit");
    assert_eq!(spec.parameters["type"], "object");
    assert_eq!(spec.parameters["required"], json!(["ops"]));
    assert_eq!(
        spec.parameters["properties"]["ops"]["items"]["required"],
        json!(["pat", "out"])
    );
}

#[tokio::test]
async fn two_previews_resolve_newest_first() {
    let dir = tree(&[
        ("a.rs", "fn a() { foo(1); }\n"),
        ("b.py", "foo(2)\nfoo(3)\n"),
    ]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    ok_text(&edit(&s, json!({"ops": op, "path": "a.rs"})).await);
    ok_text(&edit(&s, json!({"ops": op, "path": "b.py"})).await);
    assert_eq!(s.store().map(|st| st.count()), Some(2));
    assert_eq!(s.take_steering_messages().len(), 2);

    let first = resolve(&s, "apply").await;
    assert_eq!(ok_text(&first), "Applied 2 replacement(s) in 1 file(s).");
    assert_eq!(
        first.result.details.as_ref().map(|d| d["label"].clone()),
        Some(json!("AST Edit: 2 replacements in 1 file"))
    );
    assert_eq!(read(dir.path(), "b.py"), "bar(2)\nbar(3)\n");
    assert_eq!(read(dir.path(), "a.rs"), "fn a() { foo(1); }\n");

    let second = resolve(&s, "apply").await;
    assert_eq!(ok_text(&second), "Applied 1 replacement(s) in 1 file(s).");
    assert_eq!(read(dir.path(), "a.rs"), "fn a() { bar(1); }\n");
    assert!(!s.has_pending());
}

#[tokio::test]
async fn an_older_preview_of_a_file_the_newer_one_changed_is_refused() {
    let dir = tree(&[("a.rs", "fn a() { foo(1); baz(2); }\n")]);
    let s = session(dir.path());
    ok_text(&edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await);
    ok_text(&edit(&s, json!({"ops": [{"pat": "baz($A)", "out": "qux($A)"}]})).await);
    ok_text(&resolve(&s, "apply").await);
    let older = resolve(&s, "apply").await;
    assert!(older.is_error);
    assert!(older.text().contains("a.rs (modified)"), "{}", older.text());
    assert_eq!(read(dir.path(), "a.rs"), "fn a() { foo(1); qux(2); }\n");
}

#[tokio::test]
async fn without_a_store_the_preview_says_so_and_nothing_is_written() {
    let dir = tree(&[("a.rs", "fn a() { foo(1); }\n")]);
    let s = Session::builder(dir.path())
        .default_dirs(false)
        .without_store()
        .builtin(super::ast_edit_tool())
        .build();
    let out = edit(&s, json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})).await;
    assert_eq!(
        ok_text(&out),
        format!(
            "# ./\n## └─ a.rs (1 replacement)\n-1:10 foo(1)\n+1:10 bar(1)\n\n{}",
            crate::NO_STORE_NOTE
        )
    );
    assert!(!out.text().contains(STORE_UNAVAILABLE));
    assert_eq!(read(dir.path(), "a.rs"), "fn a() { foo(1); }\n");
    let out = edit(&s, json!({"ops": [{"pat": "nothing($A)", "out": "x"}]})).await;
    assert_eq!(ok_text(&out), "No replacements made");
}

#[tokio::test]
async fn per_file_pushes_one_action_per_file_resolved_in_path_order() {
    let dir = tree(&[
        ("b.rs", "fn b() { foo(2); foo(3); }\n"),
        ("a.rs", "fn a() { foo(1); }\n"),
        ("sub/c.rs", "fn c() { foo(4); }\n"),
    ]);
    let s = session(dir.path());
    let op = json!([{"pat": "foo($A)", "out": "bar($A)"}]);
    ok_text(&edit(&s, json!({"ops": op, "per_file": true})).await);
    assert_eq!(s.store().map(|st| st.count()), Some(3));
    let first = resolve(&s, "apply").await;
    assert_eq!(ok_text(&first), "Applied 1 replacement(s) in 1 file(s).");
    assert_eq!(
        first.result.details.as_ref().map(|d| d["label"].clone()),
        Some(json!("AST Edit: 1 replacement in a.rs"))
    );
    assert_eq!(read(dir.path(), "a.rs"), "fn a() { bar(1); }\n");
    assert_eq!(read(dir.path(), "b.rs"), "fn b() { foo(2); foo(3); }\n");
    // The second file changes behind the preview's back: only its own action fails.
    std::fs::write(
        dir.path().join("b.rs"),
        "fn b() { foo(2); foo(3); } // edited\n",
    )
    .expect("edit b.rs");
    let second = resolve(&s, "apply").await;
    assert!(second.is_error);
    assert!(
        second.text().contains("b.rs (modified)"),
        "{}",
        second.text()
    );
    let third = resolve(&s, "discard").await;
    assert_eq!(
        ok_text(&third),
        "Discarded: AST Edit: 1 replacement in sub/c.rs. Reason: test"
    );
    assert_eq!(read(dir.path(), "sub/c.rs"), "fn c() { foo(4); }\n");
    assert!(!s.has_pending());
}

/// How the preview looks where a host draws it (issue 55): as the runtime's own `ast_edit`,
/// the pattern and counts on the status line, "proposed"; collapsed, the files with their
/// counts and the first files' changes; expanded, every file's changes. Nothing matched: a
/// warning with the count 0 and no body.
#[tokio::test]
async fn the_preview_s_view_shows_files_counts_and_changes_collapsed_and_expanded() {
    use xcsh_plugin_api::view::{Block, DiffLine, FileEntry, Role, State};
    let dir = tree(&[
        ("src/a.rs", "fn a() { foo(1); }\n"),
        ("src/b.rs", "fn b() { foo(2); foo(3); }\n"),
        ("c.rs", "fn c() { foo(4); }\n"),
        ("d.rs", "fn d() { foo(5); }\n"),
    ]);
    let s = session(dir.path());
    // While it runs: the pattern, and where it looks (left out until the model gives a path).
    let call = s
        .call_status(
            "ast_edit",
            &json!({"ops": [{"pat": "foo(\n  $A)"}], "path": "src"}),
        )
        .unwrap();
    assert_eq!(
        (
            call.title.as_str(),
            call.description.as_deref(),
            call.meta.as_slice()
        ),
        (
            "AST Edit",
            Some("foo( $A)"),
            ["in src".to_owned()].as_slice()
        )
    );
    assert!(s
        .call_status("ast_edit", &json!({}))
        .unwrap()
        .meta
        .is_empty());
    let preview = edit(
        &s,
        json!({"ops": [{"pat": "foo(  $A )", "out": "bar($A)"}]}),
    )
    .await;
    ok_text(&preview);
    let view = preview.result.view.clone().expect("a view");
    let status = view.status.clone().unwrap();
    assert_eq!(status.state, State::Success);
    assert_eq!(status.title, "AST Edit");
    assert_eq!(status.description.as_deref(), Some("foo( $A )"));
    assert_eq!(status.badge.unwrap().label, "proposed");
    assert_eq!(
        status.meta,
        ["5 replacements", "4 files", "in .", "searched 4"]
    );
    let Block::Section {
        collapsed,
        expanded,
    } = &view.blocks[0]
    else {
        panic!("{view:?}")
    };
    let Block::Files { files } = &collapsed[0] else {
        panic!("{collapsed:?}")
    };
    assert_eq!(
        files[1],
        FileEntry {
            path: "d.rs".into(),
            note: Some("1 replacement".into())
        }
    );
    assert_eq!(files.len(), 4);
    assert_eq!(
        collapsed.len(),
        1 + 3 + 1,
        "the files, three diffs, the rest counted"
    );
    assert_eq!(collapsed[4], Block::line("… 1 more file", Role::Muted));
    assert_eq!(expanded.len(), 4);
    assert_eq!(
        expanded[3],
        Block::diff(
            "src/b.rs",
            [
                DiffLine::removed("1:10 foo(2)"),
                DiffLine::added("1:10 bar(2)"),
                DiffLine::removed("1:18 foo(3)"),
                DiffLine::added("1:18 bar(3)"),
            ]
        )
    );

    let nothing = edit(&s, json!({"ops": [{"pat": "nope($A)", "out": "x"}]})).await;
    let view = nothing.result.view.clone().expect("a view");
    let status = view.status.unwrap();
    assert_eq!(status.state, State::Warning);
    assert_eq!(status.meta, ["0 replacements", "in .", "searched 4"]);
    assert!(view.blocks.is_empty());
}
