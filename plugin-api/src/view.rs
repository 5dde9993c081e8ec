//! How a tool's call and result look, described rather than drawn: a [`View`].
//!
//! A host draws a view its own way: xcsh's runtime through its components and theme, the
//! command line on a terminal (plain when piped or under `NO_COLOR`), MCP as JSON under
//! `_meta["xcsh/view"]` beside the text. The text content stays what the model reads and what a
//! host that cannot draw shows: a view is never the only place something is said.
//!
//! The set is what the runtime's own tools draw: a status line (its state icon, a title, a
//! short description, a badge such as "proposed", meta such as "3 files"), lines of text in the
//! theme's roles, a list of files, one file's diff, a table, and a section that shows less when
//! collapsed than when expanded.
//!
//! ```
//! use xcsh_plugin_api::view::{Block, DiffLine, Role, State, View};
//!
//! let view = View::status(State::Success, "Batch rename")
//!     .badge("proposed", Role::Warning)
//!     .meta("2 files")
//!     .block(Block::files(["src/a.rs", "src/b.rs"]))
//!     .block(Block::diff("src/a.rs", [DiffLine::removed("old"), DiffLine::added("new")]));
//! assert_eq!(view.to_json()["status"]["title"], "Batch rename");
//! ```
//!
//! A view from a plugin is bounded and cleaned by [`View::bounded`] before any host draws it:
//! escape sequences and control characters are dropped, and a diff or table that is too long is
//! cut with a count of what was left out. [`View::check_paths`] refuses a path outside the
//! session's directory. Names a host does not know (a role or a block of a newer API) are read
//! as plain text or skipped, never as an error.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The most lines of one diff a view keeps; the rest is counted in [`Block::Diff`]'s `omitted`.
pub const MAX_DIFF_LINES: usize = 400;
/// The most rows of one table, files of one list, or blocks of one view or section a view keeps.
pub const MAX_ITEMS: usize = 200;
/// The most characters of one string of a view.
pub const MAX_TEXT: usize = 4096;

/// How a call or a result looks: a status line and the blocks under it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The one-line header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// What is drawn under it, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Block>,
}

/// The status line: `✔ Batch rename  a → b  [proposed]  · 2 files`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Its icon and colour.
    pub state: State,
    /// What the tool is, as the user knows it.
    pub title: String,
    /// A short description of this call (a pattern, a target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A label beside the title (`proposed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub badge: Option<Badge>,
    /// Short facts after it (`2 files`, `in src/`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub meta: Vec<String>,
}

/// The state a status line shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Running, or waiting to be resolved.
    Pending,
    /// Done.
    Success,
    /// Done, with something to look at.
    Warning,
    /// Failed.
    Error,
    /// A state of a newer API: drawn as pending.
    #[serde(other)]
    Unknown,
}

/// A label beside a status line's title.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Badge {
    /// Its text.
    pub label: String,
    /// Its colour.
    pub role: Role,
}

/// A theme role: the colour a host gives a piece of text (the runtime's theme names them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Plain tool output (the default).
    #[default]
    ToolOutput,
    /// Something that went right, a line added.
    Success,
    /// Something that went wrong, a line removed.
    Error,
    /// Something to look at.
    Warning,
    /// Less important: counts, hints.
    Muted,
    /// What the eye should find: paths, names.
    Accent,
    /// A role of a newer API, or one a host lacks: drawn as tool output.
    #[serde(other)]
    Unknown,
}

/// One piece of text in one role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The text; `\n` starts a new line.
    pub text: String,
    /// Its colour.
    #[serde(default, skip_serializing_if = "is_default_role")]
    pub role: Role,
}

fn is_default_role(role: &Role) -> bool {
    *role == Role::ToolOutput
}

/// One file of a [`Block::Files`] list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Its path, relative to the session's directory.
    pub path: String,
    /// A note after it (`3 changes`, `renamed from a.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One line of a [`Block::Diff`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    /// Added, removed, or context.
    pub kind: DiffKind,
    /// The line, without its `+`/`-` marker.
    pub text: String,
}

