//! Where `ast_edit` looks: the `path` argument (file, directory, glob, or a list of these
//! separated by commas or spaces; default the working directory) and the `glob` filter, turned
//! into a sorted list of source files with their language. `/` and absolute paths outside the
//! working directory are taken inside it (the session's root), never at the filesystem root.
//! A glob in the path may name directories (`packages/pkg-*/src`): everything below a match is
//! searched. Directories are walked with the `ignore` crate in parallel:
//! `.gitignore` (also outside a git repository), `.ignore` and git excludes are honoured,
//! `.git` and `node_modules` directories are never entered, symlinks are not followed, and files
//! over [`MAX_FILE_BYTES`] are counted as skipped. Hidden files and directories are searched
//! like any other, as xcsh's own `astEdit` searches them (a `.eslintrc.js` is code too).
//! Explicitly named files are always taken.

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::lang::Lang;
use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};

use crate::lang;
use crate::CancelToken;

/// Files larger than this are skipped (counted in `filesSkipped`).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// A file to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its path (the working directory joined with what the user wrote, then walked).
    pub path: PathBuf,
    /// The grammar to parse it with.
    pub lang: Lang,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Found {
    /// Files to search, sorted by path, without duplicates.
    pub files: Vec<Candidate>,
    /// Files skipped for their size.
    pub skipped: usize,
    /// Problems met while walking (unreadable directories, bad ignore files), sorted.
    pub problems: Vec<String>,
    /// Whether `path` named exactly one file (the preview then has no file headers).
    pub single_file: bool,
    /// What paths are shown relative to: the one directory searched (for a glob, the part
    /// before it), else the working directory.
    pub base: PathBuf,
    /// The `path` entries as understood, for `scopePath`.
    pub entries: Vec<String>,
}

enum Target {
    File {
        path: PathBuf,
        entry: String,
    },
    Dir {
        base: PathBuf,
        /// Files whose path below `base`, or one of whose ancestors, matches are searched.
        glob: Option<GlobMatcher>,
    },
}

/// The `glob` argument: file names at any depth, or (with a `/`) paths below each root.
struct NameFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl NameFilter {
    fn new(glob: &str) -> Result<Self, String> {
        Ok(Self {
            matcher: compile_glob(glob)?,
            whole_path: glob.contains('/'),
        })
    }

    fn matches(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

fn compile_glob(glob: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|error| format!("Invalid glob `{glob}`: {error}"))
}

fn has_glob_chars(entry: &str) -> bool {
    entry.contains(['*', '?', '[', '{'])
}

/// Split a list on commas and whitespace, leaving those inside `{...}` and `[...]` (glob
/// syntax) alone.
fn split_list(raw: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in raw.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth = depth.saturating_sub(1),
            c if depth == 0 && (c == ',' || c.is_whitespace()) => {
                entries.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    entries.push(current);
    entries
        .into_iter()
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty())
        .collect()
}

fn resolve_entry(cwd: &Path, entry: &str) -> Result<Target, String> {
    let literal = cwd.join(entry);
    if has_glob_chars(entry) && !literal.exists() {
        let parts: Vec<&str> = entry.split('/').collect();
        let first_glob = parts.iter().position(|p| has_glob_chars(p)).unwrap_or(0);
        let base = parts[..first_glob].join("/");
        let base = if base.is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(base)
        };
        if !base.is_dir() {
            return Err(format!("Path not found: {entry}"));
        }
        let pattern = parts[first_glob..].join("/");
        return Ok(Target::Dir {
            base,
            glob: Some(compile_glob(&pattern)?),
        });
    }
    match std::fs::metadata(&literal) {
        Ok(meta) if meta.is_file() => Ok(Target::File {
            path: literal,
            entry: entry.to_owned(),
        }),
        Ok(meta) if meta.is_dir() => Ok(Target::Dir {
            base: literal,
            glob: None,
        }),
        _ => Err(format!("Path not found: {entry}")),
    }
}

/// Resolve `path` against `cwd` and list the files to search.
pub fn find_files(
    cwd: &Path,
    path: Option<&str>,
    glob: Option<&str>,
    explicit: Option<Lang>,
    cancel: &CancelToken,
) -> Result<Found, String> {
    let entries = match path {
        None => vec![".".to_owned()],
        Some(raw) if cwd.join(inside_root(cwd, raw)).exists() => vec![raw.to_owned()],
        Some(raw) => split_list(raw),
    };
    let entries = if entries.is_empty() {
        vec![".".to_owned()]
    } else {
        entries
    };
    // As xcsh shows them: `/` (the session's root) is `.`.
    let shown_entries = entries
        .iter()
        .map(|e| match e.trim_start_matches('/') {
            "" if e.starts_with('/') => ".".to_owned(),
            _ => e.clone(),
        })
        .collect();
    let entries: Vec<String> = entries.iter().map(|e| inside_root(cwd, e)).collect();
    let targets = entries
        .iter()
        .map(|entry| resolve_entry(cwd, entry))
        .collect::<Result<Vec<_>, _>>()?;
    let filter = glob.map(NameFilter::new).transpose()?;
    let base = match targets.as_slice() {
        [Target::Dir { base, .. }] => base.clone(),
        _ => cwd.to_path_buf(),
    };
    let mut found = Found {
        single_file: matches!(targets.as_slice(), [Target::File { .. }]),
        base,
        entries: shown_entries,
        ..Found::default()
    };
    for target in &targets {
        match target {
            Target::File { path, entry } => {
                let name = Path::new(path.file_name().unwrap_or_default());
                if filter.as_ref().is_some_and(|f| !f.matches(name)) {
                    continue;
                }
                let lang = file_language(path, entry, explicit)?;
                match std::fs::metadata(path) {
                    Ok(meta) if meta.len() > MAX_FILE_BYTES => found.skipped += 1,
                    Ok(_) => found.files.push(Candidate {
                        path: path.clone(),
                        lang,
                    }),
                    Err(error) => found.problems.push(format!("{entry}: {error}")),
                }
            }
            Target::Dir { base, glob } => walk(
                base,
                glob.as_ref(),
                filter.as_ref(),
                explicit,
                cancel,
                &mut found,
            ),
        }
    }
    if cancel.is_cancelled() {
        return Err("ast_edit was cancelled".to_owned());
    }
    found.files.sort_by(|a, b| a.path.cmp(&b.path));
    found.files.dedup_by(|a, b| a.path == b.path);
    found.problems.sort();
    Ok(found)
}

