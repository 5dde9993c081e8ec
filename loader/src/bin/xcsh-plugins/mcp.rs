//! `xcsh-plugins mcp`: serve the loaded tools over MCP on stdio (SPEC 7), on the `rmcp` crate.
//!
//! One [`Session`] (one pending-action store) lives as long as the process. `tools/list` gives
//! every non-hidden tool plus `resolve` when it is registered; `tools/call` runs the tool in the
//! session and maps the outcome to a `CallToolResult`: tool failures are `isError` results,
//! never protocol errors. While something is pending, each result ends with the resolve
//! reminder of SPEC 2.4 and carries `xcsh/pending` and `xcsh/toolChoice` in `_meta`. A
//! `notifications/cancelled` for a running call cancels it in the session.
//!
//! Stdout carries JSON-RPC only: logs go to stderr, and on Unix the process's fd 1 is pointed
//! at stderr once the protocol has its own copy of the original stdout, so a plugin that
//! prints cannot corrupt the stream.

use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use xcsh_loader::render::sanitize;
use xcsh_loader::{
    CallOptions, CancelToken, Content, Provider, Session, ToolOutcome, ToolSpec, RESOLVE_REMINDER,
    RESOLVE_TOOL_NAME,
};

use crate::HostOptions;

/// `_meta` key: how many actions are pending after the call.
const META_PENDING: &str = "xcsh/pending";
/// `_meta` key: the tool choice that forces `resolve` (Anthropic's shape, SPEC 2.4).
const META_TOOL_CHOICE: &str = "xcsh/toolChoice";
/// `_meta` key: the result's structured `details`.
const META_DETAILS: &str = "xcsh/details";

/// Told to the client at `initialize` when `resolve` is registered.
const INSTRUCTIONS: &str = "Some tools only preview their changes and leave a pending action. \
While anything is pending, call the `resolve` tool (action \"apply\" or \"discard\", with a \
reason) before doing anything else.";

/// Run the server until the client closes stdin.
pub fn run(host: &HostOptions) -> Result<ExitCode, String> {
    // Before any plugin code runs, so even a factory's prints stay off the protocol stream.
    let output = protocol_output()?;
    // Calls run concurrently and plugin code may block a thread: use worker threads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(serve(host, output))
}

async fn serve(host: &HostOptions, output: Output) -> Result<ExitCode, String> {
    let session = host.session().build();
    for error in session.load_errors() {
        eprintln!("warning: {}", sanitize(&error.to_string()));
    }
    let server = McpServer::new(session);
    tracing::info!(tools = server.tools.len(), "serving MCP on stdio");
    let service = server
        .serve((tokio::io::stdin(), output))
        .await
        .map_err(|e| format!("MCP session did not start: {e}"))?;
    let reason = service
        .waiting()
        .await
        .map_err(|e| format!("MCP server stopped abnormally: {e}"))?;
    tracing::info!(?reason, "MCP client disconnected");
    Ok(ExitCode::SUCCESS)
}

/// The writer for protocol messages.
#[cfg(unix)]
type Output = tokio::fs::File;
#[cfg(not(unix))]
type Output = tokio::io::Stdout;

/// Keep a private copy of stdout for the protocol, then point fd 1 at stderr: anything else
/// that writes to stdout (a plugin's `println!`, a C library) lands in the log instead.
#[cfg(unix)]
fn protocol_output() -> Result<Output, String> {
    use std::io::Write;
    use std::os::fd::AsFd;

    let mut stdout = std::io::stdout().lock();
    stdout
        .flush()
        .map_err(|e| format!("cannot flush stdout: {e}"))?;
    // A close-on-exec duplicate, so programs that tools spawn do not inherit the stream.
    let protocol = stdout
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("cannot duplicate stdout: {e}"))?;
    // SAFETY: dup2 takes two descriptors this process owns for its whole life (stdout and
    // stderr) and touches no memory; Rust's `Stdout` only ever refers to fd 1 by number, so
    // it keeps working (now writing to stderr). The stdout lock held here keeps other threads
    // of this program from writing mid-swap.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return Err(format!(
            "cannot redirect stdout to stderr: {}",
            std::io::Error::last_os_error()
        ));
    }
    drop(stdout);
    Ok(tokio::fs::File::from_std(std::fs::File::from(protocol)))
}

