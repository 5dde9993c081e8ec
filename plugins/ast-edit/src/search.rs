//! The search half of `ast_edit`: compile each op's pattern and template for every language in
//! play, then match the candidate files in parallel and record, for each file, the exact byte
//! edits a rewrite would make and a SHA-256 of the content they were computed from.
//!
//! Matching is xcsh's `astEdit`'s: every match, nested ones included (see `nested` for how
//! those are rewritten), each replacing its whole node (a statement's `;` with it; under
//! `keep_trailing` what follows the pattern's last token is kept, the range ast-grep-core's
//! `make_edit` gives), and the template re-indented at the match. All ops see the original
//! text.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::lang::Lang;
use ast_grep_core::matcher::MatcherExt;
use ast_grep_core::replacer::{Replacer, TemplateFix};
use ast_grep_core::tree_sitter::traversal::Visitor;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Node, NodeMatch, Pattern};
use sha2::{Digest, Sha256};

use crate::lang;
use crate::nested::{self, Found};
use crate::walk::Candidate;
use crate::CancelToken;

/// One op, compiled for one language.
pub struct CompiledOp {
    pub(crate) index: usize,
    pub(crate) pattern: Pattern,
    fixer: TemplateFix,
    /// Text every match must contain (lets files without it skip parsing).
    fixed: String,
}

/// The ops compiled per language; an op that does not compile for a language is absent there.
pub struct Compiled {
    ops: Vec<String>,
    by_lang: HashMap<Lang, Vec<CompiledOp>>,
    /// Keep what a matched node has after the pattern's last token (the `keep_trailing`
    /// parameter).
    pub(crate) keep_trailing: bool,
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
        keep_trailing: false,
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
    /// Whether it lies inside another replacement: its text is part of that one's, so
    /// `apply` writes the outermost only; it is still previewed and counted.
    pub nested: bool,
}

/// A file with replacements.
#[derive(Debug, Clone)]
pub struct FileEdits {
    /// The file.
    pub path: PathBuf,
    /// SHA-256 of the bytes the replacements were computed from.
    pub hash: [u8; 32],
    /// Replacements, sorted by position (an outer one before those nested in it); those not
    /// nested do not overlap.
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
    let describe = |r: &Replacement| format!("`{}` at {}:{}", compiled.ops[r.op], r.line, r.column);
    let mut found = Vec::new();
    for op in active {
        for matched in find_matches(grep.root(), op, source) {
            let (range, text) = match edit_for(&matched, op, compiled.keep_trailing) {
                Ok(edit) => edit,
                Err(error) => return Outcome::Issue(format!("{shown}: {error}; skipped")),
            };
            let position = matched.start_pos();
            found.push(Found {
                node: matched.range(),
                edit: Replacement {
                    before: source[range.clone()].to_owned(),
                    start: range.start,
                    end: range.end,
                    text,
                    line: position.line() + 1,
                    column: position.column(matched.get_node()) + 1,
                    op: op.index,
                    nested: false,
                },
            });
        }
    }
    if found.is_empty() {
        return Outcome::Nothing;
    }
    if let Err(refused) = nested::settle(
        shown,
        source,
        candidate.lang,
        ops,
        compiled.keep_trailing,
        &mut found,
        &describe,
    ) {
        return Outcome::Overlap(refused);
    }
    let replacements = found.into_iter().map(|f| f.edit).collect();
    Outcome::Edits(FileEdits {
        path: candidate.path.clone(),
        hash: hash(&bytes),
        replacements,
    })
}

/// The range `matched` replaces and the text it is replaced with: its whole node, or under
/// `keep_trailing` the pattern's own extent (ast-grep's `make_edit`).
pub(crate) fn edit_for(
    matched: &NodeMatch<'_, StrDoc<Lang>>,
    op: &CompiledOp,
    keep_trailing: bool,
) -> Result<(std::ops::Range<usize>, String), String> {
    let range = if keep_trailing {
        op.fixer.get_replaced_range(matched, &op.pattern)
    } else {
        matched.range()
    };
    let text = String::from_utf8(op.fixer.generate_replacement(matched))
        .map_err(|_| "a replacement is not valid UTF-8".to_owned())?;
    Ok((range, text))
}

/// Where `op` matches below `root`, as `Visitor::new(pattern)` finds it: in pre-order, nested
/// matches included. A match's text contains the op's fixed string
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
        return Visitor::new(&op.pattern).visit(root).collect();
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
    let threads = match files.len() {
        0 | 1 => 1,
        many => crate::cores().min(many),
    };
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
