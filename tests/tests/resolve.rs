//! The pending-action flow through real plugins: preview, `resolve`, LIFO, steering, and the
//! store's absence.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use xcsh_integration_tests::{listing, plugin, scratch};
use xcsh_loader::{
    CallOptions, Provider, Session, NO_PENDING_ACTION, RESOLVE_REMINDER, STORE_UNAVAILABLE,
};

fn batch_session(dir: &Path) -> Session {
    Session::builder(dir)
        .default_dirs(false)
        .plugin(plugin("batch-rename"))
        .plugin(plugin("fixture-multi"))
        .build()
}

fn rename_args() -> Value {
    json!({"files": ["a1.txt", "a2.txt"], "find": "a", "replace": "b"})
}

fn resolve(action: &str, reason: &str) -> Value {
    json!({"action": action, "reason": reason})
}

#[tokio::test]
async fn preview_then_apply_renames_and_reports_details() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = batch_session(dir.path());
    let preview = session.call("batch_rename_preview", rename_args()).await;
    assert!(!preview.is_error, "{}", preview.text());
    assert_eq!(
        preview.text(),
        "Prepared rename plan for 2 files\na1.txt -> b1.txt\na2.txt -> b2.txt"
    );
    assert_eq!(
        listing(dir.path()),
        ["a1.txt", "a2.txt"],
        "execute renamed something"
    );
    assert_eq!(session.store().unwrap().count(), 1);
    assert_eq!(
        session.store().unwrap().peek().unwrap().label,
        "Batch rename: 2 files"
    );

    let applied = session
        .call("resolve", resolve("apply", "looks right"))
        .await;
    assert!(!applied.is_error, "{}", applied.text());
    assert_eq!(applied.text(), "Applied batch rename. Reason: looks right");
    assert_eq!(
        applied.result.details,
        Some(
            json!({"action":"apply","reason":"looks right","sourceToolName":"batch_rename_preview","label":"Batch rename: 2 files"})
        )
    );
    assert_eq!(listing(dir.path()), ["b1.txt", "b2.txt"]);
    assert!(!session.has_pending());
}

#[tokio::test]
async fn discard_runs_reject_and_changes_nothing() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = batch_session(dir.path());
    session.call("batch_rename_preview", rename_args()).await;
    let discarded = session.call("resolve", resolve("discard", "not now")).await;
    assert!(!discarded.is_error);
    assert_eq!(discarded.text(), "Discarded batch rename. Reason: not now");
    assert_eq!(
        discarded.result.details.as_ref().unwrap()["action"],
        "discard"
    );
    assert_eq!(listing(dir.path()), ["a1.txt", "a2.txt"]);
}

#[tokio::test]
async fn apply_of_a_stale_preview_renames_nothing_and_names_the_file() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = batch_session(dir.path());
    session.call("batch_rename_preview", rename_args()).await;
    std::fs::write(dir.path().join("b2.txt"), "appeared after the preview").unwrap();
    let applied = session.call("resolve", resolve("apply", "go")).await;
    assert!(applied.is_error);
    assert!(applied.text().contains("b2.txt"), "{}", applied.text());
    assert_eq!(listing(dir.path()), ["a1.txt", "a2.txt", "b2.txt"]);
    // The failed action was consumed (the design note's `resolve`, even though batch_rename's
    // apply is retryable: only a runtime that keeps failed previews retries), and the details
    // still describe it.
    assert!(!session.has_pending());
    assert_eq!(
        applied.result.details.as_ref().unwrap()["label"],
        "Batch rename: 2 files"
    );
}

#[tokio::test]
async fn without_a_store_pushing_fails_with_the_exact_error() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("batch-rename"))
        .without_store()
        .build();
    let preview = session.call("batch_rename_preview", rename_args()).await;
    assert!(preview.is_error);
    assert_eq!(preview.text(), STORE_UNAVAILABLE);
    assert_eq!(
        STORE_UNAVAILABLE,
        "Pending action store unavailable for custom tools in this runtime."
    );
    assert_eq!(listing(dir.path()), ["a1.txt", "a2.txt"]);
    let resolved = session.call("resolve", resolve("apply", "x")).await;
    assert_eq!(resolved.text(), NO_PENDING_ACTION);
}

