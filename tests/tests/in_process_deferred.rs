//! In-process plugins whose tool definitions are cached (issue 29): the library is loaded at
//! build time (its constructors run, its checks hold), but its factory runs at the first call
//! of one of its tools. Through `xcsh-plugins` in fresh processes, on a copy of
//! `fixture-constructor`, which marks a file when its constructor and when its factory run.
//!
//! Every test has a cache directory of its own (`XCSH_CACHE_DIR`), never the user's.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::path::PathBuf;
use std::process::{Command, Output};

use xcsh_integration_tests::{artifacts, lib_name, plugin};

/// A scratch root (canonical): the working directory, a plugin directory holding a copy of
/// the fixture, the cache and the marker file.
struct Scratch {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("work")).unwrap();
        std::fs::create_dir(root.join("plugins")).unwrap();
        std::fs::copy(
            plugin("fixture-constructor"),
            root.join("plugins").join(lib_name("fixture_constructor")),
        )
        .unwrap();
        Scratch { _tmp: tmp, root }
    }

    fn marker(&self) -> PathBuf {
        self.root.join("marker")
    }

    /// `xcsh-plugins COMMAND --isolation in-process` over the plugin directory, with the
    /// scratch cache (and, when `cache` is false, `XCSH_NO_CACHE=1`).
    fn run(&self, cache: bool, command: &str, rest: &[&str]) -> Output {
        let mut cli = Command::new(artifacts().cli());
        cli.arg(command)
            .args(["--isolation", "in-process", "--no-default-dirs", "--plugin"])
            .arg(self.root.join("plugins"))
            .arg("--cwd")
            .arg(self.root.join("work"))
            .args(rest)
            .env("XCSH_CACHE_DIR", self.root.join("cache"))
            .env("XCSH_FIXTURE_MARKER", self.marker())
            .env("NO_COLOR", "1");
        if !cache {
            cli.env("XCSH_NO_CACHE", "1");
        }
        cli.output().unwrap()
    }

    /// What ran since the last call (`constructor`, `factory`), and the marker emptied.
    fn ran(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.marker()).unwrap_or_default();
        let _ = std::fs::remove_file(self.marker());
        text.lines()
            .map(|line| line.split(' ').next().unwrap().to_owned())
            .collect()
    }

    /// The cache entries holding `text`.
    fn entries_with(&self, text: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut dirs = vec![self.root.join("cache")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if std::fs::read_to_string(&path).is_ok_and(|t| t.contains(text)) {
                    found.push(path);
                }
            }
        }
        found
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn succeeded(output: &Output) -> &Output {
    assert!(
        output.status.success(),
        "xcsh-plugins failed: {}\n{}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn with_cached_definitions_the_factory_runs_at_the_first_call_only() {
    let scratch = Scratch::new();
    // A miss: the factory runs at build time, and its definitions are cached.
    let listed = stdout(succeeded(&scratch.run(true, "list", &[])));
    assert!(listed.contains("constructor_probe"), "{listed}");
    assert_eq!(scratch.ran(), ["constructor", "factory"]);

    // A hit: the library is loaded (its constructor runs), the factory does not.
    let listed = stdout(succeeded(&scratch.run(true, "list", &[])));
    assert!(listed.contains("constructor_probe"), "{listed}");
    assert!(listed.contains("Constructor Probe"), "{listed}");
    assert_eq!(scratch.ran(), ["constructor"]);

    // The first call runs it, and the call is answered by the tool it made.
    let called = stdout(succeeded(&scratch.run(
        true,
        "call",
        &["constructor_probe"],
    )));
    assert!(called.contains("constructed: true"), "{called}");
    assert_eq!(scratch.ran(), ["constructor", "factory"]);

    // The control: without the cache, every session runs the factory at build time.
    succeeded(&scratch.run(false, "list", &[]));
    assert_eq!(scratch.ran(), ["constructor", "factory"]);
}

#[test]
fn a_cached_tool_the_factory_no_longer_defines_is_an_error_naming_it() {
    let scratch = Scratch::new();
    succeeded(&scratch.run(true, "list", &[]));
    // Make the cached definitions name a tool the plugin does not define (as a factory whose
    // tools depend on more than the cache's key would).
    let entries = scratch.entries_with("constructor_probe");
    assert_eq!(entries.len(), 1, "one entry: {entries:?}");
    let text = std::fs::read_to_string(&entries[0]).unwrap();
    std::fs::write(
        &entries[0],
        text.replace("constructor_probe", "ghost_probe"),
    )
    .unwrap();

    let listed = stdout(succeeded(&scratch.run(true, "list", &[])));
    assert!(listed.contains("ghost_probe"), "{listed}");
    let called = scratch.run(true, "call", &["ghost_probe"]);
    assert!(!called.status.success());
    let said = format!(
        "{}{}",
        stdout(&called),
        String::from_utf8_lossy(&called.stderr)
    );
    let path = scratch
        .root
        .join("plugins")
        .join(lib_name("fixture_constructor"));
    assert!(
        said.contains(&format!(
            "Tool \"ghost_probe\" is no longer defined by plugin {}",
            path.display()
        )),
        "{said}"
    );

    // The entry was rewritten: the next session lists the plugin's tool as it is.
    let listed = stdout(succeeded(&scratch.run(true, "list", &[])));
    assert!(listed.contains("constructor_probe"), "{listed}");
    assert!(!listed.contains("ghost_probe"), "{listed}");
    assert_eq!(scratch.entries_with("ghost_probe"), Vec::<PathBuf>::new());
}

#[test]
fn a_failing_factory_is_a_load_error_and_never_cached() {
    let scratch = Scratch::new();
    let dir = scratch.root.join("plugins");
    std::fs::copy(
        plugin("fixture-factory-panic"),
        dir.join(lib_name("fixture_factory_panic")),
    )
    .unwrap();
    for _ in 0..2 {
        let listed = scratch.run(true, "list", &[]);
        let said = format!(
            "{}{}",
            stdout(&listed),
            String::from_utf8_lossy(&listed.stderr)
        );
        assert!(
            said.contains(
                &dir.join(lib_name("fixture_factory_panic"))
                    .display()
                    .to_string()
            ),
            "the factory's failure is reported at build time, each time: {said}"
        );
    }
}
