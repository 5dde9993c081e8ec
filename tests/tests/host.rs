//! `xcsh-plugins check`, `new` and `demo`, run as a tool author and a newcomer would.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output};

use xcsh_integration_tests::{artifacts, plugin, workspace_root};

fn cli(args: &[&str], cwd: &Path) -> Output {
    Command::new(artifacts().cli())
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn check_accepts_a_good_plugin_and_lists_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("batch-rename");
    let output = cli(&["check", lib.to_str().unwrap()], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("ok "), "{stdout}");
    assert!(stdout.contains("batch_rename_preview"), "{stdout}");
    assert!(stdout.contains(xcsh_plugin_api::API_VERSION), "{stdout}");
}

#[test]
fn check_and_list_json_report_each_plugins_api_version_and_capabilities() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("batch-rename");
    let output = cli(&["--json", "check", lib.to_str().unwrap()], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["hostApiVersion"], xcsh_plugin_api::API_VERSION);
    assert_eq!(
        report["oldestSupportedApiVersion"],
        xcsh_plugin_api::OLDEST_SUPPORTED_API_VERSION
    );
    let file = &report["files"][0];
    assert_eq!(file["apiVersion"], xcsh_plugin_api::API_VERSION);
    let expected = xcsh_plugin_api::capabilities_of(xcsh_plugin_api::API_VERSION);
    assert_eq!(file["capabilities"], serde_json::json!(expected));

    let output = cli(
        &[
            "--no-default-dirs",
            "--plugin",
            lib.to_str().unwrap(),
            "--json",
            "list",
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let plugins = report["plugins"].as_array().unwrap();
    assert_eq!(plugins.len(), 1, "{report:#}");
    assert_eq!(plugins[0]["apiVersion"], xcsh_plugin_api::API_VERSION);
    assert_eq!(plugins[0]["capabilities"], serde_json::json!(expected));
}

#[test]
fn check_refuses_junk_truncated_and_incompatible_files_with_a_one_line_cause() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("libjunk.so");
    std::fs::write(&junk, "not a library").unwrap();
    let truncated = dir.path().join("libtruncated.so");
    let real = std::fs::read(plugin("batch-rename")).unwrap();
    std::fs::write(&truncated, &real[..real.len() / 3]).unwrap();
    let incompatible = plugin("fixture-incompatible");
    let legacy = plugin("fixture-legacy");
    for (file, expected) in [
        (junk.as_path(), "not a loadable shared library"),
        (truncated.as_path(), "not a loadable shared library"),
        (
            incompatible.as_path(),
            "built against xcsh-plugin-api 0.9.0, this host supports 0.2.0 to",
        ),
        (
            legacy.as_path(),
            "built against xcsh-plugin-api 0.1 or older (no version marker)",
        ),
    ] {
        let output = cli(&["check", file.to_str().unwrap()], dir.path());
        assert_eq!(output.status.code(), Some(1), "{}", file.display());
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(expected), "{err}");
        assert!(
            err.contains(file.file_name().unwrap().to_str().unwrap()),
            "{err}"
        );
    }
}

#[test]
fn new_scaffolds_a_plugin_that_builds_and_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    // From a copy of the binary in a directory of its own, as `cargo install` puts it: the
    // scaffold must still build (the API by path, from the sources the binary was built from).
    let installed = dir.path().join("bin");
    std::fs::create_dir(&installed).unwrap();
    let copy = installed.join("xcsh-plugins");
    std::fs::copy(artifacts().cli(), &copy).unwrap();
    let output = Command::new(&copy)
        .args(["new", "hello-tool"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let krate = dir.path().join("hello-tool");
    assert!(krate.join("Cargo.toml").is_file() && krate.join("src/lib.rs").is_file());
    // Refuses to overwrite.
    let again = cli(&["new", "hello-tool"], dir.path());
    assert!(!again.status.success());
    assert!(stderr(&again).contains("already exists"));

    // Build it for real, sharing this workspace's target directory and lock file so the
    // dependencies are not compiled a second time.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        krate.join("Cargo.lock"),
    )
    .unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(&cargo)
        .args(["build", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let test = Command::new(&cargo)
        .args(["test", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(test.status.success(), "{}", stderr(&test));
    // The scaffold's tests run the tool in-process through xcsh_plugin_api::testing: execute,
    // apply, reject, argument validation and a store-less host, plus the plain unit test.
    let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    assert!(manifest.contains(r#"features = ["testing"]"#), "{manifest}");
    assert!(manifest.contains(r#"panic = "unwind""#), "{manifest}");
    let test_stdout = String::from_utf8_lossy(&test.stdout);
    // ... and an unknown argument refused (strict `tool_params!`).
    assert!(test_stdout.contains("7 passed"), "{test_stdout}");
    let lib = target.join("debug").join(format!(
        "{}hello_tool{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let check = cli(&["check", lib.to_str().unwrap()], dir.path());
    assert!(check.status.success(), "{}", stderr(&check));
    let call = cli(
        &[
            "--no-default-dirs",
            "--plugin",
            lib.to_str().unwrap(),
            "call",
            "hello_tool",
            r#"{"name":"tests"}"#,
        ],
        dir.path(),
    );
    assert!(call.status.success(), "{}", stderr(&call));
    assert!(String::from_utf8_lossy(&call.stdout).contains("Hello, tests!"));
    // The scaffold's preview says how it looks (issue 55): its view, as the session passed it
    // on (bounded, paths checked), in the call's JSON.
    let json_call = cli(
        &[
            "--no-default-dirs",
            "--plugin",
            lib.to_str().unwrap(),
            "call",
            "--json",
            "--discard",
            "hello_tool",
            r#"{"name":"tests"}"#,
        ],
        dir.path(),
    );
    assert!(json_call.status.success(), "{}", stderr(&json_call));
    let report: serde_json::Value = serde_json::from_slice(&json_call.stdout).unwrap();
    let view = &report["result"]["view"];
    assert_eq!(view["status"]["title"], "Greet", "{report}");
    assert_eq!(
        view["blocks"][0],
        serde_json::json!({"type": "diff", "path": "greeting.txt",
                           "lines": [{"kind": "added", "text": "Hello, tests!"}]}),
        "{report}"
    );
    // The issue's row: an extra argument is an error, not silently dropped.
    let extra = cli(
        &[
            "call",
            "--no-default-dirs",
            "--plugin",
            lib.to_str().unwrap(),
            "hello_tool",
            r#"{"name":"a","extra":1}"#,
        ],
        dir.path(),
    );
    assert_eq!(extra.status.code(), Some(1), "{}", stderr(&extra));
    assert!(
        stderr(&extra).contains("'extra' was unexpected"),
        "{}",
        stderr(&extra)
    );
}

#[test]
fn demo_runs_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    // The bundled plugins are found next to the executable.
    let output = cli(&["demo"], dir.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", stderr(&output));
    assert!(
        stdout.contains("✔ Accept: 2 files [Batch rename]"),
        "{stdout}"
    );
    assert!(stdout.contains("⊘ Discard:"), "{stdout}");
    assert!(stdout.contains("Done: one change applied, one discarded, nothing pending."));
}
