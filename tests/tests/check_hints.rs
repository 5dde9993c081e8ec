//! `xcsh-plugins check` as the author's friend: what to write for an untyped `Params`, why a
//! library file is missing, and which files clash on a tool name.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::process::Command;

use xcsh_integration_tests::{artifacts, lib_name, plugin};

fn check(files: &[&std::path::Path]) -> (Option<i32>, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(artifacts().cli())
        .arg("--cwd")
        .arg(dir.path())
        .args(["--json", "check"])
        .args(files)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code(), report)
}

fn problems(report: &serde_json::Value, file: usize) -> Vec<String> {
    report["files"][file]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn an_untyped_params_gets_a_hint_that_says_what_to_write() {
    let (code, report) = check(&[&plugin("fixture-bad-tools")]);
    assert_eq!(code, Some(1));
    let problems = problems(&report, 0);
    assert!(
        problems.iter().any(|p| p.contains("\"untyped\"")
            && p.contains(
                "derive `JsonSchema` on a parameter struct, or override `parameters_schema()`"
            )),
        "{problems:#?}"
    );
}

#[test]
fn a_missing_library_next_to_an_rlib_says_the_crate_builds_no_cdylib() {
    let build = tempfile::tempdir().unwrap();
    let missing = build.path().join(lib_name("my_tool"));
    std::fs::write(missing.with_extension("rlib"), b"!<arch>\n").unwrap();
    let (code, report) = check(&[&missing]);
    assert_eq!(code, Some(1));
    let problems = problems(&report, 0);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].contains("add `[lib] crate-type = [\"cdylib\"]` to the plugin's Cargo.toml"),
        "{problems:#?}"
    );
}

#[test]
fn a_tool_name_two_checked_files_define_is_reported_with_both_files() {
    // fixture-bad-tools defines `echo` too, as fixture-multi does.
    let multi = plugin("fixture-multi");
    let bad = plugin("fixture-bad-tools");
    let (code, report) = check(&[&multi, &bad]);
    assert_eq!(code, Some(1));
    let clash = |file: usize, other: &std::path::Path| {
        problems(&report, file).into_iter().any(|p| {
            p.starts_with("Tool name \"echo\" conflicts with existing tool")
                && p.contains(&other.display().to_string())
        })
    };
    assert!(clash(0, &bad), "{report:#}");
    assert!(clash(1, &multi), "{report:#}");
    assert_eq!(report["files"][0]["ok"], false);
}
