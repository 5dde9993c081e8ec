//! `call ast_edit ... --apply` interrupted by a real signal at a moment taken from a spread
//! over the apply, through the real `xcsh-plugins` binary (issue 34's "done when").
//!
//! The tree is 2,000 small Rust files, a third of them calling `foo`: big enough that the
//! apply (check, stage, sync, journal, 667 renames, clean-up) takes a measurable while, which
//! a first uninterrupted run measures. Each run waits for the preview on stdout (the
//! "Pending actions" line: the apply starts right after it), waits a delay from 0 to a bit
//! more than that measured time, and sends the signal.
//!
//! - `SIGINT`, `SIGTERM`, `SIGHUP`: the command cancels the apply, which undoes itself. Either
//!   it exits 130/143/129 and the tree is exactly as it was, or the apply had completed, it
//!   exits 0 and the tree is exactly as previewed: never a mixed tree, never an extra file,
//!   both right after it exits and after a later session in that directory. At least one run
//!   per signal must be interrupted, so the test cannot pass on completed runs alone.
//! - `SIGKILL`: nothing runs on the way out; the next session (`list --cwd`) must leave the
//!   tree entirely old or entirely new, with nothing extra. Some runs are killed once the
//!   commit's journal directory has appeared, so at least one kill really lands inside a
//!   commit and recovery has work to do.

#![cfg(unix)]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use xcsh_integration_tests::tree::{
    cli, leftovers, list, snapshot, state_of, write_files, Snapshot, State,
};

const ARGS: &str = r#"{"ops":[{"pat":"foo($A)","out":"bar($A)"}]}"#;
/// The last line of the preview: what follows is the apply.
const PREVIEW_END: &str = "Pending actions (newest first):\n  1. AST Edit: ";

/// 2,000 files in 20 directories, every third one calling `foo`, and a hidden file; and the
/// same tree as the rewrite leaves it.
fn trees() -> (Snapshot, Snapshot) {
    let mut original = Snapshot::new();
    let mut applied = Snapshot::new();
    original.insert(".keep".to_owned(), Some(b"hidden\n".to_vec()));
    for i in 0..2000 {
        let dir = format!("m{}/", i % 20);
        original.insert(dir.clone(), None);
        let call = if i % 3 == 0 { "foo" } else { "baz" };
        let body = format!("pub fn f{i}(x: i32) -> i32 {{\n    {call}(x + {i})\n}}\n");
        original.insert(format!("{dir}f{i}.rs"), Some(body.clone().into_bytes()));
    }
    for (path, content) in &original {
        let content = content.as_ref().map(|bytes| {
            let text = String::from_utf8(bytes.clone()).unwrap();
            text.replace("foo(", "bar(").into_bytes()
        });
        applied.insert(path.clone(), content);
    }
    (original, applied)
}

/// A directory holding `original`, kept for the next run while it is still as it was.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new(original: &Snapshot) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), original);
        Workspace { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Ready for the next run: this one if it is still the original, a new one otherwise.
    fn reset(&mut self, state: State, original: &Snapshot) {
        if state != State::Original {
            *self = Workspace::new(original);
        }
    }
}

