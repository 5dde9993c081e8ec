//! `ctx.exec` against real programs, in process (through `PluginTest`): output, input, exit
//! codes, timeouts and cancellation that end a program's whole group, the output cap, the
//! bound on programs at once, and the errors a demanding author meets.
#![cfg(all(feature = "testing", target_os = "linux"))]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::time::{Duration, Instant};

use serde::Deserialize;
use xcsh_plugin_api::testing::PluginTest;
use xcsh_plugin_api::{
    json, tools, AgentToolResult, CustomTool, ExecOptions, ExecOutput, JsonSchema, PluginError,
    ToolContext, Value,
};

#[derive(Deserialize, JsonSchema)]
struct RunParams {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    max_output: Option<usize>,
    /// Run this many copies at once; the details are the first one's.
    #[serde(default)]
    copies: Option<usize>,
    /// Wait for the call's cancellation before running the program.
    #[serde(default)]
    after_cancel: bool,
}

/// Runs a program and returns what it did in its details (the output's lengths, its text
/// when short).
#[derive(Default)]
struct Run;

impl CustomTool for Run {
    type Params = RunParams;
    fn name(&self) -> &str {
        "run"
    }
    fn label(&self) -> &str {
        "Run"
    }
    fn description(&self) -> &str {
        "Runs a program"
    }
    async fn execute(
        &self,
        _id: String,
        p: RunParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let mut options = ExecOptions::new();
        if let Some(cwd) = p.cwd {
            options = options.cwd(cwd);
        }
        if let Some(stdin) = p.stdin {
            options = options.stdin(stdin);
        }
        if let Some(ms) = p.timeout_ms {
            options = options.timeout(Duration::from_millis(ms));
        }
        if let Some(bytes) = p.max_output {
            options = options.max_output(bytes);
        }
        while p.after_cancel && !ctx.is_cancelled() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let copies = p.copies.unwrap_or(1);
        let runs = (0..copies).map(|_| ctx.exec(&p.program, &p.args, options.clone()));
        let outputs = futures_join_all(runs).await;
        let mut first = None;
        for output in outputs {
            let output = output?;
            first.get_or_insert(output);
        }
        let output = first.unwrap_or_default();
        Ok(AgentToolResult::text(output.stdout_text()).with_details(details(&output)))
    }
}

fn details(output: &ExecOutput) -> Value {
    json!({
        "stdout_len": output.stdout.len(),
        "stderr": output.stderr_text(),
        "code": output.code,
        "signal": output.signal,
        "killed": output.killed,
        "truncated": output.truncated,
    })
}

/// `join_all` without a dependency: every future polled at each wake, so they run at once.
async fn futures_join_all<F: std::future::Future>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output> {
    let mut pending: Vec<Option<std::pin::Pin<Box<F>>>> =
        futures.map(|f| Some(Box::pin(f))).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut all_done = true;
        for (slot, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if let Some(future) = slot {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => {
                        *output = Some(value);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all_done = false,
                }
            }
        }
        if all_done {
            std::task::Poll::Ready(outputs.iter_mut().filter_map(Option::take).collect())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn run(test: &PluginTest, args: Value) -> Result<(String, Value), String> {
    test.call("run", args)
        .await
        .map(|outcome| {
            (
                outcome.text(),
                outcome.details().cloned().unwrap_or_default(),
            )
        })
        .map_err(|e| e.to_string())
}

/// Whether process `pid` still exists (a zombie counts as ended).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[test]
fn output_input_and_exit_codes_come_back() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let (text, details) = run(
            &test,
            json!({"program": "sh", "args": ["-c", "cat; echo err >&2; exit 3"], "stdin": "hello"}),
        )
        .await
        .unwrap();
        assert_eq!(text, "hello");
        assert_eq!(details["stderr"], "err\n");
        assert_eq!(details["code"], 3);
        assert_eq!(details["killed"], false);
        // No input given: an empty one, never the test's terminal.
        let (text, _) = run(&test, json!({"program": "cat"})).await.unwrap();
        assert_eq!(text, "");
        // The session's directory is the default working directory.
        let (text, _) = run(&test, json!({"program": "pwd"})).await.unwrap();
        assert_eq!(
            std::path::Path::new(text.trim()),
            std::fs::canonicalize(test.working_dir()).unwrap()
        );
    });
}

