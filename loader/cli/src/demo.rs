//! `xcsh-plugins demo`: the first thing a newcomer runs. In a scratch directory it previews a
//! batch rename, applies it through `resolve`, previews a second change and discards it,
//! printing each step the way an agent runtime would see it.
//!
//! The sample plugin is the bundled `libbatch_rename.so` next to this executable (where
//! `cargo build --workspace` puts it) or given with `--plugin`; an installed copy without it
//! runs the same plugin compiled in, through the plugin ABI like `ast_edit`, and says so.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};
use xcsh_loader::render::sanitize;
use xcsh_loader::{render_resolve, Provider, RenderStyle, Session, ToolOutcome};

use crate::error::CliError;
use crate::output::{stdout_color, width};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the scratch directory afterwards (its path is printed).
    #[arg(long)]
    keep: bool,
    /// The sample plugin's library, or a directory holding it (default: next to this
    /// executable, else the copy compiled into it).
    #[arg(long = "plugin", value_name = "PATH")]
    plugins: Vec<PathBuf>,
    /// Ask nothing on the terminal: a plugin's questions get their defaults.
    #[arg(long)]
    no_input: bool,
}

/// Where the demo's sample plugin comes from.
enum SamplePlugin {
    /// A plugin library, loaded like any other.
    Library(PathBuf),
    /// The copy compiled into this binary.
    CompiledIn,
}

impl SamplePlugin {
    /// The library named by `--plugin`, else the bundled one, else the compiled-in copy.
    fn find(plugins: &[PathBuf]) -> Self {
        if !plugins.is_empty() {
            return SamplePlugin::Library(resolve_bundled(plugins));
        }
        match bundled_plugin_dir() {
            Some(dir) => SamplePlugin::Library(resolve_bundled(&[dir])),
            None => SamplePlugin::CompiledIn,
        }
    }

    fn describe(&self) -> String {
        match self {
            SamplePlugin::Library(path) => format!("{} (a plugin library)", path.display()),
            SamplePlugin::CompiledIn => format!(
                "compiled into this binary (no {} next to it)",
                sample_library_name()
            ),
        }
    }

    /// `builder` with the sample plugin's tool.
    fn add_to(
        &self,
        builder: xcsh_loader::SessionBuilder,
    ) -> Result<xcsh_loader::SessionBuilder, CliError> {
        match self {
            SamplePlugin::Library(path) => Ok(builder.plugin(path)),
            #[cfg(not(feature = "builtins"))]
            SamplePlugin::CompiledIn => Err(CliError::Failure(format!(
                "this xcsh-plugins is the lean build (no compiled-in tools) and there is no {} \
                 next to it; run the demo with the full build (`cargo install --locked xcsh-plugins`)",
                sample_library_name()
            ))),
            #[cfg(feature = "builtins")]
            SamplePlugin::CompiledIn => {
                // The factory `export_plugin!` defines in the sample crate, run through the
                // plugin ABI without `dlopen`.
                let tools =
                    xcsh_loader::builtin_plugin_tools::<batch_rename::__XcshPluginFactory>()
                        .map_err(|e| {
                            CliError::Failure(format!("the compiled-in sample plugin failed: {e}"))
                        })?;
                Ok(tools.into_iter().fold(builder, |b, tool| b.builtin(tool)))
            }
        }
    }
}

/// `libbatch_rename.so` (or `.dylib`).
fn sample_library_name() -> String {
    format!(
        "{}batch_rename{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The directory holding this executable, where `cargo build` also puts the bundled plugins.
pub fn bundled_plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.to_path_buf();
    dir.join(sample_library_name()).is_file().then_some(dir)
}

struct Scratch {
    dir: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn scratch_dir(keep: bool) -> Result<Scratch, String> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!("xcsh-demo-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(Scratch { dir, keep }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create a scratch directory in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err("cannot find a free scratch directory name".to_owned())
}

fn write(dir: &Path, relative: &str, content: &str) -> Result<(), String> {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, content).map_err(|e| format!("{}: {e}", path.display()))
}

fn listing(dir: &Path) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.join("  ")
}

