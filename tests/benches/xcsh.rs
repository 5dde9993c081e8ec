//! Every benchmark of BENCHMARKS.md in one run, then one table:
//! `cargo bench -p xcsh-integration-tests --bench xcsh [-- calls load store isolation idle macro ast_edit]`
//! (`.ci/bench` runs this and prints the table).
//!
//! Criterion times each case; the table takes criterion's median of each (from its
//! `estimates.json`) and adds the ratios. The setups and single iterations live in
//! `xcsh_integration_tests::bench`, which `tests/bench_setup.rs` runs once under `cargo test`.
//! The table goes to stdout at the end and to `target/xcsh-bench/table.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark fails loudly.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode};
use serde_json::{json, Value};
use xcsh_integration_tests::bench::isolation::DefinitionsCache;
use xcsh_integration_tests::bench::{calls, flush_writes, idle, isolation, load, store, tree};
use xcsh_integration_tests::{ast_grep_cli, release_artifacts, workspace_root};
use xcsh_loader::Isolation;

/// Set in a child process that measures one load: `loader` or `raw`.
const CHILD_ENV: &str = "XCSH_BENCH_LOAD";
/// The child's directory of copies and session directory.
const CHILD_DIR_ENV: &str = "XCSH_BENCH_LOAD_DIR";
const CHILD_CWD_ENV: &str = "XCSH_BENCH_LOAD_CWD";

/// Set to `builtin`, `plugin` or `ast_edit` to run only that, for a profiler; see [`profile`].
const PROFILE_ENV: &str = "XCSH_BENCH_PROFILE";
/// Set in the child of the socket ping-pong (the floor of an isolated call): its socket.
const PING_PONG_ENV: &str = "XCSH_BENCH_PING_PONG";

/// Files in the generated `ast_edit` tree.
const TREE_FILES: usize = 2_100;
/// Files in the tree of the whole-process `ast_edit` rows (`xcsh-plugins call` against the
/// `ast-grep` CLI, issue 29).
const CLI_TREE_FILES: usize = 3_000;
/// Plugin copies loaded at once.
const LOAD_COUNTS: [usize; 4] = [1, 10, 50, 100];
/// Distinct plugins loaded in-process for the per-plugin memory row, and the runs (fresh
/// child processes) whose median it shows.
const DISTINCT_PLUGINS: usize = 50;
const DISTINCT_RUNS: usize = 5;

/// One line of the table.
struct Row {
    section: &'static str,
    what: String,
    measured: String,
    baseline: String,
    ratio: String,
    target: String,
    met: String,
}

impl Row {
    fn new(section: &'static str, what: impl Into<String>, measured: impl Into<String>) -> Self {
        Self {
            section,
            what: what.into(),
            measured: measured.into(),
            baseline: String::new(),
            ratio: String::new(),
            target: String::new(),
            met: String::new(),
        }
    }

    fn baseline(mut self, baseline: impl Into<String>) -> Self {
        self.baseline = baseline.into();
        self
    }

    fn ratio(mut self, name: &str, value: f64) -> Self {
        self.ratio = format!("{name} = {}", ratio(value));
        self
    }

    /// Add the paired ratio (see [`paired_ratio`]) after the ratio of the medians.
    fn paired(mut self, value: f64) -> Self {
        self.ratio = format!("{} (paired: {})", self.ratio, ratio(value));
        self
    }

    /// `target` is shown as written; `met` says whether the measurement meets it.
    fn target(mut self, target: impl Into<String>, met: bool) -> Self {
        self.target = target.into();
        self.met = if met { "yes" } else { "**no**" }.to_owned();
        self
    }
}

