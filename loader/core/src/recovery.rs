//! Before a session runs any tool: finish or undo the applies a killed process left in the
//! working directory's `.xcsh/apply-journal/` (see `xcsh_plugin_api::files`). A plugin's
//! staged file changes and the built-in `ast_edit` journal their commits there, so whichever
//! host comes next (the CLI, the MCP server, the Node binding) settles them, and the tree is
//! entirely as it was or entirely as previewed before anything reads it.

use std::path::Path;

use xcsh_plugin_api::files::{recover, Recovered, RecoveryOutcome};

/// The log target recovery writes under: the one it had as `session::recovery`, so the
/// filters users and hosts set (`xcsh_loader::session=info`, the CLI's default) still show it.
const LOG_TARGET: &str = "xcsh_loader::session::recovery";

/// Recover `cwd`'s interrupted applies, each one told in the log (a warning: the user's files
/// were changed, or could not be).
pub(crate) fn recover_interrupted_applies(cwd: &Path) -> Vec<Recovered> {
    match recover(cwd) {
        Ok(recovered) => {
            for commit in &recovered {
                match commit.outcome {
                    RecoveryOutcome::Discarded => tracing::info!(target: LOG_TARGET, "{commit}"),
                    _ => tracing::warn!(target: LOG_TARGET, "{commit}"),
                }
            }
            recovered
        }
        Err(error) => {
            tracing::warn!(
                target: LOG_TARGET,
                "cannot check {} for interrupted applies: {error}",
                cwd.join(xcsh_plugin_api::files::JOURNAL_DIR).display()
            );
            Vec::new()
        }
    }
}
