//! Sample plugin: `rustfmt_preview`, a program run with `ctx.exec` whose result waits for
//! `resolve` as a pending action.
//!
//! It is for authors who wrap a tool the user already has (a formatter, a code generator, a
//! fixer) and want its changes reviewed before they land. Formatting rewrites whole files, so
//! the model should see what would change, and the user approve it, before anything is
//! written; and the write must never clobber an edit made in between.
//!
//! So `execute` writes nothing: it reads each file, pipes it through `rustfmt --emit stdout`
//! with [`ToolContext::exec`] (which handles the timeout, the cancelled call, the output cap
//! and a missing `rustfmt`), and pushes a pending action holding each changed file's old and
//! new content. The source goes on standard input, not as a path: given a path, rustfmt also
//! formats every out-of-line `mod` the file declares and prints each under a header of its own.
//! It runs in the file's directory, so it finds the `rustfmt.toml` it would find for the file.
//!
//! `apply` writes every file or none through [`files::FileChanges`] (docs/guide/src/files.md), each
//! write conditioned on the file still being what the preview read: its content is compared again,
//! and the commit's last look checks its metadata. A file edited since the preview fails the apply
//! and is left as the user left it.

#![deny(unsafe_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use xcsh_plugin_api::files::{CommitError, FileChanges};
use xcsh_plugin_api::view::{self, Block, DiffLine, Role, State, View};
use xcsh_plugin_api::*;

tool_params! {
    /// The tool's parameters.
    pub struct Params {
        /// Rust source files (`.rs`) to format, relative to the session's working directory.
        #[schemars(length(min = 1))]
        pub paths: Vec<String>,
    }
}

/// How long one run of rustfmt may take.
pub const RUSTFMT_TIMEOUT: Duration = Duration::from_secs(30);

/// One file whose formatted content differs from what it holds.
struct Formatted {
    /// As given.
    path: String,
    /// The content the preview read, and its metadata (from the same open).
    old: Vec<u8>,
    meta: std::fs::Metadata,
    /// What rustfmt made of it.
    new: Vec<u8>,
}

/// The paths to format, in order and without repeats; an error names the first that is not
/// a `.rs` file.
fn check_paths(paths: &[String]) -> Result<Vec<&str>, PluginError> {
    if paths.is_empty() {
        return Err(PluginError::new("`paths` must name at least one .rs file"));
    }
    let mut checked: Vec<&str> = Vec::with_capacity(paths.len());
    for path in paths {
        if Path::new(path).extension().and_then(|e| e.to_str()) != Some("rs") {
            return Err(PluginError::new(format!(
                "{path}: not a Rust source file; rustfmt_preview formats .rs files only"
            )));
        }
        if !checked.contains(&path.as_str()) {
            checked.push(path);
        }
    }
    Ok(checked)
}

/// The content and metadata of `path`, from one open.
fn read_with_meta(path: &Path) -> std::io::Result<(Vec<u8>, std::fs::Metadata)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let mut content = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut content)?;
    Ok((content, meta))
}

/// `source` formatted by rustfmt, run in `path`'s directory.
async fn rustfmt(ctx: &ToolContext, path: &str, source: &[u8]) -> Result<Vec<u8>, PluginError> {
    let dir = Path::new(path)
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let options = ExecOptions::new()
        .cwd(dir)
        .stdin(source)
        .timeout(RUSTFMT_TIMEOUT);
    let args = ["--emit", "stdout", "--edition", "2021", "--quiet"];
    let out = ctx.exec("rustfmt", args, options).await.map_err(|e| {
        let hint = if e.message().starts_with("command not found") {
            " (install it with `rustup component add rustfmt`)"
        } else {
            ""
        };
        PluginError::new(format!("{path}: {}{hint}", e.message()))
    })?;
    if out.killed {
        let secs = RUSTFMT_TIMEOUT.as_secs();
        return Err(PluginError::new(format!(
            "{path}: rustfmt was stopped after {secs}s; nothing was previewed"
        )));
    }
    if out.truncated {
        return Err(PluginError::new(format!(
            "{path}: rustfmt's output was cut at the output cap; refusing to preview a partial file"
        )));
    }
    if !out.success() {
        let status = match (out.code, &out.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by {signal}"),
            (None, None) => "no exit code".to_owned(),
        };
        return Err(PluginError::new(format!(
            "{path}: rustfmt failed ({status}): {}",
            out.stderr_text().trim()
        )));
    }
    Ok(out.stdout)
}

/// A unified-diff-like summary of what changes between `old` and `new`: the one hunk that
/// spans every changed line, and how many lines it replaces by how many.
fn summary(old: &[u8], new: &[u8]) -> String {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    let hunk = Hunk::between(&old, &new);
    let (removed, added) = (hunk.removed.len(), hunk.added.len());
    if removed == 0 && added == 0 {
        return "line endings only (a final newline, or CRLF to LF)".to_owned();
    }
    let line = hunk.line;
    format!("@@ -{line},{removed} +{line},{added} @@ ({removed} line(s) replaced by {added})")
}

/// The lines rustfmt changed, between the first and the last that differ.
struct Hunk<'a> {
    /// The 1-based line where they start.
    line: usize,
    removed: Vec<&'a str>,
    added: Vec<&'a str>,
}