struct Bench {
    criterion: Criterion,
    criterion_dir: PathBuf,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Bench {
    /// Criterion's median of `group/id`, per iteration.
    fn median(&self, group: &str, id: &str) -> Duration {
        let path = self
            .criterion_dir
            .join(group)
            .join(id)
            .join("new/estimates.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let estimates: Value = serde_json::from_str(&text).unwrap();
        let nanos = estimates["median"]["point_estimate"]
            .as_f64()
            .unwrap_or_else(|| panic!("no median in {}", path.display()));
        Duration::from_secs_f64(nanos / 1e9)
    }
}

fn ratio(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

fn time(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

fn kib(value: f64) -> String {
    if value.abs() >= 1024.0 {
        format!("{:.2} MiB", value / 1024.0)
    } else {
        format!("{value:.0} KiB")
    }
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned())
}

fn main() {
    if let Ok(kind) = std::env::var(CHILD_ENV) {
        load_child(&kind);
        return;
    }
    if let Ok(what) = std::env::var(PROFILE_ENV) {
        profile(&what);
        return;
    }
    if let Some(path) = std::env::var_os(PING_PONG_ENV) {
        isolation::serve_ping_pong(Path::new(&path)).unwrap();
        return;
    }
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |section: &str| args.is_empty() || args.iter().any(|a| a == section);
    let out = workspace_root().join("target/xcsh-bench");
    std::fs::create_dir_all(&out).unwrap();
    let criterion_dir = out.join("criterion");
    let mut bench = Bench {
        criterion: Criterion::default()
            .output_directory(&criterion_dir)
            .nresamples(20_000)
            .with_output_color(false),
        criterion_dir,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    eprintln!("building the plugins and xcsh-plugins (--release)...");
    let started = Instant::now();
    release_artifacts();
    if wanted("calls") {
        bench_calls(&mut bench);
    }
    if wanted("load") {
        bench_load(&mut bench);
    }
    if wanted("store") {
        bench_store(&mut bench);
    }
    if wanted("isolation") {
        bench_isolation(&mut bench);
    }
    if wanted("idle") {
        bench_idle(&mut bench);
    }
    if wanted("host_services") {
        bench_host_services(&mut bench);
    }
    if wanted("exec") {
        bench_exec(&mut bench);
    }
    if wanted("macro") {
        bench_macro(&mut bench);
    }
    if wanted("ast_edit") {
        bench_ast_edit(&mut bench);
        bench_ast_edit_cli(&mut bench);
    }
    if wanted("sizes") {
        bench_sizes(&mut bench);
    }
    let table = render(&bench, started.elapsed());
    std::fs::write(out.join("table.md"), &table).unwrap();
    println!("\n{table}");
}

fn render(bench: &Bench, took: Duration) -> String {
    let mut out = format!(
        "Machine: {} cores, {} ({}); benchmarks took {:.0} s.\n\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
        std::env::consts::ARCH,
        took.as_secs_f64()
    );
    out.push_str("| section | benchmark | median | baseline (median) | ratio | target | met |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for row in &bench.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            row.section, row.what, row.measured, row.baseline, row.ratio, row.target, row.met
        ));
    }
    if !bench.notes.is_empty() {
        out.push('\n');
        for note in &bench.notes {
            out.push_str(&format!("- {note}\n"));
        }
    }
    out
}

/// Time `iters` awaits of `call` inside one `block_on`.
fn timed_calls<F, Fut>(runtime: &tokio::runtime::Runtime, iters: u64, call: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future,
{
    runtime.block_on(async {
        let start = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(call().await);
        }
        start.elapsed()
    })
}

/// `XCSH_BENCH_PROFILE=builtin|plugin`: `$PROFILE_CALLS` calls of one `bench_echo`;
/// `XCSH_BENCH_PROFILE=ast_edit`: `$PROFILE_CALLS` previews of the generated tree. Nothing
/// else runs (for `perf record` or `valgrind --tool=callgrind`).
fn profile(what: &str) {
    let count: u64 = std::env::var("PROFILE_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if what == "ast_edit" { 5 } else { 200_000 });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let took = match what {
        "ast_edit" => {
            tree::generate(cwd.path(), TREE_FILES).unwrap();
            let session = tree::session(cwd.path());
            timed_calls(&runtime, count, || async {
                let preview = tree::preview(&session).await;
                tree::resolve(&session, "discard").await;
                preview
            })
        }
        "builtin" => {
            let session = calls::builtin_session(cwd.path());
            timed_calls(&runtime, count, || calls::call_echo(&session))
        }
        _ => {
            let plugin = release_artifacts().plugin("fixture-bench");
            let session = calls::plugin_session(cwd.path(), &plugin).unwrap();
            timed_calls(&runtime, count, || calls::call_echo(&session))
        }
    };
    eprintln!("{what}: {:?} each", took / u32::try_from(count).unwrap());
}

/// The median over `rounds` of `second / first`, each round timing both back to back (in
/// alternating order): a ratio that slow drifts of the machine's load do not skew.
fn paired_ratio(
    rounds: usize,
    mut first: impl FnMut() -> Duration,
    mut second: impl FnMut() -> Duration,
) -> f64 {
    let mut ratios: Vec<f64> = (0..rounds)
        .map(|round| {
            let (a, b) = if round % 2 == 0 {
                let a = first();
                (a, second())
            } else {
                let b = second();
                (first(), b)
            };
            b.as_secs_f64() / a.as_secs_f64()
        })
        .collect();
    median_of(&mut ratios)
}

fn bench_calls(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let builtin = calls::builtin_session(cwd.path());
    let plugin = calls::plugin_session(cwd.path(), &artifacts.plugin("fixture-bench")).unwrap();
    let multi = calls::plugin_session(cwd.path(), &artifacts.plugin("fixture-multi")).unwrap();
    let mcp = runtime
        .block_on(calls::McpServer::start(
            &artifacts.cli(),
            &artifacts.plugin("fixture-bench"),
            cwd.path(),
        ))
        .unwrap();
    let note_args = || json!({"file": "note.txt", "content": "hello"});
    // Every path gives the expected answer before anything is timed.
    runtime.block_on(async {
        for session in [&builtin, &plugin] {
            let outcome = calls::call_echo(session).await;
            assert!(!outcome.is_error, "{}", outcome.text());
            assert_eq!(outcome.text(), calls::ECHO_TEXT);
        }
        let result = mcp.call_echo().await.unwrap();
        assert_eq!(calls::mcp_text(&result), calls::ECHO_TEXT);
        let applied = calls::round_trip(&plugin, "bench_preview", calls::echo_args()).await;
        assert!(!applied.is_error, "{}", applied.text());
        let applied = calls::round_trip(&multi, "note_preview", note_args()).await;
        assert!(!applied.is_error, "{}", applied.text());
    });

    let mut group = bench.criterion.benchmark_group("calls");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("a_builtin", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&builtin)));
    });
    group.bench_function("b_plugin", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&plugin)));
    });
    group.bench_function("c_mcp", |b| {
        b.iter_custom(|iters| {
            timed_calls(&runtime, iters, || async {
                mcp.call_echo().await.expect("MCP call failed")
            })
        });
    });
    group.bench_function("round_trip_noop", |b| {
        b.iter_custom(|iters| {
            timed_calls(&runtime, iters, || {
                calls::round_trip(&plugin, "bench_preview", calls::echo_args())
            })
        });
    });
    group.bench_function("round_trip_note", |b| {
        b.iter_custom(|iters| {
            timed_calls(&runtime, iters, || {
                calls::round_trip(&multi, "note_preview", note_args())
            })
        });
    });
    group.finish();
    runtime.block_on(mcp.stop());
    // b/a again, from 31 alternating blocks of 5,000 calls each.
    let paired_b_a = paired_ratio(
        31,
        || timed_calls(&runtime, 5_000, || calls::call_echo(&builtin)),
        || timed_calls(&runtime, 5_000, || calls::call_echo(&plugin)),
    );

    let a = bench.median("calls", "a_builtin");
    let b = bench.median("calls", "b_plugin");
    let c = bench.median("calls", "c_mcp");
    let (b_a, c_b) = (
        b.as_secs_f64() / a.as_secs_f64(),
        c.as_secs_f64() / b.as_secs_f64(),
    );
    let round_noop = bench.median("calls", "round_trip_noop");
    let round_note = bench.median("calls", "round_trip_note");
    bench.rows.push(Row::new(
        "call",
        "(a) `bench_echo` compiled into the host, `Session::call`",
        time(a),
    ));
    bench.rows.push(
        Row::new(
            "call",
            "(b) `bench_echo` loaded as a plugin, `Session::call`",
            time(b),
        )
        .baseline(format!("(a) {}", time(a)))
        .ratio("b/a", b_a)
        .paired(paired_b_a)
        .target("b/a ≤ 1.3", b_a <= 1.3),
    );
    bench.rows.push(
        Row::new(
            "call",
            "(c) `bench_echo` over MCP stdio (`xcsh-plugins mcp`, rmcp client)",
            time(c),
        )
        .baseline(format!("(b) {}", time(b)))
        .ratio("c/b", c_b)
        .target("c/b ≥ 100", c_b >= 100.0),
    );
    bench.rows.push(Row::new(
        "call",
        "preview + `resolve` apply, plugin `bench_preview` (apply returns a text)",
        time(round_noop),
    ));
    bench.rows.push(Row::new(
        "call",
        "preview + `resolve` apply, plugin `note_preview` (apply writes a small file)",
        time(round_note),
    ));
}

/// One call of `bench_confirm`.
async fn confirm(session: &xcsh_loader::Session) -> xcsh_loader::ToolOutcome {
    session.call("bench_confirm", calls::echo_args()).await
}

/// A user who answers yes at once: the host side of a scripted `confirm`.
struct AlwaysYes;

impl xcsh_loader::services::HostServices for AlwaysYes {
    fn has_ui(&self) -> bool {
        true
    }
    fn ask(
        &self,
        _question: xcsh_loader::services::HostRequest,
    ) -> xcsh_loader::store::BoxFuture<
        Result<xcsh_loader::services::HostReply, xcsh_loader::PluginError>,
    > {
        Box::pin(async { Ok(xcsh_loader::services::HostReply::Confirmed { yes: true }) })
    }
}

/// Issue 43: what one scripted `confirm` costs a call (`bench_confirm` asks one, `bench_echo`
/// asks none; the difference is the round trip: plugin → host → the user's answer → plugin),
/// in-process and in a plugin process (where the question crosses the socket both ways).
fn bench_host_services(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let plugin = artifacts.plugin("fixture-bench");
    let session = |isolation| {
        calls::session_with(
            xcsh_loader::Session::builder(cwd.path())
                .isolation(isolation)
                .definitions_cache(false)
                .host_services(std::sync::Arc::new(AlwaysYes)),
            &plugin,
        )
        .unwrap()
    };
    let sessions = [
        ("in_process", session(Isolation::InProcess)),
        ("process", session(Isolation::Process)),
    ];
    runtime.block_on(async {
        for (_, session) in &sessions {
            assert_eq!(confirm(session).await.text(), "yes");
            assert_eq!(calls::call_echo(session).await.text(), calls::ECHO_TEXT);
        }
    });
    let mut group = bench.criterion.benchmark_group("host_services");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (mode, session) in &sessions {
        group.bench_function(format!("{mode}_echo"), |b| {
            b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(session)));
        });
        group.bench_function(format!("{mode}_confirm"), |b| {
            b.iter_custom(|iters| timed_calls(&runtime, iters, || confirm(session)));
        });
    }
    group.finish();
    for (mode, label) in [
        ("in_process", "in-process"),
        ("process", "in a plugin process"),
    ] {
        let echo = bench.median("host_services", &format!("{mode}_echo"));
        let asked = bench.median("host_services", &format!("{mode}_confirm"));
        bench.rows.push(
            Row::new(
                "host services",
                format!(
                    "one scripted `confirm` round trip, {label}: `bench_confirm` call − `bench_echo` call"
                ),
                time(asked.saturating_sub(echo)),
            )
            .baseline(format!("confirm call {}, echo call {}", time(asked), time(echo))),
        );
    }
}

