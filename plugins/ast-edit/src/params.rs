//! `ast_edit`'s arguments: the serde + schemars type the session validates calls against, and
//! the checks whose exact messages xcsh's own `ast_edit` gives. The schema is kept loose on
//! purpose (no `minItems`, no `minimum`) so those cases reach [`check`] and get its wording.

use crate::lang::Lang;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::lang;

/// The arguments of `ast_edit`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AstEditParams {
    /// Rewrite ops as `[{ "pat": ..., "out": ... }]`. Every op is matched against the original
    /// text; metavariables captured by `pat` (`$A`, `$$$ARGS`) may be used in `out`.
    pub ops: Vec<RewriteOp>,
    /// Language of the patterns: any language name or alias ast-grep accepts (rust, rs,
    /// typescript, ts, go, golang, cpp, c++, csharp, cs, ...) whose grammar is in this build.
    /// Default: inferred for each file from its extension.
    pub lang: Option<String>,
    /// File, directory, glob (`src/**/*.ts`, `packages/pkg-*/src`), or a list of these separated
    /// by commas or spaces, relative to the working directory. `/` and absolute paths are taken
    /// inside the session's root. Default: the working directory.
    pub path: Option<String>,
    /// Only files matching this glob: `*.ts` matches file names at any depth, a glob with a `/`
    /// matches the path relative to each searched directory.
    pub glob: Option<String>,
    /// Contextual selector: `pat` is parsed as context and the node of this kind inside it is
    /// the pattern (for fragments that do not parse alone, e.g. `pat: "class A { $F = $V }"`,
    /// `sel: "public_field_definition"`).
    pub sel: Option<String>,
    /// Maximum number of replacements (positive). Files are taken in path order.
    pub limit: Option<f64>,
    /// Push one pending action per file instead of one for the whole preview; `resolve` then
    /// takes them in path order.
    pub per_file: Option<bool>,
    /// Keep what a matched node has after the pattern's last token instead of replacing it
    /// with the node: `const $A = require($M)` → `import $A from $M` then keeps each
    /// statement's `;`. Default false: the whole node is replaced, as xcsh's own `ast_edit`
    /// does.
    pub keep_trailing: Option<bool>,
}

/// One rewrite: structural pattern and replacement template.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RewriteOp {
    /// AST pattern to match.
    pub pat: String,
    /// Replacement template.
    pub out: String,
}

/// Arguments after the checks of xcsh's own `ast_edit`.
#[derive(Debug, Clone)]
pub struct Checked {
    /// `(pat, out)` pairs, in the order given.
    pub ops: Vec<(String, String)>,
    /// The explicit language, if any.
    pub lang: Option<Lang>,
    /// The raw `path` argument, if non-blank.
    pub path: Option<String>,
    /// The `glob` filter, if non-blank.
    pub glob: Option<String>,
    /// The contextual selector, if non-blank.
    pub sel: Option<String>,
    /// The replacement cap.
    pub limit: Option<usize>,
    /// One pending action per file.
    pub per_file: bool,
    /// Keep what follows the pattern's extent in a matched node.
    pub keep_trailing: bool,
}

fn non_blank(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Run the checks xcsh's own `ast_edit` runs, in the order the original tool ran them.
pub fn check(params: AstEditParams) -> Result<Checked, String> {
    if params.ops.is_empty() {
        return Err("`ops` must include at least one op entry".to_owned());
    }
    let mut ops: Vec<(String, String)> = Vec::with_capacity(params.ops.len());
    for (index, op) in params.ops.into_iter().enumerate() {
        if op.pat.trim().is_empty() {
            return Err(format!("`ops[{index}].pat` must be a non-empty pattern"));
        }
        ops.push((op.pat, op.out));
    }
    for (index, (pat, _)) in ops.iter().enumerate() {
        if ops[..index].iter().any(|(seen, _)| seen == pat) {
            return Err(format!("Duplicate rewrite pattern: {pat}"));
        }
    }
    let limit = match params.limit {
        None => None,
        Some(raw) if raw.is_finite() && raw.floor() >= 1.0 => Some(raw.floor() as usize),
        Some(_) => return Err("limit must be a positive number".to_owned()),
    };
    let lang = non_blank(params.lang)
        .map(|l| lang::parse(&l))
        .transpose()?;
    Ok(Checked {
        ops,
        lang,
        path: non_blank(params.path),
        glob: non_blank(params.glob),
        sel: non_blank(params.sel),
        limit,
        per_file: params.per_file.unwrap_or(false),
        keep_trailing: params.keep_trailing.unwrap_or(false),
    })
}
