use xcsh_plugin_api::*;

/// A simple greeting tool
#[tool(label = "Hello")]
async fn hello(
    /// Name to greet
    name: String,
) -> AgentToolResult {
    AgentToolResult::text(format!("Hello, {name}!")).with_details(json!({ "greeted": name }))
}

export_plugin!(tools: [Hello]);
