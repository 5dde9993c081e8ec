//! An apply killed after any step of its commit is finished or undone as a whole, through the
//! real `xcsh-plugins` binary (issue 34, fault injection).
//!
//! `XCSH_TEST_CRASH_COMMIT_AT=N` makes the committing process abort right after step N (no
//! clean-up runs, as under `SIGKILL` or a power loss). For N = 1, 2, ... until a run completes,
//! each test runs `call ... --apply` on a fresh tree, checks the process really died at step N,
//! then runs `list --cwd` (a new session, which recovers first) and requires the tree to be
//! exactly as it was or exactly as the completed apply left it, with nothing else in it (no
//! `.xcsh/`, no temporary file). A crash before the journal is written must come back as it
//! was, one from the journal on as previewed. The crash points seen must be the commit's
//! steps, one by one, so a sweep in which nothing crashed cannot pass.
//!
//! `ast_edit` is built into the CLI (its commit runs in the CLI's process); the sample
//! `batch_rename_preview` is the real `.so`, run in-process and in a plugin process. There the
//! variable reaches the plugin only through `--pass-env`, the CLI survives the crash, and it
//! finishes or undoes the apply itself before it exits: the tree is whole right after it, and
//! the next session finds nothing to do.

#![cfg(unix)]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;

use xcsh_integration_tests::artifacts;
use xcsh_integration_tests::tree::{
    cli, list, snapshot, state_of, text, write_files, Snapshot, State,
};
use xcsh_plugin_api::files::CRASH_AT_ENV;

const SIGABRT: i32 = 6;

/// One crash point: the step as the dying process named it, and the tree after recovery.
struct Crash {
    step: u32,
    what: String,
    recovered: State,
}

/// A tree of `files` (relative path, content), with the directories that hold them.
fn tree(files: &[(&str, &str)]) -> Snapshot {
    let mut out = Snapshot::new();
    for (path, content) in files {
        let mut dir = String::new();
        for part in path.split('/').collect::<Vec<_>>().split_last().unwrap().1 {
            dir.push_str(part);
            dir.push('/');
            out.insert(dir.clone(), None);
        }
        out.insert((*path).to_owned(), Some(content.as_bytes().to_vec()));
    }
    out
}

/// The commit's steps for `writes` written files among `changes` changes, as `fault.rs`
/// names them: each temporary file, their sync, the journal, each change, the directories'
/// sync, the journal's removal.
fn steps(writes: usize, changes: usize) -> Vec<String> {
    let mut steps = vec![format!("a temporary file written ({writes} to write)"); writes];
    steps.push("temporary files synced".to_owned());
    steps.push("journal written".to_owned());
    steps.extend((1..=changes).map(|i| format!("change {i} of {changes} made")));
    steps.push("directories synced".to_owned());
    steps.push("journal removed".to_owned());
    steps
}

/// Who finishes or undoes an apply whose committing process died.
#[derive(Clone, Copy)]
enum Recovery {
    /// The next session in that directory (the committing process was the CLI).
    NextSession,
    /// The CLI itself, as soon as the plugin process that was applying is gone.
    SameCommand,
}

/// Run `apply` with its crash point at step 1, 2, ... on a fresh copy of `original`, until a
/// run completes (it must leave `applied`); after each crash (`crashed` tells one from any
/// other failure) see which state `recovery` brought the tree back to.
fn sweep(
    original: &Snapshot,
    applied: &Snapshot,
    recovery: Recovery,
    apply: impl Fn(&Path, u32) -> Output,
    crashed: impl Fn(&Output) -> bool,
) -> Vec<Crash> {
    let mut crashes = Vec::new();
    for step in 1u32.. {
        assert!(step <= 100, "no run completed");
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), original);
        let output = apply(dir.path(), step);
        let all = text(&output);
        if output.status.success() {
            let state = state_of(&snapshot(dir.path()), original, applied, "completed run");
            assert_eq!(state, State::Applied, "{all}");
            return crashes;
        }
        assert!(crashed(&output), "crash at step {step}: {all}");
        let marker = format!("{CRASH_AT_ENV}: aborting after commit step {step} (");
        let what = all
            .split_once(&marker)
            .and_then(|(_, rest)| rest.lines().next())
            .and_then(|line| line.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no crash at step {step} reported: {all}"))
            .to_owned();
        let journal = dir.path().join(".xcsh/apply-journal");
        let recovered = match recovery {
            Recovery::NextSession => {
                // The process died with its journal in place: recovery has something to do.
                assert!(journal.is_dir(), "{all}");
                let next = list(dir.path());
                let said = String::from_utf8_lossy(&next.stderr);
                assert!(said.contains("an interrupted apply"), "step {step}: {said}");
                let context = format!("after a crash at step {step} ({what}) and recovery");
                state_of(&snapshot(dir.path()), original, applied, &context)
            }
            Recovery::SameCommand => {
                // Only the plugin's process died: the CLI recovered at once and said so.
                assert!(all.contains("while applying"), "step {step}: {all}");
                assert!(all.contains("an interrupted apply"), "step {step}: {all}");
                assert!(!journal.exists(), "step {step}: {all}");
                let context = format!("after a crash at step {step} ({what})");
                let state = state_of(&snapshot(dir.path()), original, applied, &context);
                // The next session finds nothing left to do.
                let next = list(dir.path());
                let said = String::from_utf8_lossy(&next.stderr);
                assert!(
                    !said.contains("an interrupted apply"),
                    "step {step}: {said}"
                );
                let context = format!("{context}, then list");
                assert_eq!(
                    state_of(&snapshot(dir.path()), original, applied, &context),
                    state
                );
                state
            }
        };
        crashes.push(Crash {
            step,
            what,
            recovered,
        });
    }
    unreachable!()
}

