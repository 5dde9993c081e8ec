//! A packed native tool, installed by each host's own installer from a real local npm
//! registry (verdaccio, nothing mocked), docs/guide/src/ship.md:
//! - `npx -y @t/hello-tool` in an MCP client's server entry, and the `.mcpb` bundle's server
//!   started as its manifest says (after `mcpb validate`), each answering the official MCP
//!   Python SDK (`tests/mcp-python/packed_tool_client.py`): tools, a preview, `resolve`;
//! - xcsh's runtime's `omp plugin install` / `uninstall`, and a session of the runtime using the
//!   tool (`bindings/node/runtime-test/omp-install.test.ts`).
//!
//! The binding's packages are written from this build (`bindings/node/scripts/npm-packages.js`)
//! and published beside the tool's, as `.ci/dist` and a publisher would.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use xcsh_integration_tests::node::{as_installed, assert_success, path_with, upstream_runtime};
use xcsh_integration_tests::npm_registry::{self, Registry};
use xcsh_integration_tests::packing::{binding_packages, pack, tool_crate, written};
use xcsh_integration_tests::workspace_root;

/// A registry holding the binding's packages and the packed `@t/hello-tool` 1.0.0; the pack's
/// output directory.
fn registry_with_the_tool(registry: &Registry, home: &Path, work: &Path) -> PathBuf {
    let (main, platform) = binding_packages(&work.join("binding"));
    registry.publish(&platform);
    registry.publish(&main);
    let folder = tool_crate(
        &work.join("tool"),
        "hello-tool",
        "1.0.0",
        "@t/hello-tool",
        &[],
    );
    let out = work.join("tool/out");
    pack(home, &folder, &out, &[]);
    publish_platforms_first(registry, &out);
    out
}

/// The tool's tarballs, its platform packages before its main package.
fn publish_platforms_first(registry: &Registry, out: &Path) {
    let mut tarballs = written(out, ".tgz");
    tarballs.sort_by_key(|path| path.metadata().unwrap().len() < 4096);
    for tarball in tarballs {
        registry.publish(&tarball);
    }
}

/// The Python SDK's environment (`.ci/run` installs it), or `None` with a note.
fn python() -> Option<PathBuf> {
    let python = workspace_root().join("target/mcp-python-venv/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("XCSH_REQUIRE_MCP_PYTHON").is_none(),
        "{} is missing but XCSH_REQUIRE_MCP_PYTHON is set",
        python.display()
    );
    eprintln!("skipped: no {}", python.display());
    None
}

/// Run the Python client against `command args`; its output, which must say the rename happened.
fn client(
    python: &Path,
    work: &Path,
    envs: &[(&str, std::ffi::OsString)],
    command: &str,
    args: &[String],
) -> String {
    let workdir = work.join("workdir");
    let _ = std::fs::remove_dir_all(&workdir);
    std::fs::create_dir_all(&workdir).unwrap();
    let output = Command::new(python)
        .arg(workspace_root().join("tests/mcp-python/packed_tool_client.py"))
        .arg(&workdir)
        .arg(command)
        .args(
            args.iter()
                .map(|a| a.replace("{workdir}", &workdir.display().to_string())),
        )
        .envs(envs.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap();
    let log = std::fs::read_to_string(work.join("server-stderr.log")).unwrap_or_default();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command}: {}\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server\n{log}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("renamed: notes-draft.md -> notes-final.md"),
        "{stdout}"
    );
    stdout
}

#[test]
fn npx_and_the_mcpb_bundle_serve_the_tool_to_an_mcp_client() {
    let Some(registry) = Registry::start() else {
        return;
    };
    let Some(python) = python() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = registry_with_the_tool(&registry, home.path(), work.path());

    // npx, as an MCP client's server entry runs it.
    let mut envs = registry.env();
    envs.push(("HOME", home.path().into()));
    envs.push(("NPM_CONFIG_YES", "true".into()));
    let seen = client(
        &python,
        work.path(),
        &envs,
        "npx",
        &[
            "-y".into(),
            "@t/hello-tool".into(),
            "--cwd".into(),
            "{workdir}".into(),
        ],
    );
    eprintln!("npx -y @t/hello-tool:\n{seen}");

    // The bundle: valid for the MCPB CLI, and its server started as its manifest says.
    let bundle = written(&out, ".mcpb").pop().unwrap();
    let unpacked = work.path().join("bundle");
    let status = Command::new("unzip")
        .arg("-q")
        .arg(&bundle)
        .arg("-d")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success());
    if let Some(mcpb) = npm_registry::mcpb() {
        let output = Command::new(mcpb)
            .arg("validate")
            .arg(unpacked.join("manifest.json"))
            .output()
            .unwrap();
        assert_success("mcpb validate", &output);
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Manifest schema validation passes!")
        );
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(unpacked.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["manifest_version"], "0.4");
    assert_eq!(manifest["server"]["type"], "binary");
    assert_eq!(manifest["user_config"]["workdir"]["type"], "directory");
    let dirname = unpacked.display().to_string();
    let substitute = |text: &str| {
        text.replace("${__dirname}", &dirname)
            .replace("${user_config.workdir}", "{workdir}")
    };
    let command = substitute(
        manifest["server"]["mcp_config"]["command"]
            .as_str()
            .unwrap(),
    );
    let args: Vec<String> = manifest["server"]["mcp_config"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| substitute(arg.as_str().unwrap()))
        .collect();
    let seen = client(
        &python,
        work.path(),
        &[("HOME", home.path().into())],
        &command,
        &args,
    );
    eprintln!("the .mcpb's server:\n{seen}");
}