#[tokio::test]
async fn resolve_with_nothing_pending_is_an_error_with_details() {
    let dir = scratch(&[]);
    let session = batch_session(dir.path());
    let outcome = session.call("resolve", resolve("apply", "x")).await;
    assert!(outcome.is_error);
    assert_eq!(
        outcome.text(),
        "No pending action to resolve. Nothing to apply or discard."
    );
    assert_eq!(
        outcome.result.details,
        Some(json!({"action":"apply","reason":"x","sourceToolName":null,"label":null}))
    );
}

#[tokio::test]
async fn several_actions_from_one_call_resolve_newest_first() {
    let dir = scratch(&[]);
    let session = batch_session(dir.path());
    let pushed = session.call("stack_preview", json!({"count": 3})).await;
    assert_eq!(pushed.text(), "pushed 3");
    assert_eq!(session.store().unwrap().count(), 3);
    for i in (1..=3).rev() {
        let outcome = session.call("resolve", resolve("apply", "r")).await;
        assert_eq!(outcome.text(), format!("applied item {i} (r)"));
        assert_eq!(
            outcome.result.details.as_ref().unwrap()["sourceToolName"],
            "stack_preview"
        );
    }
    assert_eq!(
        session.call("resolve", resolve("apply", "r")).await.text(),
        NO_PENDING_ACTION
    );
}

#[tokio::test]
async fn actions_from_two_tools_resolve_lifo_with_default_texts() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = batch_session(dir.path());
    session.call("batch_rename_preview", rename_args()).await;
    session
        .call(
            "note_preview",
            json!({"file": "note.txt", "content": "hello"}),
        )
        .await;
    // Newest first: the note, which has no reject and whose apply returns no text.
    let first = session.call("resolve", resolve("apply", "ok")).await;
    assert_eq!(first.text(), "Applied: Note: write note.txt.");
    assert_eq!(
        first.result.details.as_ref().unwrap()["sourceToolName"],
        "custom_tool"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt")).unwrap(),
        "hello"
    );
    let second = session.call("resolve", resolve("discard", "later")).await;
    assert_eq!(second.text(), "Discarded batch rename. Reason: later");

    session
        .call("note_preview", json!({"file": "other.txt", "content": "x"}))
        .await;
    let discarded = session.call("resolve", resolve("discard", "no")).await;
    assert_eq!(
        discarded.text(),
        "Discarded: Note: write other.txt. Reason: no"
    );
    assert!(!dir.path().join("other.txt").exists());
}