/// `call ast_edit --apply` started on `dir`, returned once its preview has been printed.
fn start_apply(dir: &Path) -> Child {
    let mut child = cli(dir, &["call", "ast_edit", ARGS, "--apply"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    read_until(&mut child, PREVIEW_END);
    child
}

/// Read `child`'s stdout until `needle` has been printed; what was read.
fn read_until(child: &mut Child, needle: &str) -> String {
    let stdout = child.stdout.as_mut().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&seen).contains(needle) {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => panic!("{needle:?} never came:\n{}", String::from_utf8_lossy(&seen)),
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// Wait for `child`; its exit status and the rest of its output.
fn finish(mut child: Child) -> (std::process::ExitStatus, String) {
    let mut rest = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut rest)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut rest)
        .unwrap();
    (child.wait().unwrap(), rest)
}

/// How long an uninterrupted apply takes, from the end of its preview to the command's exit
/// (the longest of three: a loaded disk makes it vary), checking that it rewrites the tree as
/// expected.
fn measure(original: &Snapshot, applied: &Snapshot) -> Duration {
    let mut longest = Duration::ZERO;
    for _ in 0..3 {
        let workspace = Workspace::new(original);
        let child = start_apply(workspace.path());
        let started = Instant::now();
        let (status, rest) = finish(child);
        longest = longest.max(started.elapsed());
        assert!(status.success(), "{rest}");
        let after = snapshot(workspace.path());
        let state = state_of(&after, original, applied, "uninterrupted apply");
        assert_eq!(state, State::Applied);
    }
    eprintln!("an uninterrupted apply takes up to {longest:?} after its preview");
    longest
}

/// `count` delays from 0 to 1.3 times `apply`, shifted by `shift` (0 to 1) of one interval.
fn spread(apply: Duration, count: u32, shift: f64) -> Vec<Duration> {
    let step = apply.mul_f64(1.3) / count;
    (0..count)
        .map(|i| step.mul_f64(f64::from(i) + shift))
        .collect()
}

fn signal_now(child: &Child, signal: Signal) {
    kill_process(Pid::from_child(child), signal).unwrap();
}

/// When a run gets its signal.
#[derive(Debug, Clone, Copy)]
enum When {
    /// This long after the preview.
    After(Duration),
    /// As soon as the apply's result is printed (the command is about to end).
    OnApplied,
}

#[test]
fn sigint_sigterm_sighup_leave_the_tree_as_it_was_or_as_previewed() {
    let (original, applied) = trees();
    let apply = measure(&original, &applied);
    let mut workspace = Workspace::new(&original);
    let signals = [
        (Signal::INT, "SIGINT", 130),
        (Signal::TERM, "SIGTERM", 143),
        (Signal::HUP, "SIGHUP", 129),
    ];
    for (index, (signal, name, code)) in signals.into_iter().enumerate() {
        let (mut interrupted, mut completed) = (0, 0);
        // Right after the preview the apply has only begun: that run must be interrupted (a
        // few more such runs if a loaded machine let it finish first). Then the spread, each
        // signal's shifted by a third of an interval, and a signal that comes once the apply
        // has completed, which must change nothing.
        let mut runs = vec![When::After(Duration::ZERO)];
        let shift = f64::from(u32::try_from(index).unwrap()) / 3.0;
        runs.extend(spread(apply, 6, shift).into_iter().map(When::After));
        runs.push(When::OnApplied);
        let mut run = 0;
        while run < runs.len() || (interrupted == 0 && run < runs.len() + 3) {
            let when = runs
                .get(run)
                .copied()
                .unwrap_or(When::After(Duration::ZERO));
            run += 1;
            let mut child = start_apply(workspace.path());
            let mut seen = String::new();
            match when {
                When::After(delay) => std::thread::sleep(delay),
                When::OnApplied => seen = read_until(&mut child, "Applied 667 replacement(s)"),
            }
            signal_now(&child, signal);
            let (status, rest) = finish(child);
            let rest = seen + &rest;
            let context = format!("{name} {when:?}");
            let after = snapshot(workspace.path());
            let state = state_of(&after, &original, &applied, &context);
            match state {
                State::Original => {
                    assert_eq!(status.code(), Some(code), "{context}: {status}\n{rest}");
                    // Interrupted in the apply, or (on a loaded machine) in the moment between
                    // the preview and the apply's start, when the action is still pending.
                    let in_apply = format!("interrupted by {name}");
                    let before_apply = format!("nothing was applied without a decision ({name})");
                    assert!(
                        rest.contains(&in_apply) || rest.contains(&before_apply),
                        "{context}: {rest}"
                    );
                    interrupted += 1;
                }
                State::Applied => {
                    assert!(status.success(), "{context}: applied, yet {status}\n{rest}");
                    assert!(rest.contains("Applied 667 replacement(s)"), "{rest}");
                    completed += 1;
                }
            }
            // A later session finds nothing to recover and changes nothing.
            list(workspace.path());
            let again = snapshot(workspace.path());
            assert!(again == after, "{context}: list changed the tree");
            workspace.reset(state, &original);
        }
        eprintln!("{name}: {interrupted} run(s) interrupted, {completed} completed");
        assert!(interrupted > 0, "no {name} run was interrupted");
    }
}

/// When a run gets its `SIGKILL`.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// This long after the preview.
    AfterPreview(Duration),
    /// This long after the commit's directory appeared in `.xcsh/apply-journal/`.
    InCommit(Duration),
    /// As soon as the first file in path order (`m0/f0.rs`) has been replaced, most likely
    /// amid the renames.
    AtFirstRename,
}

