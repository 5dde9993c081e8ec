//! `apply`: exactly the previewed edits, refusals that write nothing, atomic writes.
//!
//! Tests run as root, where a missing write bit does not stop a write. The read-only case
//! therefore relies on `apply` checking the mode bits itself (so it holds for root too), and
//! the "a write fails" case makes the journal's place unusable (a file named `.xcsh`). What a
//! crash at each step of the commit leaves is tested in `xcsh_plugin_api::files` and, through
//! the CLI, in the integration tests.

use std::fs;

use serde_json::json;

use super::{edit, ok_text, read, resolve, session, tree};

const A: &str = "fn a() {\n    foo(1);\n}\n";
const B: &str = "fn b() {\n    foo(2);\n}\n";

fn op() -> serde_json::Value {
    json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}]})
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    let names = fs::read_dir(dir).expect("list the directory");
    names
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n == ".xcsh")
        .collect()
}

#[tokio::test]
async fn apply_writes_the_preview_and_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tree(&[("a.rs", A), ("b.rs", B)]);
    let path = dir.path().join("a.rs");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).expect("chmod");
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    let out = resolve(&s, "apply").await;
    assert_eq!(ok_text(&out), "Applied 2 replacement(s) in 2 file(s).");
    assert_eq!(read(dir.path(), "a.rs"), A.replace("foo", "bar"));
    assert_eq!(read(dir.path(), "b.rs"), B.replace("foo", "bar"));
    let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(leftovers(dir.path()).is_empty());
}

#[tokio::test]
async fn a_file_edited_after_the_preview_blocks_every_write() {
    let dir = tree(&[("a.rs", A), ("b.rs", B)]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    let edited = format!("// touched\n{A}");
    fs::write(dir.path().join("b.rs"), &edited).expect("edit b.rs");
    let out = resolve(&s, "apply").await;
    assert!(out.is_error);
    assert!(
        out.text()
            .contains("1 file changed since the preview: b.rs (modified)"),
        "{}",
        out.text()
    );
    assert_eq!(read(dir.path(), "a.rs"), A);
    assert_eq!(read(dir.path(), "b.rs"), edited);
    assert!(!s.has_pending(), "the failed action is consumed");
}

#[tokio::test]
async fn vanished_and_replaced_files_are_named() {
    let dir = tree(&[("a.rs", A), ("b.rs", B), ("c.rs", "fn c() { foo(3); }\n")]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    fs::remove_file(dir.path().join("a.rs")).expect("delete a.rs");
    fs::remove_file(dir.path().join("b.rs")).expect("delete b.rs");
    fs::create_dir(dir.path().join("b.rs")).expect("put a directory in its place");
    let out = resolve(&s, "apply").await;
    assert!(out.is_error);
    let text = out.text();
    assert!(
        text.contains("2 files changed since the preview: a.rs (deleted), b.rs (unreadable"),
        "{text}"
    );
    assert_eq!(read(dir.path(), "c.rs"), "fn c() { foo(3); }\n");
}

#[tokio::test]
async fn a_read_only_target_blocks_every_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tree(&[("a.rs", A), ("b.rs", B)]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    fs::set_permissions(dir.path().join("b.rs"), fs::Permissions::from_mode(0o444)).expect("chmod");
    let out = resolve(&s, "apply").await;
    assert!(out.is_error);
    assert_eq!(out.text(), "Nothing was written: read-only file: b.rs.");
    assert_eq!(read(dir.path(), "a.rs"), A);
    assert_eq!(read(dir.path(), "b.rs"), B);
}

#[tokio::test]
async fn a_failed_write_leaves_every_file_old_and_nothing_behind() {
    let dir = tree(&[("a.rs", A), ("b.rs", B)]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    // The journal's place cannot be made: nothing may be written.
    fs::write(dir.path().join(".xcsh"), "not a directory").expect("block .xcsh");
    let out = resolve(&s, "apply").await;
    assert!(out.is_error);
    assert!(
        out.text()
            .starts_with("Nothing was written: cannot create the apply journal"),
        "{}",
        out.text()
    );
    fs::remove_file(dir.path().join(".xcsh")).expect("unblock .xcsh");
    assert_eq!(read(dir.path(), "a.rs"), A);
    assert_eq!(read(dir.path(), "b.rs"), B);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

#[tokio::test]
async fn an_apply_leaves_no_journal_behind() {
    let dir = tree(&[("a.rs", A), ("sub/b.rs", B)]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    ok_text(&resolve(&s, "apply").await);
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    assert!(leftovers(&dir.path().join("sub")).is_empty());
}

#[tokio::test]
async fn apply_goes_through_symlinks() {
    let dir = tree(&[("real/a.rs", A)]);
    std::os::unix::fs::symlink(dir.path().join("real/a.rs"), dir.path().join("link.rs"))
        .expect("symlink");
    let s = session(dir.path());
    ok_text(
        &edit(
            &s,
            json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "path": "link.rs"}),
        )
        .await,
    );
    ok_text(&resolve(&s, "apply").await);
    assert!(fs::symlink_metadata(dir.path().join("link.rs"))
        .expect("lstat")
        .file_type()
        .is_symlink());
    assert_eq!(read(dir.path(), "real/a.rs"), A.replace("foo", "bar"));
}

#[tokio::test]
async fn discard_writes_nothing() {
    let dir = tree(&[("a.rs", A)]);
    let s = session(dir.path());
    ok_text(&edit(&s, op()).await);
    let out = resolve(&s, "discard").await;
    assert_eq!(
        ok_text(&out),
        "Discarded: AST Edit: 1 replacement in 1 file. Reason: test"
    );
    assert_eq!(read(dir.path(), "a.rs"), A);
}
