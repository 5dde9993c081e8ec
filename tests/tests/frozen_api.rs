//! Plugins built against frozen copies of `xcsh-plugin-api` 0.2.0 (`tests/frozen/`), 0.5.1
//! (`tests/frozen-0.5/`), 0.6.0 (`tests/frozen-0.6/`) and 0.7.0 (`tests/frozen-0.7/`) in the
//! current host: they load, list, run, use what their API offered (0.6: host services, session
//! events, programs, audio and resources; 0.7: `#[tool]`, host services in `apply` and
//! `reject`), push pending actions and resolve them. This is the proof that the ABI grows
//! without breaking plugins already built (see `plugin-api/ABI.md`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::collections::HashMap;

use rmcp::model::Tool;
use rmcp::ServiceExt;
use serde_json::json;
use xcsh_integration_tests::frozen_v0_2_plugin;
use xcsh_loader::{Session, ToolHints, RESOLVE_TOOL_NAME};

fn frozen_session(dir: &std::path::Path) -> Session {
    Session::builder(dir)
        .default_dirs(false)
        .plugin(frozen_v0_2_plugin())
        .build()
}

#[tokio::test]
async fn a_0_2_0_plugin_lists_runs_pushes_and_resolves_in_this_host() {
    let dir = tempfile::tempdir().unwrap();
    let session = frozen_session(dir.path());
    assert!(
        session.load_errors().is_empty(),
        "{:#?}",
        session.load_errors()
    );
    assert_eq!(session.plugins().len(), 1);
    assert_eq!(session.plugins()[0].api_version.to_string(), "0.2.0");

    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["frozen_echo", "frozen_preview", RESOLVE_TOOL_NAME]);
    let preview_spec = session.tools()[1].clone();
    assert_eq!(preview_spec.label, "Frozen Preview");
    assert!(preview_spec.deferrable && !preview_spec.hidden);
    assert_eq!(preview_spec.parameters["required"], json!(["text"]));
    // 0.2.0 predates tool annotations: every hint is absent, even the preview's read-only
    // default that 0.3's `CustomTool` gives deferrable tools.
    for spec in &session.tools()[..2] {
        assert_eq!(spec.hints, ToolHints::default(), "{}", spec.name);
    }
    let capabilities = xcsh_plugin_api::capabilities_of("0.2.0");
    assert!(!capabilities.contains(&"tool-annotations"));
    assert!(
        xcsh_plugin_api::capabilities_of(xcsh_plugin_api::API_VERSION)
            .contains(&"tool-annotations")
    );

    let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
    assert!(!echo.is_error, "{}", echo.text());
    assert_eq!(echo.text(), "echo: hi");
    assert_eq!(echo.result.details, Some(json!({"api": "0.2.0"})));

    // Push, then apply.
    let preview = session.call("frozen_preview", json!({"text": "a"})).await;
    assert!(!preview.is_error, "{}", preview.text());
    let store = session.store().unwrap();
    assert_eq!(store.count(), 1);
    let top = store.peek().unwrap();
    assert_eq!(top.label, "Frozen: write a");
    assert_eq!(top.source_tool_name, "frozen_preview");
    let applied = session
        .call("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert!(!applied.is_error, "{}", applied.text());
    assert_eq!(applied.text(), "applied a (ok)");
    assert_eq!(
        applied.result.details.unwrap()["sourceToolName"],
        "frozen_preview"
    );

    // Push, then discard through the plugin's reject.
    session.call("frozen_preview", json!({"text": "b"})).await;
    let discarded = session
        .call("resolve", json!({"action": "discard", "reason": "no"}))
        .await;
    assert!(!discarded.is_error, "{}", discarded.text());
    assert_eq!(discarded.text(), "rejected (no)");
    assert_eq!(store.count(), 0);
}