/// `ctx.exec` against a plain `Command::output()` of the same program (`true`), from the same
/// tool of `fixture-programs` in the same session, in process and in a plugin process: what
/// `exec` adds (its process group, reader threads, the cancellation watch) over what an author
/// would write by hand.
fn bench_exec(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let plugin = artifacts.plugin("fixture-programs");
    let session = |isolation| {
        calls::session_with(
            xcsh_loader::Session::builder(cwd.path())
                .isolation(isolation)
                .definitions_cache(false),
            &plugin,
        )
        .unwrap()
    };
    let sessions = [
        ("in_process", session(Isolation::InProcess)),
        ("process", session(Isolation::Process)),
    ];
    async fn run(session: &xcsh_loader::Session, via: &'static str) -> xcsh_loader::ToolOutcome {
        let outcome = session
            .call("run", json!({"program": "true", "via": via}))
            .await;
        assert!(!outcome.is_error, "{}", outcome.text());
        outcome
    }
    runtime.block_on(async {
        for (_, session) in &sessions {
            for via in ["exec", "command"] {
                let outcome = run(session, via).await;
                assert_eq!(outcome.result.details.unwrap()["code"], 0);
            }
        }
    });
    let mut group = bench.criterion.benchmark_group("exec");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (mode, session) in &sessions {
        for via in ["command", "exec"] {
            group.bench_function(format!("{mode}_{via}"), |b| {
                b.iter_custom(|iters| timed_calls(&runtime, iters, || run(session, via)));
            });
        }
    }
    group.finish();
    for (mode, label) in [
        ("in_process", "in-process"),
        ("process", "in a plugin process"),
    ] {
        let command = bench.median("exec", &format!("{mode}_command"));
        let exec = bench.median("exec", &format!("{mode}_exec"));
        bench.rows.push(
            Row::new(
                "exec",
                format!("a call running `true` through `ctx.exec`, {label} (target: within 1.5x of `Command::output()`)"),
                time(exec),
            )
            .baseline(format!(
                "the same call through `Command::output()` {} ({:.2}x)",
                time(command),
                exec.as_secs_f64() / command.as_secs_f64().max(1e-12)
            )),
        );
    }
}

/// Issue 52: what `#[tool]` adds to a call. `bench_macro` (written with `#[tool]`) and
/// `bench_trait` (the same echo written by hand: `impl CustomTool` on a `tool_params!` struct)
/// in `libfixture_bench.so`, called with the same arguments through the same session: in-process
/// with the plugin's futures polled inline (the cheapest call, where any overhead shows most)
/// and in a plugin process. Target: the macro's call within 1.05x of the trait's.
fn bench_macro(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let plugin = artifacts.plugin("fixture-bench");
    let sessions = [
        (
            "in_process",
            calls::plugin_session(cwd.path(), &plugin).unwrap(),
        ),
        (
            "process",
            calls::session_with(
                xcsh_loader::Session::builder(cwd.path())
                    .isolation(Isolation::Process)
                    .definitions_cache(false),
                &plugin,
            )
            .unwrap(),
        ),
    ];
    const TOOLS: [&str; 2] = ["bench_trait", "bench_macro"];
    async fn call(session: &xcsh_loader::Session, tool: &str) -> xcsh_loader::ToolOutcome {
        session.call(tool, calls::echo_args()).await
    }
    runtime.block_on(async {
        for (_, session) in &sessions {
            for tool in TOOLS {
                let outcome = call(session, tool).await;
                assert!(!outcome.is_error, "{tool}: {}", outcome.text());
                assert_eq!(outcome.text(), calls::ECHO_TEXT, "{tool}");
            }
        }
    });
    let mut group = bench.criterion.benchmark_group("macro");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (mode, session) in &sessions {
        for tool in TOOLS {
            group.bench_function(format!("{mode}_{tool}"), |b| {
                b.iter_custom(|iters| timed_calls(&runtime, iters, || call(session, tool)));
            });
        }
    }
    group.finish();
    for ((mode, session), (label, calls_per_round)) in sessions.iter().zip([
        ("in-process, polled inline", 20_000),
        ("in a plugin process", 1_000),
    ]) {
        // The ratio again, from 21 alternating blocks of calls: slow drifts of the load cancel.
        let paired = paired_ratio(
            21,
            || timed_calls(&runtime, calls_per_round, || call(session, "bench_trait")),
            || timed_calls(&runtime, calls_per_round, || call(session, "bench_macro")),
        );
        let by_trait = bench.median("macro", &format!("{mode}_bench_trait"));
        let by_macro = bench.median("macro", &format!("{mode}_bench_macro"));
        let r = by_macro.as_secs_f64() / by_trait.as_secs_f64();
        bench.rows.push(
            Row::new(
                "macro",
                format!("`bench_macro` call (`#[tool]`), {label}"),
                time(by_macro),
            )
            .baseline(format!(
                "`bench_trait` (`impl CustomTool`): {}",
                time(by_trait)
            ))
            .ratio("macro/trait", r)
            .paired(paired)
            .target("≤ 1.05", paired <= 1.05),
        );
    }
}

/// In a child process: load the copies in `$XCSH_BENCH_LOAD_DIR` and print the sample.
fn load_child(kind: &str) {
    let dir = PathBuf::from(std::env::var_os(CHILD_DIR_ENV).expect("no directory"));
    let cwd = PathBuf::from(std::env::var_os(CHILD_CWD_ENV).expect("no cwd"));
    let sample = match kind {
        "loader_cold" | "loader_warm" => load::with_loader(&cwd, &dir, load::Plugins::Copies),
        "loader_distinct" => load::with_loader(&cwd, &dir, load::Plugins::Distinct),
        "raw" => load::raw(&dir),
        other => Err(format!("unknown load kind {other}")),
    };
    match sample {
        Ok(sample) => println!("{}", serde_json::to_string(&sample).unwrap()),
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(1);
        }
    }
}

