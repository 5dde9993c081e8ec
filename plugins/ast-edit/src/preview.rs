//! The preview `ast_edit` returns (nothing is written): `-line:col before` / `+line:col after`
//! pairs, grouped as a tree unless `path` named one file (a `# dir/` header per directory, a
//! `## ├─ file (n replacements)` line per file, `└─` for a directory's last file), then the
//! limit note and the parse issues; plus the `details` JSON and the pending action's label.
//! Paths are relative to the search base.

use serde_json::{json, Value};
use xcsh_plugin_api::view::{Block, DiffLine, FileEntry, Role, State, View};

use crate::search::FileEdits;

/// Shown when the limit cut the preview.
pub const LIMIT_REACHED: &str = "Limit reached; narrow path or increase limit.";
/// Shown when nothing matched.
pub const NO_REPLACEMENTS: &str = "No replacements made";
/// At most this many parse issues are listed.
pub const MAX_ISSUES: usize = 20;
/// Before/after texts are cut to this many characters.
const MAX_SNIPPET: usize = 200;
/// Files whose diffs the view shows before it is expanded.
const COLLAPSED_FILES: usize = 3;

/// A file of the preview: its displayed path and its replacements.
pub struct Shown<'a> {
    /// Path relative to the working directory.
    pub display: &'a str,
    /// The file's replacements.
    pub edits: &'a FileEdits,
}

/// Everything the preview text and details are made from.
pub struct Summary<'a> {
    /// Files with replacements (after the limit), in path order.
    pub files: Vec<Shown<'a>>,
    /// Files looked at.
    pub files_searched: usize,
    /// Files skipped for their size.
    pub files_skipped: usize,
    /// Whether the limit cut replacements.
    pub limit_reached: bool,
    /// Parse problems, in order.
    pub issues: &'a [String],
    /// Whether `path` named one file.
    pub single_file: bool,
    /// The `path` entries as given (`.` by default), echoed as `scopePath`.
    pub scope: String,
}

/// `1 replacement`, `2 replacements`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

impl Summary<'_> {
    /// Total replacements previewed.
    pub fn total(&self) -> usize {
        self.files.iter().map(|f| f.edits.replacements.len()).sum()
    }

    /// `AST Edit: {n} replacement{s} in {m} file{s}`.
    pub fn label(&self) -> String {
        format!(
            "AST Edit: {} in {}",
            count(self.total(), "replacement"),
            count(self.files.len(), "file")
        )
    }

    /// The preview text.
    pub fn text(&self) -> String {
        let mut lines: Vec<String> = Vec::new();
        if self.files.is_empty() {
            lines.push(NO_REPLACEMENTS.to_owned());
        }
        let mut current_dir: Option<&str> = None;
        for (index, file) in self.files.iter().enumerate() {
            if !self.single_file {
                let (dir, name) = split_dir(file.display);
                if current_dir != Some(dir) {
                    if !lines.is_empty() {
                        lines.push(String::new());
                    }
                    lines.push(format!("# {}", if dir.is_empty() { "./" } else { dir }));
                    current_dir = Some(dir);
                }
                let last_in_dir = self
                    .files
                    .get(index + 1)
                    .is_none_or(|next| split_dir(next.display).0 != dir);
                let branch = if last_in_dir { "└─" } else { "├─" };
                let n = file.edits.replacements.len();
                lines.push(format!("## {branch} {name} ({})", count(n, "replacement")));
            }
            for r in &file.edits.replacements {
                lines.push(format!("-{}:{} {}", r.line, r.column, snippet(&r.before)));
                lines.push(format!("+{}:{} {}", r.line, r.column, snippet(&r.text)));
            }
        }
        if self.limit_reached {
            lines.extend([String::new(), LIMIT_REACHED.to_owned()]);
        }
        if !self.issues.is_empty() {
            lines.extend([String::new(), "Parse issues:".to_owned()]);
            lines.extend(
                self.issues
                    .iter()
                    .take(MAX_ISSUES)
                    .map(|i| format!("- {i}")),
            );
            if self.issues.len() > MAX_ISSUES {
                lines.push(format!("- … and {} more", self.issues.len() - MAX_ISSUES));
            }
        }
        lines.join("\n")
    }

    /// The preview's `details`.
    pub fn details(&self) -> Value {
        let mut details = json!({
            "totalReplacements": self.total(),
            "filesTouched": self.files.len(),
            "filesSearched": self.files_searched,
            "filesSkipped": self.files_skipped,
            "limitReached": self.limit_reached,
            "applied": false,
            "scopePath": self.scope,
            "fileReplacements": self.files.iter().map(|f| json!({
                "path": f.display,
                "count": f.edits.replacements.len(),
            })).collect::<Vec<_>>(),
        });
        if !self.issues.is_empty() {
            details["parseErrors"] = json!(self.issues);
        }
        details
    }
}