/// Every crash point was one of `expected` steps, in order, and recovery undid the ones
/// before the journal and finished the others.
fn check(crashes: &[Crash], expected: &[String]) {
    let seen: Vec<&str> = crashes.iter().map(|c| c.what.as_str()).collect();
    assert_eq!(
        seen, expected,
        "the crash points are not the commit's steps"
    );
    let journal = expected
        .iter()
        .position(|s| s == "journal written")
        .unwrap();
    for (index, crash) in crashes.iter().enumerate() {
        let wanted = if index < journal {
            State::Original
        } else {
            State::Applied
        };
        assert_eq!(
            crash.recovered, wanted,
            "after a crash at step {} ({})",
            crash.step, crash.what
        );
    }
}

/// Six Rust files in two directories, four calling `foo`, and hidden files beside them.
fn rust_tree() -> Snapshot {
    tree(&[
        ("src/a.rs", "fn a() -> i32 {\n    foo(1)\n}\n"),
        (
            "src/b.rs",
            "fn b() {\n    let x = foo(2);\n    let _y = foo(x);\n}\n",
        ),
        ("src/c.rs", "fn c() {\n    baz(3);\n}\n"),
        ("lib/d.rs", "pub fn d() {\n    foo(\"d\");\n}\n"),
        ("lib/e.rs", "pub fn e() -> u8 {\n    foo(5) + 1\n}\n"),
        ("lib/f.rs", "pub fn f() {}\n"),
        (".editorconfig", "root = true\n"),
        ("lib/.keep", ""),
    ])
}

#[test]
fn ast_edit_crashed_at_every_step_comes_back_whole() {
    let original = rust_tree();
    // What `foo($A)` -> `bar($A)` makes of it, written out independently of ast_edit.
    let applied: Snapshot = original
        .iter()
        .map(|(path, content)| {
            let content = content.as_ref().map(|bytes| {
                let text = String::from_utf8(bytes.clone()).unwrap();
                text.replace("foo(", "bar(").into_bytes()
            });
            (path.clone(), content)
        })
        .collect();
    let crashes = sweep(
        &original,
        &applied,
        Recovery::NextSession,
        |dir, step| {
            let args = r#"{"ops":[{"pat":"foo($A)","out":"bar($A)"}]}"#;
            cli(dir, &["call", "ast_edit", args, "--apply"])
                .env(CRASH_AT_ENV, step.to_string())
                .output()
                .unwrap()
        },
        |output| output.status.signal() == Some(SIGABRT),
    );
    // Four files rewritten: 4 temporary files, 4 renames, 4 fixed steps.
    check(&crashes, &steps(4, 4));
    assert_eq!(crashes.len(), 12);
}

/// Five files to rename (two directories), and others that stay.
fn rename_tree() -> Snapshot {
    tree(&[
        ("a1.txt", "one"),
        ("a2.txt", "two"),
        ("docs/a3.md", "three"),
        ("docs/a4.md", "four"),
        ("data/a5.csv", "five"),
        ("keep.txt", "kept"),
        (".hidden", "hidden"),
        ("docs/.a6", "not listed"),
    ])
}

const RENAME: &str = r#"{"files":["a1.txt","a2.txt","docs/a3.md","docs/a4.md","data/a5.csv"],"find":"a","replace":"b"}"#;

fn renamed() -> Snapshot {
    let renames = [
        ("a1.txt", "b1.txt"),
        ("a2.txt", "b2.txt"),
        ("docs/a3.md", "docs/b3.md"),
        ("docs/a4.md", "docs/b4.md"),
        ("data/a5.csv", "data/b5.csv"),
    ];
    let mut out = rename_tree();
    for (from, to) in renames {
        let content = out.remove(from).unwrap();
        out.insert(to.to_owned(), content);
    }
    out
}

fn batch_rename(dir: &Path, step: u32, isolation: &[&str]) -> Output {
    let plugin = artifacts().plugin("batch-rename");
    let mut args = vec![
        "call",
        "batch_rename_preview",
        RENAME,
        "--apply",
        "--plugin",
        plugin.to_str().unwrap(),
    ];
    args.extend(isolation);
    cli(dir, &args)
        .env(CRASH_AT_ENV, step.to_string())
        .output()
        .unwrap()
}

#[test]
fn batch_rename_in_process_crashed_at_every_step_comes_back_whole() {
    let crashes = sweep(
        &rename_tree(),
        &renamed(),
        Recovery::NextSession,
        |dir, step| batch_rename(dir, step, &["--isolation", "in-process"]),
        |output| output.status.signal() == Some(SIGABRT),
    );
    // Renames only: no temporary file; 5 renames and 4 fixed steps.
    check(&crashes, &steps(0, 5));
    assert_eq!(crashes.len(), 9);
}

#[cfg(target_os = "linux")]
#[test]
fn batch_rename_in_a_plugin_process_crashed_at_every_step_comes_back_whole() {
    let crashes = sweep(
        &rename_tree(),
        &renamed(),
        Recovery::SameCommand,
        |dir, step| {
            let isolation = ["--isolation", "process", "--pass-env", CRASH_AT_ENV];
            batch_rename(dir, step, &isolation)
        },
        // The plugin's process aborted (its own stderr line says so), the CLI did not: it
        // reports the apply failed, and what it then did with the interrupted commit.
        |output| {
            let all = text(output);
            output.status.code() == Some(1)
                && all.contains("killed by SIGABRT")
                && all.contains(&format!("[libbatch_rename.so] {CRASH_AT_ENV}: aborting"))
        },
    );
    check(&crashes, &steps(0, 5));
    assert_eq!(crashes.len(), 9);
}
