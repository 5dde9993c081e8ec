//! `xcsh-plugins new NAME`: write a plugin crate that builds and passes `check` as is.
//!
//! The crate depends on `xcsh-plugin-api` by path when this binary was built from a checkout
//! that still has the crate's sources (so the plugin matches the host exactly), and on the
//! published version otherwise or with `--published`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::error::CliError;

#[derive(Debug, Args)]
pub struct NewArgs {
    /// Crate name (letters, digits, `-` and `_`); the tool is named after it.
    name: String,
    /// Directory to create the crate in (default: `<cwd>/NAME`).
    #[arg(long, value_name = "DIR")]
    path: Option<PathBuf>,
    /// Depend on the published xcsh-plugin-api even when its sources are available.
    #[arg(long)]
    published: bool,
}

/// Where this binary's `xcsh-plugin-api` sources are, if they still exist.
fn local_api_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
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
pub fn run(args: NewArgs, cwd: &Path, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    check_name(&args.name)?;
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
    let api_dependency = match (args.published, local_api_dir()) {
        (false, Some(local)) => format!(
            "xcsh-plugin-api = {{ path = {:?} }}",
            local.to_string_lossy()
        ),
        _ => format!("xcsh-plugin-api = \"{}\"", xcsh_plugin_api::API_VERSION),
    };
    let crate_ident = args.name.replace('-', "_");
    let files = [
        ("Cargo.toml", cargo_toml(&args.name, &api_dependency)),
        ("src/lib.rs", lib_rs(&crate_ident)),
        (".gitignore", "target/\n".to_owned()),
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
    writeln!(out, "Next:")?;
    writeln!(
        out,
        "  cd {} && cargo build --release && cargo test",
        dir.display()
    )?;
    writeln!(out, "  xcsh-plugins check target/release/{lib}")?;
    writeln!(
        out,
        "  xcsh-plugins --plugin target/release/{lib} call {crate_ident} '{{\"name\":\"world\"}}'"
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

fn cargo_toml(name: &str, api_dependency: &str) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

# A standalone crate, even when created inside another workspace.
[workspace]

[lib]
# cdylib: the shared library xcsh loads; rlib: lets `cargo test` call the tool directly.
crate-type = ["cdylib", "rlib"]

[dependencies]
# The only dependency a plugin needs (serde and schemars come through its re-exports).
{api_dependency}
"#
    )
}

fn lib_rs(ident: &str) -> String {
    format!(
        r#"//! An xcsh tool plugin. Build with `cargo build --release`, then load
//! `target/release/lib{ident}.so` with `xcsh-plugins --plugin`.

use xcsh_plugin_api::{{
    export_plugin, tool_params, AgentToolResult, CustomTool, CustomToolApi, PluginError,
    ToolContext,
}};

tool_params! {{
    /// The tool's parameters: the model's JSON arguments are validated against this type's
    /// schema before `execute` runs. Doc comments become the schema's descriptions.
    pub struct Params {{
        /// Who to greet.
        pub name: String,
    }}
}}

/// The tool.
pub struct Greet;

impl CustomTool for Greet {{
    type Params = Params;

    fn name(&self) -> &str {{
        "{ident}"
    }}
    fn label(&self) -> &str {{
        "Greet"
    }}
    fn description(&self) -> &str {{
        "Greets someone by name"
    }}

    async fn execute(
        &self,
        _tool_call_id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {{
        Ok(AgentToolResult::text(greeting(&params.name)))
    }}
}}

/// The tool's logic, kept plain so it is easy to test.
pub fn greeting(name: &str) -> String {{
    format!("Hello, {{name}}!")
}}

fn factory(_api: &CustomToolApi) -> Result<Greet, PluginError> {{
    Ok(Greet)
}}

export_plugin!(factory);

#[cfg(test)]
mod tests {{
    use super::*;

    #[test]
    fn greets() {{
        assert_eq!(greeting("world"), "Hello, world!");
    }}

    #[test]
    fn schema_requires_a_name() {{
        let schema = Greet.parameters_schema();
        assert_eq!(schema["required"][0], "name");
    }}
}}
"#
    )
}
