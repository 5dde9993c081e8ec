//! Test fixture: `journal_preview` pushes one pending action per call whose `apply` and
//! `reject` each append a line (`applied {entry}: {reason}` or `rejected {entry}: {reason}`)
//! to a journal file in the session's directory, so a test reads back exactly which callback
//! ran, how often, and in which order. It logs each preview through the host's logger.

#![deny(unsafe_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

use xcsh_plugin_api::*;

tool_params! {
    /// What to journal.
    pub struct Params {
        /// The journal file, relative to the session's working directory.
        pub journal: String,
        /// The entry this preview stands for.
        pub entry: String,
    }
}

/// Append `line` to the journal.
fn append(path: &Path, line: &str) -> Result<(), PluginError> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(file, "{line}")?;
    Ok(())
}

/// The deferrable tool.
struct JournalPreview {
    api: CustomToolApi,
}

impl FromApi for JournalPreview {
    fn from_api(api: &CustomToolApi) -> Result<Self, PluginError> {
        Ok(Self { api: api.clone() })
    }
}

impl CustomTool for JournalPreview {
    type Params = Params;
    fn name(&self) -> &str {
        "journal_preview"
    }
    fn label(&self) -> &str {
        "Journal Preview"
    }
    fn description(&self) -> &str {
        "Previews a journal entry; apply and reject each append a line to the journal"
    }
    fn deferrable(&self) -> bool {
        true
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let journal: PathBuf = self.api.resolve_path(&params.journal);
        let for_reject = journal.clone();
        let (entry, rejected_entry) = (params.entry.clone(), params.entry.clone());
        self.api
            .logger()
            .info(format!("journal preview of {}", params.entry));
        self.api.push_pending_action(
            CustomToolPendingAction::new(
                format!("Journal: {}", params.entry),
                move |reason| async move {
                    append(&journal, &format!("applied {entry}: {reason}"))?;
                    Ok(AgentToolResult::text(format!("journaled {entry}")))
                },
            )
            .with_reject(move |reason| async move {
                append(&for_reject, &format!("rejected {rejected_entry}: {reason}"))?;
                Ok(Some(AgentToolResult::text(format!(
                    "dropped {rejected_entry}"
                ))))
            })
            .with_details(json!({ "entry": params.entry }))
            .with_source_tool_name("journal_preview"),
        )?;
        Ok(AgentToolResult::text(format!("previewed {}", params.entry)))
    }
}

export_plugin!(tools: [JournalPreview]);
