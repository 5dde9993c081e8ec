use std::collections::BTreeMap;
use std::path::Path;

use super::*;

/// Every file under `dir` (relative path -> content), directories included as `<dir>/`.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // `/` between components everywhere, so one expectation holds on Windows too.
            let rel = path.strip_prefix(root).unwrap();
            let rel: Vec<_> = rel.iter().map(|c| c.to_string_lossy()).collect();
            let rel = rel.join("/");
            if path.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

const OLD: &[(&str, &str)] = &[
    ("a.rs", "old a"),
    ("sub/b.rs", "old b"),
    ("draft.md", "draft"),
    ("gone.txt", "to remove"),
];

/// A write over a file, a new file, a rename and a removal.
fn changes(root: &Path) -> FileChanges {
    let mut changes = FileChanges::new(root);
    changes
        .write("a.rs", "new a")
        .write("sub/b.rs", "new b")
        .write("sub/c.rs", "created c")
        .rename("draft.md", "final.md")
        .remove("gone.txt");
    changes
}

fn expected_new() -> BTreeMap<String, String> {
    let dir = tree(&[
        ("a.rs", "new a"),
        ("sub/b.rs", "new b"),
        ("sub/c.rs", "created c"),
        ("final.md", "draft"),
    ]);
    snapshot(dir.path())
}

#[test]
fn a_commit_makes_every_change_and_leaves_nothing_behind() {
    let dir = tree(OLD);
    let committed = changes(dir.path()).commit_blocking().unwrap();
    assert_eq!(
        (committed.written, committed.renamed, committed.removed),
        (3, 1, 1)
    );
    assert_eq!(snapshot(dir.path()), expected_new());
}

#[test]
fn a_user_s_own_xcsh_directory_stays() {
    let dir = tree(&[("a.rs", "old a"), (".xcsh/tools/readme", "mine")]);
    let mut changes = FileChanges::new(dir.path());
    changes.write("a.rs", "new a");
    changes.commit_blocking().unwrap();
    let after = snapshot(dir.path());
    assert_eq!(
        after.get(".xcsh/tools/readme").map(String::as_str),
        Some("mine")
    );
    assert!(!after.contains_key(".xcsh/apply-journal/"), "{after:?}");
}

