//! Loading native code safely: the ownership and permission checks made before `dlopen`, trust
//! for project-local plugins, and loading exactly the bytes that were checked.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use xcsh_integration_tests::{artifacts, lib_name, plugin};
use xcsh_loader::library::CheckedFile;
use xcsh_loader::trust::{sha256_hex, trust_file, TrustStore};
use xcsh_loader::{Isolation, LoadError, LoadErrorKind, Session};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A private scratch directory (canonical, so messages can be compared exactly).
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

/// Copy a built plugin to `dir/lib{stem}.so` with mode 0755.
fn install(package: &str, dir: &Path, stem: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join(lib_name(stem));
    std::fs::copy(plugin(package), &file).unwrap();
    chmod(&file, 0o755);
    file
}

fn explicit(cwd: &Path, file: &Path) -> Session {
    Session::builder(cwd)
        .default_dirs(false)
        .plugin(file)
        .build()
}

fn tool_names(session: &Session) -> Vec<String> {
    session.tools().iter().map(|t| t.name.clone()).collect()
}

#[test]
fn a_world_writable_plugin_file_is_refused_with_the_fix() {
    let (_tmp, root) = scratch();
    let file = install("batch-rename", &root.join("tools"), "writable");
    let shown = file.display();
    for (mode, expected) in [
        (
            0o757,
            format!("{shown} is writable by others (chmod o-w {shown})"),
        ),
        (
            0o777,
            format!("{shown} is writable by its group and others (chmod go-w {shown})"),
        ),
    ] {
        chmod(&file, mode);
        let session = explicit(&root, &file);
        let errors = session.load_errors();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            matches!(errors[0].kind, LoadErrorKind::Unsafe { .. }),
            "{}",
            errors[0]
        );
        assert_eq!(
            errors[0].to_string(),
            format!("refusing to load {shown}: {expected}")
        );
        assert!(session.tools().is_empty());
    }
    // With the fix applied, it loads.
    chmod(&file, 0o755);
    let session = explicit(&root, &file);
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(tool_names(&session), ["batch_rename_preview", "resolve"]);
}

#[test]
fn a_plugin_in_a_directory_writable_by_others_is_refused_with_the_fix() {
    let (_tmp, root) = scratch();
    let tools = root.join("shared-tools");
    let file = install("batch-rename", &tools, "in_open_dir");
    chmod(&tools, 0o757);
    let session = explicit(&root, &file);
    let errors = session.load_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0].to_string(),
        format!(
            "refusing to load {}: {dir} is writable by others (chmod o-w {dir})",
            file.display(),
            dir = tools.display()
        )
    );
    // The same through the command line, and `check` says it too.
    let output = cli(&[
        "--no-default-dirs",
        "--plugin",
        file.to_str().unwrap(),
        "list",
    ])
    .current_dir(&root)
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!("(chmod o-w {})", tools.display())),
        "{}",
        stderr(&output)
    );
    // A group-writable directory higher up is refused as well.
    chmod(&tools, 0o755);
    chmod(&root, 0o770);
    let session = explicit(&root, &file);
    assert!(
        session.load_errors()[0].to_string().ends_with(&format!(
            "{dir} is writable by its group (chmod g-w {dir})",
            dir = root.display()
        )),
        "{}",
        session.load_errors()[0]
    );
    chmod(&root, 0o700);
    assert!(explicit(&root, &file).load_errors().is_empty());
}

#[test]
fn a_plugin_owned_by_another_user_is_refused() {
    let (_tmp, root) = scratch();
    let file = install("batch-rename", &root.join("tools"), "foreign");
    // Only root can give a file away; everyone else gets the case from the unit tests.
    if std::os::unix::fs::chown(&file, Some(4242), Some(4242)).is_err() {
        return;
    }
    let session = explicit(&root, &file);
    let message = session.load_errors()[0].to_string();
    assert!(message.contains("is owned by uid 4242"), "{message}");
    assert!(message.contains("chown "), "{message}");
}