/// Run one load measurement in a fresh child process (a file loads once per process), with
/// the loader's layout-check cache in `cache` (`loader_cold`: an empty one each time).
fn load_in_child(kind: &str, dir: &Path, cwd: &Path, cache: &Path) -> load::LoadSample {
    let cold = tempfile::tempdir().unwrap();
    let cache = if kind == "loader_cold" {
        cold.path()
    } else {
        cache
    };
    // `…_noprobe`: the same, without loading each file in a throwaway process first (issue 45's
    // probe), for the before/after in one run.
    let (kind, probe) = match kind.strip_suffix("_noprobe") {
        Some(kind) => (kind, "0"),
        None => (kind, "1"),
    };
    let output = Command::new(std::env::current_exe().unwrap())
        .env("XCSH_LOADER_PROBE", probe)
        .env(CHILD_ENV, kind)
        .env(CHILD_DIR_ENV, dir)
        .env(CHILD_CWD_ENV, cwd)
        .env("XCSH_CACHE_DIR", cache)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "load child ({kind}, {}) failed: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn bench_load(bench: &mut Bench) {
    let source = release_artifacts().plugin("batch-rename");
    let size = std::fs::metadata(&source).unwrap().len();
    let root = tempfile::tempdir().unwrap(); // 0700
    let cwd = root.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let cache = root.path().join("cache");
    let mut dirs = Vec::new();
    for n in LOAD_COUNTS {
        let dir = root.path().join(format!("n{n}"));
        load::copy_plugin(&source, &dir, n).unwrap();
        dirs.push((n, dir));
    }
    flush_writes();
    // The warm cache: every copy's layout check done once, untimed.
    for (_, dir) in &dirs {
        load_in_child("loader_warm", dir, &cwd, &cache);
    }
    let samples: RefCell<Vec<(String, load::LoadSample)>> = RefCell::new(Vec::new());

    let mut group = bench.criterion.benchmark_group("load");
    // Each iteration is a child process loading N files: few, long samples.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1));
    for (n, dir) in &dirs {
        for kind in [
            "loader_cold",
            "loader_cold_noprobe",
            "loader_warm",
            "loader_warm_noprobe",
            "raw",
        ] {
            group.bench_function(format!("{kind}_n{n}"), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| {
                            let sample = load_in_child(kind, dir, &cwd, &cache);
                            assert_eq!(sample.loaded, *n);
                            samples.borrow_mut().push((format!("{kind}_n{n}"), sample));
                            sample.elapsed()
                        })
                        .sum()
                });
            });
        }
    }
    group.finish();

    for n in LOAD_COUNTS {
        let raw = bench.median("load", &format!("raw_n{n}"));
        let per = |d: Duration| d / u32::try_from(n).unwrap();
        for (kind, cache) in [("loader_cold", "cold"), ("loader_warm", "warm")] {
            let loader = bench.median("load", &format!("{kind}_n{n}"));
            let r = loader.as_secs_f64() / raw.as_secs_f64();
            let mut row = Row::new(
                "load",
                format!(
                    "N = {n} distinct copies loaded by the loader, per plugin, layout-check cache {cache}"
                ),
                time(per(loader)),
            )
            .baseline(format!("raw dlopen + 1 symbol: {}", time(per(raw))))
            .ratio("loader/raw", r);
            if n >= 50 {
                row = row.target("≤ 3", r <= 3.0);
            }
            bench.rows.push(row);
        }
        // Issue 45: the probe before the first in-process dlopen, against the same loads
        // without it, in the same run.
        let with = |kind: &str| bench.median("load", &format!("{kind}_n{n}"));
        let (cold, cold_before) = (with("loader_cold"), with("loader_cold_noprobe"));
        let (warm, warm_before) = (with("loader_warm"), with("loader_warm_noprobe"));
        bench.rows.push(
            Row::new(
                "load",
                format!("N = {n}, cache cold: the probe's extra cost per plugin (a throwaway process loads each file first)"),
                time(per(cold.saturating_sub(cold_before))),
            )
            .baseline(format!(
                "cold load per plugin {} with the probe, {} without",
                time(per(cold)),
                time(per(cold_before))
            )),
        );
        let r = warm.as_secs_f64() / warm_before.as_secs_f64();
        let mut row = Row::new(
            "load",
            format!(
                "N = {n}, cache warm: per plugin with the probe (skipped: the file loaded before)"
            ),
            time(per(warm)),
        )
        .baseline(format!("without the probe: {}", time(per(warm_before))))
        .ratio("with/without", r);
        if n >= 50 {
            row = row.target("≤ 1.05 (no more than before)", r <= 1.05);
        }
        bench.rows.push(row);
    }
    let per_plugin = |kind: &str, field: fn(&load::LoadSample) -> f64| {
        let mut values: Vec<f64> = samples
            .borrow()
            .iter()
            .filter(|(id, _)| id == &format!("{kind}_n100"))
            .map(|(_, s)| field(s) / s.loaded as f64)
            .collect();
        median_of(&mut values)
    };
    let loader_rss = per_plugin("loader_warm", load::LoadSample::rss_added_kib);
    let loader_cold_rss = per_plugin("loader_cold", load::LoadSample::rss_added_kib);
    let raw_rss = per_plugin("raw", load::LoadSample::rss_added_kib);
    let loader_unmapped = per_plugin("loader_warm", load::LoadSample::unmapped_shmem_added_kib);
    let loader_all = per_plugin("loader_warm", load::LoadSample::memory_added_kib);
    let raw_all = per_plugin("raw", load::LoadSample::memory_added_kib);
    let size_kib = size as f64 / 1024.0;
    bench.rows.push(
        Row::new(
            "load",
            "resident memory (VmRSS) added per plugin, N = 100, loader, layout-check cache warm",
            kib(loader_rss),
        )
        .baseline(format!(
            "raw dlopen: {}; file size {}; cache cold: {}",
            kib(raw_rss),
            kib(size_kib),
            kib(loader_cold_rss)
        ))
        .ratio("loader/raw", loader_rss / raw_rss)
        .target(
            format!("≤ raw + 256 KiB = {}", kib(raw_rss + 256.0)),
            loader_rss <= raw_rss + 256.0,
        ),
    );
    bench.rows.push(
        Row::new(
            "load",
            format!(
                "all memory added per loaded plugin: VmRSS + {} of in-memory copy not mapped",
                kib(loader_unmapped.max(0.0))
            ),
            kib(loader_all),
        )
        .baseline(format!("raw dlopen: {}", kib(raw_all)))
        .ratio("loader/raw", loader_all / raw_all)
        .target(
            format!("≤ file size + 64 KiB = {}", kib(size_kib + 64.0)),
            loader_all <= size_kib + 64.0,
        ),
    );
    // Issue 29's measure: distinct plugins (each its own tools, no conflict), in-process, the
    // definitions cache warm (their factories deferred to a first call), against raw dlopen.
    let distinct = root.path().join("distinct");
    idle::distinct_plugins(
        &release_artifacts().plugin("fixture-bench"),
        &distinct,
        DISTINCT_PLUGINS,
    )
    .unwrap();
    flush_writes();
    load_in_child("loader_distinct", &distinct, &cwd, &cache);
    let per_distinct = |kind: &str| {
        let mut values: Vec<f64> = (0..DISTINCT_RUNS)
            .map(|_| {
                let sample = load_in_child(kind, &distinct, &cwd, &cache);
                assert_eq!(sample.loaded, DISTINCT_PLUGINS);
                sample.rss_added_kib() / DISTINCT_PLUGINS as f64
            })
            .collect();
        median_of(&mut values)
    };
    let (distinct_loader, distinct_raw) = (per_distinct("loader_distinct"), per_distinct("raw"));
    bench.rows.push(
        Row::new(
            "load",
            format!(
                "resident memory (VmRSS) added per plugin, {DISTINCT_PLUGINS} distinct plugins \
                 in-process, definitions cache warm (factories deferred to a first call)"
            ),
            kib(distinct_loader),
        )
        .baseline(format!("raw dlopen: {}", kib(distinct_raw)))
        .ratio("loader/raw", distinct_loader / distinct_raw)
        .target(
            format!("≤ raw + 256 KiB = {}", kib(distinct_raw + 256.0)),
            distinct_loader <= distinct_raw + 256.0,
        ),
    );
    bench.notes.push(format!(
        "load: copies of `{}` ({}), each measured in a fresh child process, the page cache warm; \
         the loader builds one session over the directory of copies (all checks on); every copy \
         after the first defines the same tool and ends in a name-conflict load error (cache \
         cold: after its factory ran; warm: from its cached definitions, the factory deferred).",
        source.file_name().unwrap().to_string_lossy(),
        kib(size_kib)
    ));
}

