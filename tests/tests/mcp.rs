//! `xcsh-plugins mcp` driven as an agent would drive it: the real `rmcp` client speaking
//! JSON-RPC over the child's stdin and stdout (`xcsh_integration_tests::mcp`, which keeps
//! every line the server writes to stdout, so `stop` can check that nothing but JSON-RPC got
//! there).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ContentBlock, Tool,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{json, Value};
use xcsh_integration_tests::mcp::{McpServerProcess, PATIENCE};
use xcsh_integration_tests::{artifacts, listing, scratch};
use xcsh_loader::{NO_PENDING_ACTION, RESOLVE_REMINDER};

type Server = McpServerProcess;

/// Start `xcsh-plugins --no-default-dirs --plugin <batch-rename> --plugin <fixture-faults>
/// --cwd <cwd> mcp` and initialize a client on its stdio.
async fn start(cwd: &Path) -> Server {
    start_with(cwd, &["batch-rename", "fixture-faults"]).await
}

/// Start `xcsh-plugins mcp` with these plugin packages and initialize a client on its stdio.
async fn start_with(cwd: &Path, plugins: &[&str]) -> Server {
    let mut args: Vec<OsString> = vec!["--no-default-dirs".into()];
    for package in plugins {
        args.push("--plugin".into());
        args.push(artifacts().plugin(package).into());
    }
    args.push("--cwd".into());
    args.push(cwd.into());
    McpServerProcess::start(args).await
}

fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.as_str(),
            other => panic!("unexpected content block {other:?}"),
        })
        .collect()
}

fn meta(result: &CallToolResult) -> serde_json::Map<String, Value> {
    result
        .meta
        .as_ref()
        .map(|meta| meta.0.clone())
        .unwrap_or_default()
}

