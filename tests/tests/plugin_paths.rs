//! Where a relative `--plugin` path points: the directory the command runs in, whatever
//! `--cwd` says (`--cwd` governs only the session's working directory).

use std::process::Command;

use xcsh_integration_tests::{artifacts, lib_name, plugin};

#[test]
fn a_relative_plugin_path_resolves_against_where_the_command_runs_not_cwd() {
    let build = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let release = build.path().join("target").join("release");
    std::fs::create_dir_all(&release).unwrap();
    let file = release.join(lib_name("batch_rename"));
    std::fs::copy(plugin("batch-rename"), &file).unwrap();
    let relative = format!("target/release/{}", lib_name("batch_rename"));

    let output = Command::new(artifacts().cli())
        .current_dir(build.path())
        .args(["--no-default-dirs", "--plugin", &relative, "--cwd"])
        .arg(elsewhere.path())
        .args(["--json", "list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let listing: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let tool = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "batch_rename_preview")
        .unwrap_or_else(|| panic!("no batch_rename_preview in {listing}"));
    // The origin is the file next to the command, not anything under `--cwd`.
    let origin = tool["origin"].as_str().unwrap();
    assert_eq!(
        std::path::Path::new(origin),
        file.canonicalize().unwrap().as_path()
    );
}

#[test]
fn a_relative_plugin_path_that_is_missing_is_reported_where_it_was_looked_for() {
    let build = tempfile::tempdir().unwrap();
    let output = Command::new(artifacts().cli())
        .current_dir(build.path())
        .args([
            "--no-default-dirs",
            "--plugin",
            "nope/libmissing.so",
            "--cwd",
            "/",
        ])
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = build.path().join("nope/libmissing.so");
    assert!(stderr.contains(&expected.display().to_string()), "{stderr}");
}

#[test]
fn a_missing_library_next_to_an_rlib_says_the_crate_builds_no_cdylib() {
    let build = tempfile::tempdir().unwrap();
    let release = build.path().join("target").join("release");
    std::fs::create_dir_all(&release).unwrap();
    // What cargo leaves for a crate without `crate-type = ["cdylib"]`.
    let missing = release.join(lib_name("my_tool"));
    std::fs::write(missing.with_extension("rlib"), b"!<arch>\n").unwrap();
    let output = Command::new(artifacts().cli())
        .current_dir(build.path())
        .arg("--no-default-dirs")
        .arg("--plugin")
        .arg(&missing)
        .arg("list")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("add `[lib] crate-type = [\"cdylib\"]` to the plugin's Cargo.toml"),
        "{stderr}"
    );
}