#[test]
fn sigkill_at_any_moment_is_finished_or_undone_by_the_next_session() {
    let (original, applied) = trees();
    let apply = measure(&original, &applied);
    let mut workspace = Workspace::new(&original);
    let (mut old, mut new, mut in_commit, mut mixed) = (0, 0, 0, 0);
    // Killed a while after the preview; then, so that some kills land inside the commit for
    // certain, once the commit's directory exists and once the renames have begun.
    let mut kills: Vec<Kill> = spread(apply, 6, 0.5)
        .into_iter()
        .map(Kill::AfterPreview)
        .collect();
    kills.extend([Duration::ZERO, apply / 10, apply / 4].map(Kill::InCommit));
    kills.extend([Kill::AtFirstRename; 2]);
    for kill in kills {
        let mut child = start_apply(workspace.path());
        let root = workspace.path().to_owned();
        let first = root.join("m0/f0.rs");
        let inode = std::fs::metadata(&first).unwrap().ino();
        // These events are files changing, not output lines: look for them closely.
        let (ended, delay) = match kill {
            Kill::AfterPreview(delay) => (None, delay),
            Kill::InCommit(delay) => (
                wait_for(&mut child, || has_commit(&root.join(".xcsh/apply-journal"))),
                delay,
            ),
            Kill::AtFirstRename => (
                wait_for(&mut child, || {
                    std::fs::metadata(&first).is_ok_and(|m| m.ino() != inode)
                }),
                Duration::ZERO,
            ),
        };
        if ended.is_none() {
            std::thread::sleep(delay);
            signal_now(&child, Signal::KILL);
        }
        let (status, rest) = finish(child);
        let context = format!("SIGKILL {kill:?}");
        // Killed, or (the latest delays on a quick machine) done before the kill came.
        let killed = status.signal() == Some(9);
        assert!(killed || status.success(), "{context}: {status}: {rest}");
        let left = snapshot(workspace.path());
        let cut_short = !leftovers(&left).is_empty();
        if cut_short {
            in_commit += 1;
            // Without the journal's files, some sources new and some old: half applied.
            let mut files = left.clone();
            files.retain(|path, _| !path.starts_with(".xcsh/"));
            mixed += usize::from(files != original && files != applied);
        } else {
            state_of(&left, &original, &applied, &context);
        }
        // A commit's own directory in the journal: recovery says what it did with it. (Killed
        // before its directory was made, or after it was removed, only the empty journal place
        // is left: recovery removes it without a word.)
        let had_commit = left.keys().any(|path| {
            path.strip_prefix(".xcsh/apply-journal/")
                .is_some_and(|rest| rest.ends_with('/') && rest.matches('/').count() == 1)
        });
        let recovery = list(workspace.path());
        let said = String::from_utf8_lossy(&recovery.stderr);
        assert!(
            !had_commit || said.contains("an interrupted apply"),
            "{said}"
        );
        let context = format!("{context}, then list");
        let state = state_of(&snapshot(workspace.path()), &original, &applied, &context);
        match state {
            State::Original => old += 1,
            State::Applied => new += 1,
        }
        workspace.reset(state, &original);
    }
    eprintln!(
        "SIGKILL: {old} run(s) ended as they were, {new} as previewed; {in_commit} killed inside \
         a commit ({mixed} of them half renamed), made whole by the next session"
    );
    assert!(in_commit > 0, "no kill landed inside a commit");
}

/// Wait until `event` holds, or `child` has ended (its status then).
fn wait_for(child: &mut Child, event: impl Fn() -> bool) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    while !event() {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never happened"
        );
        std::thread::yield_now();
    }
    None
}

/// Whether a commit's directory exists in the journal directory.
fn has_commit(journal: &Path) -> bool {
    std::fs::read_dir(journal).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
    })
}