fn rename_args(files: &[&str], find: &str, replace: &str) -> Value {
    json!({"files": files, "find": find, "replace": replace})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_previews_resolves_and_survives_faults() {
    let dir = scratch(&["a1.txt", "a2.txt"]);
    let server = start(dir.path()).await;

    // initialize
    let info = server.client.peer_info().expect("no initialize result");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("xcsh-plugins")
    );
    assert!(info.capabilities.tools.is_some(), "tools not advertised");

    // tools/list
    let tools = tokio::time::timeout(PATIENCE, server.client.list_all_tools())
        .await
        .expect("tools/list timed out")
        .expect("tools/list failed");
    let by_name: HashMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_ref(), t)).collect();
    for name in ["batch_rename_preview", "resolve", "panic_execute", "hang"] {
        assert!(by_name.contains_key(name), "{name} not listed: {tools:?}");
    }
    let batch = by_name["batch_rename_preview"];
    assert_eq!(batch.title.as_deref(), Some("Batch Rename Preview"));
    let hints = batch.annotations.as_ref().expect("no annotations");
    assert_eq!(
        hints.destructive_hint,
        Some(false),
        "a preview is not destructive"
    );
    assert!(batch.input_schema["properties"]["files"].is_object());
    let resolve = by_name["resolve"];
    assert_eq!(resolve.title.as_deref(), Some("Resolve"));
    let hints = resolve.annotations.as_ref().expect("no annotations");
    assert_eq!(
        hints.destructive_hint,
        Some(true),
        "resolve applies changes"
    );
    assert_eq!(
        Value::Object(resolve.input_schema.as_ref().clone()),
        json!({
            "type": "object",
            "properties": {
                "action": {"enum": ["apply", "discard"]},
                "reason": {"type": "string", "description": "Why you're applying or discarding"}
            },
            "required": ["action", "reason"],
            "additionalProperties": false
        })
    );
    let panics = by_name["panic_execute"];
    assert_eq!(panics.title.as_deref(), Some("panic_execute"));
    assert_eq!(
        panics.annotations.as_ref().and_then(|a| a.destructive_hint),
        None,
        "an ordinary tool gets no destructive hint"
    );

    // A preview: renames nothing, leaves one pending action and steers toward resolve.
    let preview = server
        .call(
            "batch_rename_preview",
            rename_args(&["a1.txt", "a2.txt"], "a", "b"),
        )
        .await;
    assert_eq!(preview.is_error, Some(false), "{preview:?}");
    assert_eq!(
        texts(&preview),
        [
            "Prepared rename plan for 2 files\na1.txt -> b1.txt\na2.txt -> b2.txt",
            RESOLVE_REMINDER
        ]
    );
    let preview_meta = meta(&preview);
    assert_eq!(preview_meta["xcsh/pending"], json!(1));
    assert_eq!(
        preview_meta["xcsh/toolChoice"],
        json!({"type": "tool", "name": "resolve"})
    );
    // An action without details: its label and source only.
    assert_eq!(
        preview_meta["xcsh/pendingDetails"],
        json!([{"label": "Batch rename: 2 files", "sourceToolName": "batch_rename_preview"}])
    );
    // How it looks, for a client that draws (issue 55): the view beside the text, never in it.
    let view = &preview_meta["xcsh/view"];
    assert_eq!(view["status"]["title"], json!("Batch Rename"));
    assert_eq!(
        view["status"]["badge"],
        json!({"label": "proposed", "role": "warning"})
    );
    assert_eq!(
        view["blocks"][0]["expanded"][0],
        json!({"type": "table", "columns": ["from", "to"],
               "rows": [["a1.txt", "b1.txt"], ["a2.txt", "b2.txt"]]})
    );
    assert_eq!(listing(dir.path()), ["a1.txt", "a2.txt"]);

    // resolve apply: the files are renamed, nothing is pending any more.
    let applied = server
        .call(
            "resolve",
            json!({"action": "apply", "reason": "looks right"}),
        )
        .await;
    assert_eq!(applied.is_error, Some(false), "{applied:?}");
    assert_eq!(
        texts(&applied),
        ["Applied batch rename. Reason: looks right"]
    );
    let applied_meta = meta(&applied);
    // Present on every result: 0 once nothing is pending.
    assert_eq!(applied_meta["xcsh/pending"], json!(0), "{applied_meta:?}");
    assert!(
        !applied_meta.contains_key("xcsh/toolChoice")
            && !applied_meta.contains_key("xcsh/pendingDetails"),
        "{applied_meta:?}"
    );
    assert_eq!(
        applied_meta["xcsh/details"],
        json!({"action": "apply", "reason": "looks right", "sourceToolName": "batch_rename_preview", "label": "Batch rename: 2 files"})
    );
    assert_eq!(listing(dir.path()), ["b1.txt", "b2.txt"]);

    // resolve again: nothing pending, an error result with the exact message.
    let again = server
        .call("resolve", json!({"action": "apply", "reason": "again"}))
        .await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    assert_eq!(texts(&again), [NO_PENDING_ACTION]);

    // Arguments that break the schema: an error result, not a protocol error.
    let invalid = server
        .call("batch_rename_preview", json!({"files": "b1.txt"}))
        .await;
    assert_eq!(invalid.is_error, Some(true), "{invalid:?}");
    assert!(
        texts(&invalid)[0].contains("Invalid arguments"),
        "{invalid:?}"
    );
    let invalid = server
        .call("resolve", json!({"action": "maybe", "reason": "?"}))
        .await;
    assert_eq!(invalid.is_error, Some(true), "{invalid:?}");

    // An unknown tool: a protocol error, invalid params (-32602), naming the closest tools.
    let unknown = tokio::time::timeout(
        PATIENCE,
        server
            .client
            .call_tool(CallToolRequestParams::new("batch_rename_preveiw")),
    )
    .await
    .unwrap();
    let Err(rmcp::ServiceError::McpError(error)) = unknown else {
        panic!("an unknown tool must be a JSON-RPC error: {unknown:?}");
    };
    assert_eq!(error.code.0, -32602, "{error:?}");
    assert_eq!(
        error.message,
        "Tool \"batch_rename_preveiw\" not found; did you mean \"batch_rename_preview\"?"
    );
    assert_eq!(
        error.data,
        Some(json!({"tool": "batch_rename_preveiw", "didYouMean": ["batch_rename_preview"]}))
    );

    // A tool that panics: an error result, and the server keeps serving.
    let panicked = server.call("panic_execute", json!({})).await;
    assert_eq!(panicked.is_error, Some(true), "{panicked:?}");
    assert!(!texts(&panicked)[0].is_empty());
    let next = server
        .call(
            "batch_rename_preview",
            rename_args(&["b1.txt", "b2.txt"], "b", "c"),
        )
        .await;
    assert_eq!(next.is_error, Some(false), "{next:?}");
    assert_eq!(meta(&next)["xcsh/pending"], json!(1));
    let discarded = server
        .call("resolve", json!({"action": "discard", "reason": "not now"}))
        .await;
    assert_eq!(discarded.is_error, Some(false), "{discarded:?}");
    assert_eq!(meta(&discarded)["xcsh/details"]["action"], json!("discard"));
    assert_eq!(listing(dir.path()), ["b1.txt", "b2.txt"]);

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_ends_and_the_server_keeps_answering() {
    let dir = scratch(&[]);
    let server = start(dir.path()).await;

    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("hang")));
    let handle = server
        .client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("cannot send tools/call hang");
    // Let the call get going (it sleeps for an hour), then cancel it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle
        .cancel(Some("the test is done waiting".to_owned()))
        .await
        .expect("cannot send notifications/cancelled");

    // The session ended the call (the server logs it once the call has returned) ...
    server.wait_for_log("cancelled call ended").await;
    // ... and the server answers the next request.
    let next = server.call("fail", json!({})).await;
    assert_eq!(next.is_error, Some(true), "{next:?}");
    assert_eq!(texts(&next), ["deliberate failure"]);

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_annotations_reach_an_mcp_client_in_tools_list() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["fixture-multi"]).await;
    let tools = tokio::time::timeout(PATIENCE, server.client.list_all_tools())
        .await
        .expect("tools/list timed out")
        .expect("tools/list failed");
    let by_name: HashMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_ref(), t)).collect();
    let hints = |name: &str| {
        let annotations = by_name[name].annotations.clone().expect("no annotations");
        (
            annotations.read_only_hint,
            annotations.destructive_hint,
            annotations.idempotent_hint,
            annotations.open_world_hint,
        )
    };
    // Every hint the plugin gives, as it gives it; `destructive` it does not give.
    assert_eq!(hints("echo"), (Some(true), None, Some(true), Some(false)));
    // A deferrable tool's preview: read-only and not destructive by default.
    assert_eq!(hints("note_preview"), (Some(true), Some(false), None, None));
    // `resolve` applies: destructive.
    assert_eq!(
        hints("resolve"),
        (Some(false), Some(true), Some(false), Some(false))
    );
    // On the wire, as the protocol spells them.
    let raw = serde_json::to_value(by_name["echo"]).unwrap();
    assert_eq!(raw["annotations"]["readOnlyHint"], true);
    assert_eq!(raw["annotations"]["idempotentHint"], true);
    assert_eq!(raw["annotations"]["openWorldHint"], false);
    assert!(raw["annotations"].get("destructiveHint").is_none(), "{raw}");
    server.stop().await;
}

