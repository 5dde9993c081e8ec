//! Support for the interrupted-apply tests (`tests/interrupted_apply*.rs`): whole-tree
//! snapshots, and running `xcsh-plugins` on a tree.
//!
//! An apply that is interrupted must leave the tree exactly as it was or exactly as
//! previewed, and nothing else: no `.xcsh/` journal, no temporary file, no half-renamed
//! batch. A [`Snapshot`] holds every directory and every file (path and bytes), hidden ones
//! included, so comparing two of them catches all of that at once; [`difference`] says where
//! they differ without printing thousands of files.

#![allow(clippy::unwrap_used)] // Test support: fails loudly on unexpected errors.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::artifacts;

/// Every entry under a root, by `/`-separated relative path: `Some(bytes)` for a file, `None`
/// for a directory (so an empty leftover directory counts too).
pub type Snapshot = BTreeMap<String, Option<Vec<u8>>>;

/// The snapshot of everything under `root` (symbolic links are read as files).
pub fn snapshot(root: &Path) -> Snapshot {
    fn walk(dir: &Path, prefix: &str, out: &mut Snapshot) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let relative = format!("{prefix}{name}");
            if entry.file_type().unwrap().is_dir() {
                out.insert(format!("{relative}/"), None);
                walk(&entry.path(), &format!("{relative}/"), out);
            } else {
                out.insert(relative, Some(std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    let mut out = Snapshot::new();
    walk(root, "", &mut out);
    out
}

/// Write `files` (relative path, content) under `root`, creating their directories.
pub fn write_files(root: &Path, files: &Snapshot) {
    for (relative, content) in files {
        let path = root.join(relative);
        match content {
            Some(bytes) => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
            None => std::fs::create_dir_all(path).unwrap(),
        }
    }
}

/// Entries an apply must never leave behind: its journal directory, temporary files.
pub fn leftovers(snapshot: &Snapshot) -> Vec<&str> {
    snapshot
        .keys()
        .map(String::as_str)
        .filter(|p| {
            p.starts_with(".xcsh/")
                || p.contains("/.xcsh/")
                || p.ends_with(".tmp")
                || p.contains(".xcsh-apply-")
        })
        .collect()
}

/// Where `actual` differs from `expected`, in a few lines (at most five paths of each kind).
pub fn difference(actual: &Snapshot, expected: &Snapshot) -> String {
    let extra: Vec<&str> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .map(String::as_str)
        .collect();
    let missing: Vec<&str> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .map(String::as_str)
        .collect();
    let changed: Vec<&str> = actual
        .iter()
        .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
        .map(|(k, _)| k.as_str())
        .collect();
    let some = |paths: &[&str]| {
        let shown: Vec<&str> = paths.iter().take(5).copied().collect();
        format!("{} {:?}", paths.len(), shown)
    };
    format!(
        "extra {}, missing {}, different {}",
        some(&extra),
        some(&missing),
        some(&changed)
    )
}

/// Which of the two states a tree is in, if either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Exactly as before the apply.
    Original,
    /// Exactly as previewed.
    Applied,
}

/// `actual` as one of the two states, or a panic naming `context` and the differences from
/// both (a mixed tree, a leftover file).
pub fn state_of(
    actual: &Snapshot,
    original: &Snapshot,
    applied: &Snapshot,
    context: &str,
) -> State {
    if actual == original {
        State::Original
    } else if actual == applied {
        State::Applied
    } else {
        let left = leftovers(actual);
        let shown: Vec<&str> = left.iter().take(5).copied().collect();
        panic!(
            "{context}: the tree is neither as it was nor as previewed; {} leftover(s) {shown:?}\n  \
             against the original: {}\n  against the applied: {}",
            left.len(),
            difference(actual, original),
            difference(actual, applied)
        )
    }
}

/// `xcsh-plugins ARGS --no-default-dirs --cwd DIR` as a command, with the log level that shows
/// recovery's reports and no colour.
pub fn cli(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(args)
        .arg("--no-default-dirs")
        .arg("--cwd")
        .arg(dir)
        .env("NO_COLOR", "1")
        .env("XCSH_LOG", "warn,xcsh_loader::session=info")
        .env_remove(xcsh_plugin_api::files::CRASH_AT_ENV);
    command
}

/// `xcsh-plugins list --cwd DIR`: a new session there, which recovers any interrupted apply
/// first. Fails unless it succeeds; returns its output.
pub fn list(dir: &Path) -> Output {
    let output = cli(dir, &["list"]).output().unwrap();
    assert!(
        output.status.success(),
        "list --cwd {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// stdout and stderr of `output`, for assertion messages.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
