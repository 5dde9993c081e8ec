//! The built-in `ast_edit` tool (SPEC 5): structural search-and-replace over source files with
//! `ast-grep-core` and tree-sitter grammars, as a deferrable producer. `execute` only previews;
//! with replacements it pushes one pending action whose `apply` writes exactly what was
//! previewed. Compiled only with the `ast-edit` cargo feature (on by default).
//!
//! Flow: `params` checks the arguments, `walk` lists the files, `search` matches them in
//! parallel, `preview` renders the result, and `apply` writes the plan when `resolve` applies.

mod apply;
mod lang;
mod params;
mod preview;
mod search;
mod walk;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

use crate::messages::STORE_UNAVAILABLE;
use crate::store::{BoxFuture, PendingAction};
use crate::tool::{CallContext, CancelToken, Tool, ToolError, ToolHints, ToolOrigin, ToolSpec};

pub use params::{AstEditParams, RewriteOp};

use apply::{Plan, PlannedFile};
use params::Checked;
use preview::{Shown, Summary};
use search::Outcome;

/// The tool's name.
pub const AST_EDIT_TOOL_NAME: &str = "ast_edit";
/// The tool's label.
pub const AST_EDIT_TOOL_LABEL: &str = "AST Edit";

const DESCRIPTION: &str = "\
Structural (AST-aware) search and replace with ast-grep patterns. Always previews first: the \
result lists every replacement with file, line and column, and nothing is written until the \
pending preview is applied with the `resolve` tool.
- `ops`: [{\"pat\": \"oldApi($$$ARGS)\", \"out\": \"newApi($$$ARGS)\"}]; metavariables captured \
in `pat` ($A, $$$ARGS) can be used in `out`. All ops match the original text.
- `lang`: rust, typescript, tsx, javascript or python; default: inferred per file from its \
extension. Set it in mixed trees.
- `path`: file, directory, glob (src/**/*.ts) or comma-separated list; default: the working \
directory. `.gitignore` is respected; hidden, binary and very large files are skipped.
- `glob`: filter such as *.ts; `sel`: contextual selector (node kind) for fragments that only \
parse inside a context; `limit`: maximum number of replacements.
Treat parse issues as a scoping signal: narrow `path` or set `lang`.";

/// The `ast_edit` tool.
pub struct AstEditTool {
    spec: ToolSpec,
}

impl std::fmt::Debug for AstEditTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AstEditTool").finish_non_exhaustive()
    }
}

impl Default for AstEditTool {
    fn default() -> Self {
        Self::new()
    }
}

impl AstEditTool {
    /// The tool, with its spec (builtin, deferrable).
    pub fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: AST_EDIT_TOOL_NAME.to_owned(),
                label: AST_EDIT_TOOL_LABEL.to_owned(),
                description: DESCRIPTION.to_owned(),
                parameters: xcsh_plugin_api::schema_of::<AstEditParams>(),
                hidden: false,
                deferrable: true,
                hints: ToolHints::PREVIEW,
                origin: ToolOrigin::Builtin,
            },
        }
    }
}

/// The built-in `ast_edit` tool, ready for [`crate::SessionBuilder::builtin`].
pub fn ast_edit_tool() -> Arc<dyn Tool> {
    Arc::new(AstEditTool::new())
}

/// The preview of one call and, when it has replacements, the plan its `apply` writes.
struct Previewed {
    text: String,
    details: Value,
    label: String,
    plan: Plan,
}

