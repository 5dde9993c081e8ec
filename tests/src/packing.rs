//! Packed tools for the install tests: a tool crate in a scratch directory whose
//! `dist/NAME.xcsh-plugin/` holds this host's build of the sample plugin, `xcsh-plugins pack`
//! run on it, and the binding's own npm packages written from this build
//! (`bindings/node/scripts/npm-packages.js`), ready to publish to a test registry.

#![allow(clippy::unwrap_used)] // Test support: fails loudly on unexpected errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{artifacts, node, workspace_root};

/// This host's platform, in npm's words (`linux-x64-gnu`).
pub fn npm_key() -> &'static str {
    match xcsh_loader::platform::HOST_TARGET {
        "x86_64-unknown-linux-gnu" => "linux-x64-gnu",
        "aarch64-unknown-linux-gnu" => "linux-arm64-gnu",
        "x86_64-apple-darwin" => "darwin-x64",
        "aarch64-apple-darwin" => "darwin-arm64",
        other => panic!("no npm platform for {other}"),
    }
}

/// A tool crate named `name` at `version` (npm name `npm_name`) in `dir`, its folder holding
/// the sample plugin's library for this host (and for `extra` other triples, a copy of it);
/// the folder.
pub fn tool_crate(
    dir: &Path,
    name: &str,
    version: &str,
    npm_name: &str,
    extra: &[&str],
) -> PathBuf {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n\
             description = \"Rename files in batches, previewed first\"\n\
             authors = [\"Test Author <test@example.com>\"]\nlicense = \"MIT\"\n\n\
             [package.metadata.xcsh]\nnpm-name = \"{npm_name}\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let folder = dir.join("dist").join(format!("{name}.xcsh-plugin"));
    let library = artifacts().plugin("batch-rename");
    for triple in std::iter::once(xcsh_loader::platform::HOST_TARGET).chain(extra.iter().copied()) {
        let sub = folder.join(triple);
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::copy(&library, sub.join(library.file_name().unwrap())).unwrap();
    }
    folder
}

/// A tool crate whose folder has a library for `triple` only (not this host's).
pub fn foreign_tool_crate(dir: &Path, name: &str, npm_name: &str, triple: &str) -> PathBuf {
    let folder = tool_crate(dir, name, "1.0.0", npm_name, &[triple]);
    std::fs::remove_dir_all(folder.join(xcsh_loader::platform::HOST_TARGET)).unwrap();
    folder
}

/// `xcsh-plugins ARGS` with `HOME` at `home`; its output.
pub fn cli(home: &Path, args: &[&std::ffi::OsStr]) -> Output {
    Command::new(artifacts().cli())
        .args(args)
        .env("HOME", home)
        .env("XCSH_CACHE_DIR", home.join(".cache"))
        .env_remove("XCSH_LOG")
        .output()
        .unwrap_or_else(|e| panic!("cannot run xcsh-plugins: {e}"))
}

/// `xcsh-plugins pack FOLDER --out OUT [extra]`, which must succeed; its stdout.
pub fn pack(home: &Path, folder: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "pack".as_ref(),
        folder.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    args.extend(extra.iter().map(|a| std::ffi::OsStr::new(*a)));
    let output = cli(home, &args);
    assert_success("pack", &output);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Panic with what a command printed unless it succeeded.
pub fn assert_success(what: &str, output: &Output) {
    node::assert_success(what, output)
}

/// The binding's packages for this host, from this build: `(main, platform)` directories
/// under `out`.
pub fn binding_packages(out: &Path) -> (PathBuf, PathBuf) {
    let node = node::node().expect("node is needed to write the binding's packages");
    let built = artifacts();
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("bindings/node/package.json")).unwrap(),
    )
    .unwrap();
    let version = manifest["version"].as_str().unwrap().to_owned();
    let output = Command::new(node)
        .arg(workspace_root().join("bindings/node/scripts/npm-packages.js"))
        .arg(out)
        .arg(&version)
        .arg(npm_key())
        .arg(built.node_addon())
        .arg(built.plugin_host())
        .arg(built.cli())
        .output()
        .unwrap();
    assert_success("npm-packages.js", &output);
    (
        out.join("native-plugins"),
        out.join(format!("native-plugins-{}", npm_key())),
    )
}

/// The files `pack` wrote into `out` whose names end with `suffix`.
pub fn written(out: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = [out.to_owned(), out.join("npm")]
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    found
}
