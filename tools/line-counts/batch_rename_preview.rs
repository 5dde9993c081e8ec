use xcsh_plugin_api::*;

/// Previews renames and defers commit to resolve
#[tool(label = "Batch Rename Preview", deferrable)]
async fn batch_rename_preview(ctx: ToolContext, files: Vec<String>) -> Result<String, PluginError> {
    let n = files.len();
    ctx.push_pending_action(
        CustomToolPendingAction::new(format!("Batch rename: {n} files"), |reason| async move {
            // apply writes here
            Ok(AgentToolResult::text(format!("Applied batch rename. Reason: {reason}")))
        })
        .with_reject(|reason| async move {
            // optional: cleanup or notify on discard
            Ok(Some(AgentToolResult::text(format!("Discarded batch rename. Reason: {reason}"))))
        })
        .with_source_tool_name("batch_rename_preview"),
    )?;
    Ok(format!("Prepared rename plan for {n} files. Call resolve to apply or discard."))
}

export_plugin!(tools: [BatchRenamePreview]);
