//! Test support: build the bundled plugins and the `xcsh-plugins` and `xcsh-plugin-host` binaries with cargo, and find
//! the real artifacts.
//!
//! `cargo test` does not produce `cdylib` files for other packages, so the first test that
//! needs one runs `cargo build --message-format=json` for every plugin package (a no-op when
//! they are fresh) and reads the artifact paths from cargo's own report. This must not run in
//! a build script: a nested cargo there deadlocks on the target-directory lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod bench;
pub mod cancel_tree;
pub mod guide;
pub mod mcp;
pub mod node;
pub mod npm_registry;
pub mod packing;
#[cfg(unix)]
pub mod reload;
pub mod tree;

/// Every plugin package in the workspace.
pub const PLUGIN_PACKAGES: &[&str] = &[
    "batch-rename",
    "fixture-multi",
    "fixture-faults",
    "fixture-tokio",
    "fixture-incompatible",
    "fixture-legacy",
    "fixture-noroot",
    "fixture-factory-panic",
    "fixture-bad-tools",
    "fixture-constructor",
    "fixture-bench",
    "fixture-crash",
    "fixture-reload-v1",
    "fixture-reload-v2",
    "fixture-journal",
    "fixture-bad-layout",
    "fixture-secrets",
    "fixture-conformance",
    "fixture-todo",
    "fixture-programs",
    "fixture-action-context",
    "git-cleanup",
];

/// Paths of the built artifacts, by cargo target name (`batch_rename`, `xcsh-plugins`, ...).
pub struct Artifacts {
    by_name: HashMap<String, PathBuf>,
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

fn build(release: bool, extra: &[&str]) -> Result<Artifacts, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace_root())
        .args(["build", "--message-format=json-render-diagnostics"])
        .args(["-p", "xcsh-plugins", "-p", "xcsh-native-plugins-node"]);
    for package in PLUGIN_PACKAGES {
        command.args(["-p", package]);
    }
    if release {
        command.arg("--release");
    }
    command.args(extra);
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the plugins failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let mut by_name = HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" {
            continue;
        }
        let name = message["target"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let kinds = &message["target"]["kind"];
        let is_cdylib = kinds
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "cdylib"));
        if is_cdylib {
            let suffix = std::env::consts::DLL_SUFFIX;
            if let Some(file) = message["filenames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str())
                .find(|f| f.ends_with(suffix))
            {
                by_name.insert(name, PathBuf::from(file));
            }
        } else if let Some(exe) = message["executable"].as_str() {
            by_name.insert(name, PathBuf::from(exe));
        }
    }
    Ok(Artifacts { by_name })
}

/// The artifacts, built once per test process.
pub fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(
        || match build(std::env::var("XCSH_TEST_RELEASE").is_ok(), &[]) {
            Ok(artifacts) => artifacts,
            Err(message) => panic!("{message}"),
        },
    )
}

/// The artifacts built with `--release`, once per process (what the benchmarks measure).
/// Built together with the benchmark binary (a no-op for it when `cargo bench` just built
/// it), so that cargo unifies features exactly as for the benchmark and reuses its compiled
/// dependencies instead of building `xcsh-loader` and its dependencies a second time.
pub fn release_artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    let with_bench = [
        "--lib",
        "--bins",
        "--bench",
        "xcsh",
        "-p",
        "xcsh-integration-tests",
    ];
    ARTIFACTS.get_or_init(|| match build(true, &with_bench) {
        Ok(artifacts) => artifacts,
        Err(message) => panic!("{message}"),
    })
}

impl Artifacts {
    /// The shared library of a plugin package (`batch-rename` → `.../libbatch_rename.so`).
    pub fn plugin(&self, package: &str) -> PathBuf {
        let name = package.replace('-', "_");
        match self.by_name.get(&name) {
            Some(path) => path.clone(),
            None => panic!(
                "no artifact for {package}; built: {:?}",
                self.by_name.keys()
            ),
        }
    }

    /// The `xcsh-plugin-host` executable (the child of process isolation).
    pub fn plugin_host(&self) -> PathBuf {
        match self.by_name.get("xcsh-plugin-host") {
            Some(path) => path.clone(),
            None => panic!("xcsh-plugin-host was not built"),
        }
    }

    /// The Node-API addon (`bindings/node`'s cdylib).
    pub fn node_addon(&self) -> PathBuf {
        match self.by_name.get("xcsh_native_plugins") {
            Some(path) => path.clone(),
            None => panic!("the Node-API addon was not built"),
        }
    }

    /// The `xcsh-plugins` executable.
    pub fn cli(&self) -> PathBuf {
        match self.by_name.get("xcsh-plugins") {
            Some(path) => path.clone(),
            None => panic!("xcsh-plugins was not built"),
        }
    }
}

/// The fixture plugin built against the frozen copy of `xcsh-plugin-api` 0.2.0
/// (`tests/frozen/`, a workspace of its own), built once per process. It shares this
/// workspace's target directory, so the dependencies it has in common are not rebuilt.
pub fn frozen_v0_2_plugin() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match build_frozen("tests/frozen", "fixture-v0_2") {
            Ok(path) => path,
            Err(message) => panic!("{message}"),
        })
        .clone()
}

/// The fixture plugin built against the frozen copy of `xcsh-plugin-api` 0.5.1, the last API
/// before the host services (`tests/frozen-0.5/`, a workspace of its own), built once per
/// process.
pub fn frozen_v0_5_plugin() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match build_frozen("tests/frozen-0.5", "fixture-v0_5") {
            Ok(path) => path,
            Err(message) => panic!("{message}"),
        })
        .clone()
}