impl<'a> Hunk<'a> {
    fn between(old: &'a str, new: &'a str) -> Self {
        let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
        let same = |(x, y): &(&&str, &&str)| x == y;
        let prefix = a.iter().zip(&b).take_while(same).count();
        let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
        let suffix = a_rest
            .iter()
            .rev()
            .zip(b_rest.iter().rev())
            .take_while(same)
            .count();
        Hunk {
            line: prefix + 1,
            removed: a_rest[..a_rest.len() - suffix].to_vec(),
            added: b_rest[..b_rest.len() - suffix].to_vec(),
        }
    }
}

/// How the preview looks where a host draws it: the files and what changes in each, then
/// (expanded) each file's changed lines as a diff.
fn preview_view(changed: &[Formatted], of: usize) -> View {
    let files = Block::Files {
        files: changed
            .iter()
            .map(|file| view::FileEntry {
                path: file.path.clone(),
                note: Some(summary(&file.old, &file.new)),
            })
            .collect(),
    };
    let diffs = changed.iter().map(|file| {
        let (old, new) = (
            String::from_utf8_lossy(&file.old),
            String::from_utf8_lossy(&file.new),
        );
        let hunk = Hunk::between(&old, &new);
        let removed = hunk.removed.iter().map(|line| DiffLine::removed(*line));
        let added = hunk.added.iter().map(|line| DiffLine::added(*line));
        Block::diff(file.path.clone(), removed.chain(added).collect::<Vec<_>>())
    });
    View::status(State::Pending, "Rustfmt preview")
        .badge("proposed", Role::Warning)
        .meta(format!("{} of {of} file(s)", changed.len()))
        .block(Block::section(
            [files.clone()],
            std::iter::once(files).chain(diffs),
        ))
}

/// Write every file's formatted content, or none: each only if it is still what the preview
/// read.
async fn apply(cwd: &Path, files: &[Formatted]) -> Result<(), PluginError> {
    let mut changes = FileChanges::new(cwd);
    let mut stale = Vec::new();
    for file in files {
        if std::fs::read(cwd.join(&file.path)).ok().as_ref() != Some(&file.old) {
            stale.push(file.path.clone());
        }
        changes.write_if_unchanged(&file.path, file.new.clone(), &file.meta);
    }
    if stale.is_empty() {
        match changes.commit().await {
            Ok(_) => return Ok(()),
            Err(CommitError::Changed { files }) => stale = files,
            Err(other) => return Err(other.into()),
        }
    }
    Err(PluginError::new(format!(
        "Nothing was written: {} file(s) changed since the preview: {}. Run rustfmt_preview \
         again to preview the current content.",
        stale.len(),
        stale.join(", ")
    )))
}

/// The `rustfmt_preview` tool: previews what rustfmt would change in the given files and
/// defers the writes to `resolve`.
#[derive(Default)]
pub struct RustfmtPreview;

impl CustomTool for RustfmtPreview {
    type Params = Params;

    fn name(&self) -> &str {
        "rustfmt_preview"
    }
    fn label(&self) -> &str {
        "Rustfmt preview"
    }
    fn description(&self) -> &str {
        "Previews formatting Rust files with rustfmt (edition 2021, the project's rustfmt.toml) \
         and defers writing them to resolve; files edited after the preview are never overwritten"
    }
    fn deferrable(&self) -> bool {
        true
    }

    async fn execute(
        &self,
        _tool_call_id: String,
        params: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let paths = check_paths(&params.paths)?;
        let mut changed = Vec::new();
        for path in &paths {
            let (old, meta) = read_with_meta(&ctx.resolve_path(path))
                .map_err(|e| PluginError::new(format!("cannot read {path}: {e}")))?;
            let new = rustfmt(&ctx, path, &old).await?;
            if new != old {
                let path = (*path).to_owned();
                changed.push(Formatted {
                    path,
                    old,
                    meta,
                    new,
                });
            }
        }
        if changed.is_empty() {
            let text = format!("Already formatted: {} file(s)", paths.len());
            return Ok(AgentToolResult::text(text));
        }
        let n = changed.len();
        let mut text = format!("rustfmt would change {n} of {} file(s):", paths.len());
        for file in &changed {
            let summary = summary(&file.old, &file.new);
            text.push_str(&format!("\n{} {summary}", file.path));
        }
        text.push_str("\nNothing is written until the pending action is applied.");
        let view = preview_view(&changed, paths.len());
        let (cwd, files) = (Arc::new(ctx.cwd().to_owned()), Arc::new(changed));
        ctx.push_pending_action(
            // Retryable: `apply` checks every file before writing any, so running it again
            // after a failure (a file restored meanwhile) is safe.
            CustomToolPendingAction::retryable(format!("Rustfmt: format {n} file(s)"), move |_| {
                let (cwd, files) = (Arc::clone(&cwd), Arc::clone(&files));
                async move {
                    apply(&cwd, &files).await?;
                    Ok(AgentToolResult::text(format!("Formatted {n} file(s).")))
                }
            })
            .with_reject(move |_| async move {
                let text = format!("Discarded formatting of {n} file(s).");
                Ok(Some(AgentToolResult::text(text)))
            })
            .with_source_tool_name("rustfmt_preview"),
        )?;
        Ok(AgentToolResult::text(text).with_view(view))
    }
}

export_plugin!(tools: [RustfmtPreview]);