/// Over MCP, a 0.2.0 plugin's tools carry only what the host itself knows (the guide's "MCP",
/// `docs/guide/src/mcp.md`): the title, and for a deferrable tool `destructiveHint: false`; the
/// hints the plugin cannot give are left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_mcp_a_0_2_0_plugins_hints_are_absent() {
    let dir = tempfile::tempdir().unwrap();
    let session = frozen_session(dir.path());
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = tokio::spawn(xcsh_loader::mcp::serve(session, server_read, server_write));
    let client = ().serve(client_io).await.expect("MCP handshake");
    let tools = client.list_all_tools().await.expect("tools/list");
    let by_name: HashMap<&str, &Tool> = tools.iter().map(|t| (t.name.as_ref(), t)).collect();

    let echo = serde_json::to_value(by_name["frozen_echo"]).unwrap();
    assert_eq!(echo["annotations"], json!({"title": "Frozen Echo"}));
    let preview = serde_json::to_value(by_name["frozen_preview"]).unwrap();
    assert_eq!(
        preview["annotations"],
        json!({"title": "Frozen Preview", "destructiveHint": false})
    );
    let resolve = by_name[RESOLVE_TOOL_NAME].annotations.clone().unwrap();
    assert_eq!(resolve.destructive_hint, Some(true));

    // And the tool still runs over MCP.
    let arguments = json!({"text": "mcp"}).as_object().cloned().unwrap();
    let result = client
        .call_tool(rmcp::model::CallToolRequestParams::new("frozen_echo").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_ne!(result.is_error, Some(true));
    client.cancel().await.expect("close the client");
    server.await.unwrap().expect("the server ended cleanly");
}

#[test]
fn check_json_reports_the_0_2_0_version_its_capabilities_and_absent_hints() {
    let dir = tempfile::tempdir().unwrap();
    let lib = frozen_v0_2_plugin();
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args(["--json", "check"])
        .arg(&lib)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let file = &report["files"][0];
    assert_eq!(file["apiVersion"], "0.2.0");
    assert_eq!(file["capabilities"], json!(["tools", "pending-actions"]));
    assert_eq!(
        file["tools"][0]["annotations"],
        json!({"readOnly": null, "destructive": null, "idempotent": null, "openWorld": null})
    );
}

/// A host with a user who would say yes, and a model: what a 0.5 plugin never asks for.
struct Everything;

impl xcsh_loader::services::HostServices for Everything {
    fn has_ui(&self) -> bool {
        true
    }
    fn can_complete(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn a_0_5_1_plugin_runs_unchanged_in_this_host_in_both_isolation_modes() {
    use xcsh_loader::services::{SessionChange, SessionReason, ToolResultEntry};
    for isolation in [
        xcsh_loader::Isolation::Process,
        xcsh_loader::Isolation::InProcess,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::builder(dir.path())
            .default_dirs(false)
            .isolation(isolation)
            .host_services(std::sync::Arc::new(Everything))
            .plugin(xcsh_integration_tests::frozen_v0_5_plugin())
            .build();
        assert!(
            session.load_errors().is_empty(),
            "{:#?}",
            session.load_errors()
        );
        assert_eq!(session.plugins()[0].api_version.to_string(), "0.5.1");
        assert_eq!(session.plugins()[0].isolation, isolation);
        let capabilities = xcsh_plugin_api::capabilities_of("0.5.1");
        assert!(!capabilities.contains(&"host-services"), "{capabilities:?}");

        // Session events reach a plugin that predates them: ignored (the ABI's default body).
        let mut start = SessionChange::new(SessionReason::Start);
        start.results.push(ToolResultEntry {
            tool_name: "frozen_echo".into(),
            tool_call_id: "old".into(),
            details: json!({"n": 1}),
        });
        session.session_event(start).await;

        let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
        assert!(!echo.is_error, "{isolation:?}: {}", echo.text());
        assert_eq!(echo.text(), "echo: hi");
        assert_eq!(echo.result.details, Some(json!({"api": "0.5.1"})));

        let preview = session.call("frozen_preview", json!({"text": "a"})).await;
        assert_eq!(preview.text(), "previewed", "{isolation:?}");
        let applied = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "apply", "reason": "ok"}),
            )
            .await;
        assert_eq!(applied.text(), "applied a: ok", "{isolation:?}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_0_2_0_plugin_runs_in_process_too_with_host_services_offered() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .isolation(xcsh_loader::Isolation::InProcess)
        .host_services(std::sync::Arc::new(Everything))
        .plugin(frozen_v0_2_plugin())
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:#?}",
        session.load_errors()
    );
    session
        .session_event(xcsh_loader::services::SessionChange::new(
            xcsh_loader::services::SessionReason::Branch,
        ))
        .await;
    let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
    assert_eq!(echo.text(), "echo: hi");
    let preview = session.call("frozen_preview", json!({"text": "a"})).await;
    assert!(!preview.is_error, "{}", preview.text());
    let discarded = session
        .call(
            RESOLVE_TOOL_NAME,
            json!({"action": "discard", "reason": "no"}),
        )
        .await;
    assert!(!discarded.is_error, "{}", discarded.text());
    session.shutdown().await;
}

