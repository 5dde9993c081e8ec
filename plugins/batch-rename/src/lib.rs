//! Sample plugin: the seed's `batch_rename_preview`, made real.
//!
//! `execute` renames nothing: it computes the plan, pushes a pending action, and returns the
//! plan. `apply` re-checks the plan against the disk (every source still there, no target
//! taken) and renames all or nothing through the API's staged file changes, so neither a
//! stale preview nor an interrupted apply (cancelled, or killed mid-batch and recovered by the
//! next session) leaves some files renamed and others not.

#![deny(unsafe_code)]

use std::path::PathBuf;

use xcsh_plugin_api::view::{Block, CallView, Role, State, View};
use xcsh_plugin_api::*;

tool_params! {
    /// The tool's parameters.
    pub struct Params {
        /// Files to rename, relative to the session's working directory.
        pub files: Vec<String>,
        /// Text to find in each file name.
        pub find: String,
        /// Replacement text.
        pub replace: String,
    }
}

/// One planned rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// As given by the model.
    pub from: String,
    /// The new relative path.
    pub to: String,
}

/// The planned renames: `find` replaced in each file's name (not its directory).
pub fn plan(params: &Params) -> Result<Vec<Rename>, PluginError> {
    if params.find.is_empty() {
        return Err(PluginError::new("`find` must not be empty"));
    }
    let mut renames = Vec::with_capacity(params.files.len());
    for file in &params.files {
        let path = PathBuf::from(file);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| PluginError::new(format!("not a file path: {file}")))?;
        let new_name = name.replace(&params.find, &params.replace);
        if new_name.is_empty() || new_name.contains('/') {
            return Err(PluginError::new(format!(
                "{file}: renaming would give an invalid name {new_name:?}"
            )));
        }
        let to = path.with_file_name(new_name);
        renames.push(Rename {
            from: file.clone(),
            to: to.to_string_lossy().into_owned(),
        });
    }
    Ok(renames)
}

/// Rename every file of the plan, or none: the plan is checked against the disk as a whole
/// (every source still there, no target taken, no target twice), then committed through
/// [`files::FileChanges`], so an interrupted apply (cancelled, killed mid-batch) is undone or
/// finished as a whole, by this call or by the next session's recovery.
pub async fn apply_plan(cwd: &std::path::Path, renames: &[Rename]) -> Result<(), PluginError> {
    let mut changes = files::FileChanges::new(cwd);
    for rename in renames.iter().filter(|r| r.from != r.to) {
        changes.rename(&rename.from, &rename.to);
    }
    changes.commit().await?;
    Ok(())
}

/// Above this many files the tool asks the user before it plans anything, when someone can
/// answer (`ctx.ui().has_ui()`); where no one can, it plans as always.
pub const CONFIRM_ABOVE: usize = 20;

/// The `batch_rename_preview` tool.
#[derive(Default)]
pub struct BatchRenamePreview;

impl CustomTool for BatchRenamePreview {
    type Params = Params;

    fn name(&self) -> &str {
        "batch_rename_preview"
    }
    fn label(&self) -> &str {
        "Batch Rename Preview"
    }
    fn description(&self) -> &str {
        "Previews renaming files (replacing `find` with `replace` in each name) and defers the \
         renames to resolve"
    }
    fn deferrable(&self) -> bool {
        true
    }

    /// While it runs: what it renames, and how many files.
    fn call_view(&self) -> Option<CallView> {
        Some(
            CallView::new("Batch Rename")
                .description("{find} → {replace}")
                .meta("{files#} files"),
        )
    }

    async fn execute(
        &self,
        _tool_call_id: String,
        params: Params,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let renames = plan(&params)?;
        let n = renames.len();
        if n > CONFIRM_ABOVE && ctx.ui().has_ui() {
            let question = format!(
                "Plan renaming {n} files (\"{}\" -> \"{}\")?",
                params.find, params.replace
            );
            if !ctx.ui().confirm("Batch rename", question).await? {
                return Ok(AgentToolResult::text(format!(
                    "The user declined renaming {n} files; nothing was planned."
                )));
            }
        }
        let cwd = std::sync::Arc::new(ctx.cwd().to_owned());
        let mut text = format!("Prepared rename plan for {n} files");
        for rename in &renames {
            text.push_str(&format!("\n{} -> {}", rename.from, rename.to));
        }
        let view = plan_view(&params, &renames);
        let renames = std::sync::Arc::new(renames);
        ctx.push_pending_action(
            // Retryable: `apply_plan` checks the whole plan before renaming anything, so after
            // a failure (a source deleted meanwhile) the model may fix the cause and apply again.
            CustomToolPendingAction::retryable(format!("Batch rename: {n} files"), move |reason| {
                let (cwd, renames) = (cwd.clone(), renames.clone());
                async move {
                    apply_plan(&cwd, &renames).await?;
                    Ok(AgentToolResult::text(format!(
                        "Applied batch rename. Reason: {reason}"
                    )))
                }
            })
            .with_reject(|reason| async move {
                Ok(Some(AgentToolResult::text(format!(
                    "Discarded batch rename. Reason: {reason}"
                ))))
            })
            .with_source_tool_name("batch_rename_preview"),
        )?;
        Ok(AgentToolResult::text(text).with_view(view))
    }
}

