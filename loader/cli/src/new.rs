//! `xcsh-plugins new NAME`: write a plugin crate that builds and passes `check` as is.
//!
//! The crate depends on `xcsh-plugin-api` by path when its sources are known: `--api-path`, or
//! the checkout this binary was built from while it still exists (so the plugin matches the
//! host exactly, also for a copy installed with `cargo install --path loader/cli`). Otherwise, or
//! with `--published`, it depends on the published version. The command says which it chose.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use xcsh_loader::plugin_folder::PLUGIN_FOLDER_SUFFIX;

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Crate name (letters, digits, `-` and `_`); the tool is named after it.
    name: String,
    /// Directory to create the crate in (default: `<cwd>/NAME`).
    #[arg(long, value_name = "DIR")]
    path: Option<PathBuf>,
    /// Depend on the xcsh-plugin-api sources in DIR (its `plugin-api/` directory, or a
    /// checkout of this repository).
    #[arg(long, value_name = "DIR", conflicts_with = "published")]
    api_path: Option<PathBuf>,
    /// Depend on the published xcsh-plugin-api even when its sources are available.
    #[arg(long)]
    published: bool,
}

/// Where the scaffold's `xcsh-plugin-api` comes from.
enum ApiSource {
    /// The sources in this directory.
    Path { dir: PathBuf, why: &'static str },
    /// The published crate, this binary's version.
    Published,
}

impl ApiSource {
    /// What the dependency line says after `xcsh-plugin-api = { `.
    fn dependency(&self) -> String {
        match self {
            ApiSource::Path { dir, .. } => format!("path = {:?}", dir.to_string_lossy()),
            ApiSource::Published => format!("version = \"{}\"", published_requirement()),
        }
    }

    fn describe(&self) -> String {
        match self {
            ApiSource::Path { dir, why } => {
                format!("xcsh-plugin-api from {} ({why})", dir.display())
            }
            ApiSource::Published => format!(
                "xcsh-plugin-api {} from crates.io (no sources known to this binary; \
                 --api-path DIR uses a checkout instead)",
                published_requirement()
            ),
        }
    }
}

/// The version requirement on the published crate: this binary's API or a later compatible
/// one (cargo's caret requirement). Not just `major.minor`: the scaffold's tests rely on what
/// this exact version does (strict parameters came in 0.4.1).
fn published_requirement() -> &'static str {
    xcsh_plugin_api::API_VERSION
}

/// The sources `--api-path` names: `DIR` itself or `DIR/plugin-api`, holding the
/// `xcsh-plugin-api` package.
fn api_dir_at(dir: &Path, cwd: &Path) -> Result<PathBuf, CliError> {
    let dir = cwd.join(dir);
    let candidates = [dir.clone(), dir.join("plugin-api")];
    let found = candidates.iter().find(|candidate| {
        std::fs::read_to_string(candidate.join("Cargo.toml"))
            .is_ok_and(|manifest| manifest.contains("name = \"xcsh-plugin-api\""))
    });
    let Some(found) = found else {
        return Err(CliError::Usage(format!(
            "--api-path {}: no xcsh-plugin-api sources there (looked for the package in \
             {0}/Cargo.toml and {0}/plugin-api/Cargo.toml); nothing was written",
            dir.display()
        )));
    };
    dunce::canonicalize(found)
        .map_err(|e| CliError::Usage(format!("--api-path {}: {e}", found.display())))
}

/// Where this binary's `xcsh-plugin-api` sources are, if they still exist.
fn local_api_dir() -> Option<PathBuf> {
    // loader/cli → the repository's plugin-api/.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)?
        .join("plugin-api");
    dir.join("Cargo.toml").is_file().then_some(dir)
}

fn check_name(name: &str) -> Result<(), CliError> {
    let valid = !name.is_empty()
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "invalid plugin name {name:?}: start with a letter, then use letters, digits, '-' or '_'"
        )))
    }
}