/// A 0.6 plugin's host: a user who answers from a script, with a record of what was asked and
/// of the notifications (as `tests/tests/host_services.rs` scripts one).
#[derive(Default)]
struct ScriptedUser {
    answers: std::sync::Mutex<std::collections::VecDeque<xcsh_loader::services::HostReply>>,
    asked: std::sync::Mutex<Vec<xcsh_loader::services::HostRequest>>,
    notes: std::sync::Mutex<Vec<String>>,
}

impl ScriptedUser {
    fn answering(
        answers: impl IntoIterator<Item = xcsh_loader::services::HostReply>,
    ) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            answers: std::sync::Mutex::new(answers.into_iter().collect()),
            ..Self::default()
        })
    }
}

impl xcsh_loader::services::HostServices for ScriptedUser {
    fn has_ui(&self) -> bool {
        true
    }
    fn ask(
        &self,
        question: xcsh_loader::services::HostRequest,
    ) -> xcsh_loader::store::BoxFuture<
        Result<xcsh_loader::services::HostReply, xcsh_loader::PluginError>,
    > {
        self.asked.lock().unwrap().push(question);
        let answer = self.answers.lock().unwrap().pop_front();
        Box::pin(async move {
            answer.ok_or_else(|| xcsh_loader::PluginError::new("no answer scripted"))
        })
    }
    fn notify(&self, message: &str, _level: xcsh_loader::services::NotifyLevel) {
        self.notes.lock().unwrap().push(message.to_owned());
    }
}

const MODES: [xcsh_loader::Isolation; 2] = [
    xcsh_loader::Isolation::Process,
    xcsh_loader::Isolation::InProcess,
];

fn frozen_v0_6_session(
    dir: &std::path::Path,
    isolation: xcsh_loader::Isolation,
    user: Option<std::sync::Arc<ScriptedUser>>,
) -> Session {
    let plugin = xcsh_integration_tests::frozen_v0_6_plugin();
    frozen_session_of(plugin, "0.6.0", dir, isolation, user)
}

/// A session on the frozen `plugin`, built against `version`, in `isolation`, answered by
/// `user` when given; it loaded, in that mode, with that version.
fn frozen_session_of(
    plugin: std::path::PathBuf,
    version: &str,
    dir: &std::path::Path,
    isolation: xcsh_loader::Isolation,
    user: Option<std::sync::Arc<ScriptedUser>>,
) -> Session {
    let mut builder = Session::builder(dir)
        .default_dirs(false)
        .isolation(isolation)
        .plugin(plugin);
    if let Some(user) = user {
        builder = builder.host_services(user);
    }
    let session = builder.build();
    assert!(
        session.load_errors().is_empty(),
        "{isolation:?}: {:#?}",
        session.load_errors()
    );
    assert_eq!(session.plugins()[0].api_version.to_string(), version);
    assert_eq!(session.plugins()[0].isolation, isolation);
    session
}

