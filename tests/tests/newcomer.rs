//! A newcomer's path through `xcsh-plugins`, on real binaries and real plugin files: the two
//! binaries copied into an empty directory as an install would put them, strict parameters, a
//! CLI that says what it knows (parameters, `describe`, "did you mean", `--version`, `check`
//! hints and directories, completions, the man page) and refuses options that change nothing.
//! The MCP rows are in `mcp_newcomer.rs`.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use xcsh_integration_tests::{artifacts, lib_name, package_version, plugin, workspace_root};

fn run(cli: &Path, args: &[&str], cwd: &Path) -> Output {
    Command::new(cli)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        // No plugin of the user's own may change what these commands see.
        .env("HOME", cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn cli(args: &[&str], cwd: &Path) -> Output {
    run(&artifacts().cli(), args, cwd)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn both(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

/// `xcsh-plugins` and `xcsh-plugin-host` copied into `dir/bin`, as `cargo install` puts them:
/// without any plugin library beside them.
fn installed_copy(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    for source in [artifacts().cli(), artifacts().plugin_host()] {
        std::fs::copy(&source, bin.join(source.file_name().unwrap())).unwrap();
    }
    bin.join("xcsh-plugins")
}

fn sample() -> String {
    plugin("batch-rename").to_str().unwrap().to_owned()
}

#[test]
fn an_installed_copy_runs_the_demo_with_the_compiled_in_sample() {
    let dir = tempfile::tempdir().unwrap();
    let installed = installed_copy(dir.path());
    let output = run(&installed, &["demo"], dir.path());
    let out = stdout(&output);
    assert!(output.status.success(), "{}", both(&output));
    assert!(
        out.contains("sample plugin: compiled into this binary (no libbatch_rename.so next to it)"),
        "{out}"
    );
    assert!(out.contains("✔ Accept: 2 files [Batch rename]"), "{out}");
    assert!(
        out.contains("Done: one change applied, one discarded, nothing pending."),
        "{out}"
    );

    // Next to the bundled library, the library is used, and said so.
    let bundled = cli(&["demo"], dir.path());
    assert!(bundled.status.success(), "{}", both(&bundled));
    assert!(
        stdout(&bundled).contains("libbatch_rename.so (a plugin library)"),
        "{}",
        stdout(&bundled)
    );
}

#[test]
fn an_installed_copy_finds_its_plugin_host_and_says_its_api_range() {
    let dir = tempfile::tempdir().unwrap();
    let installed = installed_copy(dir.path());
    let version = run(&installed, &["--version"], dir.path());
    assert!(version.status.success());
    let line = stdout(&version);
    let api = package_version("plugin-api/Cargo.toml");
    assert!(
        line.starts_with(
            "xcsh-plugins 0.1.0 (loads plugins built against xcsh-plugin-api 0.2.0 to "
        ) && line.trim_end().ends_with(&format!("{api})")),
        "{line}"
    );
    // Process isolation starts the copied xcsh-plugin-host that sits beside it.
    let listed = run(
        &installed,
        &[
            "list",
            "--no-default-dirs",
            "--isolation",
            "process",
            "--plugin",
            &sample(),
        ],
        dir.path(),
    );
    assert!(listed.status.success(), "{}", both(&listed));
    assert!(
        stdout(&listed).contains("(process; sandbox:"),
        "{}",
        stdout(&listed)
    );
}

#[test]
fn new_names_where_its_api_comes_from_and_api_path_must_hold_the_sources() {
    let dir = tempfile::tempdir().unwrap();
    let installed = installed_copy(dir.path());
    let root = workspace_root();
    let output = run(
        &installed,
        &["new", "by-path", "--api-path", root.to_str().unwrap()],
        dir.path(),
    );
    assert!(output.status.success(), "{}", both(&output));
    let api = root.join("plugin-api").canonicalize().unwrap();
    assert!(
        stdout(&output).contains(&format!(
            "depends on xcsh-plugin-api from {} (--api-path)",
            api.display()
        )),
        "{}",
        stdout(&output)
    );
    let manifest = std::fs::read_to_string(dir.path().join("by-path/Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "xcsh-plugin-api = {{ path = {:?} }}",
            api.to_str().unwrap()
        )),
        "{manifest}"
    );

    let published = run(&installed, &["new", "published", "--published"], dir.path());
    assert!(published.status.success(), "{}", both(&published));
    let manifest = std::fs::read_to_string(dir.path().join("published/Cargo.toml")).unwrap();
    let version = package_version("plugin-api/Cargo.toml");
    assert!(
        manifest.contains(&format!("xcsh-plugin-api = {{ version = \"{version}\" }}")),
        "{manifest}"
    );
    assert!(
        stdout(&published).contains("from crates.io"),
        "{}",
        stdout(&published)
    );

    let wrong = run(
        &installed,
        &["new", "nowhere", "--api-path", "/nonexistent"],
        dir.path(),
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", both(&wrong));
    assert!(stderr(&wrong).contains("--api-path /nonexistent: no xcsh-plugin-api sources there"));
    assert!(!dir.path().join("nowhere").exists());
}

#[test]
fn an_unknown_argument_is_refused_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let output = cli(
        &[
            "call",
            "--no-default-dirs",
            "--plugin",
            &sample(),
            "batch_rename_preview",
            r#"{"files":[],"find":"a","replace":"b","extra":1}"#,
            "--discard",
        ],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    assert!(
        stderr(&output).contains("'extra' was unexpected"),
        "{}",
        both(&output)
    );
}

#[test]
fn list_shows_each_tools_parameters_and_describe_the_whole_schema() {
    let dir = tempfile::tempdir().unwrap();
    let listed = cli(
        &["list", "--no-default-dirs", "--plugin", &sample()],
        dir.path(),
    );
    assert!(listed.status.success(), "{}", both(&listed));
    let out = stdout(&listed);
    let under_tool: Vec<&str> = out
        .lines()
        .skip_while(|line| !line.starts_with("batch_rename_preview  "))
        .skip(2)
        .take(3)
        .collect();
    assert_eq!(
        under_tool,
        [
            "    files    array of string (required) — Files to rename, relative to the session's working directory.",
            "    find     string (required) — Text to find in each file name.",
            "    replace  string (required) — Replacement text.",
        ],
        "{out}"
    );

    let described = cli(
        &[
            "describe",
            "--no-default-dirs",
            "--plugin",
            &sample(),
            "batch_rename_preview",
        ],
        dir.path(),
    );
    assert!(described.status.success(), "{}", both(&described));
    let text = stdout(&described);
    assert!(text.contains("Previews renaming files"), "{text}");
    assert!(
        text.contains("Parameters (unknown arguments are refused):"),
        "{text}"
    );
    let schema: Value = serde_json::from_str(text.split("Schema:\n").nth(1).unwrap()).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["required"],
        serde_json::json!(["files", "find", "replace"])
    );

    let json = cli(
        &[
            "describe",
            "--json",
            "--no-default-dirs",
            "--plugin",
            &sample(),
            "batch_rename_preview",
        ],
        dir.path(),
    );
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["tool"]["parameters"], schema);

    let unknown = cli(
        &["describe", "--no-default-dirs", "batch_rename"],
        dir.path(),
    );
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn an_unknown_tool_gets_the_closest_names() {
    let dir = tempfile::tempdir().unwrap();
    let output = cli(
        &[
            "call",
            "--no-default-dirs",
            "--plugin",
            &sample(),
            "batch_rename_preveiw",
            "{}",
        ],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(2), "{}", both(&output));
    assert!(
        stderr(&output).contains(
            "unknown tool \"batch_rename_preveiw\": no loaded tool has that name; did you mean \"batch_rename_preview\"?"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn reason_without_a_decision_is_a_usage_error_and_json_gives_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a1.txt"), "1").unwrap();
    let preview = r#"{"files":["a1.txt"],"find":"a","replace":"b"}"#;
    let alone = cli(
        &[
            "call",
            "--no-default-dirs",
            "--plugin",
            &sample(),
            "batch_rename_preview",
            preview,
            "--reason",
            "why",
        ],
        dir.path(),
    );
    assert_eq!(alone.status.code(), Some(2), "{}", both(&alone));
    assert!(
        stderr(&alone).contains("--reason needs --apply or --discard: add one"),
        "{}",
        stderr(&alone)
    );
    assert!(dir.path().join("a1.txt").exists());

    let args = [
        "call",
        "--no-default-dirs",
        "--plugin",
        &sample(),
        "batch_rename_preview",
        preview,
        "--discard",
        "--reason",
        "not today",
    ];
    let text = cli(&args, dir.path());
    assert!(text.status.success(), "{}", both(&text));
    assert!(
        stdout(&text).contains("Reason: not today"),
        "{}",
        stdout(&text)
    );
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let json = cli(&with_json, dir.path());
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    let resolution = &doc["resolutions"][0];
    assert_eq!(resolution["action"], "discard");
    assert_eq!(resolution["reason"], "not today");
    assert!(resolution["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Reason: not today"));
    assert!(dir.path().join("a1.txt").exists());
}

#[test]
fn options_appear_only_where_they_change_something() {
    let dir = tempfile::tempdir().unwrap();
    let help = |command: &str| stdout(&cli(&[command, "--help"], dir.path()));
    for command in ["new", "demo", "trust", "completions", "man"] {
        let text = help(command);
        for option in [
            "--isolation",
            "--memory-limit",
            "--deny-network",
            "--no-default-dirs",
        ] {
            assert!(
                !text.contains(option),
                "`{command} --help` lists {option}:\n{text}"
            );
        }
    }
    for command in ["list", "call", "mcp", "describe"] {
        assert!(help(command).contains("--isolation"), "{command}");
        assert!(help(command).contains("--require-all-plugins"), "{command}");
    }
    assert!(!help("mcp").contains("--json"));
    assert!(!help("check").contains("--plugin"));

    for args in [
        &["demo", "--json"][..],
        &["--json", "demo"],
        &["--json", "new", "x"],
        &["mcp", "--json"],
        &["--isolation", "process", "trust", "x"],
    ] {
        let output = cli(args, dir.path());
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", both(&output));
    }
    let early = cli(&["--json", "demo"], dir.path());
    assert!(
        stderr(&early).contains("--json changes nothing for `xcsh-plugins demo`"),
        "{}",
        stderr(&early)
    );
    assert!(!dir.path().join("x").exists());
    // The earlier form, options before the subcommand, still works where they apply.
    let early_list = cli(
        &["--no-default-dirs", "--json", "--plugin", &sample(), "list"],
        dir.path(),
    );
    assert!(early_list.status.success(), "{}", both(&early_list));
    let doc: Value = serde_json::from_slice(&early_list.stdout).unwrap();
    assert!(doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "batch_rename_preview"));
}

#[test]
fn check_reports_the_version_it_read_and_what_to_rebuild_against() {
    let dir = tempfile::tempdir().unwrap();
    let newer = plugin("fixture-incompatible");
    let text = cli(&["check", newer.to_str().unwrap()], dir.path());
    assert_eq!(text.status.code(), Some(1));
    let api = package_version("plugin-api/Cargo.toml");
    assert!(
        stderr(&text).contains(&format!(
            "built against xcsh-plugin-api 0.9.0, this host supports 0.2.0 to {api}; rebuild it against xcsh-plugin-api {api}"
        )),
        "{}",
        stderr(&text)
    );
    let json = cli(&["check", "--json", newer.to_str().unwrap()], dir.path());
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["files"][0]["apiVersion"], "0.9.0");
    assert_eq!(doc["files"][0]["ok"], false);
}

#[test]
fn check_dir_checks_every_plugin_file_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    for package in ["batch-rename", "fixture-multi"] {
        let source = plugin(package);
        std::fs::copy(&source, plugins.join(source.file_name().unwrap())).unwrap();
    }
    std::fs::write(plugins.join("README.txt"), "not a plugin").unwrap();
    let output = cli(&["check", "--json", plugins.to_str().unwrap()], dir.path());
    assert!(output.status.success(), "{}", both(&output));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let checked: Vec<String> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            f["path"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        checked,
        [lib_name("batch_rename"), lib_name("fixture_multi")]
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = cli(&["check", empty.to_str().unwrap()], dir.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("no plugin files in this directory"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn completions_and_the_man_page_come_from_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let output = cli(&["completions", shell], dir.path());
        assert!(output.status.success(), "{shell}: {}", both(&output));
        let script = stdout(&output);
        for word in ["describe", "require-all-plugins", "api-path"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    // The bash script is valid bash.
    let script = dir.path().join("xcsh-plugins.bash");
    std::fs::write(&script, cli(&["completions", "bash"], dir.path()).stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", stderr(&syntax));

    let man = cli(&["man"], dir.path());
    assert!(man.status.success());
    let page = stdout(&man);
    assert!(
        page.starts_with(".ie \\n(.g .ds Aq") || page.contains(".TH xcsh-plugins"),
        "{page}"
    );
    assert!(
        page.contains(".SH NAME") && page.contains("describe"),
        "{page}"
    );
    assert!(cli(&["completions", "tcsh"], dir.path()).status.code() == Some(2));
}

#[test]
fn require_all_plugins_makes_a_load_error_fatal_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a1.txt"), "1").unwrap();
    let missing = dir.path().join("libmissing.so");
    let args = |strict: bool| {
        let mut args = vec![
            "call".to_owned(),
            "--no-default-dirs".to_owned(),
            "--plugin".to_owned(),
            sample(),
            "--plugin".to_owned(),
            missing.to_str().unwrap().to_owned(),
            "batch_rename_preview".to_owned(),
            r#"{"files":["a1.txt"],"find":"a","replace":"b"}"#.to_owned(),
            "--apply".to_owned(),
        ];
        if strict {
            args.push("--require-all-plugins".to_owned());
        }
        args
    };
    let strict: Vec<String> = args(true);
    let strict: Vec<&str> = strict.iter().map(String::as_str).collect();
    let output = cli(&strict, dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    assert!(
        stderr(&output).contains(
            "1 plugin file(s) failed to load and --require-all-plugins is set; nothing was run"
        ),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("libmissing.so"),
        "{}",
        stderr(&output)
    );
    assert!(dir.path().join("a1.txt").exists(), "nothing ran");

    let lenient: Vec<String> = args(false);
    let lenient: Vec<&str> = lenient.iter().map(String::as_str).collect();
    let output = cli(&lenient, dir.path());
    assert!(output.status.success(), "{}", both(&output));
    assert!(dir.path().join("b1.txt").exists());

    let list = cli(
        &[
            "list",
            "--no-default-dirs",
            "--require-all-plugins",
            "--plugin",
            missing.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(list.status.code(), Some(1));
    assert!(
        stdout(&list).is_empty(),
        "nothing listed: {}",
        stdout(&list)
    );
}