/// Write the crate, then tell the user what to run next on `out`.
pub fn run(args: NewArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    check_name(&args.name)?;
    let cwd = &std::env::current_dir()
        .map_err(|e| CliError::Failure(format!("cannot read the current directory: {e}")))?;
    let dir = cwd.join(
        args.path
            .clone()
            .unwrap_or_else(|| PathBuf::from(&args.name)),
    );
    if dir.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; choose another name or --path (nothing was written)",
            dir.display()
        )));
    }
    let api_source = match (&args.api_path, args.published, local_api_dir()) {
        (Some(dir), _, _) => ApiSource::Path {
            dir: api_dir_at(dir, cwd)?,
            why: "--api-path",
        },
        (None, false, Some(dir)) => ApiSource::Path {
            dir,
            why: "the sources this binary was built from",
        },
        _ => ApiSource::Published,
    };
    let crate_ident = args.name.replace('-', "_");
    let files = [
        (
            "Cargo.toml",
            cargo_toml(&args.name, &api_source.dependency()),
        ),
        ("src/lib.rs", lib_rs(&crate_ident)),
        ("build-plugin.sh", build_plugin_sh(&args.name, &crate_ident)),
        ("README.md", readme_md(&args.name, &crate_ident)),
        (".gitignore", "target/\ndist/\n".to_owned()),
    ];
    // Write into a temporary sibling and rename it into place, so a failure leaves nothing
    // half-written.
    let parent = dir.parent().unwrap_or(cwd);
    std::fs::create_dir_all(parent)
        .map_err(|e| CliError::Failure(format!("cannot create {}: {e}", parent.display())))?;
    let staging = tempfile_dir(parent).map_err(CliError::Failure)?;
    write_files(&staging, &files).map_err(|message| {
        let _ = std::fs::remove_dir_all(&staging);
        CliError::Failure(message)
    })?;
    std::fs::rename(&staging, &dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        CliError::Failure(format!("cannot create {}: {e}", dir.display()))
    })?;
    let lib = format!(
        "{}{crate_ident}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    writeln!(out, "Created plugin crate {}", dir.display())?;
    writeln!(out, "  depends on {}", api_source.describe())?;
    writeln!(out, "Next:")?;
    writeln!(
        out,
        "  cd {} && cargo build --release && cargo test",
        dir.display()
    )?;
    writeln!(out, "  xcsh-plugins check target/release/{lib}")?;
    writeln!(
        out,
        "  xcsh-plugins call --plugin target/release/{lib} {crate_ident} '{{\"name\":\"world\"}}'"
    )?;
    writeln!(
        out,
        "  ./build-plugin.sh    # every platform, into dist/{}{PLUGIN_FOLDER_SUFFIX}/ (README.md: how to ship it)",
        args.name
    )?;
    writeln!(
        out,
        "  xcsh-plugins pack dist/{}{PLUGIN_FOLDER_SUFFIX}    # npm packages, .mcpb bundles, an archive",
        args.name
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Write each `(relative path, content)` under `dir`.
fn write_files(dir: &Path, files: &[(&str, String)]) -> Result<(), String> {
    for (relative, content) in files {
        let target = dir.join(relative);
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder)
                .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        }
        std::fs::write(&target, content)
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        #[cfg(unix)]
        if relative.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("cannot make {} executable: {e}", target.display()))?;
        }
    }
    Ok(())
}