#[tokio::test]
async fn a_0_6_0_plugin_lists_runs_and_uses_host_services_in_both_isolation_modes() {
    use xcsh_loader::services::ToolResultEntry;
    use xcsh_loader::services::{HostReply, HostRequest, SessionChange, SessionReason};
    use xcsh_plugin_api::{Content, EmbeddedResource};

    let capabilities = xcsh_plugin_api::capabilities_of("0.6.0");
    for capability in [
        "tools",
        "pending-actions",
        "tool-annotations",
        "retryable-apply",
        "keep-alive",
        "host-services",
        "session-events",
        "audio-and-resources",
        "exec",
    ] {
        assert!(
            capabilities.contains(&capability),
            "{capability}: {capabilities:?}"
        );
    }
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = ScriptedUser::answering([
            HostReply::Confirmed { yes: true },
            HostReply::Chosen {
                value: Some("green".into()),
            },
            HostReply::Confirmed { yes: false },
        ]);
        let session =
            frozen_v0_6_session(dir.path(), isolation, Some(std::sync::Arc::clone(&user)));
        let names: Vec<String> = session.tools().iter().map(|t| t.name.clone()).collect();
        assert_eq!(
            names,
            [
                "frozen_echo",
                "frozen_ask",
                "frozen_exec",
                "frozen_media",
                "frozen_preview",
                RESOLVE_TOOL_NAME
            ],
            "{isolation:?}"
        );

        // A call first: an isolated plugin hears events once its process runs.
        let echo = session.call("frozen_echo", json!({"text": "hi"})).await;
        assert!(!echo.is_error, "{isolation:?}: {}", echo.text());
        assert_eq!(echo.text(), "echo: hi");
        assert_eq!(
            echo.result.details,
            Some(json!({"api": "0.6.0", "heard": []}))
        );
        // Built before views: it renders as before (its text; its label while it runs).
        assert_eq!(echo.result.view, None);
        assert_eq!(
            session.call_status("frozen_echo", &json!({"text": "hi"})),
            None
        );

        // on_session hears the event with its own earlier results only.
        let mut start = SessionChange::new(SessionReason::Start);
        for (tool, id) in [("frozen_echo", "old"), ("other", "theirs")] {
            start.results.push(ToolResultEntry {
                tool_name: tool.into(),
                tool_call_id: id.into(),
                details: json!({"n": 1}),
            });
        }
        session.session_event(start).await;
        let echo = session.call("frozen_echo", json!({"text": "again"})).await;
        assert_eq!(echo.text(), "echo: again", "{isolation:?}");
        assert_eq!(
            echo.result.details,
            Some(json!({"api": "0.6.0", "heard": ["start [old]"]})),
            "{isolation:?}"
        );

        // The user confirms, picks green, and hears it; then says no.
        let asked = session.call("frozen_ask", json!({"text": "job"})).await;
        assert!(!asked.is_error, "{isolation:?}: {}", asked.text());
        assert_eq!(asked.text(), "job: green", "{isolation:?}");
        let declined = session.call("frozen_ask", json!({"text": "nope"})).await;
        assert_eq!(declined.text(), "declined nope", "{isolation:?}");
        assert_eq!(
            *user.asked.lock().unwrap(),
            [
                HostRequest::Confirm {
                    title: "Frozen ask".into(),
                    message: "Go on with job?".into(),
                },
                HostRequest::Select {
                    title: "Frozen colour".into(),
                    options: vec!["red".into(), "green".into()],
                },
                HostRequest::Confirm {
                    title: "Frozen ask".into(),
                    message: "Go on with nope?".into(),
                },
            ],
            "{isolation:?}"
        );
        assert_eq!(
            *user.notes.lock().unwrap(),
            ["job is green"],
            "{isolation:?}"
        );

        // A program, run in the plugin's own process (under its sandbox when isolated).
        if cfg!(unix) {
            let ran = session.call("frozen_exec", json!({"text": "ran"})).await;
            assert!(!ran.is_error, "{isolation:?}: {}", ran.text());
            assert_eq!(
                ran.text(),
                "exec: frozen ran (code Some(0))",
                "{isolation:?}"
            );
        }

        // Audio and an embedded resource arrive as such, not as unsupported blocks.
        let media = session.call("frozen_media", json!({"text": "notes"})).await;
        assert!(!media.is_error, "{isolation:?}: {}", media.text());
        assert_eq!(
            media.result.content,
            [
                Content::Text {
                    text: "media: notes".into()
                },
                Content::Audio {
                    data: "UklGRiQAAABXQVZF".into(),
                    mime_type: "audio/wav".into(),
                },
                Content::Resource {
                    resource: EmbeddedResource {
                        uri: "file:///frozen/notes.txt".into(),
                        mime_type: Some("text/plain".into()),
                        text: Some("notes".into()),
                        blob: None,
                    },
                },
            ],
            "{isolation:?}"
        );
        session.shutdown().await;
    }
}