#[cfg(not(unix))]
fn protocol_output() -> Result<Output, String> {
    Ok(tokio::io::stdout())
}

/// The MCP face of one session.
#[derive(Clone)]
struct McpServer {
    session: Arc<Session>,
    /// What `tools/list` answers, computed once: the session's tools never change.
    tools: Arc<Vec<Tool>>,
    /// The names a client may call: exactly the listed ones.
    callable: Arc<HashSet<String>>,
}

impl McpServer {
    fn new(session: Session) -> Self {
        let tools: Vec<Tool> = session
            .tools()
            .into_iter()
            .filter(|spec| spec.name == RESOLVE_TOOL_NAME || !spec.hidden)
            .map(mcp_tool)
            .collect();
        let callable = tools.iter().map(|tool| tool.name.to_string()).collect();
        Self {
            session: Arc::new(session),
            tools: Arc::new(tools),
            callable: Arc::new(callable),
        }
    }

    /// Run one call, cancelling it in the session when the client cancels the request.
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        if !self.callable.contains(name) {
            return ToolOutcome::error(format!("Tool \"{name}\" not found"));
        }
        let cancel = CancelToken::new();
        let options = CallOptions {
            tool_call_id: Some(format!("mcp_{}", context.id)),
            cancel: cancel.clone(),
            ..CallOptions::default()
        };
        let call = self.session.call_with(name, arguments, options);
        tokio::pin!(call);
        tokio::select! {
            outcome = &mut call => outcome,
            () = context.ct.cancelled() => {
                tracing::info!(tool = name, id = %context.id, "call cancelled by the client");
                cancel.cancel();
                // The session ends the call promptly and settles its own state (a `resolve`
                // that was interrupted has consumed its action); the response is not sent.
                let outcome = call.await;
                tracing::info!(tool = name, id = %context.id, "cancelled call ended");
                outcome
            }
        }
    }

    /// The MCP result for an outcome, with the pending-action steering of SPEC 7.
    fn result(&self, outcome: ToolOutcome) -> CallToolResult {
        let mut content: Vec<ContentBlock> = outcome
            .result
            .content
            .into_iter()
            .map(|block| match block {
                Content::Text { text } => ContentBlock::text(text),
                Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
            })
            .collect();
        let mut meta = Map::new();
        let pending = self.session.store().map_or(0, |store| store.count());
        if pending > 0 {
            content.push(ContentBlock::text(RESOLVE_REMINDER));
            meta.insert(META_PENDING.to_owned(), json!(pending));
            let choice = self.session.tool_choice(Provider::Anthropic).map_or_else(
                || json!({"type": "tool", "name": RESOLVE_TOOL_NAME}),
                |c| c.json,
            );
            meta.insert(META_TOOL_CHOICE.to_owned(), choice);
        }
        if let Some(details) = outcome.result.details {
            meta.insert(META_DETAILS.to_owned(), details);
        }
        let mut result = if outcome.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        if !meta.is_empty() {
            result.meta = Some(MetaObject(meta));
        }
        result
    }
}

/// A tool as MCP lists it: the parameter schema as `inputSchema`, the label as `title`, and
/// the destructive hint for `resolve` (it applies) and deferrable tools (they only preview).
fn mcp_tool(spec: &ToolSpec) -> Tool {
    // The session only registers tools whose schema is an object.
    let schema = spec.parameters.as_object().cloned().unwrap_or_default();
    let tool = Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    )
    .with_title(spec.label.clone());
    // The title again in the annotations, where clients of protocol 2025-03-26 look for it.
    let mut annotations = ToolAnnotations::with_title(spec.label.clone());
    if spec.name == RESOLVE_TOOL_NAME {
        annotations = annotations.destructive(true);
    } else if spec.deferrable {
        annotations = annotations.destructive(false);
    }
    tool.annotate(annotations)
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "xcsh-plugins",
                env!("CARGO_PKG_VERSION"),
            ));
        if self.session.has_resolve() {
            config.with_instructions(INSTRUCTIONS)
        } else {
            config
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = self.call(&request.name, arguments, &context).await;
        Ok(self.result(outcome).into())
    }
}
