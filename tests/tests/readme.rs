//! The README's "Write a plugin" and "Test a plugin" code, compiled and run as an author would:
//! scaffolded with `xcsh-plugins new`, the scaffold's `src/lib.rs` replaced by the README's
//! example followed by its test module, then `cargo test` (nested cargo, sharing this
//! workspace's target directory), `check` and `call` on the built library.
//!
//! The crate docs' examples are rustdoc doctests of `xcsh-plugin-api`; this covers the README.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output};

use xcsh_integration_tests::{artifacts, package_version, workspace_root};

/// The TypeScript original's length (`seed/resolve-tool-runtime.it.md`, from `import type` to
/// `export default factory;`), in non-blank lines.
const TYPESCRIPT_SEED_LINES: usize = 32;

/// The fenced code blocks of one `## ` section: (info string, body).
fn blocks(readme: &str, section: &str) -> Vec<(String, String)> {
    let heading = format!("## {section}\n");
    let start = readme
        .find(&heading)
        .unwrap_or_else(|| panic!("README has no section {section:?}"));
    let rest = &readme[start + heading.len()..];
    let body = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let mut found = Vec::new();
    let mut lines = body.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut code = String::new();
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            code.push_str(line);
            code.push('\n');
        }
        found.push((info.trim().to_owned(), code));
    }
    found
}

fn rust_blocks(readme: &str, section: &str) -> Vec<String> {
    blocks(readme, section)
        .into_iter()
        .filter(|(info, _)| info.split(',').next() == Some("rust"))
        .map(|(_, code)| code)
        .collect()
}

fn non_blank_lines(code: &str) -> usize {
    code.lines().filter(|line| !line.trim().is_empty()).count()
}

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
fn the_readme_example_is_no_longer_than_the_typescript_seed() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let example = rust_blocks(&readme, "Write a plugin");
    // The seed's example, then the shortest one that asks the user (`confirm`), then the
    // shortest one that runs a program (`exec`).
    assert_eq!(example.len(), 3, "three Rust blocks in \"Write a plugin\"");
    assert!(example[1].contains(".confirm("), "{}", example[1]);
    assert!(non_blank_lines(&example[1]) <= 20, "{}", example[1]);
    assert!(example[2].contains(".exec("), "{}", example[2]);
    assert!(non_blank_lines(&example[2]) <= 20, "{}", example[2]);
    let lines = non_blank_lines(&example[0]);
    assert!(
        lines <= TYPESCRIPT_SEED_LINES,
        "the README's batch_rename_preview has {lines} non-blank lines, the TypeScript original {TYPESCRIPT_SEED_LINES}"
    );
}

