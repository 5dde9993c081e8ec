//! The search half of `ast_edit`: compile each op's pattern and template for every language in
//! play, then match the candidate files in parallel and record, for each file, the exact byte
//! edits a rewrite would make and a SHA-256 of the content they were computed from.
//!
//! Matching mirrors `ast-grep run --rewrite`: a pre-order walk that does not descend into a
//! match (an outer match wins over matches nested in it), the replaced range given by the
//! pattern's own extent, and the template re-indented at the match. All ops see the original
//! text; edits of different ops that overlap are refused.

use std::collections::HashMap;
use std::num::NonZero;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::lang::Lang;
use ast_grep_core::matcher::MatcherExt;
use ast_grep_core::replacer::TemplateFix;
use ast_grep_core::tree_sitter::traversal::Visitor;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Node, NodeMatch, Pattern};
use sha2::{Digest, Sha256};

use crate::lang;
use crate::walk::Candidate;
use crate::CancelToken;

/// One op, compiled for one language.
pub struct CompiledOp {
    index: usize,
    pub(crate) pattern: Pattern,
    fixer: TemplateFix,
    /// Text every match must contain (lets files without it skip parsing).
    fixed: String,
}

/// The ops compiled per language; an op that does not compile for a language is absent there.
pub struct Compiled {
    ops: Vec<String>,
    by_lang: HashMap<Lang, Vec<CompiledOp>>,
}

impl Compiled {
    /// The ops compiled for `lang` (none when it is not in play).
    #[cfg(test)]
    pub(crate) fn ops_for(&self, lang: Lang) -> &[CompiledOp] {
        self.by_lang.get(&lang).map_or(&[], Vec::as_slice)
    }
}

fn compile_one(
    index: usize,
    (pat, out): &(String, String),
    sel: Option<&str>,
    lang: Lang,
) -> Result<CompiledOp, String> {
    let pattern = match sel {
        Some(selector) => Pattern::contextual(pat, selector, lang),
        None => Pattern::try_new(pat, lang),
    }
    .map_err(|error| error.to_string())?;
    if pattern.has_error() {
        return Err("the pattern does not parse (its syntax tree has an ERROR node)".to_owned());
    }
    let fixer = TemplateFix::try_new(out, &lang).map_err(|error| error.to_string())?;
    let fixed = pattern.fixed_string().into_owned();
    Ok(CompiledOp {
        index,
        pattern,
        fixer,
        fixed,
    })
}

/// Compile every op for every language in `langs`. With an explicit `lang`, any failure is an
/// error; with inferred languages, an op is an error only when it compiles for none of them,
/// and otherwise its failures are returned as issues (the op skips those languages' files).
pub fn compile(
    ops: &[(String, String)],
    sel: Option<&str>,
    langs: &[Lang],
    explicit: bool,
) -> Result<(Compiled, Vec<String>), String> {
    let mut compiled = Compiled {
        ops: ops.iter().map(|(pat, _)| pat.clone()).collect(),
        by_lang: HashMap::new(),
    };
    let mut issues = Vec::new();
    let mut failures: Vec<Vec<String>> = vec![Vec::new(); ops.len()];
    for &lang in langs {
        let mut list = Vec::new();
        for (index, op) in ops.iter().enumerate() {
            match compile_one(index, op, sel, lang) {
                Ok(one) => list.push(one),
                Err(error) => failures[index].push(format!("{}: {error}", lang::name(lang))),
            }
        }
        compiled.by_lang.insert(lang, list);
    }
    for (index, errors) in failures.iter().enumerate() {
        let pat = &ops[index].0;
        if errors.is_empty() {
            continue;
        }
        if explicit || errors.len() == langs.len() {
            return Err(format!("Invalid pattern `{pat}`: {}", errors.join("; ")));
        }
        for error in errors {
            issues.push(format!("pattern `{pat}` skipped for {error}"));
        }
    }
    Ok((compiled, issues))
}

/// One previewed replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// Byte range replaced.
    pub start: usize,
    /// End of that range (exclusive).
    pub end: usize,
    /// The new text.
    pub text: String,
    /// The old text.
    pub before: String,
    /// 1-based line of `start`.
    pub line: usize,
    /// 1-based column (in characters) of `start`.
    pub column: usize,
    /// Which op produced it.
    pub op: usize,
}

/// A file with replacements.
#[derive(Debug, Clone)]
pub struct FileEdits {
    /// The file.
    pub path: PathBuf,
    /// SHA-256 of the bytes the replacements were computed from.
    pub hash: [u8; 32],
    /// Replacements, sorted by position, not overlapping.
    pub replacements: Vec<Replacement>,
}

/// What searching one file gave.
pub enum Outcome {
    /// Nothing to replace.
    Nothing,
    /// Replacements to preview.
    Edits(FileEdits),
    /// A problem to list; the file is left alone.
    Issue(String),
    /// Two ops' edits overlap: the message names them.
    Overlap(String),
}

