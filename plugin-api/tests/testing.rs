//! `xcsh_plugin_api::testing::PluginTest` behaves like a host: errors, panics, updates, logs,
//! the store (or its absence) and the order of resolution.

#![cfg(feature = "testing")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::time::Duration;

use xcsh_plugin_api::testing::{PluginTest, TestError, STORE_UNAVAILABLE};
use xcsh_plugin_api::*;

tool_params! {
    struct Params {
        #[serde(default)]
        mode: Mode,
    }

    #[derive(Default)]
    #[serde(rename_all = "lowercase")]
    enum Mode { #[default] Push, Panic, Fail, Sleep }
}

#[derive(Debug, thiserror::Error)]
#[error("the disk is full")]
struct DiskFull;

#[derive(Default)]
struct Probe;

impl CustomTool for Probe {
    type Params = Params;
    fn name(&self) -> &str {
        "probe"
    }
    fn label(&self) -> &str {
        "Probe"
    }
    fn description(&self) -> &str {
        "Exercises the harness"
    }
    fn deferrable(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _id: String,
        p: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        match p.mode {
            Mode::Panic => panic!("boom"),
            Mode::Fail => Err(DiskFull)?,
            Mode::Sleep => tokio::time::sleep(Duration::from_millis(5)).await,
            Mode::Push => {}
        }
        ctx.logger().info("probing");
        ctx.update(AgentToolResult::text("half way"));
        let n = ctx.api().cwd().display().to_string();
        for i in 0..2 {
            ctx.push_pending_action(
                CustomToolPendingAction::new(format!("Probe: {i}"), move |reason| async move {
                    Ok(AgentToolResult::text(format!("applied {i}: {reason}")))
                })
                .with_reject(move |reason| async move {
                    Ok(Some(AgentToolResult::text(format!(
                        "rejected {i}: {reason}"
                    ))))
                })
                .with_details(json!({ "i": i }))
                .with_source_tool_name("probe"),
            )?;
        }
        Ok(AgentToolResult::text(n).with_details(json!({"ok": true})))
    }
}

#[tokio::test]
async fn updates_logs_details_and_the_working_directory_come_back() {
    let dir = std::env::temp_dir();
    let test = PluginTest::new(tools![Probe]).cwd(&dir);
    let outcome = test.call("probe", json!({})).await.unwrap();
    assert_eq!(outcome.text(), dir.display().to_string());
    assert_eq!(outcome.details(), Some(&json!({"ok": true})));
    assert_eq!(outcome.updates().len(), 1);
    assert_eq!(outcome.updates()[0].joined_text(), "half way");
    assert_eq!(test.logs()[0].level, "info");
    assert_eq!(test.logs()[0].message, "probing");
    assert_eq!(test.tool_names().unwrap(), ["probe"]);
    assert_eq!(test.schema("probe").unwrap()["type"], "object");
}

#[tokio::test]
async fn actions_resolve_newest_first_or_by_index() {
    let test = PluginTest::new(tools![Probe]);
    test.call("probe", json!({"mode": "push"})).await.unwrap();
    let pending = test.pending();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[1].label, "Probe: 1");
    assert_eq!(pending[1].details, Some(json!({"i": 1})));
    assert!(pending[1].has_reject);
    let applied = test.apply_newest("r").await.unwrap();
    assert_eq!(applied.joined_text(), "applied 1: r");
    test.call("probe", json!({})).await.unwrap();
    // Store: [0 (first call), 0, 1]; reject index 0, then apply index 1 (the newest).
    let rejected = test.reject(0, "no").await.unwrap().unwrap();
    assert_eq!(rejected.joined_text(), "rejected 0: no");
    assert_eq!(
        test.apply(1, "yes").await.unwrap().joined_text(),
        "applied 1: yes"
    );
    assert_eq!(test.pending().len(), 1);
    assert_eq!(test.apply(5, "x").await, Err(TestError::NothingPending));
}

#[tokio::test]
async fn errors_panics_and_a_missing_store_are_reported_like_the_host() {
    let test = PluginTest::new(tools![Probe]);
    let failed = test.call("probe", json!({"mode": "fail"})).await;
    assert_eq!(failed, Err(TestError::Tool("the disk is full".into())));
    let panicked = test
        .call("probe", json!({"mode": "panic"}))
        .await
        .unwrap_err();
    let message = panicked.to_string();
    assert!(message.starts_with("plugin panicked at "), "{message}");
    assert!(message.ends_with(": boom"), "{message}");
    let slept = test.call("probe", json!({"mode": "sleep"})).await;
    assert!(slept.is_ok(), "tokio timers work: {slept:?}");
    let invalid = test
        .call("probe", json!({"mode": "loud"}))
        .await
        .unwrap_err();
    assert!(
        invalid
            .to_string()
            .starts_with("Invalid arguments for tool \"probe\": at /mode:"),
        "{invalid}"
    );
    assert!(matches!(
        test.call("nope", json!({})).await,
        Err(TestError::UnknownTool(..))
    ));

    let test = PluginTest::new(tools![Probe]).without_store();
    let refused = test.call("probe", json!({})).await.unwrap_err();
    assert_eq!(refused, TestError::Tool(STORE_UNAVAILABLE.into()));
    assert_eq!(test.pending(), []);
}

#[tokio::test]
async fn a_failing_or_panicking_factory_or_a_bad_name_refuses_the_plugin() {
    fn failing(_: &CustomToolApi) -> Result<ToolSet, PluginError> {
        Err(PluginError::new("no config"))
    }
    let test = PluginTest::new(failing);
    assert_eq!(
        test.call("probe", json!({})).await,
        Err(TestError::Factory("no config".into()))
    );

    fn panicking(_: &CustomToolApi) -> Result<Probe, PluginError> {
        panic!("factory boom")
    }
    let test = PluginTest::new(panicking);
    let error = test.tool_names().unwrap_err().to_string();
    assert!(error.contains("factory boom"), "{error}");

    struct Bad;
    impl CustomTool for Bad {
        type Params = Value;
        fn name(&self) -> &str {
            "bad name"
        }
        fn label(&self) -> &str {
            "Bad"
        }
        fn description(&self) -> &str {
            "Bad"
        }
        async fn execute(
            &self,
            _: String,
            _: Value,
            _: ToolContext,
        ) -> Result<AgentToolResult, PluginError> {
            Ok(AgentToolResult::default())
        }
    }
    let test = PluginTest::new(|_: &CustomToolApi| Ok(Bad));
    assert!(matches!(test.tool_names(), Err(TestError::BadTool { .. })));
}