#[tokio::test]
async fn without_a_user_a_0_6_0_plugins_questions_answer_their_defaults() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let session = frozen_v0_6_session(dir.path(), isolation, None);
        let asked = session.call("frozen_ask", json!({"text": "job"})).await;
        assert!(!asked.is_error, "{isolation:?}: {}", asked.text());
        assert_eq!(asked.text(), "declined job", "{isolation:?}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_0_6_0_plugin_pushes_and_resolves_and_retries_its_apply_in_both_isolation_modes() {
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let session = frozen_v0_6_session(dir.path(), isolation, None);
        let store = session.store().unwrap();

        // Push, then apply through resolve.
        let preview = session.call("frozen_preview", json!({"text": "a"})).await;
        assert!(!preview.is_error, "{isolation:?}: {}", preview.text());
        assert_eq!(preview.text(), "previewed a");
        let top = store.peek().unwrap();
        assert_eq!(top.label, "Frozen: a");
        assert_eq!(top.source_tool_name, "frozen_preview");
        let applied = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "apply", "reason": "ok"}),
            )
            .await;
        assert!(!applied.is_error, "{isolation:?}: {}", applied.text());
        assert_eq!(applied.text(), "applied a: ok (attempt 1)", "{isolation:?}");
        assert_eq!(store.count(), 0);

        // Push, then discard through the plugin's reject; the details crossed with it.
        session.call("frozen_preview", json!({"text": "b"})).await;
        let action = store.pop().unwrap();
        assert_eq!(
            action.details(),
            Some(&json!({"api": "0.6.0", "text": "b"})),
            "{isolation:?}"
        );
        assert!(action.has_reject());
        store.push(action);
        let discarded = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "discard", "reason": "no"}),
            )
            .await;
        assert!(!discarded.is_error, "{isolation:?}: {}", discarded.text());
        assert_eq!(discarded.text(), "rejected b: no", "{isolation:?}");
        assert_eq!(store.count(), 0);

        // A failed apply leaves an action whose retryable apply runs the plugin's again (the
        // runtime that keeps failed previews pending, the Node-API binding, does this).
        session
            .call("frozen_preview", json!({"text": "fail-me"}))
            .await;
        let action = store.pop().unwrap();
        let (apply, rest) = action.start_apply("go".into(), no_services());
        let failure = apply.await.unwrap_err().to_string();
        assert_eq!(
            failure, "apply of fail-me failed on purpose (attempt 1)",
            "{isolation:?}"
        );
        let (again, _) = rest
            .into_action(&failure)
            .start_apply("again".into(), no_services());
        let again = again.await.unwrap();
        assert_eq!(
            again.joined_text(),
            "applied fail-me: again (attempt 2)",
            "{isolation:?}"
        );

        // And it keeps its reject after a failed apply.
        session
            .call("frozen_preview", json!({"text": "fail-me"}))
            .await;
        let (apply, rest) = store.pop().unwrap().start_apply("go".into(), no_services());
        let failure = apply.await.unwrap_err().to_string();
        let rejected = rest
            .into_action(&failure)
            .reject("discard".into(), no_services())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            rejected.joined_text(),
            "rejected fail-me: discard",
            "{isolation:?}"
        );
        session.shutdown().await;
    }
}

