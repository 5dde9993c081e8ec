//! Running the Node-API binding's JS side from the Rust tests: find Node, Bun and `tsc`
//! (installed by `.ci/run` into `target/npm`), and run a command with the environment that
//! points `@xcsh/native-plugins` at the freshly built addon, plugin host and plugins.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{artifacts, workspace_root};

/// `bindings/node`.
pub fn package_dir() -> PathBuf {
    workspace_root().join("bindings/node")
}

/// A tool from `target/npm` (where `.ci/run` installs Bun and TypeScript), then `PATH`.
fn tool(name: &str, env: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env) {
        return Some(PathBuf::from(path));
    }
    let local = workspace_root()
        .join("target/npm/node_modules/.bin")
        .join(name);
    if local.exists() {
        return Some(local);
    }
    let found = Command::new(name).arg("--version").output().ok()?;
    found.status.success().then(|| PathBuf::from(name))
}

/// Node (`$XCSH_NODE`, else `node`).
pub fn node() -> Option<PathBuf> {
    tool("node", "XCSH_NODE")
}

/// Bun (`$XCSH_BUN`, `target/npm`, else `bun`).
pub fn bun() -> Option<PathBuf> {
    tool("bun", "XCSH_BUN")
}

/// The TypeScript compiler (`target/npm`, else `tsc`).
pub fn tsc() -> Option<PathBuf> {
    tool("tsc", "XCSH_TSC")
}

/// What to print when a runtime is missing (CI installs them; a developer may not have).
pub fn skipped(what: &str) {
    eprintln!(
        "skipped: {what} not found; install it with \
         `npm install --prefix target/npm bun@1.4.5 typescript@5.9.3 @types/node@20` \
         (as .ci/run does), or set XCSH_BUN / XCSH_TSC"
    );
}

/// `program args...` in `dir`, with the addon, plugin host and plugin directory of this build.
pub fn run(program: &Path, args: &[&str], dir: &Path) -> Output {
    run_with(program, args, dir, &[])
}

/// As [`run`], with `extra` variables set too.
pub fn run_with(
    program: &Path,
    args: &[&str],
    dir: &Path,
    extra: &[(&str, &std::ffi::OsStr)],
) -> Output {
    let built = artifacts();
    let plugins = built.plugin("fixture-journal");
    let plugin_dir = plugins.parent().unwrap_or(Path::new("."));
    // The JS suites make their scratch directories under `os.tmpdir()` (hundreds of MB of
    // damaged library copies among them): one temporary directory per run, removed after it.
    let scratch = tempfile::Builder::new()
        .prefix("xcsh-js-")
        .tempdir()
        .unwrap_or_else(|error| panic!("cannot make a scratch directory: {error}"));
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", scratch.path())
        .env("XCSH_NATIVE_PLUGINS_ADDON", built.node_addon())
        .env("XCSH_PLUGIN_HOST", built.plugin_host())
        .env("XCSH_TEST_PLUGIN_DIR", plugin_dir)
        .env("XCSH_EXAMPLE_PLUGIN", built.plugin("batch-rename"))
        .env("XCSH_TEST_V0_2_PLUGIN", crate::frozen_v0_2_plugin())
        // A secret of the runtime's environment, which plugin processes must not see unless
        // passed by name (issue 27).
        .env("XCSH_TEST_SECRET_TOKEN", "ghp_node_binding_test_secret")
        .envs(extra.iter().copied())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", program.display()))
}

/// Panic with everything the command printed unless it succeeded.
pub fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// xcsh's upstream runtime as `.ci/run` installs it in `bindings/node/runtime-test`: that
/// directory and the Bun the runtime pins, once the npm package `package` is there too. `None` when it is not installed: the caller's test then passes with a note,
/// unless `XCSH_REQUIRE_UPSTREAM_RUNTIME=1` (set by `.ci/run`), which fails it.
pub fn upstream_runtime(package: &str) -> Option<(PathBuf, PathBuf)> {
    let dir = package_dir().join("runtime-test");
    let bun = dir.join("node_modules/.bin/bun");
    let installed = dir.join("node_modules").join(package).join("package.json");
    if bun.exists() && installed.exists() {
        return Some((dir, bun));
    }
    let hint = "install it with `cd bindings/node/runtime-test && npm install --ignore-scripts \
                --no-save && node node_modules/bun/install.js` (as .ci/run does)";
    assert!(
        std::env::var_os("XCSH_REQUIRE_UPSTREAM_RUNTIME").is_none(),
        "the upstream runtime is not installed: {hint}"
    );
    eprintln!("skipped: {package} is not installed; {hint}");
    None
}

/// `PATH` with `dirs` first (empty ones skipped), then this process's own: for children that
/// must find Bun (`omp plugin install` runs `bun install`; Bun's `.bin` link is named `bun`,
/// the file it points at `bun.exe`) or this build's programs by name.
pub fn path_with(dirs: &[PathBuf]) -> std::ffi::OsString {
    let own = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(
        dirs.iter()
            .filter(|dir| !dir.as_os_str().is_empty())
            .cloned()
            .chain(std::env::split_paths(&own)),
    )
    .unwrap_or(own)
}

/// `command` with none of the variables that point the binding at this build's addon, host
/// and CLI: a child that must use what an installed package holds.
pub fn as_installed(command: &mut Command) -> &mut Command {
    command
        .env_remove("XCSH_NATIVE_PLUGINS_ADDON")
        .env_remove("XCSH_PLUGIN_HOST")
        .env_remove("XCSH_PLUGINS_BIN")
}