/// The fixture plugin built against the frozen copy of `xcsh-plugin-api` 0.6.0, the last API
/// before pending actions' apply and reject got a host context (`tests/frozen-0.6/`, a
/// workspace of its own), built once per process.
pub fn frozen_v0_6_plugin() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match build_frozen("tests/frozen-0.6", "fixture-v0_6") {
            Ok(path) => path,
            Err(message) => panic!("{message}"),
        })
        .clone()
}

/// The fixture plugin built against the frozen copy of `xcsh-plugin-api` 0.7.0, the last API
/// before tools could describe how their calls and results look (`tests/frozen-0.7/`, a
/// workspace of its own), built once per process.
pub fn frozen_v0_7_plugin() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN
        .get_or_init(|| match build_frozen("tests/frozen-0.7", "fixture-v0_7") {
            Ok(path) => path,
            Err(message) => panic!("{message}"),
        })
        .clone()
}

/// Build `package` of the frozen workspace `dir`; its shared library.
fn build_frozen(dir: &str, package: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let frozen = workspace_root().join(dir);
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let output = Command::new(cargo)
        .current_dir(&frozen)
        .args([
            "build",
            "--locked",
            "--message-format=json-render-diagnostics",
        ])
        .args(["-p", package, "--target-dir"])
        .arg(&target)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building the frozen fixture {package} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| {
            m["reason"] == "compiler-artifact" && m["target"]["name"] == package.replace('-', "_")
        })
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(PathBuf::from))
                .collect::<Vec<_>>()
        })
        .find(|f| f.to_string_lossy().ends_with(std::env::consts::DLL_SUFFIX))
        .ok_or_else(|| format!("cargo reported no shared library for {package}"))
}

/// Everything a finished process printed: its stdout, then its stderr.
pub fn printed(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Whether `xcsh-plugins list`'s output (`listed`) says plugin processes are confined by
/// Landlock; when not, says on stderr that the calling test is skipped, and why.
pub fn landlock_confines(listed: &str) -> bool {
    let confined = listed.contains("sandbox: landlock v");
    if !confined {
        eprintln!("skipped: this kernel has no Landlock\n{listed}");
    }
    confined
}

/// Shorthand for `artifacts().plugin(package)`.
pub fn plugin(package: &str) -> PathBuf {
    artifacts().plugin(package)
}

/// The `ast-grep` CLI to compare `ast_edit` against: `$AST_GREP_BIN`, the copy `.ci/run`
/// installs under `target/npm`, one on `PATH`, or a fresh `npm install` into `target/npm`.
/// `Err` says why there is none (the caller skips with that reason).
pub fn ast_grep_cli() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("AST_GREP_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let local = workspace_root().join("target/npm/node_modules/.bin/ast-grep");
    if local.is_file() {
        return Ok(local);
    }
    if Command::new("ast-grep")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Ok(PathBuf::from("ast-grep"));
    }
    let prefix = workspace_root().join("target/npm");
    let installed = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(&prefix)
        .arg("@ast-grep/cli@0.51.1")
        .output()
        .map_err(|e| format!("npm is not available ({e})"))?;
    if installed.status.success() && local.is_file() {
        Ok(local)
    } else {
        Err(format!(
            "npm install @ast-grep/cli failed: {}",
            String::from_utf8_lossy(&installed.stderr).trim()
        ))
    }
}

/// A temporary directory holding `files`, each containing its own name.
pub fn scratch(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("cannot create a temp dir: {e}"));
    for file in files {
        std::fs::write(dir.path().join(file), file)
            .unwrap_or_else(|e| panic!("cannot write {file}: {e}"));
    }
    dir
}

/// The sorted names in `dir`.
pub fn listing(dir: &Path) -> Vec<String> {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A shared-library file name for `stem` on this platform (`libstem.so`).
pub fn lib_name(stem: &str) -> String {
    format!(
        "{}{stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The `version` of a workspace package, read from its manifest (`plugin-api/Cargo.toml`).
pub fn package_version(manifest: &str) -> String {
    let text = std::fs::read_to_string(workspace_root().join(manifest))
        .unwrap_or_else(|e| panic!("cannot read {manifest}: {e}"));
    text.lines()
        .find_map(|line| line.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{manifest} has no version"))
        .to_owned()
}

/// The children of process `pid`, from `/proc/PID/task/*/children`.
pub fn direct_children(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return found;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            found.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    found
}

/// The processes `pid` started, as a plugin's own id names them: a plugin process runs
/// inside a PID namespace of its own, two forks below the process the host started (the
/// stand-in, then the namespace's init; `xcsh_loader_process`'s `contain`), so each child is
/// followed down while it has exactly one child running the same executable.
pub fn child_pids(pid: u32) -> Vec<u32> {
    direct_children(pid)
        .into_iter()
        .map(|child| {
            let exe = std::fs::read_link(format!("/proc/{child}/exe")).ok();
            let mut current = child;
            loop {
                let same: Vec<u32> = direct_children(current)
                    .into_iter()
                    .filter(|grandchild| {
                        exe.is_some()
                            && std::fs::read_link(format!("/proc/{grandchild}/exe")).ok() == exe
                    })
                    .collect();
                match same.as_slice() {
                    [only] => current = *only,
                    _ => return current,
                }
            }
        })
        .collect()
}
