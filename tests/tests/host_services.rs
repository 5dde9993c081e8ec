//! Host services (issue 43) through a Rust `Session`, on the real `.so` files, in a plugin
//! process and in-process: the embedder's user answers the sample plugin's confirmation, its
//! model answers `complete`, a question is withdrawn when its call times out, an answer
//! outside the question never reaches the plugin, and without services the defaults hold.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use xcsh_integration_tests::plugin;
use xcsh_loader::services::{
    CompletionRequest, HostReply, HostRequest, HostServices, ModelInfo, NotifyLevel,
};
use xcsh_loader::store::BoxFuture;
use xcsh_loader::{CallOptions, Isolation, PluginError, Session};

/// An embedder's user and model: answers from a script, a record of what was asked.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<HostReply>>,
    asked: Mutex<Vec<HostRequest>>,
    notes: Mutex<Vec<String>>,
    /// `ask` never answers; counts the questions withdrawn (their futures dropped).
    hang: bool,
    withdrawn: Arc<AtomicUsize>,
}

struct CountDrop(Arc<AtomicUsize>);
impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Scripted {
    fn answering(answers: impl IntoIterator<Item = HostReply>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers.into_iter().collect()),
            ..Self::default()
        })
    }
}

impl HostServices for Scripted {
    fn has_ui(&self) -> bool {
        true
    }
    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        self.asked.lock().unwrap().push(question);
        if self.hang {
            let guard = CountDrop(Arc::clone(&self.withdrawn));
            return Box::pin(async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                unreachable!()
            });
        }
        let answer = self.answers.lock().unwrap().pop_front();
        Box::pin(async move { answer.ok_or_else(|| PluginError::new("no answer scripted")) })
    }
    fn notify(&self, message: &str, _level: NotifyLevel) {
        self.notes.lock().unwrap().push(message.to_owned());
    }
    fn model(&self) -> Option<ModelInfo> {
        Some(ModelInfo {
            provider: "test".into(),
            id: "scripted".into(),
        })
    }
    fn can_complete(&self) -> bool {
        true
    }
    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, PluginError>> {
        let prompt = request.messages[0].text.clone();
        Box::pin(async move { Ok(format!("you said {prompt}")) })
    }
}

fn session(
    dir: &std::path::Path,
    isolation: Isolation,
    services: Option<Arc<Scripted>>,
) -> Session {
    let mut builder = Session::builder(dir)
        .default_dirs(false)
        .isolation(isolation)
        .plugin(plugin("batch-rename"))
        .plugin(plugin("fixture-conformance"));
    if let Some(services) = services {
        builder = builder.host_services(services);
    }
    let session = builder.build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    session
}

/// 21 renames: above the sample plugin's threshold of 20.
fn many_renames() -> serde_json::Value {
    let files: Vec<String> = (0..21).map(|i| format!("a{i}.txt")).collect();
    json!({"files": files, "find": "a", "replace": "b"})
}

const MODES: [Isolation; 2] = [Isolation::Process, Isolation::InProcess];

#[tokio::test]
async fn the_user_says_no_and_nothing_is_planned_in_both_modes() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = Scripted::answering([HostReply::Confirmed { yes: false }]);
        let session = session(dir.path(), isolation, Some(Arc::clone(&user)));
        let outcome = session.call("batch_rename_preview", many_renames()).await;
        assert_eq!(
            outcome.text(),
            "The user declined renaming 21 files; nothing was planned.",
            "{isolation:?}"
        );
        assert!(!session.has_pending());
        let asked = user.asked.lock().unwrap().clone();
        assert!(
            matches!(&asked[..], [HostRequest::Confirm { title, .. }] if title == "Batch rename"),
            "{isolation:?}: {asked:?}"
        );
        session.shutdown().await;
    }
}

#[tokio::test]
async fn without_a_user_the_sample_plans_as_always() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let session = session(dir.path(), isolation, None);
        let outcome = session.call("batch_rename_preview", many_renames()).await;
        assert!(
            outcome
                .text()
                .starts_with("Prepared rename plan for 21 files"),
            "{}",
            outcome.text()
        );
        assert!(session.has_pending());
        let sampled = session.call("test_sampling", json!({"prompt": "hi"})).await;
        assert!(sampled.is_error);
        assert_eq!(sampled.text(), xcsh_loader::services::NO_MODEL);
        session.shutdown().await;
    }
}

#[tokio::test]
async fn the_model_answers_complete_in_both_modes() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let session = session(dir.path(), isolation, Some(Scripted::answering([])));
        let outcome = session.call("test_sampling", json!({"prompt": "hi"})).await;
        assert!(!outcome.is_error, "{isolation:?}: {}", outcome.text());
        assert_eq!(outcome.text(), "LLM response: you said hi");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_form_answer_outside_its_schema_fails_the_call_naming_the_field() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = Scripted::answering([HostReply::Form {
            action: xcsh_loader::services::FormAction::Accept,
            content: Some(json!({"untitledSingle": "option9"})),
        }]);
        let session = session(dir.path(), isolation, Some(user));
        let outcome = session
            .call("test_elicitation_sep1330_enums", json!({}))
            .await;
        assert!(outcome.is_error, "{isolation:?}");
        assert!(
            outcome.text().contains("form field \"untitledSingle\""),
            "{}",
            outcome.text()
        );
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_question_open_when_its_call_times_out_is_withdrawn() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = Arc::new(Scripted {
            hang: true,
            ..Scripted::default()
        });
        let session = session(dir.path(), isolation, Some(Arc::clone(&user)));
        let options = CallOptions {
            timeout: Some(Duration::from_millis(700)),
            ..CallOptions::default()
        };
        let outcome = session
            .call_with("batch_rename_preview", many_renames(), options)
            .await;
        assert!(outcome.is_error, "{isolation:?}");
        assert!(outcome.text().contains("timed out"), "{}", outcome.text());
        // The question's future is dropped: the user no longer sees it.
        for _ in 0..50 {
            if user.withdrawn.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(user.withdrawn.load(Ordering::SeqCst), 1, "{isolation:?}");
        assert!(!session.has_pending());
        session.shutdown().await;
    }
}