#[test]
fn a_timeout_ends_the_program_and_everything_it_started() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let started = Instant::now();
        let (text, details) = run(
            &test,
            json!({"program": "sh", "args": ["-c", "sleep 100 & echo $!; sleep 100"], "timeout_ms": 300}),
        )
        .await
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(details["killed"], true);
        assert_eq!(details["signal"], "SIGKILL");
        let background: u32 = text.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(background), "the background sleep {background} outlived its exec");
    });
}

#[test]
fn a_cancelled_call_ends_its_program_and_its_children() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let marker = test.working_dir().join("pid");
        let script = format!("sleep 100 & echo $! > {}; sleep 100", marker.display());
        let started = Instant::now();
        let outcome = test
            .call_cancelled_after(
                "run",
                json!({"program": "sh", "args": ["-c", script]}),
                Duration::from_millis(300),
            )
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(outcome.details().unwrap()["killed"], true);
        let background: u32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !alive(background),
            "the background sleep {background} outlived its call"
        );
    });
}

#[test]
fn what_a_program_leaves_running_in_its_group_ends_with_it() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        // The shell exits at once; its background child holds the output open.
        let started = Instant::now();
        let (text, details) = run(
            &test,
            json!({"program": "sh", "args": ["-c", "sleep 100 & echo $!"]}),
        )
        .await
        .unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(details["code"], 0);
        let background: u32 = text.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!alive(background));
        // A program that closes its output and keeps running: waited for, to its end.
        let started = Instant::now();
        let (_, details) = run(
            &test,
            json!({"program": "sh", "args": ["-c", "exec >&- 2>&-; sleep 0.5; exit 4"]}),
        )
        .await
        .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(450));
        assert_eq!(details["code"], 4);
    });
}

#[test]
fn output_past_the_cap_is_drained_and_dropped() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let (_, details) = run(
            &test,
            json!({"program": "head", "args": ["-c", "50000000", "/dev/zero"], "max_output": 1000000}),
        )
        .await
        .unwrap();
        assert_eq!(details["stdout_len"], 1_000_000);
        assert_eq!(details["truncated"], true);
        assert_eq!(details["code"], 0, "the program was read to its end, not killed");
        let (_, details) = run(&test, json!({"program": "echo", "args": ["short"]}))
            .await
            .unwrap();
        assert_eq!(details["truncated"], false);
    });
}

#[test]
fn bad_input_gets_a_clear_error() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let error = run(&test, json!({"program": "no-such-program-xcsh"}))
            .await
            .unwrap_err();
        assert!(
            error.contains("command not found: no-such-program-xcsh"),
            "{error}"
        );
        let error = run(&test, json!({"program": "true", "timeout_ms": 0}))
            .await
            .unwrap_err();
        assert!(error.contains("the timeout of true is zero"), "{error}");
        let error = run(&test, json!({"program": "true", "cwd": "missing/dir"}))
            .await
            .unwrap_err();
        assert!(
            error.contains("cannot run true in") && error.contains("missing/dir"),
            "{error}"
        );
    });
}

#[test]
fn an_exec_from_a_cancelled_call_starts_nothing() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let marker = test.working_dir().join("started");
        let error = test
            .call_cancelled_after(
                "run",
                json!({"program": "touch", "args": [marker], "after_cancel": true}),
                Duration::from_millis(50),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("the call was cancelled; touch was not started"),
            "{error}"
        );
        assert!(!marker.exists());
    });
}

#[test]
fn a_thousand_execs_at_once_all_finish_a_bounded_number_at_a_time() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]);
        let started = Instant::now();
        let (text, details) = run(
            &test,
            json!({"program": "echo", "args": ["ok"], "copies": 1000}),
        )
        .await
        .unwrap();
        assert_eq!((text.as_str(), details["code"].as_i64()), ("ok\n", Some(0)));
        assert!(started.elapsed() < Duration::from_secs(60));
    });
}

#[test]
fn scripted_programs_stand_in_for_real_ones() {
    runtime().block_on(async {
        let test = PluginTest::new(tools![Run]).with_programs(|request| {
            if request.program == "git" {
                Ok(ExecOutput {
                    stderr: b"fatal: not a git repository".to_vec(),
                    code: Some(128),
                    ..ExecOutput::default()
                })
            } else {
                Err(format!("command not found: {}", request.program))
            }
        });
        let (_, details) = run(&test, json!({"program": "git", "args": ["status"]}))
            .await
            .unwrap();
        assert_eq!(details["code"], 128);
        assert_eq!(details["stderr"], "fatal: not a git repository");
        let error = run(&test, json!({"program": "cargo"})).await.unwrap_err();
        assert!(error.contains("command not found: cargo"), "{error}");
        let asked = test.asked();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0].service(), "exec");
    });
}