/// What a diff line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    /// Only in the new text.
    Added,
    /// Only in the old text.
    Removed,
    /// In both.
    Context,
    /// A kind of a newer API: drawn as context.
    #[serde(other)]
    Unknown,
}

impl DiffLine {
    /// A line only in the new text.
    pub fn added(text: impl Into<String>) -> Self {
        Self {
            kind: DiffKind::Added,
            text: text.into(),
        }
    }

    /// A line only in the old text.
    pub fn removed(text: impl Into<String>) -> Self {
        Self {
            kind: DiffKind::Removed,
            text: text.into(),
        }
    }

    /// A line in both.
    pub fn context(text: impl Into<String>) -> Self {
        Self {
            kind: DiffKind::Context,
            text: text.into(),
        }
    }
}

/// One block of a view's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text in theme roles.
    Text {
        /// Its pieces, in order.
        spans: Vec<Span>,
    },
    /// A list of files.
    Files {
        /// The files, in order.
        files: Vec<FileEntry>,
    },
    /// The change to one file.
    Diff {
        /// The file, relative to the session's directory.
        path: String,
        /// Its lines, in order.
        lines: Vec<DiffLine>,
        /// How many lines were left out at the end.
        #[serde(default, skip_serializing_if = "is_zero")]
        omitted: usize,
    },
    /// A table.
    Table {
        /// The column headings.
        columns: Vec<String>,
        /// The rows, each as many cells as there are columns.
        rows: Vec<Vec<String>>,
        /// How many rows were left out at the end.
        #[serde(default, skip_serializing_if = "is_zero")]
        omitted: usize,
    },
    /// A section that shows `collapsed` until the user expands it, then `expanded`.
    Section {
        /// What shows collapsed (a summary, the first items).
        collapsed: Vec<Block>,
        /// What shows expanded (everything).
        expanded: Vec<Block>,
    },
    /// A block of a newer API: skipped.
    #[serde(other)]
    Unknown,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Block {
    /// One line of text in `role`.
    pub fn line(text: impl Into<String>, role: Role) -> Self {
        Block::Text {
            spans: vec![Span {
                text: text.into(),
                role,
            }],
        }
    }

    /// A list of files, without notes.
    pub fn files<P: Into<String>>(paths: impl IntoIterator<Item = P>) -> Self {
        Block::Files {
            files: paths
                .into_iter()
                .map(|path| FileEntry {
                    path: path.into(),
                    note: None,
                })
                .collect(),
        }
    }

    /// The change to the file at `path`.
    pub fn diff(path: impl Into<String>, lines: impl IntoIterator<Item = DiffLine>) -> Self {
        Block::Diff {
            path: path.into(),
            lines: lines.into_iter().collect(),
            omitted: 0,
        }
    }

    /// A section showing `collapsed` until expanded, then `expanded`.
    pub fn section(
        collapsed: impl IntoIterator<Item = Block>,
        expanded: impl IntoIterator<Item = Block>,
    ) -> Self {
        Block::Section {
            collapsed: collapsed.into_iter().collect(),
            expanded: expanded.into_iter().collect(),
        }
    }
}

impl View {
    /// A view with a status line of `state` and `title`.
    pub fn status(state: State, title: impl Into<String>) -> Self {
        Self {
            status: Some(Status {
                state,
                title: title.into(),
                description: None,
                badge: None,
                meta: Vec::new(),
            }),
            blocks: Vec::new(),
        }
    }

