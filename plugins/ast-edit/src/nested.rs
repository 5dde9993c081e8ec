//! Matches nested in matches: `$X.unwrap()` on `a.unwrap().unwrap()` matches twice, the inner
//! `a.unwrap()` inside the outer one's `$X`. Both are rewritten, the inner first
//! (docs/guide/src/ast-edit.md), so the result is `a.expect("e").expect("e")`, where `ast-grep -U`
//! rewrites the outer only and xcsh's `astEdit` refuses the whole apply.
//!
//! How: the matches of a file form a forest by containment. Level by level, from the leaves
//! up, the edits of one level are applied to the text, the text is parsed again, and each
//! match of the next level is found again at its shifted place and rewritten from there: its
//! metavariables then capture the already rewritten text. Only files with nested matches pay
//! for the extra parses (76 of tokio's 2,091 `unwrap()` matches are nested, in a few files).
//!
//! Each match stays its own previewed and counted edit; `apply` writes the outermost ones,
//! whose text holds everything nested in them. Matches that overlap without one holding the
//! other, or two on the same text, are refused, naming both places.

use std::ops::Range;

use ast_grep_core::matcher::MatcherExt;
use ast_grep_core::tree_sitter::StrDoc;
use ast_grep_core::{AstGrep, Node};

use crate::lang::Lang;
use crate::search::{edit_for, CompiledOp, Replacement};

/// How deep matches may nest: each level costs a parse of the whole file, so a pattern that
/// matches nearly every node (`$X`) is refused instead of parsing the file once per node.
pub(crate) const MAX_DEPTH: usize = 16;

/// One match of a file: its edit, and the whole range of the node it matched (the edit may
/// stop short of it under `keep_trailing`).
pub(crate) struct Found {
    pub edit: Replacement,
    pub node: Range<usize>,
}

/// Order `found` by position (an outer match before what it holds), mark the nested ones,
/// and, when some are nested, rewrite every outer match over what its nested ones produce.
/// `describe` names a match for messages (`pattern` at line:column), `shown` the file. The
/// error refuses the file: overlapping matches, nesting deeper than [`MAX_DEPTH`], or an outer
/// match that no longer matches once what it holds was rewritten.
pub(crate) fn settle(
    shown: &str,
    source: &str,
    lang: Lang,
    ops: &[CompiledOp],
    keep_trailing: bool,
    found: &mut [Found],
    describe: &dyn Fn(&Replacement) -> String,
) -> Result<(), String> {
    found.sort_by_key(|f| (f.edit.start, std::cmp::Reverse(f.edit.end), f.edit.op));
    let parents = containment(shown, found, describe)?;
    let mut height = vec![0usize; found.len()];
    for index in (0..found.len()).rev() {
        if let Some(parent) = parents[index] {
            height[parent] = height[parent].max(height[index] + 1);
            found[index].edit.nested = true;
        }
    }
    let top = height.iter().copied().max().unwrap_or(0);
    if top == 0 {
        return Ok(());
    }
    if top >= MAX_DEPTH {
        return Err(format!(
            "Matches nested more than {MAX_DEPTH} deep in {shown} ({} holds them); nothing was \
             changed. Narrow the pattern.",
            describe(&found[height.iter().position(|&h| h == top).unwrap_or(0)].edit)
        ));
    }
    // The text as rewritten so far, and each match's edit and node ranges in it.
    let mut text = source.to_owned();
    let mut edits: Vec<Range<usize>> = found.iter().map(|f| f.edit.start..f.edit.end).collect();
    let mut nodes: Vec<Range<usize>> = found.iter().map(|f| f.node.clone()).collect();
    for level in 0..=top {
        let members: Vec<usize> = (0..found.len()).filter(|&i| height[i] == level).collect();
        if level > 0 {
            let grep = AstGrep::<StrDoc<Lang>>::try_new(text.as_str(), lang).map_err(|error| {
                format!("{shown} cannot be parsed again after a nested rewrite: {error}")
            })?;
            for &index in &members {
                let op = ops
                    .iter()
                    .find(|op| op.index == found[index].edit.op)
                    .ok_or_else(|| "an op went missing".to_owned())?;
                let again = nodes_at(grep.root(), &nodes[index])
                    .into_iter()
                    .find_map(|node| op.pattern.match_node(node))
                    .ok_or_else(|| {
                        format!(
                            "In {shown}, {} no longer matches once the matches nested in it \
                             are rewritten; \
                             nothing was changed. Run the nested and the outer rewrite as \
                             separate ast_edit calls.",
                            describe(&found[index].edit)
                        )
                    })?;
                let (range, rewritten) = edit_for(&again, op, keep_trailing)
                    .map_err(|error| format!("{shown}: {error}"))?;
                edits[index] = range;
                found[index].edit.text = rewritten;
            }
        }
        // This level's edits, back to front, and every range of a later level shifted by them.
        let mut applied: Vec<(Range<usize>, isize)> = Vec::with_capacity(members.len());
        for &index in members.iter().rev() {
            let range = edits[index].clone();
            let new = &found[index].edit.text;
            text.replace_range(range.clone(), new);
            applied.push((range.clone(), new.len() as isize - range.len() as isize));
        }
        for index in (0..found.len()).filter(|&i| height[i] > level) {
            edits[index] = shifted(&edits[index], &applied);
            nodes[index] = shifted(&nodes[index], &applied);
        }
    }
    Ok(())
}

/// Each match's closest enclosing match (`found` sorted outer first); an error for two
/// matches on the same text or overlapping without one holding the other.
fn containment(
    shown: &str,
    found: &[Found],
    describe: &dyn Fn(&Replacement) -> String,
) -> Result<Vec<Option<usize>>, String> {
    let mut parents = Vec::with_capacity(found.len());
    let mut open: Vec<usize> = Vec::new();
    for (index, current) in found.iter().enumerate() {
        let edit = &current.edit;
        while open
            .last()
            .is_some_and(|&outer| found[outer].edit.end <= edit.start)
        {
            open.pop();
        }
        let parent = open.last().copied();
        if let Some(outer) = parent {
            let outer = &found[outer].edit;
            let same = outer.start == edit.start && outer.end == edit.end;
            if same || edit.end > outer.end {
                return Err(format!(
                    "Overlapping edits in {shown}: {} and {}; nothing was changed. Narrow the \
                     patterns or run them as separate ast_edit calls.",
                    describe(outer),
                    describe(edit)
                ));
            }
        }
        parents.push(parent);
        open.push(index);
    }
    Ok(parents)
}

/// `range` after the edits `applied` (each: the replaced range, and the change in length).
/// An edit ending at or before a position moves it; the edits of one level never straddle a
/// range of a later level (they are nested in it or apart from it).
fn shifted(range: &Range<usize>, applied: &[(Range<usize>, isize)]) -> Range<usize> {
    let at = |position: usize| {
        let delta: isize = applied
            .iter()
            .filter(|(edit, _)| edit.end <= position)
            .map(|(_, delta)| delta)
            .sum();
        position.saturating_add_signed(delta)
    };
    at(range.start)..at(range.end)
}

/// The nodes whose range is exactly `range`, outermost first.
fn nodes_at<'t>(root: Node<'t, StrDoc<Lang>>, range: &Range<usize>) -> Vec<Node<'t, StrDoc<Lang>>> {
    let mut at = Vec::new();
    let mut node = root;
    loop {
        if node.range() == *range {
            at.push(node.clone());
        }
        let Some(child) = node
            .children()
            .find(|child| child.range().start <= range.start && range.end <= child.range().end)
        else {
            return at;
        };
        node = child;
    }
}
