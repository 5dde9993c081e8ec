//! The `apply` of an `ast_edit` pending action: write exactly the previewed replacements.
//!
//! Nothing is searched again. Every touched file must still hash to what the preview read,
//! must not be read-only, and its replacements must not overlap; otherwise nothing is written
//! and the error names the files. The new contents are then committed as one
//! [`FileChanges`]: staged in the project's `.xcsh/apply-journal/` (never beside the sources),
//! made durable, journaled, and only then renamed over the originals, each file only if its
//! size and modification time are still those the check read. So the apply writes every file
//! or none: a failure or a cancellation before the renames leaves the tree as it was and no
//! temporary file; a crash is finished or undone as a whole by the next session's recovery
//! (see `xcsh_plugin_api::files` for how, and what it costs).

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::json;
use xcsh_plugin_api::files::{CommitError, FileChanges};
use xcsh_plugin_api::AgentToolResult;

use crate::preview::count;
use crate::search::{hash, FileEdits};

/// One file of the plan: where it is, how it is shown, what the preview saw and will write.
#[derive(Debug, Clone)]
pub struct PlannedFile {
    /// Path relative to the working directory.
    pub display: String,
    /// The previewed edits and the content hash they were computed from.
    pub edits: FileEdits,
}

/// Everything `apply` needs, captured at preview time.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The session's working directory (where the apply's journal goes).
    pub cwd: PathBuf,
    /// Files in path order.
    pub files: Vec<PlannedFile>,
}

struct Ready {
    target: PathBuf,
    content: Vec<u8>,
    meta: fs::Metadata,
}

/// What the check of one file found.
enum Checked {
    Ready(Box<Ready>),
    Changed(String),
    ReadOnly(String),
    Broken(String),
}

/// The file to replace for `path`: the path itself, or where it points when it is a symbolic
/// link (the link stays; its target is rewritten). Only a link needs `canonicalize` (a
/// `readlink` per component): a plain file is renamed over in its own directory either way.
fn target_of(path: &Path) -> std::io::Result<PathBuf> {
    if path.is_absolute() && !fs::symlink_metadata(path)?.file_type().is_symlink() {
        Ok(path.to_path_buf())
    } else {
        fs::canonicalize(path)
    }
}

/// The content and metadata of `target`, from one open.
fn read_with_meta(target: &Path) -> std::io::Result<(Vec<u8>, fs::Metadata)> {
    let mut handle = File::open(target)?;
    let meta = handle.metadata()?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    handle.read_to_end(&mut bytes)?;
    Ok((bytes, meta))
}

fn check_file(file: &PlannedFile) -> Checked {
    let Ok(target) = target_of(&file.edits.path) else {
        return Checked::Changed(format!("{} (deleted)", file.display));
    };
    let (bytes, meta) = match read_with_meta(&target) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Checked::Changed(format!("{} (deleted)", file.display));
        }
        Err(error) => {
            return Checked::Changed(format!("{} (unreadable: {error})", file.display));
        }
    };
    if hash(&bytes) != file.edits.hash {
        return Checked::Changed(format!("{} (modified)", file.display));
    }
    if meta.permissions().readonly() {
        return Checked::ReadOnly(file.display.clone());
    }
    match rewrite(&bytes, &file.edits) {
        Ok(content) => Checked::Ready(Box::new(Ready {
            target,
            content,
            meta,
        })),
        Err(why) => Checked::Broken(format!("Nothing was written: {}: {why}", file.display)),
    }
}

/// Run `work` on every item on one thread per core; results in item order.
fn in_parallel<'a, T: Sync, R: Send>(items: &'a [T], work: impl Fn(&'a T) -> R + Sync) -> Vec<R> {
    // One file never asks the machine's parallelism (a cgroup read), nor spawns.
    let threads = match items.len() {
        0 | 1 => 1,
        _ => crate::cores(),
    };
    xcsh_plugin_api::__private::in_parallel(threads, items, work)
}

