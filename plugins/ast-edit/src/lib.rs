//! The `ast_edit` tool (docs/guide/src/ast-edit.md): structural search-and-replace over source
//! files with `ast-grep-core` and tree-sitter grammars, as a deferrable producer. `execute` only
//! previews; with replacements it pushes one pending action whose `apply` writes exactly what was
//! previewed.
//!
//! It is written against `xcsh-plugin-api` like any plugin ([`AstEditTool`] implements
//! [`CustomTool`]), so the command-line host compiles it in through the same ABI types a loaded
//! plugin uses (`xcsh-loader`'s `ast-edit` feature), and an embedder can do the same.
//!
//! Flow: `params` checks the arguments, `walk` lists the files, `search` matches them in
//! parallel, `preview` renders the result, and `apply` writes the plan when `resolve` applies.

#![deny(unsafe_code)]

mod apply;
mod lang;
mod nested;
mod params;
mod preview;
mod search;
mod walk;

#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::{Arc, LazyLock, OnceLock};

use serde_json::Value;
use xcsh_plugin_api::__private::PluginFactory;
use xcsh_plugin_api::view::View;
use xcsh_plugin_api::{
    AgentToolResult, CustomTool, CustomToolApi, CustomToolPendingAction, PluginError, ToolContext,
    ToolSet, STORE_UNAVAILABLE,
};

pub use params::{AstEditParams, RewriteOp};

use apply::{Plan, PlannedFile};
use params::Checked;
use preview::{Shown, Summary};
use search::Outcome;

/// The tool's name (also the `source_tool_name` of its pending actions).
pub const AST_EDIT_TOOL_NAME: &str = "ast_edit";
/// The tool's label.
pub const AST_EDIT_TOOL_LABEL: &str = "AST Edit";