fn cli(args: &[&str]) -> Command {
    let mut command = Command::new(artifacts().cli());
    command
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("XCSH_FIXTURE_MARKER")
        .stdin(Stdio::null());
    command
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A project with the constructor fixture in `.xcsh/tools/`, a home of its own, and a marker
/// file path the fixture's constructor writes when it runs.
struct Project {
    _tmp: tempfile::TempDir,
    cwd: PathBuf,
    home: PathBuf,
    plugin: PathBuf,
    marker: PathBuf,
}

impl Project {
    fn new() -> Self {
        let (tmp, root) = scratch();
        let cwd = root.join("project");
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let plugin = install(
            "fixture-constructor",
            &cwd.join(".xcsh").join("tools"),
            "constructor",
        );
        Self {
            marker: root.join("constructor-ran"),
            _tmp: tmp,
            cwd,
            home,
            plugin,
        }
    }

    /// Run the CLI in the project, as the project's user. The marker lies outside the
    /// project, so the plugin process's sandbox is told to let the constructor write it
    /// (otherwise "the constructor never ran" would hold whether it ran or not).
    fn run(&self, args: &[&str]) -> Output {
        let marker_dir = self.marker.parent().unwrap().to_str().unwrap();
        // Plugin processes may write the marker; `trust` and `untrust` run no plugin.
        let mut with_marker = match args.first() {
            Some(&"trust" | &"untrust") => Vec::new(),
            // The marker's name reaches the plugin process only by name (`--pass-env`).
            _ => vec![
                "--allow-write",
                marker_dir,
                "--pass-env",
                "XCSH_FIXTURE_MARKER",
            ],
        };
        with_marker.extend_from_slice(args);
        cli(&with_marker)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("XCSH_FIXTURE_MARKER", &self.marker)
            .output()
            .unwrap()
    }

    fn constructor_ran(&self) -> bool {
        self.marker.exists()
    }
}

#[test]
fn a_project_plugin_loads_only_after_trust_and_not_after_a_change() {
    let project = Project::new();
    let shown = project.plugin.display().to_string();
    let command = format!("xcsh-plugins trust {shown}");

    // Untrusted: not loaded, its constructor never ran, and `list` says how to trust it.
    let listed = project.run(&["list"]);
    assert_eq!(listed.status.code(), Some(1), "{}", stderr(&listed));
    assert!(!stdout(&listed).contains("constructor_probe"));
    assert!(
        stderr(&listed).contains(&format!("untrusted: {shown} (not trusted, not loaded)")),
        "{}",
        stderr(&listed)
    );
    assert!(stderr(&listed).contains(&command), "{}", stderr(&listed));
    assert!(!project.constructor_ran(), "an untrusted plugin was loaded");
    let called = project.run(&["call", "constructor_probe", "{}"]);
    assert!(!called.status.success());
    assert!(!project.constructor_ran(), "an untrusted plugin was loaded");
    let listed = project.run(&["--json", "list"]);
    let document: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(
        document["untrusted"],
        json!([{"path": shown, "changed": false, "trustCommand": command}])
    );

    // Run exactly the command `list` showed.
    let words: Vec<&str> = command.split(' ').collect();
    assert_eq!(words[..2], ["xcsh-plugins", "trust"]);
    let trusted = project.run(&words[1..]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert!(
        !project.constructor_ran(),
        "trusting must not load the plugin"
    );
    let store = trust_file(&project.home);
    assert_eq!(
        std::fs::metadata(&store).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let recorded: Value = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
    let content = std::fs::read(&project.plugin).unwrap();
    assert_eq!(
        recorded["trusted"],
        json!([{"path": shown, "sha256": sha256_hex(&content)}])
    );

    // Trusted: it loads, and its constructor ran.
    let listed = project.run(&["list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("constructor_probe"),
        "{}",
        stdout(&listed)
    );
    assert!(project.constructor_ran());
    let called = project.run(&["call", "constructor_probe", "{}"]);
    assert!(called.status.success(), "{}", stderr(&called));
    assert!(
        stdout(&called).contains("constructed: true"),
        "{}",
        stdout(&called)
    );

    // One byte changes: untrusted again, never loaded.
    let mut changed = content.clone();
    let last = changed.len() - 1;
    changed[last] ^= 0x01;
    std::fs::write(&project.plugin, &changed).unwrap();
    std::fs::remove_file(&project.marker).unwrap();
    let listed = project.run(&["list"]);
    assert_eq!(listed.status.code(), Some(1));
    assert!(!stdout(&listed).contains("constructor_probe"));
    assert!(
        stderr(&listed).contains(&format!(
            "untrusted: {shown} (changed since it was trusted, not loaded)"
        )),
        "{}",
        stderr(&listed)
    );
    assert!(stderr(&listed).contains(&command), "{}", stderr(&listed));
    assert!(!project.constructor_ran(), "a changed plugin was loaded");

    // Back to the trusted bytes: trusted again. `untrust` takes it away.
    std::fs::write(&project.plugin, &content).unwrap();
    assert!(project.run(&["list"]).status.success());
    let untrusted = project.run(&["untrust", ".xcsh/tools"]);
    assert!(untrusted.status.success(), "{}", stderr(&untrusted));
    assert!(stdout(&untrusted).contains(&format!("untrusted {shown}")));
    let listed = project.run(&["list"]);
    assert!(stderr(&listed).contains("(not trusted, not loaded)"));
}

#[test]
fn explicit_and_user_plugins_need_no_trust_entry() {
    let project = Project::new();
    // Given explicitly, the same file loads without an entry.
    let listed = project.run(&["--plugin", project.plugin.to_str().unwrap(), "list"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(stdout(&listed).contains("constructor_probe"));

    // In the user's own tools directory too.
    let (_tmp, root) = scratch();
    let home = root.join("home");
    install(
        "fixture-constructor",
        &home.join(".xcsh").join("agent").join("tools"),
        "user_constructor",
    );
    std::fs::create_dir(root.join("elsewhere")).unwrap();
    let session = Session::builder(root.join("elsewhere"))
        .home(Some(home.clone()))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(tool_names(&session), ["constructor_probe"]);
    assert!(!trust_file(&home).exists());
}

#[tokio::test]
async fn the_session_uses_the_builders_home_for_trust() {
    let project = Project::new();
    let build = || {
        Session::builder(&project.cwd)
            .home(Some(project.home.clone()))
            .build()
    };
    let session = build();
    assert!(matches!(
        session.load_errors(),
        [LoadError {
            kind: LoadErrorKind::Untrusted { changed: false },
            ..
        }]
    ));
    assert!(session.tools().is_empty());

    let mut store = TrustStore::for_home(&project.home).unwrap();
    store
        .trust_file(&CheckedFile::read(&project.plugin).unwrap())
        .unwrap();
    store.save().unwrap();
    let session = build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    let probe = session.call("constructor_probe", json!({})).await;
    assert_eq!(probe.text(), "constructed: true");

    // An entry for other content is "changed".
    let mut store = TrustStore::for_home(&project.home).unwrap();
    store.trust(project.plugin.clone(), "00".repeat(32));
    store.save().unwrap();
    assert!(matches!(
        build().load_errors(),
        [LoadError {
            kind: LoadErrorKind::Untrusted { changed: true },
            ..
        }]
    ));

    // A trust file others could write is not believed, and says so.
    chmod(&trust_file(&project.home), 0o666);
    let errors: Vec<String> = build()
        .load_errors()
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].contains("trusted-plugins.json is writable by its group and others"));
    assert!(errors[1].contains("project plugin is not trusted"));
}

/// Replace `path` with `bytes` the way an attacker would: a new file renamed over it.
fn swap(path: &Path, bytes: &[u8]) {
    let temp = path.with_extension("swap");
    std::fs::write(&temp, bytes).unwrap();
    chmod(&temp, 0o755);
    std::fs::rename(&temp, path).unwrap();
}

#[tokio::test]
async fn swapping_the_file_between_check_and_load_changes_nothing() {
    swapping_the_file_between_check_and_load_changes_nothing_in(Isolation::InProcess).await;
    swapping_the_file_between_check_and_load_changes_nothing_in(Isolation::Process).await;
}

/// The mappings are checked in this process's own maps, so only in-process.
async fn swapping_the_file_between_check_and_load_changes_nothing_in(isolation: Isolation) {
    let (_tmp, root) = scratch();
    let file = install("batch-rename", &root.join("tools"), "swapped");
    let checked = sha256_hex(&std::fs::read(&file).unwrap());
    let other = std::fs::read(plugin("fixture-multi")).unwrap();
    let swaps = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&swaps);
    let session = Session::builder(&root)
        .default_dirs(false)
        .plugin(&file)
        .after_check(move |path| {
            // Checked and read; the loader is about to hand the bytes to `dlopen`.
            swap(path, &other);
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .isolation(isolation)
        .build();
    assert_eq!(swaps.load(Ordering::SeqCst), 1);
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    // The path now holds fixture-multi, but the loaded tools are batch-rename's.
    assert_eq!(
        sha256_hex(&std::fs::read(&file).unwrap()),
        sha256_hex(&std::fs::read(plugin("fixture-multi")).unwrap())
    );
    assert_eq!(tool_names(&session), ["batch_rename_preview", "resolve"]);
    assert_ne!(checked, sha256_hex(&std::fs::read(&file).unwrap()));
    #[cfg(target_os = "linux")]
    if isolation == Isolation::InProcess {
        // Mapped from the file object that was checked (now unlinked), through its open
        // descriptor: no copy, and not whatever the path holds now.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let checked_object = format!("{} (deleted)", file.display());
        assert!(
            maps.contains(&checked_object),
            "no {checked_object} mapping"
        );
        assert!(
            !maps.contains(&format!("/memfd:xcsh-plugin:{}", lib_name("swapped"))),
            "an explicit plugin needs no in-memory copy"
        );
    }

    let again = Session::builder(&root)
        .default_dirs(false)
        .plugin(&file)
        .isolation(isolation)
        .build();
    let preview = session
        .call(
            "batch_rename_preview",
            json!({"files": ["a1.txt"], "find": "a", "replace": "b"}),
        )
        .await;
    if isolation == Isolation::InProcess {
        // In this process the path stays bound to what was loaded from it: the new content
        // is reported, not loaded beside it, and the old copy keeps working.
        let errors = again.load_errors();
        assert!(
            matches!(
                errors,
                [LoadError {
                    kind: LoadErrorKind::ChangedSinceLoaded,
                    ..
                }]
            ),
            "{errors:#?}"
        );
        assert!(errors[0]
            .to_string()
            .contains("the file changed since it was loaded in this process"));
        assert!(!preview.is_error, "{}", preview.text());
    } else {
        // Each version runs in a process of its own: a new session loads the new content,
        // and the first one reloads it (checked again) at its next call, whose tool the new
        // content does not have.
        assert!(again.load_errors().is_empty(), "{:?}", again.load_errors());
        assert_eq!(
            tool_names(&again),
            ["echo", "note_preview", "stack_preview", "secret", "resolve"]
        );
        assert!(preview.is_error);
        assert_eq!(preview.text(), "Tool \"batch_rename_preview\" not found");
        assert_eq!(tool_names(&session), tool_names(&again));
    }
}

#[test]
fn a_trusted_project_plugin_swapped_after_the_check_loads_the_trusted_bytes() {
    let project = Project::new();
    let mut store = TrustStore::for_home(&project.home).unwrap();
    store
        .trust_file(&CheckedFile::read(&project.plugin).unwrap())
        .unwrap();
    store.save().unwrap();
    // The replacement is a different, untrusted plugin.
    let other = std::fs::read(plugin("fixture-multi")).unwrap();
    let session = Session::builder(&project.cwd)
        .home(Some(project.home.clone()))
        .after_check(move |path| swap(path, &other))
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    assert_eq!(tool_names(&session), ["constructor_probe"]);
}

/// Rewrite `path` in place (same inode, new content), as a careless build would.
fn rewrite_in_place(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

#[test]
fn rewriting_the_file_in_place_after_the_check_refuses_the_load() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        rewriting_the_file_in_place_after_the_check_refuses_the_load_in(isolation);
    }
}

/// What was mapped is looked for in this process's own maps, so only in-process.
fn rewriting_the_file_in_place_after_the_check_refuses_the_load_in(isolation: Isolation) {
    let (_tmp, root) = scratch();
    let file = install("batch-rename", &root.join("tools"), "rewritten");
    let other = std::fs::read(plugin("fixture-multi")).unwrap();
    let session = Session::builder(&root)
        .default_dirs(false)
        .plugin(&file)
        .after_check(move |path| rewrite_in_place(path, &other))
        .isolation(isolation)
        .build();
    let errors = session.load_errors();
    assert!(
        matches!(
            errors,
            [LoadError {
                kind: LoadErrorKind::ChangedWhileLoading,
                ..
            }]
        ),
        "{errors:#?}"
    );
    assert_eq!(
        errors[0].to_string(),
        format!(
            "{}: the file changed while it was being loaded; nothing of it is used, try again",
            file.display()
        )
    );
    // Neither the checked nor the new content was loaded: no tools, nothing mapped.
    assert!(session.tools().is_empty(), "{:?}", tool_names(&session));
    #[cfg(target_os = "linux")]
    if isolation == Isolation::InProcess {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        assert!(
            !maps.contains(file.to_str().unwrap()),
            "the rewritten file was mapped"
        );
    }
    // Once the rewrite is over, the file loads as what it now is.
    let again = explicit(&root, &file);
    assert!(again.load_errors().is_empty(), "{:?}", again.load_errors());
    assert!(tool_names(&again).contains(&"echo".to_owned()));
}

#[test]
fn a_trusted_project_plugin_rewritten_in_place_after_the_check_loads_the_trusted_bytes() {
    for isolation in [Isolation::InProcess, Isolation::Process] {
        trusted_project_plugin_rewritten_in_place_in(isolation);
    }
}

/// The sealed copy is looked for in this process's own maps, so only in-process.
fn trusted_project_plugin_rewritten_in_place_in(isolation: Isolation) {
    let project = Project::new();
    let mut store = TrustStore::for_home(&project.home).unwrap();
    store
        .trust_file(&CheckedFile::read(&project.plugin).unwrap())
        .unwrap();
    store.save().unwrap();
    let other = std::fs::read(plugin("fixture-multi")).unwrap();
    let session = Session::builder(&project.cwd)
        .home(Some(project.home.clone()))
        .after_check(move |path| rewrite_in_place(path, &other))
        .isolation(isolation)
        .build();
    assert!(
        session.load_errors().is_empty(),
        "{:?}",
        session.load_errors()
    );
    // What runs is what was hashed and trusted, from a sealed copy, not the new content.
    assert_eq!(tool_names(&session), ["constructor_probe"]);
    #[cfg(target_os = "linux")]
    if isolation == Isolation::InProcess {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let name = project.plugin.file_name().unwrap().to_str().unwrap();
        assert!(
            maps.contains(&format!("/memfd:xcsh-plugin:{name}")),
            "a trust-pinned plugin loads from its sealed copy"
        );
    }
}

#[test]
fn the_private_copy_fallback_loads_and_leaves_nothing_behind() {
    let (_tmp, root) = scratch();
    let temp = root.join("tmp");
    std::fs::create_dir(&temp).unwrap();
    chmod(&temp, 0o700);
    let output = cli(&["--no-default-dirs", "--plugin"])
        .arg(plugin("fixture-multi"))
        .args(["call", "echo", r#"{"text":"from a private copy"}"#])
        .current_dir(&root)
        .env("XCSH_LOADER_PRIVATE_COPY", "1")
        .env("TMPDIR", &temp)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("from a private copy"));
    let left: Vec<_> = std::fs::read_dir(&temp).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn trust_refuses_a_file_it_would_refuse_to_load() {
    let project = Project::new();
    chmod(&project.plugin, 0o777);
    let output = project.run(&["trust", project.plugin.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let shown = project.plugin.display();
    assert!(
        stderr(&output).contains(&format!(
            "refusing to trust {shown}: {shown} is writable by its group and others (chmod go-w {shown})"
        )),
        "{}",
        stderr(&output)
    );
    assert!(!trust_file(&project.home).exists());
}