#[tokio::test]
async fn tool_choice_is_forced_only_while_something_is_pending() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let session = batch_session(dir.path());
    for provider in Provider::ALL {
        assert_eq!(session.tool_choice(provider), None);
    }
    session.call("batch_rename_preview", rename_args()).await;
    let anthropic = session.tool_choice(Provider::Anthropic).unwrap();
    assert_eq!(anthropic.json, json!({"type":"tool","name":"resolve"}));
    assert!(anthropic.incompatible_with_extended_thinking);
    assert_eq!(
        session.tool_choice(Provider::OpenAi).unwrap().json,
        json!({"type":"function","function":{"name":"resolve"}})
    );
    assert_eq!(
        session.tool_choice(Provider::OpenAiResponses).unwrap().json,
        json!({"type":"function","name":"resolve"})
    );
    assert_eq!(
        session.tool_choice(Provider::Google).unwrap().json,
        json!({"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["resolve"]}})
    );
    assert_eq!(
        session.tool_choice(Provider::Bedrock).unwrap().json,
        json!({"tool":{"name":"resolve"}})
    );
    session.call("resolve", resolve("discard", "x")).await;
    assert_eq!(session.tool_choice(Provider::Anthropic), None);
}

#[tokio::test]
async fn every_push_queues_one_hidden_reminder() {
    let dir = scratch(&[]);
    let session = batch_session(dir.path());
    session.call("stack_preview", json!({"count": 2})).await;
    let messages = session.take_steering_messages();
    assert_eq!(messages.len(), 2);
    for message in &messages {
        assert_eq!(message.content, RESOLVE_REMINDER);
        assert_eq!(message.tag, "resolve-reminder");
        assert_eq!(message.source_tool_name, "stack_preview");
    }
    assert_eq!(
        RESOLVE_REMINDER,
        "<system-reminder>\nThis is a preview. Call the `resolve` tool to apply or discard these changes.\n</system-reminder>"
    );
    assert!(session.take_steering_messages().is_empty());
}

#[tokio::test]
async fn arguments_violating_the_schema_are_refused_before_execute() {
    let dir = scratch(&[]);
    let session = batch_session(dir.path());
    let outcome = session
        .call("note_preview", json!({"file": 7, "content": "x"}))
        .await;
    assert!(outcome.is_error);
    let text = outcome.text();
    assert!(text.contains("\"note_preview\""), "{text}");
    assert!(text.contains("/file"), "{text}");
    assert!(!session.has_pending(), "the tool ran");
    let missing = session
        .call("batch_rename_preview", json!({"files": []}))
        .await;
    assert!(missing.is_error);
    assert!(
        missing.text().contains("\"find\" is a required property"),
        "{}",
        missing.text()
    );

    for bad in [
        json!({"action": "maybe", "reason": "x"}),
        json!({"action": "apply"}),
        json!({"action": "apply", "reason": "x", "extra": 1}),
    ] {
        let outcome = session.call("resolve", bad.clone()).await;
        assert!(outcome.is_error, "{bad}");
        assert!(outcome.text().contains("\"resolve\""), "{}", outcome.text());
    }
}

#[tokio::test]
async fn resolve_is_absent_without_deferrable_tools_and_unknown_tools_are_errors() {
    let dir = scratch(&[]);
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .plugin(plugin("fixture-tokio"))
        .build();
    assert!(!session.has_resolve());
    assert!(session.tools().iter().all(|t| t.name != "resolve"));
    let outcome = session.call("resolve", resolve("apply", "x")).await;
    assert_eq!(outcome.text(), "Tool \"resolve\" not found");
    assert_eq!(
        session.call("nope", json!({})).await.text(),
        "Tool \"nope\" not found"
    );
}

#[tokio::test]
async fn sessions_never_share_a_store() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let first = batch_session(dir.path());
    let second = batch_session(dir.path());
    first.call("batch_rename_preview", rename_args()).await;
    assert!(first.has_pending());
    assert!(!second.has_pending());
    assert_eq!(
        second.call("resolve", resolve("apply", "x")).await.text(),
        NO_PENDING_ACTION
    );
    assert_eq!(listing(dir.path()), ["a1.txt", "a2.txt"]);
    assert!(!first.call("resolve", resolve("apply", "x")).await.is_error);
    assert_eq!(listing(dir.path()), ["b1.txt", "b2.txt"]);
}

#[tokio::test]
async fn partial_updates_reach_the_caller() {
    let dir = scratch(&[]);
    let session = batch_session(dir.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        tool_call_id: Some("call-42".into()),
        updates: Some(Arc::new(move |partial| {
            sink.lock().unwrap().push(partial.joined_text())
        })),
        ..CallOptions::default()
    };
    let outcome = session
        .call_with("echo", json!({"text": "hi"}), options)
        .await;
    assert_eq!(outcome.text(), "hi");
    assert_eq!(outcome.result.details, Some(json!({"id": "call-42"})));
    assert_eq!(*seen.lock().unwrap(), ["echoing"]);
}
