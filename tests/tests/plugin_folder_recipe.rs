//! The recipe `xcsh-plugins new` scaffolds (`build-plugin.sh`) builds a multi-platform plugin
//! folder with cargo-zigbuild, and the loader loads this host's library from it: here for
//! this host's Linux triple and the other Linux architecture (macOS links the same way, and
//! costs two more builds; `.ci/dist` links the sample plugin for macOS).
//!
//! Needs `cargo zigbuild` (`.ci/run` installs it); skipped without it, unless
//! `XCSH_REQUIRE_CROSS_PLUGINS` is set.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::process::Command;

use xcsh_integration_tests::{artifacts, workspace_root};
use xcsh_loader::platform::HOST_TARGET;

fn zigbuild_available() -> bool {
    Command::new("cargo-zigbuild")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_scaffolds_recipe_builds_a_plugin_folder_that_loads() {
    if !cfg!(target_os = "linux") {
        return;
    }
    if !zigbuild_available() {
        assert!(
            std::env::var_os("XCSH_REQUIRE_CROSS_PLUGINS").is_none(),
            "XCSH_REQUIRE_CROSS_PLUGINS is set but `cargo zigbuild` is not installed"
        );
        eprintln!("skipped: cargo-zigbuild not found (pip install cargo-zigbuild ziglang)");
        return;
    }
    let other = if cfg!(target_arch = "aarch64") {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-unknown-linux-gnu"
    };
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(artifacts().cli())
        .args(["new", "multi-tool"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let krate = dir.path().join("multi-tool");
    // This workspace's lock file and a target directory of the workspace's, so that the
    // dependencies are built once across runs.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        krate.join("Cargo.lock"),
    )
    .unwrap();
    let target = workspace_root().join("target/recipe");
    let built = Command::new("bash")
        .arg(krate.join("build-plugin.sh"))
        .args([HOST_TARGET, other])
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    let folder = krate.join("dist/multi-tool.xcsh-plugin");
    for triple in [HOST_TARGET, other] {
        assert!(
            folder.join(triple).join("libmulti_tool.so").is_file(),
            "{triple}"
        );
    }
    let listed = Command::new(artifacts().cli())
        .args(["--json", "list", "--no-default-dirs", "--plugin"])
        .arg(&folder)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(text.contains("\"multi_tool\""), "{text}");
    let checked = Command::new(artifacts().cli())
        .args(["--json", "check"])
        .arg(&folder)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    assert!(checked.status.success(), "{report:#}");
    let files = report["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{report:#}");
    assert!(files.iter().all(|f| f["ok"] == true), "{report:#}");
}