/// Make every file's new content, or say why nothing may be written.
fn prepare(plan: &Plan) -> Result<Vec<Ready>, String> {
    let mut changed = Vec::new();
    let mut read_only = Vec::new();
    let mut ready = Vec::new();
    for checked in in_parallel(&plan.files, check_file) {
        match checked {
            Checked::Ready(item) => ready.push(*item),
            Checked::Changed(what) => changed.push(what),
            Checked::ReadOnly(what) => read_only.push(what),
            Checked::Broken(message) => return Err(message),
        }
    }
    if !changed.is_empty() {
        return Err(format!(
            "Nothing was written: {} changed since the preview: {}. Run ast_edit again to \
             preview the current content.",
            count(changed.len(), "file"),
            changed.join(", ")
        ));
    }
    if !read_only.is_empty() {
        return Err(format!(
            "Nothing was written: read-only {}: {}.",
            if read_only.len() == 1 {
                "file"
            } else {
                "files"
            },
            read_only.join(", ")
        ));
    }
    Ok(ready)
}

/// Apply `edits` to `bytes`, back to front, refusing overlaps and out-of-range edits.
fn rewrite(bytes: &[u8], edits: &FileEdits) -> Result<Vec<u8>, String> {
    // A nested replacement's text is already part of the one it lies in.
    let mut sorted: Vec<_> = edits.replacements.iter().filter(|r| !r.nested).collect();
    sorted.sort_by_key(|r| (r.start, r.end));
    for pair in sorted.windows(2) {
        if pair[1].start < pair[0].end || pair[1].start == pair[0].start {
            return Err(format!(
                "overlapping edits at {}:{} and {}:{}",
                pair[0].line, pair[0].column, pair[1].line, pair[1].column
            ));
        }
    }
    let mut out = bytes.to_vec();
    for r in sorted.iter().rev() {
        if r.start > r.end || r.end > out.len() {
            return Err(format!("edit at {}:{} is out of range", r.line, r.column));
        }
        out.splice(r.start..r.end, r.text.bytes());
    }
    Ok(out)
}

/// Check the plan against the disk and make every file's new content: the changes to
/// commit, or why nothing may be written. Blocking work (reads, hashes).
pub fn prepare_changes(plan: &Plan) -> Result<FileChanges, String> {
    let ready = prepare(plan)?;
    let mut changes = FileChanges::new(&plan.cwd);
    for item in ready {
        changes.write_if_unchanged(&item.target, item.content, &item.meta);
    }
    Ok(changes)
}

/// Commit `changes` (made by [`prepare_changes`] from `plan`). The result text is
/// `Applied {n} replacement(s) in {m} file(s).`
pub async fn commit(plan: &Plan, changes: FileChanges) -> Result<AgentToolResult, String> {
    match changes.commit().await {
        Ok(_) => {}
        Err(CommitError::Changed { files }) => {
            return Err(format!(
                "Nothing was written: {} changed since the preview: {}. Run ast_edit again to \
                 preview the current content.",
                count(files.len(), "file"),
                files.join(", ")
            ))
        }
        Err(CommitError::Io { what, source }) => {
            return Err(format!("Nothing was written: {what}: {source}"))
        }
        Err(other) => return Err(capitalized(&other.to_string())),
    }
    let total: usize = plan.files.iter().map(|f| f.edits.replacements.len()).sum();
    // xcsh's own `ast_edit` spells this text with a literal "(s)", unlike the label's `{s}` plural.
    let text = format!(
        "Applied {total} replacement(s) in {} file(s).",
        plan.files.len()
    );
    Ok(AgentToolResult::text(text).with_details(json!({
        "totalReplacements": total,
        "filesTouched": plan.files.len(),
        "applied": true,
        "files": plan.files.iter().map(|f| f.display.as_str()).collect::<Vec<_>>(),
    })))
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