/// What ships, on disk: the release `xcsh-plugins` against the `ast-grep` binary (the same
/// grammars, TLA+ aside: its parser's code and tables, as compiled, are added to the target),
/// and the sample plugin.
fn bench_sizes(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let size = |path: &Path| std::fs::metadata(path).unwrap().len();
    let mib = |bytes: u64| format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0));
    let cli = size(&artifacts.cli());
    let mut row = Row::new("sizes", "`target/release/xcsh-plugins` on disk", mib(cli));
    match xcsh_integration_tests::ast_grep_cli() {
        Ok(ast_grep) => {
            let reference = size(&ast_grep.canonicalize().unwrap_or(ast_grep));
            row = row
                .baseline(format!("`ast-grep` binary {}", mib(reference)))
                .ratio("xcsh-plugins/ast-grep", cli as f64 / reference as f64);
            // What `xcsh-plugins` ships and `ast-grep` does not: the TLA+ grammar.
            let profile_dir = artifacts.cli().parent().unwrap().to_path_buf();
            match xcsh_integration_tests::bench::c_objects_bytes(
                &profile_dir,
                "tree-sitter-tlaplus",
            ) {
                Ok(tlaplus) => {
                    row = row.target(
                        format!(
                            "≤ ast-grep + the TLA+ grammar it lacks ({}) = {}",
                            mib(tlaplus),
                            mib(reference + tlaplus)
                        ),
                        cli <= reference + tlaplus,
                    );
                }
                Err(why) => {
                    row = row.target("≤ the ast-grep binary", cli <= reference);
                    bench
                        .notes
                        .push(format!("sizes: the TLA+ grammar's size is unknown: {why}"));
                }
            }
        }
        Err(why) => bench
            .notes
            .push(format!("sizes: no ast-grep binary to compare with: {why}")),
    }
    bench.rows.push(row);
    let host = size(&artifacts.plugin_host());
    bench.rows.push(Row::new(
        "sizes",
        "`target/release/xcsh-plugin-host` on disk",
        mib(host),
    ));
    let sample = size(&artifacts.plugin("batch-rename"));
    bench.rows.push(
        Row::new(
            "sizes",
            "the sample plugin `libbatch_rename.so` on disk",
            mib(sample),
        )
        .target("≤ 1.5 MB", sample <= 1_500_000),
    );
}

fn bench_store(bench: &mut Bench) {
    let mut group = bench.criterion.benchmark_group("store");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("push_pop_1_thread", |b| {
        b.iter_custom(|iters| {
            let store = xcsh_loader::PendingActionStore::new();
            let action = store::noop_action();
            let start = Instant::now();
            let action = store::push_pop(&store, action, iters);
            let elapsed = start.elapsed();
            std::hint::black_box(action);
            elapsed
        });
    });
    // One iteration = one push + pop on each of the two threads.
    group.bench_function("push_pop_2_threads", |b| {
        b.iter_custom(|iters| store::contended(2, iters));
    });
    group.finish();
    let one = bench.median("store", "push_pop_1_thread");
    let two = bench.median("store", "push_pop_2_threads") / 2;
    let per_sec = |d: Duration| format!("{:.1} M pairs/s", 1e-6 / d.as_secs_f64());
    bench.rows.push(Row::new(
        "store",
        "push + pop, 1 thread (per pair)",
        format!("{} ({})", time(one), per_sec(one)),
    ));
    bench.rows.push(
        Row::new(
            "store",
            "push + pop, 2 threads contending (wall time per pair, both threads together)",
            format!("{} ({})", time(two), per_sec(two)),
        )
        .baseline(format!("1 thread: {}", time(one)))
        .ratio("2 threads/1 thread", two.as_secs_f64() / one.as_secs_f64()),
    );
}

fn bench_ast_edit(bench: &mut Bench) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let tree_dir = root.path().join("tree");
    let generated = tree::generate(&tree_dir, TREE_FILES).unwrap();
    flush_writes();
    let expected_label = format!(
        "AST Edit: {} replacements in {} files",
        generated.matches, generated.files_with_matches
    );
    let session = tree::session(&tree_dir);
    // The preview finds exactly what the generator wrote.
    runtime.block_on(async {
        let preview = tree::preview(&session).await;
        assert!(!preview.is_error, "{}", preview.text());
        let label = session.store().unwrap().peek().unwrap().label;
        assert_eq!(label, expected_label);
        tree::resolve(&session, "discard").await;
    });
    let cli = ast_grep_cli();
    let scratch = root.path().join("scratch");
    let fresh_copy = |name: &str| {
        let dir = scratch.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        tree::copy_tree(&tree_dir, &dir).unwrap();
        flush_writes();
        dir
    };
    let apply_times: RefCell<Vec<f64>> = RefCell::new(Vec::new());

    let mut group = bench.criterion.benchmark_group("ast_edit");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1));
    group.bench_function("ast_edit_preview", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    runtime.block_on(async {
                        let start = Instant::now();
                        let preview = tree::preview(&session).await;
                        let elapsed = start.elapsed();
                        assert!(!preview.is_error, "{}", preview.text());
                        tree::resolve(&session, "discard").await;
                        elapsed
                    })
                })
                .sum()
        });
    });
    group.bench_function("ast_edit_preview_apply", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| {
                    let dir = fresh_copy("ours");
                    let session = tree::session(&dir);
                    runtime.block_on(async {
                        let start = Instant::now();
                        let preview = tree::preview(&session).await;
                        let previewed = start.elapsed();
                        let applied = tree::resolve(&session, "apply").await;
                        let elapsed = start.elapsed();
                        assert!(!preview.is_error, "{}", preview.text());
                        assert!(!applied.is_error, "{}", applied.text());
                        apply_times
                            .borrow_mut()
                            .push((elapsed - previewed).as_secs_f64());
                        elapsed
                    })
                })
                .sum()
        });
    });
    if let Ok(cli) = &cli {
        group.bench_function("ast_grep_run", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let start = Instant::now();
                        std::hint::black_box(tree::ast_grep(cli, &tree_dir, false).unwrap());
                        start.elapsed()
                    })
                    .sum()
            });
        });
        group.bench_function("ast_grep_update_all", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        let dir = fresh_copy("theirs");
                        let start = Instant::now();
                        tree::ast_grep(cli, &dir, true).unwrap();
                        start.elapsed()
                    })
                    .sum()
            });
        });
    }
    group.finish();

    let preview = bench.median("ast_edit", "ast_edit_preview");
    let total = bench.median("ast_edit", "ast_edit_preview_apply");
    let apply = Duration::from_secs_f64(median_of(&mut apply_times.borrow_mut()));
    let what = format!(
        "{} files ({} KiB of Rust/TS/Python), `{}` → `{}`: {} replacements in {} files",
        generated.files,
        generated.bytes / 1024,
        tree::PATTERN,
        tree::REWRITE,
        generated.matches,
        generated.files_with_matches
    );
    match &cli {
        Ok(cli) => {
            let run = bench.median("ast_edit", "ast_grep_run");
            let update = bench.median("ast_edit", "ast_grep_update_all");
            let r = preview.as_secs_f64() / run.as_secs_f64();
            // The ratio again, from 10 back-to-back pairs.
            let paired = paired_ratio(
                10,
                || {
                    let start = Instant::now();
                    std::hint::black_box(tree::ast_grep(cli, &tree_dir, false).unwrap());
                    start.elapsed()
                },
                || {
                    runtime.block_on(async {
                        let start = Instant::now();
                        let preview = tree::preview(&session).await;
                        let elapsed = start.elapsed();
                        assert!(!preview.is_error, "{}", preview.text());
                        tree::resolve(&session, "discard").await;
                        elapsed
                    })
                },
            );
            bench.rows.push(
                Row::new(
                    "ast_edit",
                    "`ast_edit` preview (`Session::call`)",
                    time(preview),
                )
                .baseline(format!("`ast-grep run -p P -r R`: {}", time(run)))
                .ratio("ast_edit/ast-grep", r)
                .paired(paired)
                .target("≤ 0.9", r <= 0.9),
            );
            bench.rows.push(
                Row::new(
                    "ast_edit",
                    format!(
                        "`ast_edit` preview + `resolve` apply (the apply alone: {})",
                        time(apply)
                    ),
                    time(total),
                )
                .baseline(format!("`ast-grep run ... --update-all`: {}", time(update)))
                .ratio(
                    "ast_edit/ast-grep",
                    total.as_secs_f64() / update.as_secs_f64(),
                )
                .target("≤ 1.0", total <= update),
            );
            // Same work: the last applied copies are identical.
            let same = tree::same_tree(&scratch.join("ours"), &scratch.join("theirs"));
            let version = Command::new(cli)
                .arg("--version")
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
                .unwrap_or_default();
            bench.notes.push(format!(
                "ast_edit: {what}; {version}; both on 2 threads by default; files written by \
                 `ast_edit` apply and by `ast-grep --update-all`: {}.",
                match same {
                    Ok(()) => "identical".to_owned(),
                    Err(difference) => format!("DIFFERENT ({difference})"),
                }
            ));
        }
        Err(reason) => {
            bench.rows.push(Row::new(
                "ast_edit",
                "`ast_edit` preview (`Session::call`)",
                time(preview),
            ));
            bench.rows.push(Row::new(
                "ast_edit",
                format!(
                    "`ast_edit` preview + `resolve` apply (the apply alone: {})",
                    time(apply)
                ),
                time(total),
            ));
            bench.notes.push(format!(
                "ast_edit: {what}; no ast-grep CLI to compare with: {reason}"
            ));
        }
    }
}