/// How many renames the preview shows before it is expanded.
const SHOWN_COLLAPSED: usize = 5;

/// How the preview looks where a host draws it: the plan as a table of old and new names, the
/// first few until the user expands it.
fn plan_view(params: &Params, renames: &[Rename]) -> View {
    let row = |r: &Rename| vec![r.from.clone(), r.to.clone()];
    let table = |rows: &[Rename]| Block::Table {
        columns: vec!["from".to_owned(), "to".to_owned()],
        rows: rows.iter().map(row).collect(),
        omitted: 0,
    };
    let shown = &renames[..renames.len().min(SHOWN_COLLAPSED)];
    let mut collapsed = vec![table(shown)];
    if renames.len() > shown.len() {
        collapsed.push(Block::line(
            format!("… {} more renames", renames.len() - shown.len()),
            Role::Muted,
        ));
    }
    View::status(State::Pending, "Batch Rename")
        .description(format!("{} → {}", params.find, params.replace))
        .badge("proposed", Role::Warning)
        .meta(format!("{} files", renames.len()))
        .block(Block::section(collapsed, [table(renames)]))
}

export_plugin!(tools: [BatchRenamePreview]);

#[cfg(test)]
mod tests {
    use super::*;

    fn params(files: &[&str]) -> Params {
        Params {
            files: files.iter().map(|f| (*f).to_owned()).collect(),
            find: "a".into(),
            replace: "b".into(),
        }
    }

    use xcsh_plugin_api::host::HostRequest;
    use xcsh_plugin_api::testing::{Answer, PluginTest, TestError};

    fn files(dir: &std::path::Path, names: &[&str]) {
        for name in names {
            std::fs::write(dir.join(name), name).unwrap();
        }
    }

    fn args() -> Value {
        json!({"files": ["a1.txt", "a2.txt"], "find": "a", "replace": "b"})
    }

    #[tokio::test]
    async fn previews_then_applies_through_the_harness() {
        let test = PluginTest::new(tools![BatchRenamePreview]);
        files(test.working_dir(), &["a1.txt", "a2.txt"]);
        let outcome = test.call("batch_rename_preview", args()).await.unwrap();
        assert_eq!(
            outcome.text(),
            "Prepared rename plan for 2 files\na1.txt -> b1.txt\na2.txt -> b2.txt"
        );
        let view = outcome.result().view.clone().expect("the preview's view");
        let status = view.status.as_ref().unwrap();
        assert_eq!(
            (status.title.as_str(), status.meta.as_slice()),
            ("Batch Rename", ["2 files".to_owned()].as_slice())
        );
        let Block::Section { expanded, .. } = &view.blocks[0] else {
            panic!("{view:?}")
        };
        assert_eq!(
            expanded[0],
            Block::Table {
                columns: vec!["from".into(), "to".into()],
                rows: vec![
                    vec!["a1.txt".into(), "b1.txt".into()],
                    vec!["a2.txt".into(), "b2.txt".into()]
                ],
                omitted: 0,
            }
        );
        let pending = test.pending();
        assert_eq!(pending[0].label, "Batch rename: 2 files");
        assert_eq!(pending[0].source_tool_name, "batch_rename_preview");
        assert!(
            test.working_dir().join("a1.txt").exists(),
            "nothing renamed yet"
        );

        let applied = test.apply_newest("ok").await.unwrap();
        assert_eq!(applied.joined_text(), "Applied batch rename. Reason: ok");
        assert!(test.working_dir().join("b1.txt").exists());
        assert!(test.working_dir().join("b2.txt").exists());
    }

    /// `CONFIRM_ABOVE + 1` file names and the arguments renaming them.
    fn many() -> (Vec<String>, Value) {
        let names: Vec<String> = (0..=CONFIRM_ABOVE).map(|i| format!("a{i}.txt")).collect();
        let args = json!({"files": names, "find": "a", "replace": "b"});
        (names, args)
    }

    #[tokio::test]
    async fn many_files_ask_first_and_a_no_plans_nothing() {
        let (names, many_args) = many();
        let test = PluginTest::new(tools![BatchRenamePreview])
            .with_ui([Answer::Confirm(false), Answer::Confirm(true)]);
        let outcome = test
            .call("batch_rename_preview", many_args.clone())
            .await
            .unwrap();
        assert_eq!(
            outcome.text(),
            format!(
                "The user declined renaming {} files; nothing was planned.",
                names.len()
            )
        );
        assert!(test.pending().is_empty());
        let asked = test.asked();
        assert!(
            matches!(&asked[0], HostRequest::Confirm { title, message }
                if title == "Batch rename" && message.starts_with(&format!("Plan renaming {} files", names.len()))),
            "{asked:?}"
        );
        // Yes: planned as always.
        test.call("batch_rename_preview", many_args).await.unwrap();
        assert_eq!(test.pending().len(), 1);
        // A few files: nothing is asked.
        test.call("batch_rename_preview", args()).await.unwrap();
        assert_eq!(test.asked().len(), 2);
    }

