//! Loading real plugin libraries: discovery, ABI checks, and every load error the spec names.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::{Path, PathBuf};

use serde_json::json;
use xcsh_integration_tests::{lib_name, plugin};
use xcsh_loader::library::{host_api_version, oldest_supported_api_version};
use xcsh_loader::{LoadErrorKind, Session, ToolOrigin};

fn session_with(cwd: &Path, plugins: &[PathBuf]) -> Session {
    plugins
        .iter()
        .fold(Session::builder(cwd).default_dirs(false), |b, p| {
            b.plugin(p)
        })
        .build()
}

#[test]
fn batch_rename_loads_with_its_spec_and_registers_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("batch-rename");
    let session = session_with(dir.path(), std::slice::from_ref(&lib));
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["batch_rename_preview", "resolve"]);
    let spec = &tools[0];
    assert_eq!(spec.label, "Batch Rename Preview");
    assert!(spec.deferrable && !spec.hidden);
    assert_eq!(spec.origin, ToolOrigin::Plugin(lib.canonicalize().unwrap()));
    assert_eq!(
        spec.parameters["required"],
        json!(["files", "find", "replace"])
    );
    let resolve = &tools[1];
    assert_eq!(resolve.label, "Resolve");
    assert!(resolve.hidden);
    assert_eq!(
        resolve.parameters,
        json!({"type":"object","properties":{"action":{"enum":["apply","discard"]},"reason":{"type":"string","description":"Why you're applying or discarding"}},"required":["action","reason"],"additionalProperties":false})
    );
}

#[test]
fn a_directory_of_junk_reports_each_file_and_still_loads_the_good_one() {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).unwrap();
    let real = std::fs::read(plugin("batch-rename")).unwrap();
    std::fs::write(tools.join(lib_name("junk")), b"this is not ELF").unwrap();
    std::fs::write(
        tools.join(lib_name("truncated")),
        &real[..real.len().min(4096)],
    )
    .unwrap();
    std::fs::write(tools.join(lib_name("empty")), b"").unwrap();
    std::fs::write(tools.join("README.txt"), b"not a candidate").unwrap();
    std::fs::write(tools.join(lib_name("good")), &real).unwrap();

    let session = session_with(dir.path(), std::slice::from_ref(&tools));
    let errors = session.load_errors();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for (error, stem) in errors.iter().zip(["empty", "junk", "truncated"]) {
        assert!(
            matches!(error.kind, LoadErrorKind::NotALibrary { .. }),
            "{error}"
        );
        assert!(error.to_string().contains(&lib_name(stem)), "{error}");
    }
    assert!(session
        .tools()
        .iter()
        .any(|t| t.name == "batch_rename_preview"));
}

#[test]
fn a_library_without_an_xcsh_root_module_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("fixture-noroot");
    let session = session_with(dir.path(), std::slice::from_ref(&lib));
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1);
    assert!(matches!(errors[0].kind, LoadErrorKind::NoRootModule));
    let message = errors[0].to_string();
    assert!(message.contains("libfixture_noroot"), "{message}");
    assert!(message.contains("no xcsh plugin root module"), "{message}");
}

#[test]
fn an_incompatible_api_version_is_refused_naming_file_and_both_versions() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with(
        dir.path(),
        &[plugin("fixture-incompatible"), plugin("batch-rename")],
    );
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let message = errors[0].to_string();
    assert!(message.contains("libfixture_incompatible"), "{message}");
    assert!(message.contains("0.9.0"), "{message}");
    assert!(message.contains(&host_api_version()), "{message}");
    assert_eq!(host_api_version(), xcsh_plugin_api::API_VERSION);
    // The other plugin is unaffected.
    assert!(session
        .tools()
        .iter()
        .any(|t| t.name == "batch_rename_preview"));
}

/// The exact refusal (plugin-api/ABI.md) for a plugin built against a newer minor.
fn refusal(path: &Path, found: &str) -> String {
    format!(
        "refusing to load {}: built against xcsh-plugin-api {found}, this host supports {} to {}",
        path.display(),
        oldest_supported_api_version(),
        host_api_version()
    )
}

#[test]
fn a_newer_minor_is_refused_before_any_of_its_code_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("constructor-ran");
    // The refusal comes from the file alone. Run in a child process so the constructor's
    // environment variable reaches only it: this test's binary runs as `xcsh-plugins`.
    let lib = plugin("fixture-incompatible").canonicalize().unwrap();
    let output = std::process::Command::new(xcsh_integration_tests::artifacts().cli())
        .args([
            "--no-default-dirs",
            "--pass-env",
            "XCSH_FIXTURE_MARKER",
            "--plugin",
        ])
        .arg(&lib)
        .args(["--json", "list"])
        .current_dir(dir.path())
        .env("XCSH_FIXTURE_MARKER", &marker)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{report:#}");
    assert_eq!(
        errors[0]["message"],
        "refusing to load: built against xcsh-plugin-api 0.9.0, this host supports 0.2.0 to "
            .to_owned()
            + &host_api_version()
    );
    assert!(
        !marker.exists(),
        "the refused plugin's constructor ran: it was loaded"
    );
    // In this process too, with the exact message.
    let session = session_with(dir.path(), std::slice::from_ref(&lib));
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].to_string(), refusal(&lib, "0.9.0"));
    assert!(matches!(
        &errors[0].kind,
        LoadErrorKind::IncompatibleVersion { found, .. } if found == "0.9.0"
    ));
    assert!(session.plugins().is_empty());
    assert!(!marker.exists());
}

#[test]
fn a_plugin_without_a_version_marker_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("fixture-legacy").canonicalize().unwrap();
    let session = session_with(dir.path(), std::slice::from_ref(&lib));
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].to_string(),
        refusal(&lib, "0.1 or older (no version marker)")
    );
}