/// `xcsh-plugins call ast_edit` (the release binary) against `ast-grep run`, whole processes
/// on a generated tree of [`CLI_TREE_FILES`] files: the preview (`--discard`) against `ast-grep
/// run -p P -r R`, and `--apply` against `ast-grep run -U` on fresh identical copies made
/// outside the timing. Both have paired ratios; the trees each wrote are compared.
fn bench_ast_edit_cli(bench: &mut Bench) {
    let Ok(ast_grep) = ast_grep_cli() else {
        bench.notes.push(
            "ast_edit whole process: no ast-grep CLI to compare with; rows skipped".to_owned(),
        );
        return;
    };
    let ours = release_artifacts().cli();
    let root = tempfile::tempdir().unwrap();
    let tree_dir = root.path().join("tree");
    let generated = tree::generate(&tree_dir, CLI_TREE_FILES).unwrap();
    flush_writes();
    // Both find the same matches before anything is timed.
    let printed = tree::ast_edit_cli(&ours, &tree_dir, false).unwrap();
    assert!(
        printed.contains(&format!(
            "AST Edit: {} replacements in {} files",
            generated.matches, generated.files_with_matches
        )),
        "{printed}"
    );
    tree::ast_grep(&ast_grep, &tree_dir, false).unwrap();
    let scratch = root.path().join("scratch");
    let fresh_copy = |name: &str| {
        let dir = scratch.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        tree::copy_tree(&tree_dir, &dir).unwrap();
        flush_writes();
        dir
    };
    let timed = |run: &dyn Fn() -> Result<String, String>| {
        let start = Instant::now();
        std::hint::black_box(run().unwrap());
        start.elapsed()
    };
    let preview_ours = || timed(&|| tree::ast_edit_cli(&ours, &tree_dir, false));
    let preview_theirs = || timed(&|| tree::ast_grep(&ast_grep, &tree_dir, false));
    let apply_ours = || {
        let dir = fresh_copy("ours");
        timed(&|| tree::ast_edit_cli(&ours, &dir, true))
    };
    let apply_theirs = || {
        let dir = fresh_copy("theirs");
        timed(&|| tree::ast_grep(&ast_grep, &dir, true))
    };

    let mut group = bench.criterion.benchmark_group("ast_edit_cli");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_millis(1));
    for (id, run) in [
        ("xcsh_preview", &preview_ours as &dyn Fn() -> Duration),
        ("ast_grep_run", &preview_theirs),
        ("xcsh_apply", &apply_ours),
        ("ast_grep_update_all", &apply_theirs),
    ] {
        group.bench_function(id, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run()).sum());
        });
    }
    group.finish();
    let paired_preview = paired_ratio(10, preview_theirs, preview_ours);
    let paired_apply = paired_ratio(10, apply_theirs, apply_ours);

    let median = |id: &str| bench.median("ast_edit_cli", id);
    let (preview, run) = (median("xcsh_preview"), median("ast_grep_run"));
    let (apply, update) = (median("xcsh_apply"), median("ast_grep_update_all"));
    let preview_ratio = preview.as_secs_f64() / run.as_secs_f64();
    let apply_ratio = apply.as_secs_f64() / update.as_secs_f64();
    bench.rows.push(
        Row::new(
            "ast_edit",
            format!("`xcsh-plugins call ast_edit` preview, whole process, {CLI_TREE_FILES} files"),
            time(preview),
        )
        .baseline(format!("`ast-grep run -p P -r R`: {}", time(run)))
        .ratio("xcsh/ast-grep", preview_ratio)
        .paired(paired_preview)
        .target("≤ 0.8", preview_ratio <= 0.8),
    );
    bench.rows.push(
        Row::new(
            "ast_edit",
            format!(
                "`xcsh-plugins call ast_edit --apply`, whole process, {CLI_TREE_FILES} files \
                 (crash-safe)"
            ),
            time(apply),
        )
        .baseline(format!("`ast-grep run ... -U`: {}", time(update)))
        .ratio("xcsh/ast-grep", apply_ratio)
        .paired(paired_apply)
        .target("≤ 0.8", apply_ratio <= 0.8),
    );
    let same = tree::same_tree(&scratch.join("ours"), &scratch.join("theirs"));
    bench.notes.push(format!(
        "ast_edit whole process: {} files ({} KiB), {} replacements in {} files; `xcsh-plugins` \
         (release) with default options, `ast-grep` with its own; files written by `--apply` \
         and by `ast-grep -U`: {}.",
        generated.files,
        generated.bytes / 1024,
        generated.matches,
        generated.files_with_matches,
        match same {
            Ok(()) => "identical".to_owned(),
            Err(difference) => format!("DIFFERENT ({difference})"),
        }
    ));
}

/// Calls per batch, and rounds, of the paired comparison of the sandbox's policies.
const SANDBOX_BATCH: u64 = 2_000;
const SANDBOX_ROUNDS: usize = 21;

/// Plugins `list`ed at once, in each isolation mode.
const LIST_PLUGINS: usize = 50;