/// `@t/far-tool`: the packed tool with its library for macOS arm64 only (its main package
/// rewritten from a pack of both platforms, since `pack` lists the tools by loading this
/// host's library).
fn publish_foreign_tool(registry: &Registry, home: &Path, work: &Path) {
    let folder = tool_crate(
        &work.join("far"),
        "far-tool",
        "1.0.0",
        "@t/far-tool",
        &["aarch64-apple-darwin"],
    );
    let out = work.join("far/out");
    pack(home, &folder, &out, &[]);
    let main = out.join("npm/t-far-tool-1.0.0.tgz");
    let mut files = Vec::new();
    let bytes = std::fs::read(&main).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        if name.ends_with("package.json") || name.ends_with("xcsh-tool.json") {
            let mut json: serde_json::Value = serde_json::from_slice(&content).unwrap();
            let platforms = if name.ends_with("package.json") {
                &mut json["optionalDependencies"]
            } else {
                &mut json["platforms"]
            };
            platforms
                .as_object_mut()
                .unwrap()
                .retain(|key, _| key.contains("darwin"));
            content = serde_json::to_vec_pretty(&json).unwrap();
        }
        files.push((name, content));
    }
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (name, content) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, name, content.as_slice())
            .unwrap();
    }
    let rewritten = builder.into_inner().unwrap().finish().unwrap();
    std::fs::File::create(&main)
        .unwrap()
        .write_all(&rewritten)
        .unwrap();
    registry.publish(&out.join("npm/t-far-tool-darwin-arm64-1.0.0.tgz"));
    registry.publish(&main);
}

/// `@t/signed-tool` 1.0.0 signed by one key and 1.0.1 by another; the two public keys.
fn publish_signed_tool(registry: &Registry, home: &Path, work: &Path) -> [String; 2] {
    let mut keys = Vec::new();
    for (version, key) in [("1.0.0", "a"), ("1.0.1", "b")] {
        let dir = work.join(format!("signed-{key}"));
        let text = xcsh_integration_tests::packing::cli(
            home,
            &["keygen".as_ref(), dir.join("key").as_os_str()],
        );
        assert_success("keygen", &text);
        let public = String::from_utf8_lossy(&text.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("publisher key: "))
            .unwrap()
            .to_owned();
        let folder = tool_crate(&dir, "signed-tool", version, "@t/signed-tool", &[]);
        let secret = dir.join("key/xcsh-sign.key");
        pack(
            home,
            &folder,
            &dir.join("out"),
            &["--sign", secret.to_str().unwrap()],
        );
        publish_platforms_first(registry, &dir.join("out"));
        keys.push(public);
    }
    [keys[0].clone(), keys[1].clone()]
}

#[test]
fn omp_plugin_install_takes_the_packed_tool() {
    let Some((dir, bun)) = upstream_runtime("@oh-my-pi/pi-coding-agent") else {
        return;
    };
    let Some(registry) = Registry::start() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    registry_with_the_tool(&registry, home.path(), work.path());
    publish_foreign_tool(&registry, home.path(), work.path());
    let [key_a, key_b] = publish_signed_tool(&registry, home.path(), work.path());
    let output = as_installed(&mut Command::new(&bun))
        .args(["test", "./omp-install.test.ts"])
        .current_dir(&dir)
        .envs(registry.env())
        .env("HOME", home.path())
        .env("PATH", path_with(&[bun.parent().unwrap().to_owned()]))
        .env("XCSH_TEST_TOOL_PACKAGE", "@t/hello-tool")
        .env("XCSH_TEST_FOREIGN_PACKAGE", "@t/far-tool")
        .env("XCSH_TEST_SIGNED_PACKAGE", "@t/signed-tool")
        .env("XCSH_TEST_KEY_A", key_a)
        .env("XCSH_TEST_KEY_B", key_b)
        .output()
        .unwrap();
    assert_success("bun test omp-install.test.ts", &output);
    let report = String::from_utf8_lossy(&output.stderr);
    assert!(
        report.contains(" 0 fail") && report.contains(" 3 pass"),
        "{report}"
    );
}
