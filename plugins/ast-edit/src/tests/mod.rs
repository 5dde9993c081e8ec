//! Tests of `ast_edit`, run through a real [`Session`] (schema check, store, `resolve`): shared
//! helpers here, cases in the submodules.

mod apply;
mod nested;
mod params;
mod search;
mod session;

use std::fs;
use std::path::Path;

use serde_json::{json, Value};
use tempfile::TempDir;

use xcsh_loader::{Session, ToolOutcome};

use crate::AstEditPlugin;

/// The tool as the command-line host registers it: this crate's factory instantiated through
/// the loader's in-process plugin adapter.
pub(super) fn ast_edit_tool() -> std::sync::Arc<dyn xcsh_loader::Tool> {
    let mut tools = xcsh_loader::builtin_plugin_tools::<AstEditPlugin>().expect("instantiate");
    assert_eq!(tools.len(), 1);
    tools.pop().expect("one tool")
}

/// A scratch directory holding `files` (`(relative path, content)`).
pub(super) fn tree(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    for (path, content) in files {
        let full = dir.path().join(path);
        if let Some(parent) = full.parent() {
            fs::create_dir_all(parent).expect("create parent directories");
        }
        fs::write(&full, content).expect("write a fixture file");
    }
    dir
}

/// A session rooted at `dir` with only the built-in `ast_edit`.
pub(super) fn session(dir: &Path) -> Session {
    Session::builder(dir)
        .default_dirs(false)
        .builtin(ast_edit_tool())
        .build()
}

/// A file's content.
pub(super) fn read(dir: &Path, path: &str) -> String {
    fs::read_to_string(dir.join(path)).expect("read a fixture file")
}

/// Call `ast_edit`.
pub(super) async fn edit(session: &Session, args: Value) -> ToolOutcome {
    session.call("ast_edit", args).await
}

/// Call `resolve` with `action` (`apply` or `discard`).
pub(super) async fn resolve(session: &Session, action: &str) -> ToolOutcome {
    session
        .call("resolve", json!({"action": action, "reason": "test"}))
        .await
}

/// The outcome's `details`.
pub(super) fn details(outcome: &ToolOutcome) -> Value {
    outcome.result.details.clone().unwrap_or(Value::Null)
}

/// Assert the outcome is an error with exactly `message`.
pub(super) fn assert_error(outcome: &ToolOutcome, message: &str) {
    assert!(
        outcome.is_error,
        "expected an error, got {:?}",
        outcome.text()
    );
    assert_eq!(outcome.text(), message);
}

/// Assert the outcome succeeded; returns its text.
pub(super) fn ok_text(outcome: &ToolOutcome) -> String {
    assert!(!outcome.is_error, "unexpected error: {}", outcome.text());
    outcome.text()
}
