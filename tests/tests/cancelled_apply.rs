//! A `resolve` apply cancelled while it runs (issue 34), through the session API, on the real
//! `batch_rename` plugin renaming 2,000 files: in a plugin process (the cancellation reaches
//! the child, which drops the plugin's apply, so its staged file changes are undone there) and
//! in-process. Whatever the moment, the tree is all old or all new with no file besides, as soon
//! as `resolve` answers, and the answer says which: `was cancelled` means nothing changed.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use xcsh_integration_tests::cancel_tree::{rename_tree, rename_tree_preview, whole, Whole};
use xcsh_integration_tests::plugin;
use xcsh_loader::{CallOptions, CancelToken, Isolation, Session};

const FILES: usize = 2000;

/// When the test cancels the apply.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// As soon as the commit's journal directory appears: mid-apply.
    JournalSeen,
    /// This long after `resolve` started.
    After(Duration),
}

/// Cancel `moment` into the apply; fires `cancel`, and says whether the journal was seen.
async fn cancel_at(dir: &Path, moment: Moment, cancel: CancelToken) -> bool {
    match moment {
        Moment::After(delay) => {
            tokio::time::sleep(delay).await;
            cancel.cancel();
            false
        }
        Moment::JournalSeen => {
            let journal = dir.join(".xcsh");
            while !journal.exists() {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            cancel.cancel();
            true
        }
    }
}

/// Preview renaming [`FILES`] files, apply, cancel at `moment`; check the tree and the answer
/// agree, right away and after the session ended. Returns what the tree became, and whether
/// the cancellation came mid-apply.
async fn cancelled_apply(isolation: Isolation, moment: Moment) -> (Whole, bool) {
    let dir = tempfile::tempdir().unwrap();
    let (names, old, new) = rename_tree(dir.path(), FILES);
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .isolation(isolation)
        .plugin(plugin("batch-rename"))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    let preview = session
        .call("batch_rename_preview", rename_tree_preview(&names))
        .await;
    assert!(!preview.is_error, "{}", preview.text());

    let cancel = CancelToken::new();
    let watcher = tokio::spawn({
        let (dir, cancel) = (dir.path().to_owned(), cancel.clone());
        async move { cancel_at(&dir, moment, cancel).await }
    });
    let options = CallOptions {
        cancel,
        ..CallOptions::default()
    };
    let arguments = json!({"action": "apply", "reason": "test"});
    let outcome = session.call_with("resolve", arguments, options).await;
    // `resolve` answers once the apply has ended wherever it ran: the tree is settled now.
    let now = whole(dir.path(), &old, &new);
    let context = format!("{isolation} {moment:?}: {}", outcome.text());
    if outcome.is_error {
        assert_eq!(
            outcome.text(),
            format!("apply of \"Batch rename: {FILES} files\" was cancelled; the pending action was consumed"),
            "{context}"
        );
        assert_eq!(
            now,
            Whole::Old,
            "cancelled, yet the files changed: {context}"
        );
    } else {
        assert_eq!(
            now,
            Whole::New,
            "applied, yet not every file changed: {context}"
        );
    }
    assert!(!session.has_pending());
    session.shutdown().await;
    assert_eq!(whole(dir.path(), &old, &new), now, "{context}");
    // Whether the watcher got to cancel mid-apply (it still waits when the apply won).
    let mid_apply = if watcher.is_finished() {
        watcher.await.unwrap()
    } else {
        watcher.abort();
        false
    };
    (now, mid_apply)
}

async fn at_every_moment(isolation: Isolation) {
    let mut undone_mid_apply = 0;
    let moments = [
        Moment::JournalSeen,
        Moment::After(Duration::from_millis(1)),
        Moment::After(Duration::from_millis(30)),
        Moment::After(Duration::from_millis(120)),
        Moment::After(Duration::from_millis(400)),
        Moment::JournalSeen,
    ];
    for moment in moments {
        let (tree, mid_apply) = cancelled_apply(isolation, moment).await;
        eprintln!("{isolation}, cancelled {moment:?}: {tree:?}");
        if mid_apply && tree == Whole::Old {
            undone_mid_apply += 1;
        }
    }
    assert!(
        undone_mid_apply > 0,
        "no cancellation came while the commit ran and undid it ({isolation})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_cancelled_in_a_plugin_process_is_undone_there_or_completes_and_says_which() {
    at_every_moment(Isolation::Process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_cancelled_in_process_is_undone_or_completes_and_says_which() {
    at_every_moment(Isolation::InProcess).await;
}

/// A timeout reaches the plugin process too: its apply is dropped there, the tree is as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_apply_in_a_plugin_process_is_undone_there() {
    let dir = tempfile::tempdir().unwrap();
    let (names, old, new) = rename_tree(dir.path(), FILES);
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .isolation(Isolation::Process)
        .plugin(plugin("batch-rename"))
        .build();
    let preview = session
        .call("batch_rename_preview", rename_tree_preview(&names))
        .await;
    assert!(!preview.is_error, "{}", preview.text());
    let options = CallOptions {
        timeout: Some(Duration::from_millis(5)),
        ..CallOptions::default()
    };
    let arguments = json!({"action": "apply", "reason": "test"});
    let outcome = session.call_with("resolve", arguments, options).await;
    let now = whole(dir.path(), &old, &new);
    assert_eq!(now == Whole::Old, outcome.is_error, "{}", outcome.text());
    session.shutdown().await;
    assert_eq!(whole(dir.path(), &old, &new), now);
}