/// Content hash used to notice files that changed between preview and apply.
pub fn hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn search_file(candidate: &Candidate, compiled: &Compiled, shown: &str) -> Outcome {
    let Some(ops) = compiled.by_lang.get(&candidate.lang) else {
        return Outcome::Nothing;
    };
    let bytes = match std::fs::read(&candidate.path) {
        Ok(bytes) => bytes,
        Err(error) => return Outcome::Issue(format!("{shown}: {error}")),
    };
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Outcome::Nothing; // binary
    }
    let Ok(source) = std::str::from_utf8(&bytes) else {
        return Outcome::Issue(format!("{shown}: not valid UTF-8; skipped"));
    };
    let active: Vec<&CompiledOp> = ops
        .iter()
        .filter(|op| op.fixed.is_empty() || source.contains(op.fixed.as_str()))
        .collect();
    if active.is_empty() {
        return Outcome::Nothing;
    }
    let grep = match AstGrep::<StrDoc<Lang>>::try_new(source, candidate.lang) {
        Ok(grep) => grep,
        Err(error) => return Outcome::Issue(format!("{shown}: cannot parse: {error}")),
    };
    if grep.root().get_inner_node().has_error() {
        return Outcome::Issue(format!(
            "{shown}: parse error (syntax tree contains error nodes); skipped"
        ));
    }
    let mut replacements = Vec::new();
    for op in active {
        for found in find_matches(grep.root(), op, source) {
            let edit = found.make_edit(&op.pattern, &op.fixer);
            let (start, end) = (edit.position, edit.position + edit.deleted_length);
            let (Ok(text), Some(before)) = (
                String::from_utf8(edit.inserted_text),
                source.get(start..end),
            ) else {
                return Outcome::Issue(format!(
                    "{shown}: a replacement is not valid UTF-8; skipped"
                ));
            };
            let position = found.start_pos();
            replacements.push(Replacement {
                start,
                end,
                text,
                before: before.to_owned(),
                line: position.line() + 1,
                column: position.column(found.get_node()) + 1,
                op: op.index,
            });
        }
    }
    if replacements.is_empty() {
        return Outcome::Nothing;
    }
    replacements.sort_by_key(|r| (r.start, r.end, r.op));
    if let Some(pair) = replacements
        .windows(2)
        .find(|pair| pair[1].start < pair[0].end || pair[1].start == pair[0].start)
    {
        let describe =
            |r: &Replacement| format!("`{}` at {}:{}", compiled.ops[r.op], r.line, r.column);
        return Outcome::Overlap(format!(
            "Overlapping edits in {shown}: {} and {}; nothing was changed. Narrow the patterns or \
             run them as separate ast_edit calls.",
            describe(&pair[0]),
            describe(&pair[1])
        ));
    }
    Outcome::Edits(FileEdits {
        path: candidate.path.clone(),
        hash: hash(&bytes),
        replacements,
    })
}

/// Where `op` matches below `root`, as `Visitor::new(pattern).reentrant(false)` finds it:
/// in pre-order, not descending into a match. A match's text contains the op's fixed string
/// (the pattern's longest literal token, which the match has verbatim), so a subtree whose
/// range holds no occurrence of it cannot contain a match and is skipped whole. Walking every
/// node of every file was about a quarter of a preview's CPU time (perf, 3,000 files); with the
/// skip only the few nodes around each occurrence are looked at.
pub(crate) fn find_matches<'t>(
    root: Node<'t, StrDoc<Lang>>,
    op: &CompiledOp,
    source: &str,
) -> Vec<NodeMatch<'t, StrDoc<Lang>>> {
    if op.fixed.is_empty() {
        return Visitor::new(&op.pattern)
            .reentrant(false)
            .visit(root)
            .collect();
    }
    let starts = occurrences(source, &op.fixed);
    let len = op.fixed.len();
    let holds_one = |range: std::ops::Range<usize>| {
        let first = starts.partition_point(|&start| start < range.start);
        starts
            .get(first)
            .is_some_and(|&start| start + len <= range.end)
    };
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if !holds_one(node.range()) {
            continue;
        }
        if let Some(matched) = op.pattern.match_node(node.clone()) {
            found.push(matched);
            continue;
        }
        let first_child = stack.len();
        stack.extend(node.children());
        stack[first_child..].reverse();
    }
    found
}

/// Every start of `needle` in `haystack`, overlapping ones included, ascending.
pub(crate) fn occurrences(haystack: &str, needle: &str) -> Vec<usize> {
    let step = needle.chars().next().map_or(1, char::len_utf8);
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(at) = haystack.get(from..).and_then(|rest| rest.find(needle)) {
        starts.push(from + at);
        from += at + step;
    }
    starts
}

/// Search every candidate in parallel; the outcomes come back in candidate order. `None` when
/// cancelled.
pub fn search_all(
    files: &[Candidate],
    shown: &[String],
    compiled: &Compiled,
    cancel: &CancelToken,
) -> Option<Vec<Outcome>> {
    let threads = std::thread::available_parallelism()
        .map_or(2, NonZero::get)
        .min(files.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= files.len() || cancel.is_cancelled() {
                return done;
            }
            done.push((index, search_file(&files[index], compiled, &shown[index])));
        }
    };
    let mut results: Vec<(usize, Outcome)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            let mut all = Vec::with_capacity(files.len());
            for handle in handles {
                // A panic in a worker is re-raised here and caught by the tool's guard.
                all.extend(
                    handle
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p)),
                );
            }
            all
        })
    };
    if cancel.is_cancelled() {
        return None;
    }
    results.sort_by_key(|(index, _)| *index);
    Some(results.into_iter().map(|(_, outcome)| outcome).collect())
}
