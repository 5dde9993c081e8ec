//! 100 MB of output through `ctx.exec` (issue 44), in process, alone in its test binary so
//! nothing else moves the resident memory measured: the output is cut at the cap with
//! `truncated: true`, the rest drained, and the host's resident memory grows by less than
//! the cap once the call is over (what the call kept is freed; the 100 MB never were held).
//! The peak, while the kept output is alive, stays within the cap and a small margin.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_integration_tests::plugin;
use xcsh_loader::{Isolation, Session};
use xcsh_plugin_api::DEFAULT_MAX_OUTPUT;

/// `VmRSS` or `VmHWM` of this process, in bytes.
fn memory(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with(field)).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test]
async fn a_hundred_megabytes_of_output_are_cut_at_the_cap_and_memory_stays_flat() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::builder(dir.path())
        .default_dirs(false)
        .isolation(Isolation::InProcess)
        .plugin(plugin("fixture-programs"))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    // Warm up: the plugin's runtime and threads exist before the measurement.
    let warm = session
        .call(
            "run",
            json!({"program": "head", "args": ["-c", "1000", "/dev/zero"]}),
        )
        .await;
    assert!(!warm.is_error, "{}", warm.text());
    let (rss_before, peak_before) = (memory("VmRSS:"), memory("VmHWM:"));
    let outcome = session
        .call(
            "run",
            json!({"program": "head", "args": ["-c", "100000000", "/dev/zero"]}),
        )
        .await;
    assert!(!outcome.is_error, "{}", outcome.text());
    let details = outcome.result.details.clone().unwrap();
    assert_eq!(details["truncated"], true, "{details}");
    assert_eq!(details["stdout_len"], DEFAULT_MAX_OUTPUT, "{details}");
    assert_eq!(details["code"], 0, "read to its end: {details}");
    drop(outcome);
    let (rss_after, peak_after) = (memory("VmRSS:"), memory("VmHWM:"));
    let cap = DEFAULT_MAX_OUTPUT as u64;
    let grown = rss_after.saturating_sub(rss_before);
    let peak = peak_after.saturating_sub(peak_before);
    eprintln!(
        "resident memory grew by {grown} bytes after the call, its peak by {peak} (cap {cap})"
    );
    assert!(
        grown < cap,
        "resident memory grew by {grown} bytes, the cap is {cap}"
    );
    assert!(
        peak < cap + (4 << 20),
        "the peak grew by {peak} bytes: more than the kept output ({cap}) and 4 MiB"
    );
}