    /// The same view with the status line's description (nothing without a status line).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        if let Some(status) = &mut self.status {
            status.description = Some(description.into());
        }
        self
    }

    /// The same view with a badge on its status line (nothing without a status line).
    #[must_use]
    pub fn badge(mut self, label: impl Into<String>, role: Role) -> Self {
        if let Some(status) = &mut self.status {
            status.badge = Some(Badge {
                label: label.into(),
                role,
            });
        }
        self
    }

    /// The same view with one more fact on its status line (nothing without a status line).
    #[must_use]
    pub fn meta(mut self, fact: impl Into<String>) -> Self {
        if let Some(status) = &mut self.status {
            status.meta.push(fact.into());
        }
        self
    }

    /// The same view with `block` added under what it has.
    #[must_use]
    pub fn block(mut self, block: Block) -> Self {
        self.blocks.push(block);
        self
    }

    /// The view as JSON (its shape under MCP's `_meta["xcsh/view"]`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The view cleaned and bounded, as hosts draw it: escape sequences and control characters
    /// dropped (tabs become spaces; `\n` is kept only in text spans), strings cut at
    /// [`MAX_TEXT`] characters, a diff cut at [`MAX_DIFF_LINES`] lines and a table, a file list
    /// or a list of blocks at [`MAX_ITEMS`] items, each with a count of what was left out,
    /// blocks of a newer API dropped.
    #[must_use]
    pub fn bounded(self) -> View {
        View {
            status: self.status.map(|status| Status {
                state: status.state,
                title: clean(&status.title, false),
                description: status.description.map(|d| clean(&d, false)),
                badge: status.badge.map(|badge| Badge {
                    label: clean(&badge.label, false),
                    role: badge.role,
                }),
                meta: status
                    .meta
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|m| clean(m, false))
                    .collect(),
            }),
            blocks: bounded_blocks(self.blocks),
        }
    }

    /// Whether every path the view names (file lists, diffs) is inside `root`, the session's
    /// directory: relative paths that do not climb out of it, or absolute paths under it. Only
    /// the text is read, never the file system. `Err` names the first path that is not.
    pub fn check_paths(&self, root: &Path) -> Result<(), ViewError> {
        for path in paths(&self.blocks) {
            if !inside(root, Path::new(path)) {
                return Err(ViewError::PathOutside {
                    path: path.to_owned(),
                    root: root.to_path_buf(),
                });
            }
        }
        Ok(())
    }
}

/// How a call of a tool looks, before it has a result: a status line whose strings name the
/// call's arguments in braces, filled by the host (which draws a call as the model streams it,
/// without asking the plugin). `{path}` is the argument `path`, `{ops.0.pat}` the `pat` of the
/// first of `ops`, `{ops#}` how many `ops` there are. A string naming an argument the call does
/// not have (or has empty) is left out; a string, number or boolean is shown as it is,
/// whitespace runs collapsed; a list of strings joined by `, `.
///
/// ```
/// use serde_json::json;
/// use xcsh_plugin_api::view::CallView;
///
/// let view = CallView::new("AST Edit").description("{ops.0.pat}").meta("in {path}").meta("{ops#} rewrites");
/// let filled = view.fill(&json!({"ops": [{"pat": "foo($A)\n  (x)", "out": "bar"}]}));
/// assert_eq!(filled.description.as_deref(), Some("foo($A) (x)"));
/// assert_eq!(filled.meta, ["1 rewrites"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallView {
    /// The title (`{…}` allowed, as everywhere).
    pub title: String,
    /// The description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The facts after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub meta: Vec<String>,
}

impl CallView {
    /// A call view with `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            description: None,
            meta: Vec::new(),
        }
    }

    /// The same with a description.
    #[must_use]
    pub fn description(mut self, template: impl Into<String>) -> Self {
        self.description = Some(template.into());
        self
    }

    /// The same with one more fact.
    #[must_use]
    pub fn meta(mut self, template: impl Into<String>) -> Self {
        self.meta.push(template.into());
        self
    }

    /// The status line for a call with `arguments`: each template filled, the ones naming an
    /// argument the call lacks left out (a title that cannot be filled stays as written),
    /// cleaned as [`View::bounded`] cleans.
    pub fn fill(&self, arguments: &serde_json::Value) -> Status {
        let filled = |template: &str| fill(template, arguments).map(|text| clean(&text, false));
        Status {
            state: State::Pending,
            title: filled(&self.title).unwrap_or_else(|| clean(&self.title, false)),
            description: self.description.as_deref().and_then(filled),
            badge: None,
            meta: self
                .meta
                .iter()
                .filter_map(|m| filled(m))
                .take(MAX_ITEMS)
                .collect(),
        }
    }
}