impl Summary<'_> {
    /// How the preview looks where a host draws it, as the runtime's own `ast_edit` draws its
    /// preview: a status line (the pattern when there is one rewrite, counts, scope, files
    /// searched, "proposed"), then collapsed the files with their counts and the first files'
    /// changes, expanded every file's changes; the limit note and the parse issues last.
    /// `description` describes the rewrites (the pattern of a single one).
    pub fn view(&self, description: Option<String>) -> View {
        let total = self.total();
        let state = if total == 0 || self.limit_reached {
            State::Warning
        } else {
            State::Success
        };
        let mut view = View::status(state, "AST Edit");
        if let Some(description) = description {
            view = view.description(description);
        }
        if total > 0 {
            view = view
                .badge("proposed", Role::Warning)
                .meta(count(total, "replacement"))
                .meta(count(self.files.len(), "file"));
        } else {
            view = view.meta("0 replacements");
        }
        view = view
            .meta(format!("in {}", self.scope))
            .meta(format!("searched {}", self.files_searched));
        if total > 0 {
            let files = Block::Files {
                files: self
                    .files
                    .iter()
                    .map(|file| FileEntry {
                        path: file.display.to_owned(),
                        note: Some(count(file.edits.replacements.len(), "replacement")),
                    })
                    .collect(),
            };
            let diffs: Vec<Block> = self.files.iter().map(file_diff).collect();
            let mut collapsed = vec![files];
            collapsed.extend(diffs.iter().take(COLLAPSED_FILES).cloned());
            if diffs.len() > COLLAPSED_FILES {
                let more = diffs.len() - COLLAPSED_FILES;
                let noun = if more == 1 { "file" } else { "files" };
                collapsed.push(Block::line(format!("… {more} more {noun}"), Role::Muted));
            }
            view = view.block(Block::section(collapsed, diffs));
        }
        if self.limit_reached {
            view = view.block(Block::line("limit reached; narrow path", Role::Warning));
        }
        if !self.issues.is_empty() {
            view = view.block(Block::line(
                format!("{}:", count(self.issues.len(), "parse issue")),
                Role::Warning,
            ));
            let listed: Vec<String> = self
                .issues
                .iter()
                .take(MAX_ISSUES)
                .map(|issue| format!("- {issue}"))
                .collect();
            view = view.block(Block::line(listed.join("\n"), Role::Muted));
        }
        view
    }
}

/// One file's replacements as a diff: each as the old text removed and the new added, at its
/// line and column.
fn file_diff(file: &Shown<'_>) -> Block {
    Block::diff(
        file.display,
        file.edits.replacements.iter().flat_map(|r| {
            [
                DiffLine::removed(format!("{}:{} {}", r.line, r.column, snippet(&r.before))),
                DiffLine::added(format!("{}:{} {}", r.line, r.column, snippet(&r.text))),
            ]
        }),
    )
}

/// The description of `ops` on the status line: the pattern of a single rewrite, its
/// whitespace runs collapsed (a multi-line pattern stays one line), or how many there are.
pub fn describe_ops(ops: &[(String, String)]) -> Option<String> {
    match ops {
        [] => None,
        [(pattern, _)] => {
            let collapsed = pattern.split_whitespace().collect::<Vec<_>>().join(" ");
            (!collapsed.is_empty()).then_some(collapsed)
        }
        many => Some(format!("{} rewrites", many.len())),
    }
}

/// `src/lib/a.rs` → (`src/lib/`, `a.rs`); a file at the base has an empty directory.
fn split_dir(display: &str) -> (&str, &str) {
    match display.rfind('/') {
        Some(slash) => display.split_at(slash + 1),
        None => ("", display),
    }
}

/// The first line of `text`, cut to [`MAX_SNIPPET`] characters; `…` marks anything left out.
fn snippet(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let more_lines = lines.next().is_some();
    let mut shown: String = first.chars().take(MAX_SNIPPET).collect();
    if more_lines || first.chars().count() > MAX_SNIPPET {
        shown.push('…');
    }
    shown
}
