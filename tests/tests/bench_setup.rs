//! Every benchmark of `benches/xcsh.rs` set up and run once, untimed, so `cargo test` proves
//! the benchmarks work without running them (`cargo bench` times them; see BENCHMARKS.md).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_integration_tests::bench::{calls, flush_writes, load, store, tree};
use xcsh_integration_tests::{artifacts, ast_grep_cli};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn call_benchmarks_answer_the_same_three_ways() {
    let artifacts = artifacts();
    let runtime = runtime();
    let cwd = tempfile::tempdir().unwrap();
    let builtin = calls::builtin_session(cwd.path());
    let plugin = calls::plugin_session(cwd.path(), &artifacts.plugin("fixture-bench")).unwrap();
    let multi = calls::plugin_session(cwd.path(), &artifacts.plugin("fixture-multi")).unwrap();
    // Same tool, same schema, whichever way it is reached.
    let spec = |session: &xcsh_loader::Session| {
        let tools = session.tools();
        let echo = tools.iter().find(|t| t.name == calls::ECHO).unwrap();
        (echo.label.clone(), echo.parameters.clone())
    };
    assert_eq!(spec(&builtin), spec(&plugin));
    runtime.block_on(async {
        for session in [&builtin, &plugin] {
            let outcome = calls::call_echo(session).await;
            assert!(!outcome.is_error, "{}", outcome.text());
            assert_eq!(outcome.text(), calls::ECHO_TEXT);
        }
        let mcp = calls::McpServer::start(
            &artifacts.cli(),
            &artifacts.plugin("fixture-bench"),
            cwd.path(),
        )
        .await
        .unwrap();
        let result = mcp.call_echo().await.unwrap();
        assert_ne!(result.is_error, Some(true));
        assert_eq!(calls::mcp_text(&result), calls::ECHO_TEXT);
        mcp.stop().await;

        let applied = calls::round_trip(&plugin, "bench_preview", calls::echo_args()).await;
        assert!(!applied.is_error, "{}", applied.text());
        assert_eq!(applied.text(), "applied hello (bench)");
        let note = json!({"file": "note.txt", "content": "hello"});
        let applied = calls::round_trip(&multi, "note_preview", note).await;
        assert!(!applied.is_error, "{}", applied.text());
        assert_eq!(
            std::fs::read_to_string(cwd.path().join("note.txt")).unwrap(),
            "hello"
        );
        assert!(!plugin.has_pending() && !multi.has_pending());
        assert!(plugin.take_steering_messages().is_empty());
    });
}