/// `template` with each `{argument}` replaced; `None` when one has no value.
fn fill(template: &str, arguments: &serde_json::Value) -> Option<String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        out.push_str(&rest[..open]);
        out.push_str(&argument(&rest[open + 1..close], arguments)?);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The argument at `path` (`a.b.0`, or `a#` for a count), as text; `None` when absent or empty.
fn argument(path: &str, arguments: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let (path, count) = match path.strip_suffix('#') {
        Some(path) => (path, true),
        None => (path, false),
    };
    let mut value = arguments;
    for step in path.split('.').filter(|s| !s.is_empty()) {
        value = match value {
            Value::Object(map) => map.get(step)?,
            Value::Array(items) => items.get(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    let text = match (value, count) {
        (Value::Array(items), true) => items.len().to_string(),
        (Value::Object(map), true) => map.len().to_string(),
        (_, true) => return None,
        (Value::String(s), _) => s.split_whitespace().collect::<Vec<_>>().join(" "),
        (Value::Number(n), _) => n.to_string(),
        (Value::Bool(b), _) => b.to_string(),
        (Value::Array(items), _) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?
            .join(", "),
        (Value::Null | Value::Object(_), _) => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// Why a host does not draw a view (it shows the text instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// A path the view names is outside the session's directory.
    #[error("the view names {path}, which is outside the session's directory {}", root.display())]
    PathOutside {
        /// The path, as the view gave it.
        path: String,
        /// The session's directory.
        root: PathBuf,
    },
    /// The view is not a view (JSON of another shape).
    #[error("the view is malformed: {0}")]
    Malformed(String),
}

impl std::str::FromStr for View {
    type Err = ViewError;

    /// Read a view from its JSON.
    fn from_str(json: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(json).map_err(|error| ViewError::Malformed(error.to_string()))
    }
}

fn bounded_blocks(blocks: Vec<Block>) -> Vec<Block> {
    let total = blocks.len();
    let mut kept: Vec<Block> = blocks
        .into_iter()
        .filter(|block| *block != Block::Unknown)
        .take(MAX_ITEMS)
        .map(bounded_block)
        .collect();
    if total > MAX_ITEMS {
        kept.push(Block::line(
            format!("… {} more blocks", total - MAX_ITEMS),
            Role::Muted,
        ));
    }
    kept
}

fn bounded_block(block: Block) -> Block {
    match block {
        Block::Text { spans } => Block::Text {
            spans: spans
                .into_iter()
                .take(MAX_ITEMS)
                .map(|span| Span {
                    text: clean(&span.text, true),
                    role: span.role,
                })
                .collect(),
        },
        Block::Files { files } => {
            let total = files.len();
            let mut files: Vec<FileEntry> = files
                .into_iter()
                .take(MAX_ITEMS)
                .map(|file| FileEntry {
                    path: clean(&file.path, false),
                    note: file.note.map(|n| clean(&n, false)),
                })
                .collect();
            if total > MAX_ITEMS {
                files.push(FileEntry {
                    path: format!("… {} more files", total - MAX_ITEMS),
                    note: None,
                });
            }
            Block::Files { files }
        }
        Block::Diff {
            path,
            lines,
            omitted,
        } => {
            let total = lines.len();
            Block::Diff {
                path: clean(&path, false),
                lines: lines
                    .into_iter()
                    .take(MAX_DIFF_LINES)
                    .map(|line| DiffLine {
                        kind: line.kind,
                        text: clean(&line.text, false),
                    })
                    .collect(),
                omitted: omitted.saturating_add(total.saturating_sub(MAX_DIFF_LINES)),
            }
        }
        Block::Table {
            columns,
            rows,
            omitted,
        } => {
            let total = rows.len();
            Block::Table {
                columns: columns
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|c| clean(c, false))
                    .collect(),
                rows: rows
                    .into_iter()
                    .take(MAX_ITEMS)
                    .map(|row| {
                        row.iter()
                            .take(MAX_ITEMS)
                            .map(|c| clean(c, false))
                            .collect()
                    })
                    .collect(),
                omitted: omitted.saturating_add(total.saturating_sub(MAX_ITEMS)),
            }
        }
        Block::Section {
            collapsed,
            expanded,
        } => Block::Section {
            collapsed: bounded_blocks(collapsed),
            expanded: bounded_blocks(expanded),
        },
        Block::Unknown => Block::Unknown,
    }
}

/// `text` without escape sequences or control characters, tabs as four spaces, at most
/// [`MAX_TEXT`] characters; `\n` kept when `lines`.
fn clean(text: &str, lines: bool) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_TEXT));
    let mut chars = text.chars().peekable();
    let mut count = 0;
    while let Some(c) = chars.next() {
        if count >= MAX_TEXT {
            out.push('…');
            break;
        }
        match c {
            // An escape sequence: ESC, then for CSI (`ESC [`) parameters up to a final byte,
            // for OSC (`ESC ]`) everything up to BEL or `ESC \`; otherwise one character.
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' if lines => {
                out.push('\n');
                count += 1;
            }
            '\t' => {
                out.push_str("    ");
                count += 4;
            }
            c if c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c) => {}
            c => {
                out.push(c);
                count += 1;
            }
        }
    }
    out
}