    #[tokio::test]
    async fn with_no_one_to_ask_many_files_are_planned_as_always() {
        let (_, args) = many();
        let test = PluginTest::new(tools![BatchRenamePreview]);
        test.call("batch_rename_preview", args).await.unwrap();
        assert_eq!(test.pending().len(), 1);
        assert!(test.asked().is_empty());
    }

    #[tokio::test]
    async fn rejecting_renames_nothing() {
        let test = PluginTest::new(tools![BatchRenamePreview]);
        files(test.working_dir(), &["a1.txt", "a2.txt"]);
        test.call("batch_rename_preview", args()).await.unwrap();
        let rejected = test.reject_newest("no").await.unwrap().unwrap();
        assert_eq!(rejected.joined_text(), "Discarded batch rename. Reason: no");
        assert!(test.working_dir().join("a1.txt").exists());
        assert_eq!(
            test.reject_newest("again").await,
            Err(TestError::NothingPending)
        );
    }

    #[tokio::test]
    async fn a_stale_plan_fails_to_apply_and_is_consumed() {
        let test = PluginTest::new(tools![BatchRenamePreview]);
        files(test.working_dir(), &["a1.txt", "a2.txt"]);
        test.call("batch_rename_preview", args()).await.unwrap();
        files(test.working_dir(), &["b2.txt"]);
        let error = test.apply_newest("ok").await.unwrap_err();
        assert!(
            error.to_string().contains("b2.txt already exists"),
            "{error}"
        );
        assert!(test.pending().is_empty());
    }

    #[tokio::test]
    async fn the_host_checks_arguments_and_the_store() {
        let test = PluginTest::new(tools![BatchRenamePreview]);
        let error = test
            .call("batch_rename_preview", json!({"files": ["a"], "find": "a"}))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("\"replace\""), "{error}");
        let test = PluginTest::new(tools![BatchRenamePreview]).without_store();
        files(test.working_dir(), &["a1.txt", "a2.txt"]);
        let error = test.call("batch_rename_preview", args()).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "Pending action store unavailable for custom tools in this runtime."
        );
    }

    /// A crash after any step of the apply's commit, then the next session's recovery: every
    /// file renamed or none, and nothing left behind.
    #[tokio::test]
    async fn an_apply_killed_at_any_step_is_finished_or_undone_as_a_whole() {
        let names = ["a1.txt", "a2.txt", "a3.txt"];
        let mut crashes = 0;
        for step in 1.. {
            let test = PluginTest::new(tools![BatchRenamePreview]);
            let dir = test.working_dir().to_owned();
            files(&dir, &names);
            let args = json!({"files": names, "find": "a", "replace": "b"});
            test.call("batch_rename_preview", args).await.unwrap();
            test.crash_commit_at(step);
            if test.apply_newest("ok").await.is_ok() {
                break;
            }
            crashes += 1;
            test.recover().unwrap();
            let mut found: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            found.sort();
            assert!(
                found == ["a1.txt", "a2.txt", "a3.txt"] || found == ["b1.txt", "b2.txt", "b3.txt"],
                "after a crash at step {step}: {found:?}"
            );
        }
        // Synced, journal, three renames, directories synced, journal removed.
        assert_eq!(crashes, 7);
    }

    #[test]
    fn plans_renames_in_file_names_only() {
        let renames = plan(&params(&["dir_a/a1.txt"])).unwrap();
        assert_eq!(renames[0].to, "dir_a/b1.txt");
    }

    #[tokio::test]
    async fn apply_renames_nothing_when_a_target_exists() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a1.txt", "a2.txt", "b2.txt"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let renames = plan(&params(&["a1.txt", "a2.txt"])).unwrap();
        let error = apply_plan(dir.path(), &renames).await.unwrap_err();
        assert!(error.message().contains("b2.txt"), "{error}");
        assert!(dir.path().join("a1.txt").exists());
        assert!(!dir.path().join("b1.txt").exists());
    }

    #[tokio::test]
    async fn apply_refuses_two_sources_onto_one_target() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.txt", "b.txt"] {
            std::fs::write(dir.path().join(name), name).unwrap();
        }
        let renames = vec![
            Rename {
                from: "a.txt".into(),
                to: "c.txt".into(),
            },
            Rename {
                from: "b.txt".into(),
                to: "c.txt".into(),
            },
        ];
        assert!(apply_plan(dir.path(), &renames).await.is_err());
        assert!(dir.path().join("a.txt").exists() && dir.path().join("b.txt").exists());
    }
}