#[test]
fn load_benchmark_loads_fresh_copies_both_ways() {
    let source = artifacts().plugin("batch-rename");
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    let (ours, raw) = (root.path().join("ours"), root.path().join("raw"));
    assert_eq!(load::copy_plugin(&source, &ours, 2).unwrap().len(), 2);
    assert_eq!(load::copy_plugin(&source, &raw, 2).unwrap().len(), 2);
    let sample = load::with_loader(&cwd, &ours, load::Plugins::Copies).unwrap();
    assert_eq!(sample.loaded, 2);
    // Copies counted as distinct plugins are refused: one name conflict was not expected.
    assert!(load::with_loader(&cwd, &ours, load::Plugins::Distinct).is_err());
    // Distinct plugins (the per-plugin memory row): no conflict, and copies' rule refuses them.
    let distinct = root.path().join("distinct");
    xcsh_integration_tests::bench::idle::distinct_plugins(
        &artifacts().plugin("fixture-bench"),
        &distinct,
        2,
    )
    .unwrap();
    let sample = load::with_loader(&cwd, &distinct, load::Plugins::Distinct).unwrap();
    assert_eq!(sample.loaded, 2);
    assert!(load::with_loader(&cwd, &distinct, load::Plugins::Copies).is_err());
    assert!(sample.after.rss > 0 && sample.nanos > 0);
    assert!(sample.memory_added_kib() >= sample.rss_added_kib());
    let sample = load::raw(&raw).unwrap();
    assert_eq!(sample.loaded, 2);
    // The copies are in a 0700 directory of their own.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&ours).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

#[test]
fn store_benchmarks_push_and_pop_everything() {
    let store = xcsh_loader::PendingActionStore::new();
    let action = store::push_pop(&store, store::noop_action(), 100);
    assert_eq!(action.label(), "Bench: no-op");
    assert_eq!(store.count(), 0);
    assert!(store::contended(2, 1_000) > std::time::Duration::ZERO);
}

#[test]
fn ast_edit_benchmark_does_what_ast_grep_does_on_a_small_tree() {
    let root = tempfile::tempdir().unwrap();
    let (ours, theirs) = (root.path().join("ours"), root.path().join("theirs"));
    let generated = tree::generate(&ours, 60).unwrap();
    assert_eq!(generated.files, 60);
    assert!(generated.matches > generated.files_with_matches);
    tree::copy_tree(&ours, &theirs).unwrap();
    flush_writes();
    let session = tree::session(&ours);
    runtime().block_on(async {
        let preview = tree::preview(&session).await;
        assert!(!preview.is_error, "{}", preview.text());
        let label = session.store().unwrap().peek().unwrap().label;
        assert_eq!(
            label,
            format!(
                "AST Edit: {} replacements in {} files",
                generated.matches, generated.files_with_matches
            )
        );
        let applied = tree::resolve(&session, "apply").await;
        assert!(!applied.is_error, "{}", applied.text());
    });
    match ast_grep_cli() {
        Ok(cli) => {
            let printed = tree::ast_grep(&cli, &theirs, false).unwrap();
            assert!(printed.contains("bar("), "{printed}");
            tree::ast_grep(&cli, &theirs, true).unwrap();
            tree::same_tree(&ours, &theirs).unwrap();
        }
        Err(reason) => println!("skipped the ast-grep half: no ast-grep CLI: {reason}"),
    }
}

#[tokio::test]
async fn the_isolation_benchmarks_can_run() {
    use xcsh_integration_tests::bench::isolation;
    use xcsh_loader::Isolation;
    let artifacts = artifacts();
    let cwd = tempfile::tempdir().unwrap();
    for mode in [Isolation::Process, Isolation::InProcess] {
        let session =
            isolation::session(cwd.path(), &artifacts.plugin("fixture-bench"), mode).unwrap();
        assert_eq!(calls::call_echo(&session).await.text(), calls::ECHO_TEXT);
        let cache = tempfile::tempdir().unwrap();
        for cache in [
            isolation::DefinitionsCache::Off(cache.path()),
            isolation::DefinitionsCache::In(cache.path()),
        ] {
            let output = isolation::list(
                &artifacts.cli(),
                &artifacts.plugin("fixture-bench"),
                mode,
                cache,
            )
            .unwrap();
            assert!(output.status.success());
        }
    }
    let crash = artifacts.plugin("fixture-crash");
    let session = isolation::session(cwd.path(), &crash, Isolation::Process).unwrap();
    let pid: u32 = session
        .call("pid", serde_json::json!({}))
        .await
        .text()
        .parse()
        .unwrap();
    let name = crash.file_name().unwrap().to_str().unwrap();
    let (rss, plugin) = isolation::child_memory(pid, name).unwrap();
    assert!(rss > plugin && plugin > 0, "{rss} {plugin}");
}

#[test]
fn idle_benchmarks_stop_every_plugin_process_and_restart_one() {
    use std::time::Duration;
    use xcsh_integration_tests::bench::idle;
    let artifacts = artifacts();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let (dir, cwd, cache) = (
        root.path().join("plugins"),
        root.path().join("cwd"),
        root.path().join("cache"),
    );
    std::fs::create_dir_all(&cwd).unwrap();
    let tools = idle::distinct_plugins(&artifacts.plugin("fixture-bench"), &dir, 3).unwrap();
    assert_eq!(
        tools,
        ["bench_echo_000", "bench_echo_001", "bench_echo_002"]
    );
    runtime.block_on(async {
        let session = idle::IdleSession::start(&artifacts.cli(), &dir, &cwd, &cache, Some("300ms"))
            .await
            .unwrap();
        // Three distinct plugins: each its own echo and preview.
        assert_eq!(
            session.list().await.unwrap(),
            11,
            "3 echoes, 3 previews, 3 confirms, the built-in ast_edit, resolve"
        );
        for tool in &tools {
            session.call(tool).await.unwrap();
        }
        let pid = session.pid();
        assert!(idle::footprint(pid).plugin_processes > 0);
        assert!(idle::wait_for_no_plugin_process(
            pid,
            Duration::from_secs(20)
        ));
        session.call(&tools[0]).await.unwrap();
        assert_eq!(idle::footprint(pid).plugin_processes, 1);
        session.stop().await;
    });
}