fn tempfile_dir(parent: &Path) -> Result<PathBuf, String> {
    for attempt in 0..100u32 {
        let candidate = parent.join(format!(".xcsh-new-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(format!("cannot write in {}: {error}", parent.display())),
        }
    }
    Err(format!(
        "cannot find a free temporary name in {}",
        parent.display()
    ))
}

/// The recipe that builds the plugin for every platform into one multi-platform plugin folder
/// (`dist/NAME.xcsh-plugin/<triple>/`), with cargo-zigbuild: it links for macOS and aarch64
/// from any machine, and pins glibc 2.17 on Linux, so the library loads on old systems too.
fn build_plugin_sh(name: &str, ident: &str) -> String {
    format!(
        r#"#!/usr/bin/env bash
# Build this plugin for every platform xcsh runs on, into one multi-platform plugin folder:
#   dist/{name}{PLUGIN_FOLDER_SUFFIX}/<target triple>/lib{ident}.so (.dylib, or {ident}.dll)
# which xcsh-plugins, its MCP server and the Node binding load as one plugin, picking this
# machine's library. Usage: ./build-plugin.sh [TRIPLE...] (default: the six below).
# Needs rustup, and cargo-zigbuild with zig (`pip install cargo-zigbuild ziglang`), which link
# for other platforms and pin glibc 2.17 on Linux. macOS builds link here but run only on a Mac;
# Windows builds are the GNU targets, as xcsh's own Windows builds (see xcsh's README).
set -euo pipefail
cd "$(dirname "$0")"

targets=("$@")
if [ ${{#targets[@]}} -eq 0 ]; then
    targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin
        x86_64-pc-windows-gnu aarch64-pc-windows-gnullvm)
fi
if ! command -v cargo-zigbuild >/dev/null 2>&1; then
    echo "build-plugin.sh: cargo-zigbuild is not installed: pip install cargo-zigbuild ziglang" >&2
    exit 1
fi
target_dir="${{CARGO_TARGET_DIR:-target}}"
folder="dist/{name}{PLUGIN_FOLDER_SUFFIX}"
# Built into a staging folder, then moved into place: an interrupted or failed build leaves
# the previous folder as it was.
staging="dist/.{name}{PLUGIN_FOLDER_SUFFIX}.$$"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging"
for target in "${{targets[@]}}"; do
    case "$target" in
        *-linux-gnu) zig_target="$target.2.17"; library="lib{ident}.so" ;;
        # The oldest macOS Rust supports there: zig would otherwise stamp its newest SDK's.
        x86_64-apple-darwin) zig_target="$target"; library="lib{ident}.dylib"; export MACOSX_DEPLOYMENT_TARGET=10.12 ;;
        aarch64-apple-darwin) zig_target="$target"; library="lib{ident}.dylib"; export MACOSX_DEPLOYMENT_TARGET=11.0 ;;
        x86_64-pc-windows-gnu | aarch64-pc-windows-gnullvm) zig_target="$target"; library="{ident}.dll" ;;
        *) echo "build-plugin.sh: $target is not a platform xcsh ships for" >&2; exit 2 ;;
    esac
    rustup target add "$target" >/dev/null 2>&1 || true
    # The cdylib alone: built beside the rlib (for `cargo test`), a macOS library linked by
    # zig would export every Rust symbol of the crate instead of the plugin's few.
    cargo-zigbuild rustc --release --lib --crate-type cdylib --target "$zig_target"
    mkdir -p "$staging/$target"
    cp "$target_dir/$target/release/$library" "$staging/$target/$library"
done
rm -rf "$folder"
mv "$staging" "$folder"
echo "built $folder:"
ls "$folder"
"#
    )
}

/// How to build and ship the plugin.
fn readme_md(name: &str, ident: &str) -> String {
    format!(
        r#"# {name}

An xcsh tool plugin.

```sh
cargo build --release && cargo test
xcsh-plugins check target/release/lib{ident}.so
```

## Ship it for every platform

```sh
pip install cargo-zigbuild ziglang     # once: links for other platforms, pins glibc 2.17
./build-plugin.sh                      # or name targets: ./build-plugin.sh x86_64-unknown-linux-gnu
xcsh-plugins check dist/{name}{PLUGIN_FOLDER_SUFFIX}  # each platform's library
```

`dist/{name}{PLUGIN_FOLDER_SUFFIX}/` holds one subfolder per target (`x86_64-unknown-linux-gnu`,
`aarch64-unknown-linux-gnu`, `x86_64-apple-darwin`, `aarch64-apple-darwin`,
`x86_64-pc-windows-gnu`, `aarch64-pc-windows-gnullvm`), each with that platform's library.
On Windows, build with the GNU toolchain too (`rustup target add x86_64-pc-windows-gnu`;
`cargo build --release --target x86_64-pc-windows-gnu`): xcsh's Windows builds are GNU ones,
and an MSVC-built plugin has not been tried with them. Ship the whole folder: copy it into a project's `.xcsh/tools/` (then
`xcsh-plugins trust .xcsh/tools/{name}{PLUGIN_FOLDER_SUFFIX}`, which pins every library in
it) or `~/.xcsh/agent/tools/`, or name it with `--plugin` or in the Node binding's `plugins`.
Each machine loads its own platform's library and ignores the others. The Linux libraries
need glibc 2.17 or later.

## Publish it

```sh
xcsh-plugins pack dist/{name}{PLUGIN_FOLDER_SUFFIX}                 # add --sign KEY (xcsh-plugins keygen DIR)
for f in dist/npm/*.tgz; do npm publish "$f" --access public; done  # platform packages, then the main one
```

`pack` reads the name, version, description and authors from `Cargo.toml` (set
`[package.metadata.xcsh] npm-name` for a scoped npm name) and writes into `dist/`: the npm
packages, one `.mcpb` bundle per platform whose server programs it has, and
`{name}-VERSION{PLUGIN_FOLDER_SUFFIX}.tar.gz`. Users then install it with:

- xcsh's runtime: `omp plugin install NPM-NAME`
- any MCP client: a stdio server running `npx -y NPM-NAME`
- Claude Desktop: the `.mcpb` of their platform
- the CLI: `xcsh-plugins install npm:NPM-NAME` (or the archive, or the bundle)
"#
    )
}