struct Demo<'a> {
    session: &'a Session,
    /// Cancelled by Ctrl-C at a plugin's question.
    cancel: xcsh_loader::CancelToken,
    out: &'a mut dyn Write,
    style: RenderStyle,
    step: u32,
}

impl Demo<'_> {
    fn heading(&mut self, text: &str) -> io::Result<()> {
        self.step += 1;
        let line = format!("── Step {}: {text}", self.step);
        if self.style.color {
            writeln!(self.out, "\n\x1b[1m{line}\x1b[0m")?;
        } else {
            writeln!(self.out, "\n{line}")?;
        }
        Ok(())
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> io::Result<ToolOutcome> {
        writeln!(self.out, "model calls {tool} {arguments}")?;
        let options = xcsh_loader::CallOptions {
            cancel: self.cancel.clone(),
            ..xcsh_loader::CallOptions::default()
        };
        let outcome = self.session.call_with(tool, arguments, options).await;
        let text = outcome.text();
        for line in text.lines() {
            writeln!(self.out, "  │ {}", sanitize(line))?;
        }
        if outcome.is_error {
            writeln!(self.out, "  (error result)")?;
        }
        Ok(outcome)
    }

    fn show_pending(&mut self) -> io::Result<()> {
        let Some(store) = self.session.store() else {
            return Ok(());
        };
        for (i, pending) in store.summaries().iter().enumerate() {
            writeln!(self.out, "pending #{}: {}", i + 1, sanitize(&pending.label))?;
        }
        for message in self.session.take_steering_messages() {
            writeln!(
                self.out,
                "hidden reminder queued for the model ({}, from {}):",
                message.tag, message.source_tool_name
            )?;
            for line in message.content.lines() {
                writeln!(self.out, "  {line}")?;
            }
        }
        if let Some(choice) = self.session.tool_choice(Provider::Anthropic) {
            writeln!(
                self.out,
                "next request's tool choice (anthropic): {}",
                choice.json
            )?;
        }
        Ok(())
    }

    async fn resolve(&mut self, action: &str, reason: &str) -> Result<(), CliError> {
        let outcome = self
            .call("resolve", json!({"action": action, "reason": reason}))
            .await?;
        write!(self.out, "{}", render_resolve(&outcome, self.style))?;
        writeln!(self.out)?;
        if outcome.is_error {
            return Err(CliError::Failure(format!(
                "resolve {action} failed: {}",
                outcome.text()
            )));
        }
        Ok(())
    }
}

