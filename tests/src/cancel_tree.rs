//! Generated working trees for the cancellation tests (`cancelled_apply`, `cli_signals`,
//! `mcp_cancel_apply`), and the one check they all make:
//! after an apply was cancelled (a signal, an MCP cancellation or closed stdin, an abort), the
//! tree is exactly as it was or exactly as the apply makes it, with no file besides (no
//! `.xcsh/` journal, no temporary file).

use std::collections::BTreeMap;
use std::path::Path;

/// Every file under a directory (hidden ones included), by path relative to it, with its bytes.
pub type Snapshot = BTreeMap<String, Vec<u8>>;

/// Read every file under `dir`.
pub fn snapshot(dir: &Path) -> Snapshot {
    let mut files = Snapshot::new();
    collect(dir, dir, &mut files);
    files
}

fn collect(root: &Path, dir: &Path, files: &mut Snapshot) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            files.insert(relative, bytes);
        }
    }
}

/// Which whole state a tree is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whole {
    /// As before the apply.
    Old,
    /// As the apply makes it.
    New,
}

/// Whether `dir` is exactly `old` or exactly `new`; fails the test, saying how it differs,
/// when it is neither (a torn apply, or a file left behind).
pub fn whole(dir: &Path, old: &Snapshot, new: &Snapshot) -> Whole {
    let now = snapshot(dir);
    if &now == old {
        return Whole::Old;
    }
    if &now == new {
        return Whole::New;
    }
    let differs = |other: &Snapshot| {
        now.iter()
            .filter(|(path, bytes)| other.get(*path) != Some(bytes))
            .map(|(path, _)| path.clone())
            .chain(other.keys().filter(|p| !now.contains_key(*p)).cloned())
            .take(5)
            .collect::<Vec<_>>()
    };
    panic!(
        "{} is neither as before nor as applied: {} file(s); differs from before at {:?}, \
         from applied at {:?}",
        dir.display(),
        now.len(),
        differs(old),
        differs(new)
    );
}

/// `count` small Rust files (`src/mNNNN.rs`), each with a few `foo(N)` calls, under `dir`:
/// what `ast_edit` rewrites (`foo($A)` to `bar($A)`). Returns the tree before and after.
pub fn rust_tree(dir: &Path, count: usize) -> (Snapshot, Snapshot) {
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap_or_else(|e| panic!("cannot create src/: {e}"));
    let (mut old, mut new) = (Snapshot::new(), Snapshot::new());
    for n in 0..count {
        let text = format!("pub fn f{n}() -> i32 {{\n    foo({n}) + foo({n} + 1)\n}}\n");
        let name = format!("src/m{n:04}.rs");
        std::fs::write(dir.join(&name), &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        new.insert(name.clone(), text.replace("foo(", "bar(").into_bytes());
        old.insert(name, text.into_bytes());
    }
    (old, new)
}

/// The `ast_edit` arguments that rewrite [`rust_tree`]'s calls.
pub fn rust_tree_edit() -> serde_json::Value {
    serde_json::json!({"ops": [{"pat": "foo($A)", "out": "bar($A)"}], "path": "src"})
}

/// `count` files `fNNNN_old.txt` under `dir`, for `batch_rename_preview` (`_old` to `_new`).
/// Returns their names, and the tree before and after.
pub fn rename_tree(dir: &Path, count: usize) -> (Vec<String>, Snapshot, Snapshot) {
    let (mut names, mut old, mut new) = (Vec::new(), Snapshot::new(), Snapshot::new());
    for n in 0..count {
        let name = format!("f{n:04}_old.txt");
        let content = format!("file {n}\n").into_bytes();
        std::fs::write(dir.join(&name), &content).unwrap_or_else(|e| panic!("{name}: {e}"));
        new.insert(name.replace("_old", "_new"), content.clone());
        old.insert(name.clone(), content);
        names.push(name);
    }
    (names, old, new)
}

/// The `batch_rename_preview` arguments that rename [`rename_tree`]'s files.
pub fn rename_tree_preview(names: &[String]) -> serde_json::Value {
    serde_json::json!({"files": names, "find": "_old", "replace": "_new"})
}