/// Process isolation (issue 13): the round trip of a trivial call to a plugin child beside
/// in-process (inline and off-runtime) and MCP stdio; a plugin's first call (spawn,
/// handshake, `dlopen`); `list` over 50 plugins in both modes; a child's resident memory.
fn bench_isolation(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let echo = artifacts.plugin("fixture-bench");
    let inline = calls::plugin_session(cwd.path(), &echo).unwrap();
    let offload = isolation::session(cwd.path(), &echo, Isolation::InProcess).unwrap();
    let process = isolation::session(cwd.path(), &echo, Isolation::Process).unwrap();
    // Issue 27's control, in the same run: the policy plugin processes had before the secrets
    // sandbox (every variable of the host, reads from `/`), and the one of `--deny-network`
    // (its seccomp filter runs on every system call the child makes).
    let before_sandbox = calls::session_with(
        xcsh_loader::Session::builder(cwd.path())
            .isolation(Isolation::Process)
            .definitions_cache(false)
            .pass_env("*")
            .allow_read("/"),
        &echo,
    )
    .unwrap();
    let deny_network = calls::session_with(
        xcsh_loader::Session::builder(cwd.path())
            .isolation(Isolation::Process)
            .definitions_cache(false)
            .deny_network(true),
        &echo,
    )
    .unwrap();
    let mcp = runtime
        .block_on(calls::McpServer::start(&artifacts.cli(), &echo, cwd.path()))
        .unwrap();
    runtime.block_on(async {
        for session in [&inline, &offload, &process, &before_sandbox, &deny_network] {
            assert_eq!(calls::call_echo(session).await.text(), calls::ECHO_TEXT);
        }
    });
    let root = tempfile::tempdir().unwrap();
    let many = root.path().join("many");
    load::copy_plugin(&echo, &many, LIST_PLUGINS).unwrap();
    flush_writes();

    let mut group = bench.criterion.benchmark_group("isolation");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("a_in_process_inline", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&inline)));
    });
    group.bench_function("b_in_process_offload", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&offload)));
    });
    group.bench_function("c_process", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&process)));
    });
    group.bench_function("c_process_before_sandbox", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&before_sandbox)));
    });
    group.bench_function("c_process_deny_network", |b| {
        b.iter_custom(|iters| timed_calls(&runtime, iters, || calls::call_echo(&deny_network)));
    });
    group.bench_function("d_mcp", |b| {
        b.iter_custom(|iters| {
            timed_calls(&runtime, iters, || async {
                mcp.call_echo().await.expect("MCP call failed")
            })
        });
    });
    let mut ping_pong = isolation::PingPong::start(
        Command::new(std::env::current_exe().unwrap()),
        PING_PONG_ENV,
    )
    .unwrap();
    group.bench_function("e_socket_floor", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                ping_pong.round_trip().unwrap();
            }
            start.elapsed()
        });
    });
    drop(ping_pong);
    group.sample_size(20);
    group.bench_function("first_call", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let session = isolation::session(cwd.path(), &echo, Isolation::Process).unwrap();
                let outcome = runtime.block_on(calls::call_echo(&session));
                total += start.elapsed();
                assert_eq!(outcome.text(), calls::ECHO_TEXT);
                drop(session);
            }
            total
        });
    });
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    // The definitions cache: off (every child starts, as before the cache), cold (an empty
    // cache directory for each run: every child starts and each handshake is written) and
    // warm (filled by an earlier run: no child starts).
    let caches = tempfile::tempdir().unwrap();
    let warm = caches.path().join("warm");
    let cold_runs = std::sync::atomic::AtomicUsize::new(0);
    let cli = artifacts.cli();
    let list = |mode: Isolation, cache: DefinitionsCache<'_>| {
        let output = isolation::list(&cli, &many, mode, cache).unwrap();
        assert!(
            !output.stdout.is_empty(),
            "list printed nothing: {output:?}"
        );
    };
    list(Isolation::Process, DefinitionsCache::In(&warm));
    group.bench_function("list_in_process", |b| {
        b.iter(|| list(Isolation::InProcess, DefinitionsCache::In(&warm)));
    });
    group.bench_function("list_process", |b| {
        b.iter(|| list(Isolation::Process, DefinitionsCache::Off(&warm)));
    });
    group.bench_function("list_process_cold", |b| {
        b.iter_batched(
            || {
                let n = cold_runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                caches.path().join(format!("cold-{n}"))
            },
            |cold| list(Isolation::Process, DefinitionsCache::In(&cold)),
            BatchSize::PerIteration,
        );
    });
    group.bench_function("list_process_warm", |b| {
        b.iter(|| list(Isolation::Process, DefinitionsCache::In(&warm)));
    });
    group.finish();
    runtime.block_on(mcp.stop());
    // Batches of calls through each session back to back, in alternating order: the ratio of
    // issue 27's target, which drifts of the machine's load between criterion's groups skew.
    let batch = |session: &xcsh_loader::Session| {
        timed_calls(&runtime, SANDBOX_BATCH, || calls::call_echo(session))
    };
    let sandbox_paired = paired_ratio(
        SANDBOX_ROUNDS,
        || batch(&before_sandbox),
        || batch(&process),
    );
    let deny_paired = paired_ratio(SANDBOX_ROUNDS, || batch(&process), || batch(&deny_network));
    drop((before_sandbox, deny_network));

    // A child's resident memory, beside what its plugin's own mappings take.
    let crash = artifacts.plugin("fixture-crash");
    let session = isolation::session(cwd.path(), &crash, Isolation::Process).unwrap();
    let pid: u32 = runtime
        .block_on(session.call("pid", json!({})))
        .text()
        .parse()
        .unwrap();
    let name = crash.file_name().unwrap().to_str().unwrap();
    let (rss, plugin_rss) = isolation::child_memory(pid, name).unwrap();
    drop(session);

    let median = |id| bench.median("isolation", id);
    let (a, b, c, d) = (
        median("a_in_process_inline"),
        median("b_in_process_offload"),
        median("c_process"),
        median("d_mcp"),
    );
    let floor = median("e_socket_floor");
    let (c_before, c_deny) = (
        median("c_process_before_sandbox"),
        median("c_process_deny_network"),
    );
    let first = median("first_call");
    let (list_in, list_proc) = (median("list_in_process"), median("list_process"));
    let (list_cold, list_warm) = (median("list_process_cold"), median("list_process_warm"));
    let d_c = d.as_secs_f64() / c.as_secs_f64();
    let list_ratio = list_proc.as_secs_f64() / list_in.as_secs_f64();
    let cold_ratio = list_cold.as_secs_f64() / list_in.as_secs_f64();
    let warm_ratio = list_warm.as_secs_f64() / list_in.as_secs_f64();
    let beyond = rss.saturating_sub(plugin_rss) as f64;
    bench.rows.push(Row::new(
        "isolation",
        "(a) `bench_echo` in-process, polled inline (`inline_plugin_calls(true)`)",
        time(a),
    ));
    bench.rows.push(
        Row::new(
            "isolation",
            "(b) `bench_echo` in-process, on a blocking-pool thread (the in-process default)",
            time(b),
        )
        .baseline(format!("(a) {}", time(a)))
        .ratio("b/a", b.as_secs_f64() / a.as_secs_f64()),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "(c) `bench_echo` in its plugin process (process isolation), round trip",
            time(c),
        )
        .baseline(format!("(a) {}", time(a)))
        .ratio("c/a", c.as_secs_f64() / a.as_secs_f64())
        .target("median ≤ 25 µs", c <= Duration::from_micros(25)),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "(c) under the policy before the secrets sandbox of issue 27 (every variable of the host passed, reads allowed from `/`), same binary",
            time(c_before),
        )
        .baseline(format!("(c) {}", time(c)))
        .ratio("c/this", c.as_secs_f64() / c_before.as_secs_f64())
        .paired(sandbox_paired)
        .target("paired c/this ≤ 1.05", sandbox_paired <= 1.05),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "(c) under `--deny-network` (issue 27's seccomp filter on every system call of the child)",
            time(c_deny),
        )
        .baseline(format!("(c) {}", time(c)))
        .ratio("this/c", c_deny.as_secs_f64() / c.as_secs_f64())
        .paired(deny_paired),
    );
    let c_floor = c.as_secs_f64() / floor.as_secs_f64();
    bench.rows.push(
        Row::new(
            "isolation",
            "(e) the floor: a 64-byte ping-pong over a Unix socket between two processes, each blocked in `read`",
            time(floor),
        )
        .baseline(format!("(c) {}", time(c)))
        .ratio("c/e", c_floor)
        .target("c/e ≤ 1.5", c_floor <= 1.5),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "(d) `bench_echo` over MCP stdio (`xcsh-plugins mcp`, rmcp client)",
            time(d),
        )
        .baseline(format!("(c) {}", time(c)))
        .ratio("d/c", d_c)
        .target("d/c ≥ 3", d_c >= 3.0),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "first call of an isolated plugin: build the session (spawn, handshake, `dlopen`) + one call",
            time(first),
        )
        .target("≤ 10 ms", first <= Duration::from_millis(10)),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            format!("`xcsh-plugins list --no-cache`, {LIST_PLUGINS} plugins, process isolation (children start in parallel)"),
            time(list_proc),
        )
        .baseline(format!("in-process {}", time(list_in)))
        .ratio("process/in-process", list_ratio),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            format!("`xcsh-plugins list`, {LIST_PLUGINS} plugins, process isolation, cold definitions cache (empty: every child starts, each handshake is written)"),
            time(list_cold),
        )
        .baseline(format!("in-process {}", time(list_in)))
        .ratio("process/in-process", cold_ratio),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            format!("`xcsh-plugins list`, {LIST_PLUGINS} plugins, process isolation, warm definitions cache (no child starts)"),
            time(list_warm),
        )
        .baseline(format!("in-process {}", time(list_in)))
        .ratio("process/in-process", warm_ratio)
        .target("≤ 1.5", warm_ratio <= 1.5),
    );
    bench.rows.push(
        Row::new(
            "isolation",
            "resident memory of a plugin child (`fixture-crash`), beyond the plugin's own mappings",
            kib(beyond),
        )
        .baseline(format!(
            "VmRSS {}, plugin mappings {}",
            kib(rss as f64),
            kib(plugin_rss as f64)
        ))
        .target("≤ 4 MiB", beyond <= 4096.0),
    );
}