/// Run the walkthrough, narrating on `out`.
pub async fn run(args: DemoArgs, out: &mut dyn Write) -> Result<ExitCode, CliError> {
    let scratch = scratch_dir(args.keep).map_err(CliError::Failure)?;
    let dir = scratch.dir.clone();
    write(&dir, "draft_intro.md", "# Intro\n").map_err(CliError::Failure)?;
    write(&dir, "draft_usage.md", "# Usage\n").map_err(CliError::Failure)?;
    write(
        &dir,
        "src/lib.rs",
        "pub fn total(xs: &[u32]) -> u32 {\n    xs.iter().fold(0, |a, b| a + b)\n}\n\npub fn report(xs: &[u32]) {\n    println!(\"{}\", total(xs));\n}\n",
    )
    .map_err(CliError::Failure)?;

    // Only the sample plugin: the fixtures next to it exist for the tests.
    let sample = SamplePlugin::find(&args.plugins);
    // A plugin's questions on the terminal; Ctrl-C at one cancels the step's call.
    let cancel = xcsh_loader::CancelToken::new();
    let on_ctrl_c = {
        let cancel = cancel.clone();
        std::sync::Arc::new(move || cancel.cancel()) as crate::terminal_ui::OnInterrupt
    };
    let terminal = crate::terminal_ui::TerminalUi::if_interactive(args.no_input, on_ctrl_c);
    let mut builder = sample.add_to(Session::builder(&dir).default_dirs(false))?;
    if let Some(terminal) = &terminal {
        builder = builder.host_services(std::sync::Arc::clone(terminal) as _);
    }
    let session = crate::host_options::with_builtins(builder).build();
    writeln!(
        out,
        "xcsh-plugins demo — scratch directory {}",
        dir.display()
    )?;
    writeln!(out, "sample plugin: {}", sample.describe())?;
    writeln!(out, "files: {}", listing(&dir))?;
    for error in session.load_errors() {
        writeln!(out, "load error: {}", sanitize(&error.to_string()))?;
    }
    writeln!(out, "tools offered to the model:")?;
    for spec in session.tools() {
        let flags = match (spec.hidden, spec.deferrable) {
            (true, _) => " (hidden)",
            (false, true) => " (deferrable: previews, then waits for resolve)",
            _ => "",
        };
        writeln!(out, "  {}{flags}", spec.name)?;
    }
    let style = RenderStyle {
        width: width(),
        color: stdout_color(),
    };
    let mut demo = Demo {
        session: &session,
        cancel,
        out,
        style,
        step: 0,
    };

    demo.heading("a plugin previews a batch rename (nothing is renamed yet)")?;
    let preview = demo
        .call(
            "batch_rename_preview",
            json!({"files": ["draft_intro.md", "draft_usage.md"], "find": "draft_", "replace": ""}),
        )
        .await?;
    if preview.is_error {
        return Err(CliError::Failure(format!(
            "the preview failed: {}",
            preview.text()
        )));
    }
    demo.show_pending()?;
    writeln!(demo.out, "files: {}", listing(&dir))?;

    demo.heading("the model resolves it: apply")?;
    demo.resolve("apply", "the new names match the docs index")
        .await?;
    writeln!(demo.out, "files: {}", listing(&dir))?;

    demo.heading("a second preview, which the model discards")?;
    let has_ast_edit = session.tools().iter().any(|t| t.name == "ast_edit");
    let before = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap_or_default();
    let second = if has_ast_edit {
        demo.call(
            "ast_edit",
            json!({"ops": [{"pat": "$X.iter().fold(0, |a, b| a + b)", "out": "$X.iter().sum()"}], "lang": "rust", "path": "src"}),
        )
        .await?
    } else {
        demo.call(
            "batch_rename_preview",
            json!({"files": ["intro.md"], "find": "intro", "replace": "overview"}),
        )
        .await?
    };
    if second.is_error {
        return Err(CliError::Failure(format!(
            "the second preview failed: {}",
            second.text()
        )));
    }
    demo.show_pending()?;
    let reason = if has_ast_edit {
        "keep the explicit fold for now"
    } else {
        "the old name is fine"
    };
    demo.resolve("discard", reason).await?;
    let after = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap_or_default();
    writeln!(
        demo.out,
        "files: {} (src/lib.rs {})",
        listing(&dir),
        if before == after {
            "unchanged"
        } else {
            "CHANGED"
        }
    )?;
    if session.has_pending() || before != after {
        return Err(CliError::Failure(
            "the demo left something pending or changed a discarded file".to_owned(),
        ));
    }
    writeln!(
        demo.out,
        "\nDone: one change applied, one discarded, nothing pending."
    )?;
    if args.keep {
        writeln!(demo.out, "scratch directory kept at {}", dir.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The bundled sample plugin inside the given directories (or the paths as given).
fn resolve_bundled(plugins: &[PathBuf]) -> PathBuf {
    let name = sample_library_name();
    plugins
        .iter()
        .map(|p| if p.is_dir() { p.join(&name) } else { p.clone() })
        .find(|p| p.is_file())
        .or_else(|| plugins.first().cloned())
        .unwrap_or_default()
}