/// What an embedder that settles an action itself hands it when no one can answer.
fn no_services() -> xcsh_loader::store::ActionContext {
    xcsh_loader::store::ActionContext::without_services(xcsh_loader::tool::CancelToken::new())
}

#[tokio::test]
async fn a_0_7_0_plugin_runs_its_macro_tool_and_asks_from_its_apply_in_both_isolation_modes() {
    use xcsh_loader::services::HostReply;
    for isolation in MODES {
        let dir = tempfile::tempdir().unwrap();
        let user = ScriptedUser::answering([HostReply::Confirmed { yes: true }]);
        let plugin = xcsh_integration_tests::frozen_v0_7_plugin();
        let session = frozen_session_of(
            plugin,
            "0.7.0",
            dir.path(),
            isolation,
            Some(std::sync::Arc::clone(&user)),
        );

        // The `#[tool]` function: its doc comment, its label, its parameter's schema.
        let echo = session
            .tools()
            .into_iter()
            .find(|tool| tool.name == "frozen7_echo")
            .unwrap();
        assert_eq!(echo.label, "Frozen 0.7 Echo");
        assert_eq!(
            echo.description,
            "Echoes its text (built against xcsh-plugin-api 0.7.0)"
        );
        assert_eq!(echo.parameters["required"], json!(["text"]));
        let echoed = session.call("frozen7_echo", json!({"text": "hi"})).await;
        assert!(!echoed.is_error, "{isolation:?}: {}", echoed.text());
        assert_eq!(echoed.text(), "echo: hi");
        assert_eq!(echoed.result.details, Some(json!({"api": "0.7.0"})));
        assert_eq!(echoed.result.view, None, "built before views: none");
        assert_eq!(
            session.call_status("frozen7_echo", &json!({"text": "hi"})),
            None,
            "no call view either"
        );

        // The apply asks and notifies through the `resolve` call's context.
        let pushed = session.call("frozen7_preview", json!({"text": "a"})).await;
        assert!(!pushed.is_error, "{isolation:?}: {}", pushed.text());
        assert_eq!(
            session.store().unwrap().peek().unwrap().label,
            "Frozen 0.7: a"
        );
        let applied = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "apply", "reason": "ok"}),
            )
            .await;
        assert!(!applied.is_error, "{isolation:?}: {}", applied.text());
        assert_eq!(applied.text(), "applied a: confirmed=true", "{isolation:?}");
        assert_eq!(user.asked.lock().unwrap().len(), 1, "{isolation:?}");
        assert_eq!(
            *user.notes.lock().unwrap(),
            ["applying a (ok)"],
            "{isolation:?}"
        );

        // The reject notifies too.
        session.call("frozen7_preview", json!({"text": "b"})).await;
        let discarded = session
            .call(
                RESOLVE_TOOL_NAME,
                json!({"action": "discard", "reason": "no"}),
            )
            .await;
        assert!(!discarded.is_error, "{isolation:?}: {}", discarded.text());
        assert_eq!(
            user.notes.lock().unwrap().last().map(String::as_str),
            Some("discarded (no)"),
            "{isolation:?}"
        );
        session.shutdown().await;
    }
}