fn file_language(path: &Path, entry: &str, explicit: Option<Lang>) -> Result<Lang, String> {
    if let Some(lang) = explicit {
        return Ok(lang);
    }
    match lang::guess(path) {
        Some(lang) if lang::is_enabled(lang) => Ok(lang),
        Some(lang) => Err(format!(
            "Cannot edit {entry}: language {} is not enabled in this build; supported languages: {}",
            lang::name(lang),
            lang::enabled_names()
        )),
        None => Err(format!(
            "Cannot infer the language of {entry}; pass `lang` (supported languages: {})",
            lang::enabled_names()
        )),
    }
}

/// Directories a walk never enters, ignored or not (as xcsh's `astEdit`): a repository's
/// own database, and installed JavaScript packages.
const NEVER_ENTERED: &[&str] = &[".git", "node_modules"];

fn walk(
    base: &Path,
    glob: Option<&GlobMatcher>,
    filter: Option<&NameFilter>,
    explicit: Option<Lang>,
    cancel: &CancelToken,
    found: &mut Found,
) {
    let threads = crate::cores();
    let files = Mutex::new(Vec::new());
    let problems = Mutex::new(Vec::new());
    let skipped = AtomicUsize::new(0);
    WalkBuilder::new(base)
        .standard_filters(true)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            !(entry.depth() > 0
                && entry.file_type().is_some_and(|t| t.is_dir())
                && NEVER_ENTERED.iter().any(|name| entry.file_name() == *name))
        })
        .threads(threads.min(8))
        .build_parallel()
        .run(|| {
            Box::new(|result| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let entry = match result {
                    Ok(entry) => entry,
                    Err(error) => {
                        lock(&problems).push(error.to_string());
                        return WalkState::Continue;
                    }
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let path = entry.path();
                let relative = path.strip_prefix(base).unwrap_or(path);
                let below_match = match glob {
                    None => Some(relative),
                    Some(glob) => below_glob_match(glob, relative),
                };
                let Some(below_match) = below_match else {
                    return WalkState::Continue;
                };
                if filter.is_some_and(|f| !f.matches(below_match)) {
                    return WalkState::Continue;
                }
                let lang = match explicit {
                    Some(lang) => (lang::guess(path) == Some(lang)).then_some(lang),
                    None => lang::from_path(path),
                };
                let Some(lang) = lang else {
                    return WalkState::Continue;
                };
                match entry.metadata() {
                    Ok(meta) if meta.len() > MAX_FILE_BYTES => {
                        skipped.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => lock(&files).push(Candidate {
                        path: path.to_path_buf(),
                        lang,
                    }),
                    Err(error) => lock(&problems).push(error.to_string()),
                }
                WalkState::Continue
            })
        });
    found.files.extend(into_inner(files));
    found.problems.extend(into_inner(problems));
    found.skipped += skipped.into_inner();
}

/// For a path glob: the part of `relative` below its shortest prefix the glob matches (the
/// file's own name when the file itself matches), or `None` when nothing matches.
fn below_glob_match<'a>(glob: &GlobMatcher, relative: &'a Path) -> Option<&'a Path> {
    let mut prefix = PathBuf::new();
    for component in relative.components() {
        prefix.push(component);
        if glob.is_match(&prefix) {
            let below = relative.strip_prefix(&prefix).unwrap_or(relative);
            return Some(if below.as_os_str().is_empty() {
                Path::new(relative.file_name().unwrap_or_default())
            } else {
                below
            });
        }
    }
    None
}

/// `entry` as a path inside the session's root: `/` is the root itself, and an absolute path
/// outside `cwd` is taken relative to it (the model's `/src` means `<root>/src`).
pub fn inside_root(cwd: &Path, entry: &str) -> String {
    let path = Path::new(entry);
    if !path.has_root() || path.starts_with(cwd) {
        return entry.to_owned();
    }
    match entry.trim_start_matches('/') {
        "" => ".".to_owned(),
        relative => relative.to_owned(),
    }
}

use xcsh_plugin_api::__private::lock;

fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// How a path is shown: relative to `cwd` when below it, with `/` separators.
pub fn display(cwd: &Path, path: &Path) -> String {
    let shown = path.strip_prefix(cwd).unwrap_or(path);
    let parts: Vec<String> = shown
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::RootDir => String::new(),
            other => other.as_os_str().to_string_lossy().into_owned(),
        })
        .collect();
    match parts.join("/") {
        joined if joined.is_empty() && shown.has_root() => "/".to_owned(),
        joined if joined.is_empty() => ".".to_owned(),
        joined => joined,
    }
}