fn run_preview(cwd: &Path, checked: Checked, cancel: &CancelToken) -> Result<Previewed, String> {
    let found = walk::find_files(
        cwd,
        checked.path.as_deref(),
        checked.glob.as_deref(),
        checked.lang,
        cancel,
    )?;
    let mut langs: Vec<_> = match checked.lang {
        Some(lang) => vec![lang],
        None => found.files.iter().map(|c| c.lang).collect(),
    };
    langs.sort_by_key(|&l| lang::name(l));
    langs.dedup();
    let (compiled, mut issues) = search::compile(
        &checked.ops,
        checked.sel.as_deref(),
        &langs,
        checked.lang.is_some(),
    )?;
    issues.extend(found.problems.iter().cloned());
    let shown: Vec<String> = found
        .files
        .iter()
        .map(|c| walk::display(cwd, &c.path))
        .collect();
    let outcomes = search::search_all(&found.files, &shown, &compiled, cancel)
        .ok_or_else(|| "ast_edit was cancelled".to_owned())?;
    let mut touched = Vec::new();
    for (outcome, display) in outcomes.into_iter().zip(shown) {
        match outcome {
            Outcome::Nothing => {}
            Outcome::Issue(issue) => issues.push(issue),
            Outcome::Overlap(message) => return Err(message),
            Outcome::Edits(edits) => touched.push(PlannedFile { display, edits }),
        }
    }
    let limit_reached = apply_limit(&mut touched, checked.limit);
    let summary = Summary {
        files: touched
            .iter()
            .map(|f| Shown {
                display: &f.display,
                edits: &f.edits,
            })
            .collect(),
        files_searched: found.files.len(),
        files_skipped: found.skipped,
        limit_reached,
        issues: &issues,
        single_file: found.single_file,
        scope: checked.path.as_deref().unwrap_or("."),
    };
    let (text, details, label) = (summary.text(), summary.details(), summary.label());
    Ok(Previewed {
        text,
        details,
        label,
        plan: Plan { files: touched },
    })
}

/// Keep the first `limit` replacements in path-then-position order; true when some were cut.
fn apply_limit(files: &mut Vec<PlannedFile>, limit: Option<usize>) -> bool {
    let Some(limit) = limit else {
        return false;
    };
    let mut left = limit;
    let mut cut = false;
    for file in files.iter_mut() {
        let replacements = &mut file.edits.replacements;
        if replacements.len() > left {
            replacements.truncate(left);
            cut = true;
        }
        left -= replacements.len();
    }
    files.retain(|f| !f.edits.replacements.is_empty());
    cut
}

/// Run blocking work off the async runtime (inline when there is none), turning a panic into
/// an error instead of letting it unwind into the host.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, ToolError> {
    let guarded = move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(format!("ast_edit failed internally: {message}"))
        })
    };
    let result = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(guarded)
            .await
            .map_err(|error| ToolError::new(format!("ast_edit failed internally: {error}")))?,
        Err(_) => guarded(),
    };
    result.map_err(ToolError::new)
}

impl Tool for AstEditTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execute(
        &self,
        _tool_call_id: String,
        arguments: Value,
        ctx: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, ToolError>> {
        Box::pin(async move {
            let params: AstEditParams = serde_json::from_value(arguments).map_err(|error| {
                ToolError::new(format!(
                    "Invalid arguments for tool \"{AST_EDIT_TOOL_NAME}\": {error}"
                ))
            })?;
            let checked = params::check(params).map_err(ToolError::new)?;
            let (cwd, cancel) = (ctx.cwd.clone(), ctx.cancel.clone());
            let previewed = blocking(move || run_preview(&cwd, checked, &cancel)).await?;
            let Previewed {
                text,
                details,
                label,
                plan,
            } = previewed;
            if plan.files.is_empty() {
                return Ok(AgentToolResult::text(text).with_details(details));
            }
            let Some(store) = ctx.store else {
                return Err(ToolError::new(STORE_UNAVAILABLE));
            };
            let action = PendingAction::new(
                label,
                AST_EDIT_TOOL_NAME,
                Box::new(move |_reason| Box::pin(blocking(move || apply::apply(&plan)))),
            )
            .with_details(Some(details.clone()));
            store.push(action);
            Ok(AgentToolResult::text(text).with_details(details))
        })
    }
}