/// Every path `blocks` name, sections included.
fn paths(blocks: &[Block]) -> Vec<&str> {
    let mut found = Vec::new();
    for block in blocks {
        match block {
            Block::Files { files } => found.extend(files.iter().map(|f| f.path.as_str())),
            Block::Diff { path, .. } => found.push(path.as_str()),
            Block::Section {
                collapsed,
                expanded,
            } => {
                found.extend(paths(collapsed));
                found.extend(paths(expanded));
            }
            Block::Text { .. } | Block::Table { .. } | Block::Unknown => {}
        }
    }
    found
}

/// Whether `path` (relative to `root`, or absolute) stays inside `root`, read lexically.
fn inside(root: &Path, path: &Path) -> bool {
    let relative = if path.is_absolute() {
        match path.strip_prefix(root) {
            Ok(rest) => rest,
            Err(_) => return false,
        }
    } else {
        path
    };
    let mut depth = 0usize;
    for component in relative.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;

    #[test]
    fn a_view_travels_as_json_and_back() {
        let view = View::status(State::Success, "AST Edit")
            .description("foo($A) → bar($A)")
            .badge("proposed", Role::Warning)
            .meta("2 files")
            .block(Block::section(
                [Block::line("2 changes in 1 file", Role::Muted)],
                [Block::diff(
                    "src/a.rs",
                    [DiffLine::removed("foo(1)"), DiffLine::added("bar(1)")],
                )],
            ))
            .block(Block::Table {
                columns: vec!["file".into(), "changes".into()],
                rows: vec![vec!["src/a.rs".into(), "2".into()]],
                omitted: 0,
            });
        let json = view.to_json();
        assert_eq!(json["blocks"][0]["type"], "section");
        assert_eq!(
            json["blocks"][0]["expanded"][0]["lines"][1]["kind"],
            "added"
        );
        let back: View = json.to_string().parse().unwrap();
        assert_eq!(back, view);
    }

    #[test]
    fn names_of_a_newer_api_are_read_as_plain_or_skipped() {
        let json = r#"{"status": {"state": "sparkling", "title": "t", "badge": {"label": "b", "role": "neon"}},
            "blocks": [{"type": "hologram", "depth": 3},
                       {"type": "text", "spans": [{"text": "x", "role": "neon"}]}]}"#;
        let view: View = json.parse().unwrap();
        let status = view.status.as_ref().unwrap();
        assert_eq!(status.state, State::Unknown);
        assert_eq!(status.badge.as_ref().unwrap().role, Role::Unknown);
        assert_eq!(view.blocks[0], Block::Unknown);
        let bounded = view.bounded();
        assert_eq!(bounded.blocks.len(), 1, "the unknown block is dropped");
        let Block::Text { spans } = &bounded.blocks[0] else {
            panic!("{bounded:?}")
        };
        assert_eq!(spans[0].role, Role::Unknown);
        assert!(matches!(
            "[1, 2]".parse::<View>(),
            Err(ViewError::Malformed(_))
        ));
    }

    #[test]
    fn escapes_and_control_characters_are_dropped() {
        let view = View::status(State::Error, "a\u{1b}[31mred\u{1b}[0m\u{7}b\u{202e}c")
            .block(Block::line(
                "one\ttwo\nthree\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\\r",
                Role::Accent,
            ))
            .bounded();
        assert_eq!(view.status.unwrap().title, "aredbc");
        let Block::Text { spans } = &view.blocks[0] else {
            panic!()
        };
        assert_eq!(spans[0].text, "one    two\nthreelink");
    }

    #[test]
    fn a_huge_diff_is_cut_with_a_count_of_what_was_left_out() {
        let lines = (0..MAX_DIFF_LINES + 25).map(|i| DiffLine::added(format!("line {i}")));
        let view = View::default()
            .block(Block::diff("big.txt", lines))
            .bounded();
        let Block::Diff { lines, omitted, .. } = &view.blocks[0] else {
            panic!()
        };
        assert_eq!(lines.len(), MAX_DIFF_LINES);
        assert_eq!(*omitted, 25);
        let long = "x".repeat(MAX_TEXT * 2);
        let view = View::status(State::Pending, long).bounded();
        assert_eq!(view.status.unwrap().title.chars().count(), MAX_TEXT + 1);
        let many = (0..MAX_ITEMS + 3).map(|i| Block::line(i.to_string(), Role::Muted));
        let view = View {
            status: None,
            blocks: many.collect(),
        }
        .bounded();
        assert_eq!(view.blocks.len(), MAX_ITEMS + 1);
        assert_eq!(
            view.blocks[MAX_ITEMS],
            Block::line("… 3 more blocks", Role::Muted)
        );
    }

    #[test]
    fn a_call_view_is_filled_from_the_arguments_and_leaves_out_what_they_lack() {
        use serde_json::json;
        let view = CallView::new("Rename {find}")
            .description("{files}")
            .meta("in {path}")
            .meta("{files#} files")
            .meta("{files.1}")
            .meta("{nested.deep}")
            .meta("{count} at most, dry run {dry}");
        let status = view.fill(
            &json!({"find": "a\u{1b}[2J", "files": ["x.rs", "y.rs"], "count": 3, "dry": false}),
        );
        assert_eq!(status.state, State::Pending);
        assert_eq!(status.title, "Rename a");
        assert_eq!(status.description.as_deref(), Some("x.rs, y.rs"));
        assert_eq!(status.meta, ["2 files", "y.rs", "3 at most, dry run false"]);
        let unfilled = view.fill(&json!({}));
        assert_eq!(unfilled.title, "Rename {find}", "a title stays as written");
        assert_eq!(unfilled.description, None);
        assert!(unfilled.meta.is_empty());
        let back: CallView = serde_json::from_value(serde_json::to_value(&view).unwrap()).unwrap();
        assert_eq!(back, view);
    }

    #[test]
    fn a_path_outside_the_session_is_refused() {
        // Absolute paths as this platform writes them (`/tmp/project`, `C:\...\project`).
        let base = std::env::temp_dir();
        let root = base.join("project");
        let inside = root.join("d.rs").display().to_string();
        let inside_view = View::default().block(Block::section(
            [Block::files(["src/a.rs", "./b/../c.rs", inside.as_str()])],
            [Block::diff("src/a.rs", [])],
        ));
        assert_eq!(inside_view.check_paths(&root), Ok(()));
        let elsewhere = base.join("passwd").display().to_string();
        let sibling = base.join("projectile").join("x").display().to_string();
        for outside in [
            "../secret",
            "a/../../b",
            elsewhere.as_str(),
            sibling.as_str(),
        ] {
            let view = View::default().block(Block::section([], [Block::files([outside])]));
            assert_eq!(
                view.check_paths(&root),
                Err(ViewError::PathOutside {
                    path: outside.to_owned(),
                    root: root.clone(),
                }),
                "{outside}"
            );
        }
    }
}
