//! The guide's "Write a tool", "Ask the user, the model", "Run a program" and "Test it" code
//! (`docs/guide/src/`), compiled and run as an author would: scaffolded with `xcsh-plugins
//! new`, the scaffold's `src/lib.rs` replaced by the guide's examples followed by its test
//! module, then `cargo test` (nested cargo, sharing this workspace's target directory),
//! `check` and `call` on the built library. Also: the README's and the guide's command lines
//! run as written, the versions they name, and the README's shape (its two commands first, its
//! links into the guide).
//!
//! The guide's Rust examples are also rustdoc doctests of `xcsh-plugin-api`
//! (`plugin-api/src/guide.rs`), hidden lines and all; this test builds what a reader copies.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::Path;
use std::process::{Command, Output};

use xcsh_integration_tests::guide::{self, blocks, page, readme, rust_blocks, section};
use xcsh_integration_tests::{artifacts, package_version, workspace_root};

/// The TypeScript original's length (`seed/resolve-tool-runtime.it.md`, from `import type` to
/// `export default factory;`), in non-blank lines.
const TYPESCRIPT_SEED_LINES: usize = 32;

/// The first Rust block of a guide page, as a reader sees it.
fn first_rust_block(name: &str) -> String {
    rust_blocks(&page(name))
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no Rust block in the guide's {name}.md"))
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
fn the_guide_example_is_no_longer_than_the_typescript_seed() {
    // The seed's example, then the shortest one that asks the user (`confirm`), then the
    // shortest one that runs a program (`exec`).
    let example = [
        first_rust_block("write"),
        first_rust_block("ask"),
        first_rust_block("exec"),
    ];
    assert!(example[1].contains(".confirm("), "{}", example[1]);
    assert!(non_blank_lines(&example[1]) <= 20, "{}", example[1]);
    assert!(example[2].contains(".exec("), "{}", example[2]);
    assert!(non_blank_lines(&example[2]) <= 20, "{}", example[2]);
    let lines = non_blank_lines(&example[0]);
    assert!(
        lines <= TYPESCRIPT_SEED_LINES,
        "the guide's batch_rename_preview has {lines} non-blank lines, the TypeScript original {TYPESCRIPT_SEED_LINES}"
    );
}

#[test]
fn the_guide_plugin_and_its_tests_build_pass_and_load() {
    let example = [
        first_rust_block("write"),
        first_rust_block("ask"),
        first_rust_block("exec"),
    ];
    let tests = rust_blocks(&page("test"));
    assert!(tests[0].contains("mod tests"), "{}", tests[0]);
    // The dev-dependencies the guide shows are the scaffold's.
    let toml = blocks(&page("test"))
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
fn the_guide_names_the_versions_the_crates_have() {
    let api = package_version("plugin-api/Cargo.toml");
    // Every dependency line on the API the README or a guide page shows asks for this version.
    let mut seen = 0;
    let mut texts = vec![("README".to_owned(), readme())];
    for name in guide::summary_pages() {
        texts.push((name.clone(), page(&name)));
    }
    for (name, text) in &texts {
        for (at, _) in text.match_indices("xcsh-plugin-api = { version = \"") {
            let rest = &text[at + "xcsh-plugin-api = { version = \"".len()..];
            let version = &rest[..rest.find('"').unwrap()];
            assert_eq!(version, api, "{name} asks for xcsh-plugin-api {version}");
            seen += 1;
        }
    }
    assert!(seen >= 1, "no Cargo.toml snippet found");
    // The changelog's newest entry is this version, and the install notes list it.
    let changelog = page("changelog");
    let newest = changelog.lines().find(|l| l.starts_with("- **")).unwrap();
    assert!(newest.starts_with(&format!("- **{api}**")), "{newest}");
    let install = page("install");
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

/// The README's and the guide's own command lines, run as written in a shell, on the binaries
/// and the sample plugin this workspace built: the README's `Install` and the guide's
/// "Install" after their `cargo install` (which the test has no time to repeat), "Pending
/// actions and resolve" (a `call` nobody decides), the CLI reference and the `ast_edit` example.
#[test]
fn the_guides_command_lines_run() {
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
    let texts = [
        section(&readme(), "## Install"),
        page("install"),
        page("pending"),
        page("cli"),
        page("ast-edit"),
    ];
    for text in &texts {
        for code in guide::sh_blocks(text) {
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
                    "`{line}` failed:\n{}{}",
                    String::from_utf8_lossy(&output.stdout),
                    stderr(&output)
                );
                ran += 1;
            }
        }
    }
    assert!(ran >= 8, "only {ran} command lines found");
    // What they did: the rename applied, the ast_edit example applied.
    assert!(some_dir.join("b1.txt").exists() && some_dir.join("b2.txt").exists());
    let edited = std::fs::read_to_string(project.join("lib.rs")).unwrap();
    assert!(edited.contains("xs.iter().sum()"), "{edited}");
}

/// The README stays short, opens with the project's two commands (build and run the demo on
/// the bundled plugins; run the tests), and every link it has into the guide leads to a page.
#[test]
fn the_readme_opens_with_the_two_commands_and_leads_into_the_guide() {
    let readme = readme();
    let lines = readme.lines().count();
    assert!(
        lines <= 150,
        "the README has {lines} lines; the rest belongs in the guide"
    );
    let (info, first) = blocks(&readme).into_iter().next().unwrap();
    assert_eq!(info, "sh");
    let commands: Vec<&str> = first.lines().collect();
    assert_eq!(commands.len(), 2, "{first}");
    assert!(
        commands[0].starts_with(
            "cargo build --release --workspace && ./target/release/xcsh-plugins demo "
        ),
        "{first}"
    );
    assert!(
        commands[1].starts_with("cargo test --workspace "),
        "{first}"
    );
    assert!(
        readme.find("```").unwrap() < readme.find("\n## ").unwrap(),
        "the commands come before any section"
    );
    let mut linked = 0;
    for (at, _) in readme.match_indices("](docs/") {
        let rest = &readme[at + 2..];
        let target = &rest[..rest.find(')').unwrap()];
        let file = target.split('#').next().unwrap();
        assert!(
            workspace_root().join(file).is_file(),
            "README links to {target}"
        );
        linked += 1;
    }
    assert!(linked >= 15, "only {linked} links into the guide");
}

/// Every page of the guide is in `SUMMARY.md`, exists, opens with its title, and (unless it only
/// includes another file) is included as a doctest by `plugin-api/src/guide.rs`, so that a Rust
/// example added to any page is compiled and run; its Rust blocks are all `rust` (never an
/// unlabelled fence, which rustdoc would also take for Rust) or say why they do not run.
#[test]
fn every_guide_page_is_listed_and_its_rust_examples_are_tested() {
    let listed = guide::summary_pages();
    let doctests =
        std::fs::read_to_string(workspace_root().join("plugin-api/src/guide.rs")).unwrap();
    let mut on_disk: Vec<String> = std::fs::read_dir(guide::src_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|f| f.strip_suffix(".md").map(str::to_owned))
        .filter(|f| f != "SUMMARY")
        .collect();
    on_disk.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, on_disk, "SUMMARY.md and docs/guide/src/ differ");
    for name in &listed {
        let text = page(name);
        if text.starts_with("{{#include ") {
            continue;
        }
        assert!(text.starts_with("# "), "{name}.md opens with its title");
        assert!(
            doctests.contains(&format!("\"docs/guide/src/{name}.md\"")),
            "plugin-api/src/guide.rs does not include {name}.md"
        );
        for (info, code) in blocks(&text) {
            assert!(
                !info.is_empty(),
                "{name}.md has a fence without a language:\n{code}"
            );
            if info.starts_with("rust") && (info.contains("ignore") || info.contains("no_run")) {
                assert!(
                    code.trim_start().starts_with("// `"),
                    "{name}.md: a Rust block that does not run says why first:\n{code}"
                );
            }
        }
    }
    assert!(doctests.contains("\"README.md\""));
}

/// "Pending actions and resolve" quotes the renderer and the CLI's non-interactive discard
/// exactly as the code has them.
#[test]
fn the_pending_page_quotes_the_exact_strings() {
    let pending = page("pending");
    assert!(pending.contains("`\"Git cleanup: delete 5 merged branches\"`"));
    assert!(pending.contains("✔ Accept: delete 5 merged branches [Git cleanup]"));
    // The CLI's reasons live in the loader's one list of exact strings.
    let decide =
        std::fs::read_to_string(workspace_root().join("loader/core/src/messages.rs")).unwrap();
    for exact in [
        "no decision given (non-interactive); nothing applied",
        "input closed; nothing applied",
    ] {
        assert!(
            decide.contains(&format!("\"{exact}\"")),
            "messages.rs: {exact}"
        );
        assert!(
            pending.contains(&format!("`{exact}`")),
            "pending.md: {exact}"
        );
    }
    // What the run of the CLI's own tests shows: a discarded `call` says so (the command lines
    // test above runs the page's `call --no-input`).
    assert!(pending.contains("xcsh-plugins call --no-input"));
}