#[test]
fn a_conflict_writes_nothing() {
    let dir = tree(&[("a.rs", "old a"), ("draft.md", "d"), ("final.md", "taken")]);
    let before = snapshot(dir.path());
    let mut changes = FileChanges::new(dir.path());
    changes
        .write("a.rs", "new a")
        .rename("draft.md", "final.md");
    let error = changes.commit_blocking().unwrap_err();
    assert_eq!(
        error.to_string(),
        "nothing was changed: target final.md already exists"
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_file_changed_since_it_was_read_is_not_overwritten() {
    let dir = tree(&[("a.rs", "old a"), ("b.rs", "old b")]);
    let seen = std::fs::metadata(dir.path().join("b.rs")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(dir.path().join("b.rs"), "edited by the user").unwrap();
    let before = snapshot(dir.path());
    let mut changes = FileChanges::new(dir.path());
    changes
        .write("a.rs", "new a")
        .write_if_unchanged("b.rs", "new b", &seen);
    let error = changes.commit_blocking().unwrap_err();
    assert!(
        matches!(&error, CommitError::Changed { files } if files == &["b.rs"]),
        "{error}"
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn two_changes_of_one_file_are_refused() {
    let dir = tree(&[("a.rs", "old a")]);
    let mut changes = FileChanges::new(dir.path());
    changes.write("a.rs", "1").remove("a.rs");
    let error = changes.commit_blocking().unwrap_err();
    assert!(
        error
            .to_string()
            .contains("a.rs is the subject of two changes"),
        "{error}"
    );
}

/// Crash the commit after each of its steps in turn; recovery must leave the tree entirely
/// old or entirely new, with nothing else.
#[test]
fn a_crash_after_any_step_is_finished_or_undone_by_recovery() {
    let new = expected_new();
    let mut outcomes = Vec::new();
    for step in 1.. {
        let dir = tree(OLD);
        let old = snapshot(dir.path());
        simulate_crash_at(dir.path(), step);
        match changes(dir.path()).commit_blocking() {
            Ok(_) => {
                assert_eq!(snapshot(dir.path()), new, "no crash: a normal commit");
                break;
            }
            Err(CommitError::SimulatedCrash { step: at, what }) => {
                assert_eq!(at, step);
                let recovered = recover(dir.path()).unwrap();
                let after = snapshot(dir.path());
                assert!(
                    after == old || after == new,
                    "after a crash at step {step} ({what}) and recovery: {after:#?}"
                );
                outcomes.push((step, what, recovered.first().map(|r| r.outcome.clone())));
                assert!(recover(dir.path()).unwrap().is_empty(), "recovered once");
            }
            Err(other) => panic!("step {step}: {other}"),
        }
    }
    // 3 temporary files, synced, journal, 5 changes, directories synced, journal removed.
    assert_eq!(outcomes.len(), 12, "{outcomes:#?}");
    let completed = outcomes
        .iter()
        .filter(|(_, _, o)| *o == Some(RecoveryOutcome::Completed))
        .count();
    // From the journal written to the directories synced; once the journal is removed, only
    // leftovers remain.
    assert_eq!(
        completed, 7,
        "every crash from the journal on is completed: {outcomes:#?}"
    );
}

#[test]
fn recovery_never_touches_a_file_changed_after_the_crash() {
    let dir = tree(OLD);
    // Crash after the journal and the first change (a.rs written).
    simulate_crash_at(dir.path(), 6);
    let error = changes(dir.path()).commit_blocking().unwrap_err();
    assert!(error.to_string().contains("change 1 of 5"), "{error}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.rs")).unwrap(),
        "new a"
    );
    // Someone edits b.rs before the next session: the commit cannot be finished safely.
    std::fs::remove_file(dir.path().join("sub/b.rs")).unwrap();
    std::fs::write(dir.path().join("sub/b.rs"), "the user's b").unwrap();
    let recovered = recover(dir.path()).unwrap();
    assert_eq!(recovered[0].outcome, RecoveryOutcome::Undone);
    let after = snapshot(dir.path());
    assert_eq!(after["a.rs"], "old a", "the change made was undone");
    assert_eq!(after["sub/b.rs"], "the user's b", "the user's edit stays");
    assert_eq!(after["draft.md"], "draft");
    assert!(!after.contains_key(".xcsh/"), "{after:#?}");
}

#[test]
fn recovery_leaves_a_running_commit_alone() {
    let dir = tree(OLD);
    simulate_crash_at(dir.path(), 1);
    let _ = changes(dir.path()).commit_blocking();
    // A commit running now holds the place's lock shared.
    let running = journal::JournalPlace::enter_shared(dir.path()).unwrap();
    assert!(recover(dir.path()).unwrap().is_empty());
    assert!(dir.path().join(JOURNAL_DIR).exists());
    drop(running);
    let recovered = recover(dir.path()).unwrap();
    assert_eq!(recovered[0].outcome, RecoveryOutcome::Discarded);
    assert_eq!(snapshot(dir.path()), snapshot(tree(OLD).path()));
}

/// A commit whose result is never taken changed nothing, whenever it is dropped.
#[test]
fn dropping_the_commit_future_undoes_it_whenever_it_happens() {
    let names: Vec<String> = (0..300).map(|i| format!("f{i}.txt")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "old")).collect();
    for delay_us in [0_u64, 200, 1_000, 5_000, 20_000, 100_000] {
        let dir = tree(&files);
        let old = snapshot(dir.path());
        let mut changes = FileChanges::new(dir.path());
        for name in &names {
            changes.write(name, "new");
        }
        let future = changes.commit();
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        drop(future);
        let after = snapshot(dir.path());
        let all_new = after.len() == old.len() && after.values().all(|c| c == "new");
        assert!(
            after == old || all_new,
            "after a drop at {delay_us} µs: mixed"
        );
    }
}

#[test]
fn an_awaited_commit_reports_its_counts() {
    let dir = tree(OLD);
    let committed = block_on(changes(dir.path()).commit()).unwrap();
    assert_eq!(committed.written, 3);
    assert_eq!(snapshot(dir.path()), expected_new());
}

/// A minimal executor: the commit wakes its waker from its own thread.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