/// The `authors` line: git's `user.name` and `user.email` when set (as `cargo new` once did),
/// otherwise a commented line that `pack` will ask for.
fn authors_line() -> String {
    let git = |key: &str| {
        std::process::Command::new("git")
            .args(["config", "--get", key])
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
            .filter(|value| !value.is_empty() && !value.contains('"'))
    };
    match (git("user.name"), git("user.email")) {
        (Some(name), Some(email)) => format!("authors = [\"{name} <{email}>\"]"),
        (Some(name), None) => format!("authors = [\"{name}\"]"),
        _ => "# authors = [\"Your Name <you@example.com>\"]   # `xcsh-plugins pack` needs it"
            .to_owned(),
    }
}

fn cargo_toml(name: &str, api_source: &str) -> String {
    let authors = authors_line();
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false
# `xcsh-plugins pack` puts these in the npm package and the MCP bundles (both require them).
description = "{name}: an xcsh native tool"
{authors}

# `xcsh-plugins pack`: the npm package's name (the crate's name otherwise).
[package.metadata.xcsh]
# npm-name = "@your-scope/{name}"

# A standalone crate, even when created inside another workspace.
[workspace]

[lib]
# cdylib: the shared library xcsh loads; rlib: lets `cargo test` call the tool directly.
crate-type = ["cdylib", "rlib"]

[dependencies]
# The only dependency a plugin needs (serde and schemars come through its re-exports; add
# `features = ["tokio"]` for `xcsh_plugin_api::tokio`).
xcsh-plugin-api = {{ {api_source} }}

[dev-dependencies]
# `testing`: xcsh_plugin_api::testing::PluginTest, an in-process host for the unit tests.
xcsh-plugin-api = {{ {api_source}, features = ["testing"] }}
tokio = {{ version = "1", default-features = false, features = ["macros", "rt"] }}

[profile.release]
# A quick build and a small library. `panic` must stay "unwind": a panic in a tool becomes an
# error result instead of aborting the agent that loaded it.
panic = "unwind"
# No symbol table or debug info in the .so: it is loaded, never debugged from here.
strip = true
# No LTO pass, not even across one crate's codegen units: a tool's time goes to I/O, and the
# pass costs about a tenth of a clean build's CPU time.
lto = "off"
codegen-units = 16

# abi_stable's cost is its macro-generated code; what of it a plugin runs is generic (compiled
# here, optimised) or runs once while the host loads the plugin.
[profile.release.package.abi_stable]
opt-level = 0
"#
    )
}

