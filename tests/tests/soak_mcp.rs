//! A long MCP session keeps flat memory: thousands of push/resolve cycles through a real
//! `xcsh-plugins mcp` process (real client, real plugin process), with the server's resident
//! memory read from `/proc` after a warm-up and again at the end. Before the steering queue
//! was bounded, every push left about 270 bytes behind for good (the server never takes the
//! steering messages), which this many cycles turns into well over the allowed growth.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::ffi::OsString;

use serde_json::json;
use xcsh_integration_tests::bench::proc_kib;
use xcsh_integration_tests::mcp::McpServerProcess;
use xcsh_integration_tests::plugin;

/// Cycles before the first reading (allocator pools, lazily built state, caches).
const WARM_UP: usize = 1_000;
/// Cycles between the two readings (with the warm-up: the 20,000 calls).
const MEASURED: usize = 9_000;
/// The growth allowed between the readings: the leak this guards against was 270 bytes per
/// cycle (2.3 MiB over `MEASURED`); page-granular allocator noise stays well below.
const ALLOWED_GROWTH_KIB: u64 = 512;

fn resident_kib(pid: u32) -> u64 {
    proc_kib(&format!("/proc/{pid}/status"), "VmRSS:").unwrap()
}

async fn cycle(server: &McpServerProcess) {
    let preview = server
        .call(
            "batch_rename_preview",
            json!({"files": [], "find": "a", "replace": "b"}),
        )
        .await;
    assert_eq!(preview.is_error, Some(false), "{preview:?}");
    let resolved = server
        .call("resolve", json!({"action": "discard", "reason": "soak"}))
        .await;
    assert_eq!(resolved.is_error, Some(false), "{resolved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_and_resolve_cycles_keep_the_servers_memory_flat() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<OsString> = vec![
        "--no-default-dirs".into(),
        "--plugin".into(),
        plugin("batch-rename").into(),
        "--cwd".into(),
        dir.path().into(),
    ];
    let server = McpServerProcess::start(args).await;
    let pid = server.child.id().unwrap();
    for _ in 0..WARM_UP {
        cycle(&server).await;
    }
    let before = resident_kib(pid);
    for _ in 0..MEASURED {
        cycle(&server).await;
    }
    let after = resident_kib(pid);
    eprintln!("server resident memory: {before} KiB after {WARM_UP} cycles, {after} KiB after {MEASURED} more");
    assert!(
        after <= before + ALLOWED_GROWTH_KIB,
        "the server grew by {} KiB over {MEASURED} push/resolve cycles ({before} -> {after} KiB)",
        after.saturating_sub(before)
    );
    server.stop().await;
}