#[tokio::test]
async fn session_events_reach_on_session_and_shutdown_is_the_last() {
    use xcsh_loader::services::{SessionChange, SessionReason, ToolResultEntry};
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::builder(dir.path())
            .default_dirs(false)
            .isolation(isolation)
            .plugin(plugin("fixture-todo"))
            .build();
        assert!(
            session.load_errors().is_empty(),
            "{:?}",
            session.load_errors()
        );
        // The process must run for an isolated plugin to hear events: one call first.
        let added = session
            .call("todo", json!({"action": "add", "item": "x"}))
            .await;
        assert_eq!(added.text(), "todo: [x]", "{isolation:?}");
        let mut branch = SessionChange::new(SessionReason::Branch);
        for (tool, items) in [("todo", json!(["a"])), ("other", json!(["z"]))] {
            branch.results.push(ToolResultEntry {
                tool_name: tool.into(),
                tool_call_id: "earlier".into(),
                details: json!({"items": items}),
            });
        }
        session.session_event(branch).await;
        let listed = session.call("todo", json!({"action": "list"})).await;
        assert_eq!(listed.text(), "todo: [a]", "{isolation:?}");
        assert_eq!(listed.result.details.unwrap()["heard"], json!(["branch"]));
        session.shutdown().await;
        let heard = std::fs::read_to_string(dir.path().join("todo-heard.txt")).unwrap();
        assert_eq!(heard, "branch\nshutdown\n", "{isolation:?}");
    }
}

/// A session on the fixture whose action uses the host in its apply and reject
/// (docs/guide/src/pending.md).
fn action_session(
    dir: &std::path::Path,
    isolation: Isolation,
    services: Option<Arc<Scripted>>,
) -> Session {
    let mut builder = Session::builder(dir)
        .default_dirs(false)
        .isolation(isolation)
        .plugin(plugin("fixture-action-context"));
    if let Some(services) = services {
        builder = builder.host_services(services);
    }
    let session = builder.build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    session
}

#[tokio::test]
async fn an_apply_asks_notifies_and_runs_a_program_in_both_modes() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = Scripted::answering([HostReply::Confirmed { yes: true }]);
        let session = action_session(dir.path(), isolation, Some(Arc::clone(&user)));
        let pushed = session.call("ask_on_apply", json!({})).await;
        assert!(!pushed.is_error, "{isolation:?}: {}", pushed.text());
        // Nothing is asked before the apply.
        assert!(user.asked.lock().unwrap().is_empty(), "{isolation:?}");
        let applied = session
            .call("resolve", json!({"action": "apply", "reason": "go"}))
            .await;
        assert!(!applied.is_error, "{isolation:?}: {}", applied.text());
        assert_eq!(
            applied.text(),
            "has_ui=true confirmed=true echo=from-apply",
            "{isolation:?}"
        );
        let asked = user.asked.lock().unwrap().clone();
        assert!(
            matches!(&asked[..], [HostRequest::Confirm { title, .. }] if title == "Apply"),
            "{isolation:?}: {asked:?}"
        );
        let notes = eventually(|| user.notes.lock().unwrap().clone()).await;
        assert_eq!(notes, ["applying (go)"], "{isolation:?}");

        // The apply kept its context: used after the action settled, it is a clear error.
        let stale = session.call("use_stale_context", json!({})).await;
        let text = stale.text();
        let ended = "this context belongs to the apply of \"Ask on apply: one question\", \
                     which has ended";
        assert!(
            text.starts_with(&format!("confirm error: {ended}")),
            "{isolation:?}: {text}"
        );
        assert!(
            text.contains(&format!("exec error: {ended}")),
            "{isolation:?}: {text}"
        );
        assert!(text.ends_with("cancelled=true"), "{isolation:?}: {text}");
        // Nothing more reached the user.
        assert_eq!(user.asked.lock().unwrap().len(), 1, "{isolation:?}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_reject_notifies_and_without_a_user_the_apply_gets_the_defaults() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = Scripted::answering([]);
        let session = action_session(dir.path(), isolation, Some(Arc::clone(&user)));
        session.call("ask_on_apply", json!({})).await;
        let discarded = session
            .call("resolve", json!({"action": "discard", "reason": "not now"}))
            .await;
        assert_eq!(
            discarded.text(),
            "rejected with has_ui=true",
            "{isolation:?}"
        );
        // A notification is not waited for (as `execute`'s are not): from a plugin process it
        // may land just after the reject's answer.
        let notes = eventually(|| user.notes.lock().unwrap().clone()).await;
        assert_eq!(notes, ["discarded (not now)"], "{isolation:?}");
        session.shutdown().await;

        // No services: no one to ask, so `confirm` is false and nothing waits.
        let session = action_session(dir.path(), isolation, None);
        session.call("ask_on_apply", json!({})).await;
        let applied = session
            .call("resolve", json!({"action": "apply", "reason": "go"}))
            .await;
        assert_eq!(
            applied.text(),
            "has_ui=false confirmed=false echo=from-apply",
            "{isolation:?}"
        );
        session.shutdown().await;
    }
}

/// What `read` gives once it is not empty, waiting up to 5 s for it.
async fn eventually(read: impl Fn() -> Vec<String>) -> Vec<String> {
    for _ in 0..500 {
        let value = read();
        if !value.is_empty() {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    read()
}