fn lib_rs(ident: &str) -> String {
    format!(
        r#"//! An xcsh tool plugin. Build with `cargo build --release`, then load
//! `target/release/lib{ident}.so` with `xcsh-plugins --plugin`.

use xcsh_plugin_api::*;

/// Greets someone by name; the greeting is saved to greeting.txt once resolve applies it.
///
/// `#[tool]` makes this function the tool `Greet` (what `export_plugin!` exports): its doc
/// comment is the description the model reads, each parameter after `ctx` a JSON parameter
/// (its doc comment the description; the model's arguments are checked against the schema
/// before the function runs).
#[tool(name = "{ident}", label = "Greet", deferrable)]
pub async fn greet(
    ctx: ToolContext,
    /// Who to greet.
    name: String,
) -> Result<AgentToolResult, PluginError> {{
    // Where someone can answer (a terminal, an MCP client that elicits), ask first;
    // elsewhere `confirm` is false, so ask only when `has_ui()`.
    let ui = ctx.ui();
    if ui.has_ui() && !ui.confirm("Greet", format!("Greet {{name}}?")).await? {{
        return Ok(AgentToolResult::text("Not greeted: the user said no."));
    }}
    let text = greeting(&name);
    let (path, saved) = (ctx.resolve_path("greeting.txt"), text.clone());
    // The apply runs when the model resolves the preview; its `ctx` (the resolve call's) can
    // ask, notify and run programs as this function's can.
    ctx.push_pending_action(
        CustomToolPendingAction::new_in_context("Greet: save greeting.txt", |_reason, ctx| async move {{
            std::fs::write(&path, saved)?;
            ctx.ui().notify("greeting.txt saved", NotifyLevel::Info).await?;
            Ok(AgentToolResult::text(format!("Saved {{}}", path.display())))
        }})
        .with_reject(|reason| async move {{
            Ok(Some(AgentToolResult::text(format!("Not saved: {{reason}}"))))
        }})
        .with_source_tool_name("{ident}"),
    )?;
    // How the preview looks where a host draws it (a terminal, xcsh, an MCP client that
    // draws): the file it would write. The text is what the model reads.
    let view = view::View::status(view::State::Pending, "Greet")
        .badge("proposed", view::Role::Warning)
        .block(view::Block::diff("greeting.txt", [view::DiffLine::added(text.clone())]));
    Ok(AgentToolResult::text(text).with_view(view))
}}

/// The tool's logic, kept plain so it is easy to test.
pub fn greeting(name: &str) -> String {{
    format!("Hello, {{name}}!")
}}

export_plugin!(tools: [Greet]);

#[cfg(test)]
mod tests {{
    //! `PluginTest` runs the tools in-process, as the host would: arguments checked against
    //! the schema, `execute` called, pending actions applied or rejected.

    use super::*;
    use xcsh_plugin_api::testing::{{Answer, PluginTest, STORE_UNAVAILABLE, TestError}};

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn greets() {{
        assert_eq!(greeting("world"), "Hello, world!");
    }}

    #[tokio::test]
    async fn execute_previews_and_apply_saves() -> TestResult {{
        let test = PluginTest::new(tools![Greet]);
        let outcome = test.call("{ident}", json!({{"name": "world"}})).await?;
        assert_eq!(outcome.text(), "Hello, world!");
        let view = outcome.result().view.clone().ok_or("no view")?;
        assert_eq!(view.status.map(|status| status.title).as_deref(), Some("Greet"));
        assert_eq!(test.pending()[0].label, "Greet: save greeting.txt");
        assert!(!test.working_dir().join("greeting.txt").exists());

        let applied = test.apply_newest("looks right").await?;
        assert!(applied.joined_text().starts_with("Saved "));
        let saved = std::fs::read_to_string(test.working_dir().join("greeting.txt"))?;
        assert_eq!(saved, "Hello, world!");
        assert!(test.pending().is_empty());
        Ok(())
    }}

    #[tokio::test]
    async fn the_user_can_say_no() -> TestResult {{
        // A scripted user: each question takes the next answer.
        let test = PluginTest::new(tools![Greet]).with_ui([Answer::Confirm(false)]);
        let outcome = test.call("{ident}", json!({{"name": "world"}})).await?;
        assert_eq!(outcome.text(), "Not greeted: the user said no.");
        assert!(test.pending().is_empty());
        assert_eq!(test.asked().len(), 1);
        Ok(())
    }}

    #[tokio::test]
    async fn reject_saves_nothing() -> TestResult {{
        let test = PluginTest::new(tools![Greet]);
        test.call("{ident}", json!({{"name": "world"}})).await?;
        let rejected = test.reject_newest("not now").await?;
        assert_eq!(rejected.map(|r| r.joined_text()).as_deref(), Some("Not saved: not now"));
        assert!(!test.working_dir().join("greeting.txt").exists());
        Ok(())
    }}

    #[tokio::test]
    async fn arguments_are_checked_against_the_schema() {{
        let test = PluginTest::new(tools![Greet]);
        let error = test.call("{ident}", json!({{"nom": "world"}})).await.unwrap_err();
        assert!(matches!(error, TestError::InvalidArguments(_)), "{{error}}");
    }}

    #[tokio::test]
    async fn unknown_arguments_are_refused() {{
        // `tool_params!` structs are strict: a misspelt or extra argument is an error.
        let test = PluginTest::new(tools![Greet]);
        let error = test
            .call("{ident}", json!({{"name": "world", "extra": 1}}))
            .await
            .unwrap_err();
        assert!(matches!(error, TestError::InvalidArguments(_)), "{{error}}");
    }}

    #[tokio::test]
    async fn without_a_store_the_preview_fails() {{
        let test = PluginTest::new(tools![Greet]).without_store();
        let error = test.call("{ident}", json!({{"name": "world"}})).await.unwrap_err();
        assert_eq!(error.to_string(), STORE_UNAVAILABLE);
    }}
}}
"#
    )
}