#[test]
fn the_readme_plugin_and_its_tests_build_pass_and_load() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let example = rust_blocks(&readme, "Write a plugin");
    let tests = rust_blocks(&readme, "Test a plugin");
    assert_eq!(
        (example.len(), tests.len()),
        (3, 1),
        "{example:?} {tests:?}"
    );
    // The dev-dependencies the README shows are the scaffold's.
    let toml = blocks(&readme, "Test a plugin")
        .into_iter()
        .find(|(info, _)| info == "toml")
        .map(|(_, code)| code)
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let output = cli(&["new", "readme-example"], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
    let krate = dir.path().join("readme-example");
    let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    for line in toml.lines().filter(|l| l.starts_with("tokio")) {
        assert!(manifest.contains(line), "{line:?} not in\n{manifest}");
    }
    assert!(manifest.contains(r#"features = ["testing"]"#), "{manifest}");
    std::fs::write(
        krate.join("src/lib.rs"),
        // The `confirm` and `exec` examples' tools compile in the same crate (their `use` is
        // the first's).
        format!(
            "{}\n{}\n{}\n{}",
            example[0],
            example[1].replace("use xcsh_plugin_api::*;\n", ""),
            example[2].replace("use xcsh_plugin_api::*;\n", ""),
            tests[0]
        ),
    )
    .unwrap();

    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        krate.join("Cargo.lock"),
    )
    .unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let test = Command::new(&cargo)
        .args(["test"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&test.stdout);
    assert!(test.status.success(), "{stdout}\n{}", stderr(&test));
    assert!(
        stdout.contains("tests::previews_then_applies_or_rejects ... ok"),
        "{stdout}"
    );

    let build = Command::new(&cargo)
        .args(["build", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let lib = target.join("debug").join(format!(
        "{}readme_example{}",
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
            "batch_rename_preview",
            r#"{"files":["a","b"]}"#,
            "--apply",
            "--reason",
            "ok",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&call.stdout);
    assert!(call.status.success(), "{stdout}\n{}", stderr(&call));
    assert!(
        stdout.contains("Prepared rename plan for 2 files"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Applied batch rename. Reason: ok"),
        "{stdout}"
    );
}

#[test]
fn the_readme_names_the_versions_the_crates_have() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let api = package_version("plugin-api/Cargo.toml");
    // Every dependency line on the API the README shows asks for this version.
    let mut seen = 0;
    for (at, _) in readme.match_indices("xcsh-plugin-api = { version = \"") {
        let rest = &readme[at + "xcsh-plugin-api = { version = \"".len()..];
        let version = &rest[..rest.find('"').unwrap()];
        assert_eq!(version, api, "README asks for xcsh-plugin-api {version}");
        seen += 1;
    }
    assert!(seen >= 1, "no Cargo.toml snippet found");
    // The changelog's newest entry is this version, and the install notes list it.
    let changelog = &readme[readme.find("## Changelog (`xcsh-plugin-api`)").unwrap()..];
    let newest = changelog.lines().find(|l| l.starts_with("- **")).unwrap();
    assert!(newest.starts_with(&format!("- **{api}**")), "{newest}");
    let install =
        &readme[readme.find("## Install").unwrap()..readme.find("## Write a plugin").unwrap()];
    assert!(install.contains(&format!("and {api}")), "{install}");
    assert!(
        install.contains(&format!("version = \"{api}\"")),
        "{install}"
    );
    // The scaffold writes the same requirement with --published.
    let dir = tempfile::tempdir().unwrap();
    let output = cli(&["new", "published", "--published"], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
    let manifest = std::fs::read_to_string(dir.path().join("published/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("version = \"{api}\"")),
        "{manifest}"
    );
    // The workspace's own requirement on the API is its version.
    let workspace = std::fs::read_to_string(workspace_root().join("Cargo.toml")).unwrap();
    assert!(
        workspace.contains(&format!(
            "xcsh-plugin-api = {{ path = \"plugin-api\", version = \"{api}\" }}"
        )),
        "{workspace}"
    );
}

/// The README's own command lines, run as written in a shell, on the binaries and the sample
/// plugin this workspace built: the `Install` section after its `cargo install` (which the
/// test has no time to repeat), `Use it from the command line` and the `ast_edit` example.
#[test]
fn the_readmes_command_lines_run() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let some_dir = scratch.path().join("some-dir");
    std::fs::create_dir(&some_dir).unwrap();
    std::fs::write(some_dir.join("a1.txt"), "1").unwrap();
    std::fs::write(some_dir.join("a2.txt"), "2").unwrap();
    let project = scratch.path().join("my-project/src");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("lib.rs"),
        "pub fn total(xs: &[u32]) -> u32 {\n    xs.iter().fold(0, |a, b| a + b)\n}\n",
    )
    .unwrap();
    let bin = artifacts().cli().parent().unwrap().to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sample = artifacts().plugin("batch-rename");
    let mut ran = 0;
    for section in [
        "Install",
        "Use it from the command line",
        "The built-in `ast_edit`",
    ] {
        for (info, code) in blocks(&readme, section) {
            if info != "sh" {
                continue;
            }
            for line in code.replace("\\\n", " ").lines() {
                let line = line.trim();
                if !line.starts_with("xcsh-plugins ") {
                    continue;
                }
                let line = line
                    .replace(
                        "target/release/libbatch_rename.so",
                        sample.to_str().unwrap(),
                    )
                    .replace("/some/dir", some_dir.to_str().unwrap());
                let output = Command::new("bash")
                    .args(["-ec", &line])
                    .current_dir(scratch.path())
                    .env("PATH", &path)
                    .env("HOME", scratch.path())
                    .env("NO_COLOR", "1")
                    .stdin(std::process::Stdio::null())
                    .output()
                    .unwrap();
                assert!(
                    output.status.success(),
                    "README `{line}` failed:\n{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    stderr(&output)
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 6, "only {ran} README command lines found");
    // What they did: the rename applied, the ast_edit example applied.
    assert!(some_dir.join("b1.txt").exists() && some_dir.join("b2.txt").exists());
    let edited = std::fs::read_to_string(project.join("lib.rs")).unwrap();
    assert!(edited.contains("xs.iter().sum()"), "{edited}");
}