/// Distinct plugins in the idle MCP session.
const IDLE_PLUGINS: usize = 50;

/// Issue 28: (1) an MCP session over [`IDLE_PLUGINS`] distinct plugins, each called once, then
/// left idle for the default idle time (30 s) and one second more: its plugin processes and
/// the resident memory of host plus children before any call, right after the calls, and
/// then; (2) the first call of a plugin whose process was stopped while idle (a restart:
/// spawn, handshake, `dlopen`, then the call) against a call of a running one.
fn bench_idle(bench: &mut Bench) {
    let artifacts = release_artifacts();
    let root = tempfile::tempdir().unwrap();
    let (dir, cwd, cache) = (
        root.path().join("plugins"),
        root.path().join("cwd"),
        root.path().join("cache"),
    );
    std::fs::create_dir_all(&cwd).unwrap();
    let tools =
        idle::distinct_plugins(&artifacts.plugin("fixture-bench"), &dir, IDLE_PLUGINS).unwrap();
    flush_writes();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let idle_time = xcsh_loader::DEFAULT_STOP_IDLE_AFTER;
    // One session: before any call, right after one call of each plugin, and 1 s after the
    // idle time.
    let session = || {
        runtime.block_on(async {
            let session = idle::IdleSession::start(&artifacts.cli(), &dir, &cwd, &cache, None)
                .await
                .unwrap();
            let listed = session.list().await.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let pid = session.pid();
            let before = idle::footprint(pid);
            for tool in &tools {
                session.call(tool).await.unwrap();
            }
            let after_calls = idle::footprint(pid);
            tokio::time::sleep(idle_time + Duration::from_secs(1)).await;
            let after_idle = idle::footprint(pid);
            session.stop().await;
            (listed, [before, after_calls, after_idle])
        })
    };
    let show = |f: idle::Footprint| {
        format!(
            "{} plugin processes, host + children {} (host {})",
            f.plugin_processes,
            kib(f.total_kib as f64),
            kib(f.host_kib as f64)
        )
    };
    // First with the definitions cache cold (every process starts at build, and is stopped
    // once idle too), which fills it; then warm, as every later session of the user.
    for cache_state in ["cold", "warm"] {
        let (listed, [before, after_calls, after_idle]) = session();
        let grown = after_idle.total_kib as f64 - before.total_kib as f64;
        bench.rows.push(Row::new(
            "idle",
            format!("MCP session over {IDLE_PLUGINS} distinct plugins ({listed} tools listed), definitions cache {cache_state}: before any call"),
            show(before),
        ));
        bench.rows.push(Row::new(
            "idle",
            format!("the same ({cache_state}), right after calling each plugin's tool once"),
            show(after_calls),
        ));
        let row = Row::new(
            "idle",
            format!(
                "the same ({cache_state}), 1 s after the idle time ({}s, the default) has passed",
                idle_time.as_secs()
            ),
            show(after_idle),
        )
        .baseline(format!("before any call: {}", kib(before.total_kib as f64)))
        .ratio("grown (MiB)", grown / 1024.0);
        bench.rows.push(if cache_state == "warm" {
            row.target(
                "0 plugin processes, total within 2 MiB of before",
                after_idle.plugin_processes == 0 && grown.abs() <= 2048.0,
            )
        } else {
            row.target("0 plugin processes", after_idle.plugin_processes == 0)
        });
    }

    // (2) The restart's cost, in this process: one session whose process stops after 20 ms
    // idle (each timed call finds it stopped), one that never stops.
    let echo = artifacts.plugin("fixture-bench");
    let me = std::process::id();
    assert!(idle::wait_for_no_plugin_process(
        me,
        Duration::from_secs(10)
    ));
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = bench.criterion.benchmark_group("idle");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    {
        let stopping = idle::session(&cwd, &echo, Some(Duration::from_millis(20)));
        assert_eq!(
            current.block_on(calls::call_echo(&stopping)).text(),
            calls::ECHO_TEXT
        );
        group.bench_function("a_first_call_after_a_stop", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    assert!(idle::wait_for_no_plugin_process(
                        me,
                        Duration::from_secs(10)
                    ));
                    let start = Instant::now();
                    let outcome = current.block_on(calls::call_echo(&stopping));
                    total += start.elapsed();
                    assert_eq!(outcome.text(), calls::ECHO_TEXT);
                }
                total
            });
        });
    }
    assert!(idle::wait_for_no_plugin_process(
        me,
        Duration::from_secs(10)
    ));
    {
        let running = idle::session(&cwd, &echo, None);
        assert_eq!(
            current.block_on(calls::call_echo(&running)).text(),
            calls::ECHO_TEXT
        );
        group
            .sample_size(50)
            .measurement_time(Duration::from_secs(3));
        group.bench_function("b_call_of_a_running_plugin", |b| {
            b.iter_custom(|iters| timed_calls(&current, iters, || calls::call_echo(&running)));
        });
    }
    group.finish();
    let restart = bench.median("idle", "a_first_call_after_a_stop");
    let running = bench.median("idle", "b_call_of_a_running_plugin");
    bench.rows.push(
        Row::new(
            "idle",
            "first call of a plugin whose process was stopped while idle (restart: spawn, handshake, `dlopen`, call)",
            time(restart),
        )
        .baseline(format!("call of a running one: {}", time(running)))
        .ratio("stopped/running", restart.as_secs_f64() / running.as_secs_f64())
        .target("≤ 10 ms", restart <= Duration::from_millis(10)),
    );
    bench.notes.push(format!(
        "idle: {IDLE_PLUGINS} distinct copies of `libfixture_bench.so` (each copy numbered in its bytes, which names its tools `bench_echo_000`..), `xcsh-plugins mcp --plugin DIR` with the definitions cache warm (no process before the first call), called once each by an rmcp client; resident memory is VmRSS of the server plus its children (`/proc`). The restart rows run in the benchmark process: a session with `stop_idle_after(20 ms)`, each timed call made once its process was gone."
    ));
}
