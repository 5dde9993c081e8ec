//! The MCP server's host services seen by the official MCP Python SDK (issue 43), both
//! generations: `mcp` 1.x (`ClientSession`, protocol 2025-11-25: the server asks with
//! `elicitation/create` and `sampling/createMessage`) and `mcp` 2.x (`mcp.Client` in its
//! default mode, protocol 2026-07-28: the server answers "input required" and the client
//! retries with the answers). Each plays the user: accept, decline, cancel, an answer outside
//! the form, sampling, and a client that declared neither; in a plugin process and in-process.
//!
//! The script is `tests/mcp-python/test_host_services.py`; `.ci/run` installs the two pinned
//! virtual environments (`target/mcp-python-venv`, `target/mcp-python-venv-v2`, from the
//! requirements files with hashes) and sets `XCSH_REQUIRE_MCP_PYTHON`; without them (and
//! without that variable) the test says it skipped.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::process::Command;

use xcsh_integration_tests::{artifacts, plugin, workspace_root};

fn run_with(venv: &str) {
    let python = workspace_root()
        .join("target")
        .join(venv)
        .join("bin/python");
    if !python.exists() {
        assert!(
            std::env::var_os("XCSH_REQUIRE_MCP_PYTHON").is_none(),
            "{} is missing but XCSH_REQUIRE_MCP_PYTHON is set",
            python.display()
        );
        eprintln!(
            "skipped: no {} (see tests/mcp-python/requirements*.txt)",
            python.display()
        );
        return;
    }
    let output = Command::new(&python)
        .arg(workspace_root().join("tests/mcp-python/test_host_services.py"))
        .env("XCSH_PLUGINS_BIN", artifacts().cli())
        .env("XCSH_CONFORMANCE_PLUGIN", plugin("fixture-conformance"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{venv}:\n{stdout}\n{stderr}");
    assert!(stdout.contains("16 passed, 0 failed"), "{venv}:\n{stdout}");
}

#[test]
fn python_sdk_1_on_protocol_2025_11_25() {
    run_with("mcp-python-venv");
}

#[test]
fn python_sdk_2_on_the_newest_protocol() {
    run_with("mcp-python-venv-v2");
}