/// The description for the model, naming the languages of this build.
fn description() -> &'static str {
    static DESCRIPTION: LazyLock<String> = LazyLock::new(|| {
        format!(
            "\
Structural (AST-aware) search and replace with ast-grep patterns. Always previews first: the \
result lists every replacement with file, line and column, and nothing is written until the \
pending preview is applied with the `resolve` tool.
- `ops`: [{{\"pat\": \"oldApi($$$ARGS)\", \"out\": \"newApi($$$ARGS)\"}}]; metavariables \
captured in `pat` ($A, $$$ARGS) can be used in `out`. All ops match the original text; a \
match replaces its whole node (a statement's `;` too). A match nested in another \
(a.unwrap().unwrap()) is rewritten too, the inner first.
- `lang`: one of {langs} (ast-grep's aliases such as ts, py, rs, golang, c++, kt, yml work \
too); default: inferred per file from its extension as ast-grep does. Set it in mixed trees.
- `path`: file, directory, glob (src/**/*.ts, /repo/packages/pkg-*/src), or a list separated \
by commas or spaces (apps/ packages/); default: the working directory. `/` and absolute paths \
are taken inside the session's root (`/` is the root itself). `.gitignore` is respected, \
`.git` and `node_modules` are never searched; binary and very large files are skipped.
- `glob`: filter such as *.ts or **/*.ts; `sel`: contextual selector (node kind) for fragments \
that only parse inside a context; `limit`: maximum number of replacements.
- `per_file`: true pushes one pending action per file (resolved in path order), so each file \
can be applied or discarded on its own. `keep_trailing`: true keeps what a matched node has \
after the pattern's last token (a statement's `;`).
Treat parse issues as a scoping signal: narrow `path` or set `lang`.",
            langs = lang::enabled_names()
        )
    });
    &DESCRIPTION
}

/// The `ast_edit` tool, bound to one session's [`CustomToolApi`].
#[derive(Debug)]
pub struct AstEditTool {
    api: CustomToolApi,
}

impl AstEditTool {
    /// The tool for the session behind `api`.
    pub fn new(api: &CustomToolApi) -> Self {
        Self { api: api.clone() }
    }
}

/// The plugin factory: the one tool, `ast_edit`.
pub fn factory(api: &CustomToolApi) -> Result<AstEditTool, PluginError> {
    Ok(AstEditTool::new(api))
}

/// The factory as a type, for hosts that compile the tool in and instantiate it through the
/// plugin ABI (what `export_plugin!` generates for a shared library, without the exported
/// symbol, so several built-ins can live in one binary).
#[derive(Debug)]
pub struct AstEditPlugin;

impl PluginFactory for AstEditPlugin {
    fn create(api: &CustomToolApi) -> Result<ToolSet, PluginError> {
        factory(api).map(ToolSet::from)
    }
}

/// Cancellation as the blocking search sees it: the call's context, shared with its thread.
#[derive(Clone)]
pub(crate) struct CancelToken(Option<Arc<ToolContext>>);

impl CancelToken {
    /// Whether the host cancelled the call.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|ctx| ctx.is_cancelled())
    }
}

/// The preview of one call and, when it has replacements, the plan its `apply` writes.
struct Previewed {
    text: String,
    view: View,
    details: Value,
    label: String,
    plan: Plan,
}

fn run_preview(cwd: &Path, checked: Checked, cancel: &CancelToken) -> Result<Previewed, String> {
    let root = cwd.to_path_buf();
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
    let (mut compiled, mut issues) = search::compile(
        &checked.ops,
        checked.sel.as_deref(),
        &langs,
        checked.lang.is_some(),
    )?;
    compiled.keep_trailing = checked.keep_trailing;
    issues.extend(found.problems.iter().cloned());
    let shown: Vec<String> = found
        .files
        .iter()
        .map(|c| walk::display(&found.base, &c.path))
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
        scope: found.entries.join(", "),
    };
    let (text, details, label) = (summary.text(), summary.details(), summary.label());
    let view = summary.view(preview::describe_ops(&checked.ops));
    Ok(Previewed {
        text,
        view,
        details,
        label,
        plan: Plan {
            cwd: root,
            files: touched,
        },
    })
}

/// Keep the first `limit` replacements in path-then-position order; true when some were cut.
/// An outer replacement and those nested in it are kept or cut together (its text holds
/// theirs), so fewer than `limit` may be kept.
fn apply_limit(files: &mut Vec<PlannedFile>, limit: Option<usize>) -> bool {
    let Some(limit) = limit else {
        return false;
    };
    let mut left = limit;
    let mut cut = false;
    for file in files.iter_mut() {
        let replacements = &mut file.edits.replacements;
        if replacements.len() > left {
            // Back to the start of the group the cut falls in.
            let mut keep = left;
            while keep > 0 && replacements.get(keep).is_some_and(|r| r.nested) {
                keep -= 1;
            }
            replacements.truncate(keep);
            cut = true;
            left = 0;
            continue;
        }
        left -= replacements.len();
    }
    files.retain(|f| !f.edits.replacements.is_empty());
    cut
}

/// Appended to the preview when the runtime has no pending-action store.
pub const NO_STORE_NOTE: &str = "Note: this runtime has no pending-action store, so this preview \
cannot be applied here; nothing was written.";

/// The pending action that writes `plan` when `resolve` applies it.
fn pending_action(label: String, details: Value, plan: Plan) -> CustomToolPendingAction {
    let plan = Arc::new(plan);
    CustomToolPendingAction::new(label, move |_reason| async move {
        let checking = Arc::clone(&plan);
        let changes = blocking(move || apply::prepare_changes(&checking)).await?;
        apply::commit(&plan, changes)
            .await
            .map_err(PluginError::new)
    })
    .with_source_tool_name(AST_EDIT_TOOL_NAME)
    .with_details(details)
}

/// One action per file, labelled with the file and its count, in reverse path order so that
/// `resolve` (newest first) takes them in path order.
fn per_file_actions(plan: Plan) -> Vec<CustomToolPendingAction> {
    plan.files
        .into_iter()
        .rev()
        .map(|file| {
            let n = file.edits.replacements.len();
            let label = format!(
                "AST Edit: {} in {}",
                preview::count(n, "replacement"),
                file.display
            );
            let details = serde_json::json!({
                "totalReplacements": n,
                "filesTouched": 1,
                "applied": false,
                "perFile": true,
                "fileReplacements": [{"path": file.display, "count": n}],
            });
            let cwd = plan.cwd.clone();
            pending_action(
                label,
                details,
                Plan {
                    cwd,
                    files: vec![file],
                },
            )
        })
        .collect()
}

/// Run `work`, turning a panic into an error instead of letting it unwind.
fn guarded<T>(work: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        Err(format!(
            "ast_edit failed internally: {}",
            xcsh_plugin_api::panic_text(&*panic)
        ))
    })
}

/// Run blocking work off the async runtime (inline when there is none), turning a panic into
/// an error instead of letting it unwind.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, PluginError> {
    let guarded = move || guarded(work);
    let result = match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(guarded)
            .await
            .map_err(|error| PluginError::new(format!("ast_edit failed internally: {error}")))?,
        Err(_) => guarded(),
    };
    result.map_err(PluginError::new)
}

impl CustomTool for AstEditTool {
    type Params = AstEditParams;

    fn name(&self) -> &str {
        AST_EDIT_TOOL_NAME
    }

    fn label(&self) -> &str {
        AST_EDIT_TOOL_LABEL
    }

    fn description(&self) -> &str {
        description()
    }

    fn deferrable(&self) -> bool {
        true
    }

    /// While it runs, as the runtime's own `ast_edit` shows a call: the (first) pattern, and
    /// where it looks.
    fn call_view(&self) -> Option<xcsh_plugin_api::view::CallView> {
        Some(
            xcsh_plugin_api::view::CallView::new("AST Edit")
                .description("{ops.0.pat}")
                .meta("in {path}"),
        )
    }

    async fn execute(
        &self,
        _tool_call_id: String,
        params: AstEditParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let checked = params::check(params).map_err(PluginError::new)?;
        let per_file = checked.per_file;
        let cwd = self.api.cwd().to_owned();
        let cancel = CancelToken(Some(Arc::new(ctx)));
        // Inline, not `blocking`: a host polls each call on a thread of its own (the loader's
        // `offload`), and the walk and the search watch `cancel`. A second thread here cost a
        // one-file preview about a tenth of its run (issue 53).
        let previewed =
            guarded(|| run_preview(&cwd, checked, &cancel)).map_err(PluginError::new)?;
        let Previewed {
            text,
            view,
            details,
            label,
            plan,
        } = previewed;
        if plan.files.is_empty() {
            return Ok(AgentToolResult::text(text)
                .with_details(details)
                .with_view(view));
        }
        let actions = if per_file && plan.files.len() > 1 {
            per_file_actions(plan)
        } else {
            vec![pending_action(label, details.clone(), plan)]
        };
        for action in actions {
            match self.api.push_pending_action(action) {
                Ok(()) => {}
                Err(error) if error.message() == STORE_UNAVAILABLE => {
                    let text = format!("{text}\n\n{NO_STORE_NOTE}");
                    return Ok(AgentToolResult::text(text).with_details(details));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(AgentToolResult::text(text)
            .with_details(details)
            .with_view(view))
    }
}

/// How many threads a walk, a search or an apply may use: the machine's available parallelism,
/// asked once per process. On Linux, `available_parallelism` reads the process's cgroup files
/// each time it is called; asked three times, that was about 4 % of a one-file preview's whole
/// run (issue 53).
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(2, std::num::NonZero::get))
}
