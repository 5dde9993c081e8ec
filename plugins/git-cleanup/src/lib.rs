//! `git_cleanup`: delete the local branches already merged into the current one, after the
//! model resolves the preview. The second tool a new author writes (issue 52): it runs a
//! program (`git branch --merged`), asks the user before a long list, and its pending action's
//! apply runs `git branch -d` through the context `resolve` hands it.

#![deny(unsafe_code)]

use xcsh_plugin_api::*;

/// Branches never offered for deletion, besides the current one.
const PROTECTED: [&str; 2] = ["main", "master"];

/// Delete the local git branches already merged into the current branch. Previews the list;
/// nothing is deleted until resolve applies it.
#[tool(deferrable)]
async fn git_cleanup(
    ctx: ToolContext,
    /// Branches to keep even when merged
    keep: Option<Vec<String>>,
) -> Result<String, PluginError> {
    let format = ["branch", "--format=%(refname:short)", "--merged"];
    let merged = git(&ctx, &format).await?;
    let current = git(&ctx, &["branch", "--show-current"]).await?;
    let keep = keep.unwrap_or_default();
    let branches: Vec<String> = merged
        .lines()
        .map(str::trim)
        .filter(|b| !b.is_empty() && *b != current.trim() && !PROTECTED.contains(b))
        .filter(|b| !keep.iter().any(|k| k == b))
        .map(str::to_owned)
        .collect();
    let n = branches.len();
    if n == 0 {
        return Ok("No merged branches to delete.".to_owned());
    }
    let question = format!("Delete {n} merged branches: {}?", branches.join(", "));
    if n > 3 && ctx.ui().has_ui() && !ctx.ui().confirm("Git cleanup", question).await? {
        return Ok("The user kept the branches; nothing was planned.".to_owned());
    }
    let listed = branches.join(", ");
    let details = json!({ "branches": branches });
    let apply = move |_reason, ctx: ToolContext| async move {
        let args = ["branch", "-d"]
            .into_iter()
            .chain(branches.iter().map(String::as_str));
        git(&ctx, &args.collect::<Vec<_>>()).await?;
        Ok(AgentToolResult::text(format!(
            "Deleted {n} merged branches: {}",
            branches.join(", ")
        )))
    };
    let label = format!("Git cleanup: delete {n} merged branches");
    let action = CustomToolPendingAction::new_in_context(label, apply);
    ctx.push_pending_action(
        action
            .with_details(details)
            .with_source_tool_name("git_cleanup"),
    )?;
    Ok(format!(
        "{n} merged branches to delete: {listed}. Call resolve to apply or discard."
    ))
}

/// Run git in the session's directory; its output, or an error with what git said.
async fn git(ctx: &ToolContext, args: &[&str]) -> Result<String, PluginError> {
    let out = ctx.exec("git", args, ExecOptions::new()).await?;
    if !out.success() {
        let said = out.stderr_text();
        return Err(PluginError::new(format!(
            "git {} failed: {}",
            args.join(" "),
            said.trim()
        )));
    }
    Ok(out.stdout_text())
}

export_plugin!(tools: [GitCleanup]);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests fail loudly.

    use std::sync::{Arc, Mutex};

    use super::*;
    use xcsh_plugin_api::testing::{Answer, PluginTest};

    /// A scripted git: `branch --merged` lists `merged`, the current branch is `main`, and
    /// every command run is recorded.
    fn scripted_git(merged: &'static str) -> (PluginTest, Arc<Mutex<Vec<String>>>) {
        let ran = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&ran);
        let test = PluginTest::new(tools![GitCleanup]).with_programs(move |run| {
            assert_eq!(run.program, "git");
            let command = run.args.join(" ");
            record.lock().unwrap().push(command.clone());
            let stdout = match command.as_str() {
                "branch --format=%(refname:short) --merged" => merged.to_owned(),
                "branch --show-current" => "main\n".to_owned(),
                _ if command.starts_with("branch -d ") => "Deleted.\n".to_owned(),
                other => return Err(format!("unexpected git {other}")),
            };
            Ok(ExecOutput {
                stdout: stdout.into_bytes(),
                code: Some(0),
                ..ExecOutput::default()
            })
        });
        (test, ran)
    }

    #[tokio::test]
    async fn previews_the_merged_branches_and_deletes_them_on_apply() {
        let (test, ran) = scripted_git("main\nfix-1\nfix-2\n");
        let preview = test.call("git_cleanup", json!({})).await.unwrap();
        assert_eq!(
            preview.text(),
            "2 merged branches to delete: fix-1, fix-2. Call resolve to apply or discard."
        );
        let pending = test.pending();
        assert_eq!(pending[0].label, "Git cleanup: delete 2 merged branches");
        assert_eq!(
            pending[0].details,
            Some(json!({"branches": ["fix-1", "fix-2"]}))
        );
        // Nothing deleted before the apply.
        assert!(!ran
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.starts_with("branch -d")));
        let applied = test.apply_newest("merged").await.unwrap();
        assert_eq!(
            applied.joined_text(),
            "Deleted 2 merged branches: fix-1, fix-2"
        );
        assert_eq!(ran.lock().unwrap().last().unwrap(), "branch -d fix-1 fix-2");
    }

    #[tokio::test]
    async fn asks_before_more_than_three_and_plans_nothing_on_no() {
        let (test, ran) = scripted_git("a\nb\nc\nd\n");
        let test = test.with_ui([Answer::Confirm(false)]);
        let preview = test.call("git_cleanup", json!({})).await.unwrap();
        assert_eq!(
            preview.text(),
            "The user kept the branches; nothing was planned."
        );
        assert!(test.pending().is_empty());
        assert_eq!(ran.lock().unwrap().len(), 2, "no branch -d");
    }

    #[tokio::test]
    async fn keeps_what_it_is_told_to_and_says_when_nothing_is_left() {
        let (test, _) = scripted_git("main\nrelease\n");
        let preview = test
            .call("git_cleanup", json!({"keep": ["release"]}))
            .await
            .unwrap();
        assert_eq!(preview.text(), "No merged branches to delete.");
        assert!(test.pending().is_empty());
    }

    #[tokio::test]
    async fn a_failing_git_fails_the_call_with_what_git_said() {
        let test = PluginTest::new(tools![GitCleanup]).with_programs(|_| {
            Ok(ExecOutput {
                stderr: b"fatal: not a git repository".to_vec(),
                code: Some(128),
                ..ExecOutput::default()
            })
        });
        let error = test.call("git_cleanup", json!({})).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "git branch --format=%(refname:short) --merged failed: fatal: not a git repository"
        );
    }

    #[test]
    fn the_schema_has_an_optional_list_and_no_null() {
        let schema = GitCleanup.parameters_schema();
        assert_eq!(schema["properties"]["keep"]["items"]["type"], "string");
        assert!(schema.get("required").is_none_or(|r| r == &json!([])));
    }
}
