//! An `ast_edit` apply interrupted through `xcsh-plugins mcp` (issue 34), with the real `rmcp`
//! client on the server's stdio and 2,000 generated Rust files to rewrite (`foo($A)` to
//! `bar($A)`), interrupted at several moments, mid-commit included:
//!
//! - by the client's `notifications/cancelled` for the `resolve` call: the tree is all old or
//!   all new with no file besides, and the server's log message to the client says which;
//! - by the client closing stdin: the server cancels the call, waits for it, and exits 0 in
//!   reasonable time; the tree is all old or all new, and its stderr says which.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::json;
use xcsh_integration_tests::cancel_tree::{rust_tree, rust_tree_edit, whole, Snapshot, Whole};
use xcsh_integration_tests::mcp::{LogRecorder, McpServerProcess, PATIENCE};

const FILES: usize = 2000;

/// When the test interrupts the apply.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// As soon as the commit's journal directory appears: mid-commit.
    JournalSeen,
    /// This long after the `resolve` request was sent.
    After(Duration),
}

/// Before the apply starts, while it runs, and (the last, most likely) after it completed.
const MOMENTS: [Moment; 6] = [
    Moment::JournalSeen,
    Moment::After(Duration::from_millis(5)),
    Moment::After(Duration::from_millis(60)),
    Moment::After(Duration::from_millis(200)),
    Moment::After(Duration::from_millis(700)),
    Moment::After(Duration::from_millis(2500)),
];