/// docs/guide/src/pending.md: a pending action's `details` reach the client in `_meta` under a key
/// of their own, `xcsh/pendingDetails`: every pending action newest first (the order `resolve`
/// takes them), `details` left out for an action without; `xcsh/details` stays the result's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_actions_details_reach_an_mcp_client() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), &["fixture-multi"]).await;
    let note = server
        .call("note_preview", json!({"file": "n.txt", "content": "hi"}))
        .await;
    assert_eq!(note.is_error, Some(false), "{note:?}");
    let note_meta = meta(&note);
    let note_entry = json!({"label": "Note: write n.txt", "sourceToolName": "custom_tool", "details": {"file": "n.txt"}});
    assert_eq!(
        note_meta["xcsh/pendingDetails"],
        json!([note_entry]),
        "{note_meta:?}"
    );
    assert!(
        !note_meta.contains_key("xcsh/details"),
        "the preview's result has no details"
    );

    let stacked = server.call("stack_preview", json!({"count": 1})).await;
    assert_eq!(stacked.is_error, Some(false), "{stacked:?}");
    let stacked_meta = meta(&stacked);
    assert_eq!(stacked_meta["xcsh/pending"], json!(2));
    assert_eq!(
        stacked_meta["xcsh/pendingDetails"],
        json!([{"label": "Stack: item 1", "sourceToolName": "stack_preview"}, note_entry]),
        "newest first, one entry per pending action"
    );

    // Resolving the newest leaves the note's entry; the result's details stay in `xcsh/details`.
    let resolved = server
        .call("resolve", json!({"action": "discard", "reason": "no"}))
        .await;
    let resolved_meta = meta(&resolved);
    assert_eq!(resolved_meta["xcsh/pendingDetails"], json!([note_entry]));
    assert_eq!(
        resolved_meta["xcsh/details"]["label"],
        json!("Stack: item 1")
    );
    let resolved = server
        .call("resolve", json!({"action": "discard", "reason": "no"}))
        .await;
    let resolved_meta = meta(&resolved);
    assert_eq!(resolved_meta["xcsh/pending"], json!(0));
    assert!(
        !resolved_meta.contains_key("xcsh/pendingDetails"),
        "{resolved_meta:?}"
    );
    server.stop().await;
}
