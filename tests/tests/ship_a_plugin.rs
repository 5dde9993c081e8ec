//! The guide's "Ship and install" (`docs/guide/src/ship.md`), followed as written: its first `sh` block (`xcsh-plugins new`,
//! `./build-plugin.sh` for this machine, `xcsh-plugins pack`, `npm publish` of every tarball)
//! in a scratch directory, against a real local registry (verdaccio) holding this build's
//! `@xcsh/native-plugins`; its second (`omp plugin install my-tool`) with xcsh's runtime; then
//! the tool answers in a session of that runtime (`bindings/node/runtime-test/ship-a-plugin.test.ts`).
//!
//! Needs what `.ci/run` installs: verdaccio, the runtime, cargo-zigbuild (`.ci/check-macos`).

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::PathBuf;
use std::process::Command;

use xcsh_integration_tests::node::{as_installed, assert_success, path_with, upstream_runtime};
use xcsh_integration_tests::npm_registry::Registry;
use xcsh_integration_tests::packing::binding_packages;
use xcsh_integration_tests::{artifacts, guide, workspace_root};

/// The `sh` blocks of the guide's "Ship and install" page (`docs/guide/src/ship.md`), in order.
fn ship_blocks() -> Vec<String> {
    guide::sh_blocks(&guide::page("ship"))
        .into_iter()
        .map(|block| block.trim_end().to_owned())
        .collect()
}

/// Python's user base (`~/.local` on Linux), where `pip install --user` puts cargo-zigbuild
/// and ziglang (`.ci/check-macos` installs them there outside a virtualenv).
fn python_user_base() -> Option<PathBuf> {
    let output = Command::new("python3")
        .args(["-m", "site", "--user-base"])
        .output()
        .ok()?;
    let base = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !base.is_empty()).then(|| PathBuf::from(base))
}

/// Where pip puts cargo-zigbuild (`.ci/check-macos` installs it there).
fn zigbuild_dir() -> Option<PathBuf> {
    let dir = python_user_base()?.join("bin");
    if dir.join("cargo-zigbuild").exists() {
        return Some(dir);
    }
    let on_path = Command::new("cargo-zigbuild").arg("--version").output();
    if on_path.is_ok_and(|o| o.status.success()) {
        return Some(PathBuf::new());
    }
    assert!(
        std::env::var_os("XCSH_REQUIRE_NPM_REGISTRY").is_none(),
        "cargo-zigbuild is missing (pip install cargo-zigbuild ziglang, as .ci/check-macos does)"
    );
    eprintln!("skipped: cargo-zigbuild is not installed");
    None
}

#[test]
fn the_guide_ship_steps_work_as_written() {
    let blocks = ship_blocks();
    assert_eq!(blocks.len(), 2, "the section's sh blocks: {blocks:?}");
    assert!(
        blocks[0].contains("xcsh-plugins new my-tool"),
        "{}",
        blocks[0]
    );
    assert_eq!(blocks[1].trim(), "omp plugin install my-tool");
    let Some((runtime, bun)) = upstream_runtime("@oh-my-pi/pi-coding-agent") else {
        return;
    };
    let Some(zigbuild) = zigbuild_dir() else {
        return;
    };
    let Some(registry) = Registry::start() else {
        return;
    };
    // The binding is not on npm yet: its packages from this build, published first (the
    // guide's "Publish it").
    let work = tempfile::tempdir().unwrap();
    let (main, platform) = binding_packages(&work.path().join("binding"));
    registry.publish(&platform);
    registry.publish(&main);

    let home = tempfile::tempdir().unwrap();
    // An author's git identity (what `new` puts in `authors`).
    let gitconfig = home.path().join(".gitconfig");
    std::fs::write(
        &gitconfig,
        "[user]\n\tname = Ada Author\n\temail = ada@example.com\n",
    )
    .unwrap();
    let real_home = std::env::home_dir().unwrap();
    let cli_dir = artifacts().cli().parent().unwrap().to_owned();
    let path = path_with(&[cli_dir, zigbuild, bun.parent().unwrap().to_owned()]);
    let author = work.path().join("author");
    std::fs::create_dir_all(&author).unwrap();
    let user_base = python_user_base();
    let run = |block: &str, dir: &std::path::Path| {
        let mut command = Command::new("bash");
        as_installed(&mut command)
            .args(["-euo", "pipefail", "-c", block])
            .current_dir(dir)
            .envs(registry.env())
            .env("HOME", home.path())
            .env("GIT_CONFIG_GLOBAL", &gitconfig)
            .env(
                "RUSTUP_HOME",
                std::env::var_os("RUSTUP_HOME").unwrap_or_else(|| real_home.join(".rustup").into()),
            )
            .env(
                "CARGO_HOME",
                std::env::var_os("CARGO_HOME").unwrap_or_else(|| real_home.join(".cargo").into()),
            )
            // Shared between runs, so a second run does not build the crate's dependencies again.
            .env(
                "CARGO_TARGET_DIR",
                workspace_root().join("target/ship-a-plugin"),
            )
            .env("PATH", &path);
        // The author's HOME is a fresh directory: Python's user site (where pip put ziglang,
        // which cargo-zigbuild runs as `python3 -m ziglang`) is found where it really is.
        if let Some(base) = &user_base {
            command.env("PYTHONUSERBASE", base);
        }
        command.output().unwrap()
    };
    let output = run(&blocks[0], &author);
    assert_success("the guide's first block", &output);
    let published = registry.view("my-tool");
    assert_eq!(published["dist-tags"]["latest"], "0.1.0");
    assert_eq!(
        published["versions"]["0.1.0"]["author"]["name"],
        "Ada Author"
    );

    let project = home.path().join("project");
    std::fs::create_dir_all(project.join(".omp")).unwrap();
    let output = run(&blocks[1], &project);
    assert_success("omp plugin install my-tool", &output);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains("Installed my-tool@0.1.0"), "{text}");

    let output = as_installed(&mut Command::new(&bun))
        .args(["test", "./ship-a-plugin.test.ts"])
        .current_dir(&runtime)
        .envs(registry.env())
        .env("HOME", home.path())
        .env("PATH", &path)
        .env("XCSH_TEST_PROJECT", &project)
        .env("XCSH_TEST_TOOL", "my_tool")
        .output()
        .unwrap();
    assert_success("bun test ship-a-plugin.test.ts", &output);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(
        report.contains(" 1 pass") && report.contains(" 0 fail"),
        "{report}"
    );
}