#[tokio::test]
async fn name_clash_keeps_the_first_tool_and_bad_tools_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with(
        dir.path(),
        &[plugin("fixture-multi"), plugin("fixture-bad-tools")],
    );
    let messages: Vec<String> = session
        .load_errors()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.ends_with("Tool name \"echo\" conflicts with existing tool")),
        "{messages:#?}"
    );
    assert!(messages
        .iter()
        .any(|m| m.contains("\"bad_schema\" has an invalid parameter schema")));
    assert!(messages
        .iter()
        .any(|m| m.contains("\"broken_schema\" has an invalid parameter schema")));
    assert!(messages
        .iter()
        .any(|m| m.contains("\"bad name!\" is invalid")));
    // `type Params = Value` without a schema: the message says what to write.
    assert!(
        messages.iter().any(
            |m| m.contains("\"untyped\" has an invalid parameter schema")
                && m.contains("override `parameters_schema()`")
        ),
        "{messages:#?}"
    );
    assert_eq!(messages.len(), 5, "{messages:#?}");
    // The clash names both files: the skipped tool's, and the one that keeps the name.
    let clash = session
        .load_errors()
        .iter()
        .find_map(|e| match &e.kind {
            LoadErrorKind::NameConflict { existing, .. } => {
                Some((e.path.clone(), existing.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(clash.0, plugin("fixture-bad-tools").canonicalize().unwrap());
    assert_eq!(
        clash.1,
        Some(plugin("fixture-multi").canonicalize().unwrap())
    );
    // The first `echo` (fixture-multi) is kept; the good tool of the bad plugin loads.
    let echoed = session.call("echo", json!({"text": "first"})).await;
    assert_eq!(echoed.text(), "first");
    let good = session.call("good_tool", json!({})).await;
    assert_eq!(good.text(), "good_tool from bad-tools");
}

#[tokio::test]
async fn a_panicking_factory_is_an_error_and_other_plugins_still_work() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with(
        dir.path(),
        &[plugin("fixture-factory-panic"), plugin("fixture-multi")],
    );
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1);
    assert!(matches!(errors[0].kind, LoadErrorKind::Factory { .. }));
    assert!(
        errors[0]
            .to_string()
            .contains("factory exploded on purpose"),
        "{}",
        errors[0]
    );
    assert_eq!(
        session.call("echo", json!({"text": "alive"})).await.text(),
        "alive"
    );
}

#[test]
fn one_factory_gives_several_tools_including_hidden_ones() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with(dir.path(), &[plugin("fixture-multi")]);
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["echo", "note_preview", "stack_preview", "secret", "resolve"]
    );
    assert!(tools[3].hidden);
}

#[test]
fn the_same_file_given_twice_loads_once() {
    let dir = tempfile::tempdir().unwrap();
    let lib = plugin("batch-rename");
    let session = session_with(
        dir.path(),
        &[
            lib.clone(),
            lib.clone(),
            lib.parent().unwrap().join(lib.file_name().unwrap()),
        ],
    );
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(session.tools().len(), 2);
}

#[test]
fn default_dirs_are_searched_only_when_asked_and_explicit_paths_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let project_tools = dir.path().join(".xcsh").join("tools");
    let user_tools = home.path().join(".xcsh").join("agent").join("tools");
    std::fs::create_dir_all(&project_tools).unwrap();
    std::fs::create_dir_all(&user_tools).unwrap();
    std::fs::copy(
        plugin("fixture-tokio"),
        project_tools.join(lib_name("project_tokio")),
    )
    .unwrap();
    std::fs::copy(
        plugin("fixture-multi"),
        user_tools.join(lib_name("user_multi")),
    )
    .unwrap();

    let without = Session::builder(dir.path())
        .default_dirs(false)
        .home(Some(home.path().to_owned()))
        .build();
    assert!(without.tools().is_empty());

    // Project-local plugins load only when trusted (see tests/trust.rs).
    let mut trust = xcsh_loader::trust::TrustStore::for_home(home.path()).unwrap();
    trust
        .trust_file(
            &xcsh_loader::library::CheckedFile::read(
                &project_tools.join(lib_name("project_tokio")),
            )
            .unwrap(),
        )
        .unwrap();
    trust.save().unwrap();
    let with = Session::builder(dir.path())
        .home(Some(home.path().to_owned()))
        .plugin(plugin("batch-rename"))
        .build();
    assert!(with.load_errors().is_empty(), "{:?}", with.load_errors());
    let tools = with.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "batch_rename_preview",
            "tokio_io",
            "progress_steps",
            "echo",
            "note_preview",
            "stack_preview",
            "secret",
            "resolve"
        ]
    );
}

#[test]
fn a_missing_explicit_path_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_with(dir.path(), &[dir.path().join("nope.so")]);
    assert_eq!(session.load_errors().len(), 1);
    assert!(session.load_errors()[0].to_string().contains("nope.so"));
}

#[test]
fn a_plugin_deleted_between_discovery_and_load_is_reported_by_name() {
    use xcsh_loader::discovery::Discovery;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(lib_name("gone"));
    std::fs::copy(plugin("fixture-multi"), &path).unwrap();
    let discovery = Discovery {
        explicit: vec![path.clone()],
        cwd: dir.path().to_owned(),
        home: None,
        default_dirs: false,
    };
    let (candidates, errors) = discovery.candidates();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(candidates.len(), 1);
    std::fs::remove_file(&path).unwrap();
    let error = xcsh_loader::library::load_library(&candidates[0].path).unwrap_err();
    assert!(
        matches!(error.kind, LoadErrorKind::Unreadable { .. }),
        "{error}"
    );
    assert!(error.to_string().contains(&lib_name("gone")), "{error}");
}