/// Wait for `moment`; whether it was the journal, seen.
async fn wait_for(dir: &Path, moment: Moment) -> bool {
    match moment {
        Moment::After(delay) => {
            tokio::time::sleep(delay).await;
            false
        }
        Moment::JournalSeen => {
            let journal = dir.join(".xcsh");
            let seen = tokio::time::timeout(PATIENCE, async {
                while !journal.exists() {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
            })
            .await;
            seen.is_ok()
        }
    }
}

/// A server on a fresh tree (only the built-in `ast_edit`), with the preview pending.
async fn previewed(
    dir: &Path,
) -> (
    McpServerProcess<LogRecorder>,
    LogRecorder,
    Snapshot,
    Snapshot,
) {
    let (old, new) = rust_tree(dir, FILES);
    let logs = LogRecorder::default();
    let args: Vec<OsString> = vec!["--no-default-dirs".into(), "--cwd".into(), dir.into()];
    let server = McpServerProcess::start_with_handler(args, logs.clone()).await;
    let preview = server.call("ast_edit", rust_tree_edit()).await;
    assert_ne!(preview.is_error, Some(true), "{preview:?}");
    (server, logs, old, new)
}

/// How the server let the client know what became of a call it cancelled.
enum Ended {
    /// It had answered the call (the result) before the cancellation reached it.
    Answered(serde_json::Value),
    /// Its log message about the cancelled call (the message's `data`).
    Reported(serde_json::Value),
}

/// Wait until the server answered request `id` (rmcp's client drops an answer to a request it
/// cancelled, so it is read from what the server wrote) or reported how it ended.
#[allow(deprecated)] // MCP logging: deprecated by SEP-2577 in rmcp, still what clients show.
async fn ended(
    server: &McpServerProcess<LogRecorder>,
    logs: &LogRecorder,
    id: &serde_json::Value,
) -> Ended {
    let found = tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some(report) = logs.messages().into_iter().next() {
                return Ended::Reported(report.data);
            }
            let answer = server
                .sent()
                .into_iter()
                .find(|message| &message["id"] == id && message.get("result").is_some());
            if let Some(answer) = answer {
                return Ended::Answered(answer["result"].clone());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| {
        panic!(
            "the server said nothing about the cancelled call:\n{}",
            server.stderr()
        )
    })
}

fn resolve_apply() -> ClientRequest {
    let arguments = json!({"action": "apply", "reason": "test"});
    let serde_json::Value::Object(arguments) = arguments else {
        unreachable!()
    };
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("resolve").with_arguments(arguments),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolve_cancelled_by_the_client_leaves_the_tree_old_or_new_and_says_which() {
    let mut undone_mid_commit = 0;
    for moment in MOMENTS {
        let dir = tempfile::tempdir().unwrap();
        let (server, logs, old, new) = previewed(dir.path()).await;
        let handle = server
            .client
            .send_cancellable_request(resolve_apply(), PeerRequestOptions::no_options())
            .await
            .expect("cannot send tools/call resolve");
        let id = serde_json::to_value(&handle.id).unwrap();
        let mid_commit = wait_for(dir.path(), moment).await;
        handle
            .cancel(Some("the user pressed Esc".to_owned()))
            .await
            .expect("cannot send notifications/cancelled");

        let tree = match ended(&server, &logs, &id).await {
            Ended::Answered(result) => {
                // The call had ended before the cancellation reached the server.
                let tree = whole(dir.path(), &old, &new);
                eprintln!("cancelled {moment:?}: {tree:?}; answered first");
                assert_ne!(result["isError"], true, "{result}");
                assert_eq!(tree, Whole::New, "{result}");
                tree
            }
            Ended::Reported(data) => {
                let tree = whole(dir.path(), &old, &new);
                assert_eq!(data["tool"], "resolve", "{data}");
                eprintln!("cancelled {moment:?}: {tree:?}; {}", data["message"]);
                if data["completed"] == true {
                    assert_eq!(tree, Whole::New, "{data}");
                } else {
                    assert_eq!(data["completed"], false, "{data}");
                    assert_eq!(tree, Whole::Old, "{data}");
                    let text = data["text"].as_str().unwrap();
                    assert!(
                        text.starts_with("apply of \"AST Edit: ") && text.contains("was cancelled"),
                        "{text}"
                    );
                    undone_mid_commit += usize::from(mid_commit);
                }
                tree
            }
        };
        // The action was consumed either way, and the server goes on.
        let next = server
            .call("resolve", json!({"action": "apply", "reason": "again"}))
            .await;
        assert_eq!(next.is_error, Some(true), "{next:?}");
        server.stop().await;
        assert_eq!(whole(dir.path(), &old, &new), tree, "{moment:?}");
    }
    assert!(
        undone_mid_commit > 0,
        "no cancellation came while the commit ran and undid it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_during_an_apply_cancels_it_and_the_server_exits_0_leaving_old_or_new() {
    let mut undone_mid_commit = 0;
    for moment in MOMENTS {
        let dir = tempfile::tempdir().unwrap();
        let (server, _logs, old, new) = previewed(dir.path()).await;
        let handle = server
            .client
            .send_cancellable_request(resolve_apply(), PeerRequestOptions::no_options())
            .await
            .expect("cannot send tools/call resolve");
        let mid_commit = wait_for(dir.path(), moment).await;
        // Close the client (the server's stdin ends); `stop` checks the exit status is 0 and
        // that only JSON-RPC reached stdout.
        let closing = Instant::now();
        let stderr = server.stop().await;
        let took = closing.elapsed();
        drop(handle);
        assert!(
            took < Duration::from_secs(5),
            "the server took {took:?} to exit"
        );
        let tree = whole(dir.path(), &old, &new);
        eprintln!("stdin closed {moment:?}: {tree:?} after {took:?}");
        // When the apply still ran at the end of input, the server says how it ended.
        let said = stderr
            .lines()
            .find(|line| line.contains("the client closed its input while the call ran"));
        match said {
            Some(line) if line.contains("; it ended: ") => {
                assert_eq!(tree, Whole::Old, "{line}");
                assert!(line.contains("was cancelled"), "{line}");
                undone_mid_commit += usize::from(mid_commit);
            }
            Some(line) => assert_eq!(tree, Whole::New, "{line}"),
            // It had ended (and answered) before the input closed.
            None => assert_eq!(tree, Whole::New, "{stderr}"),
        }
    }
    assert!(
        undone_mid_commit > 0,
        "closing stdin never came while the commit ran and undid it"
    );
}
