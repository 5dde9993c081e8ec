//! The MCP face of a [`Session`], on the `rmcp` crate: any MCP client can list and
//! call the session's tools.
//!
//! `tools/list` gives every non-hidden tool plus `resolve` when it is registered; `tools/call`
//! runs the tool in the session and maps the outcome to a `CallToolResult`: tool failures are
//! `isError` results; a tool name the server does not list is a protocol error (JSON-RPC
//! `-32602`, invalid params, as the MCP specification says), whose message names the closest
//! tools. Every result carries `xcsh/pending` in `_meta` (0 when nothing is pending); while
//! something is pending, it ends with the resolve reminder ([`RESOLVE_REMINDER`]) and carries
//! `xcsh/toolChoice` and `xcsh/pendingDetails` (each pending action's label, source and
//! `details`, newest first) too. The result's own `details` go in `xcsh/details`, its view (how
//! it looks, for a client that draws) in `xcsh/view`. A
//! `notifications/cancelled` for a running call cancels it in the session. One server is one
//! session: one store.
//!
//! The server declares logging: once the client is initialised, each plugin file that failed
//! to load is sent to it as a log message (level `error`, naming the file and the cause), and
//! the plugins that loaded are served. `logging/setLevel` is honoured. Served with
//! [`serve_with_plugin_logs`] (as `xcsh-plugins mcp` does), what a plugin logs while the client
//! is connected (`api.logger()`, `ctx.logger()`, in process or isolated) is sent too, with its
//! level and the plugin's name as `logger` (see [`PluginLogs`]); a call's result follows what
//! its plugin logged during it.
//!
//! Lines on the input that `rmcp` would drop or answer with the wrong JSON-RPC error are
//! answered by the transport in front of it (`checked`): `-32700` for a line that is not JSON,
//! `-32602` for a served method's params that do not fit, `-32600` for a request before
//! `initialize`.
//!
//! Plugin files that change while the server runs are reloaded (see [`Session::reload`]):
//! every [`RELOAD_INTERVAL`], and before each call of a changed plugin's tool. When the tools
//! a client would list changed, the server sends `notifications/tools/list_changed`.
//!
//! A client that cancels a running call (`notifications/cancelled`) gets no response to it, as
//! the protocol says; the server sends it a log message (level `notice`) saying how the call
//! ended: for a `resolve`, whether its apply was undone (`"completed": false`) or had completed
//! before the cancellation reached it. A client that closes its input has every call still
//! running cancelled at once; the server waits until each has ended (an apply undoes what it
//! had done) before it ends the session and returns, and logs how each ended on stderr.
//!
//! [`serve`] runs the protocol over any byte streams; the `xcsh-plugins mcp` command runs it
//! on stdio.
//!
//! A crate of its own (re-exported as `xcsh_loader::mcp`, feature `mcp`) so that the compiler
//! holds the layer: it uses the core (`xcsh-loader-core`) through its public API, and nothing
//! below it knows it exists; an embedder of the session alone builds neither it nor `rmcp`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod checked;
mod client_services;
mod in_flight;
mod input;
mod plugin_logs;
mod rounds;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, QuitReason, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use in_flight::InFlight;
pub use plugin_logs::PluginLogs;
use xcsh_loader_core::resolve::steering::forced_tool_choice;
use xcsh_loader_core::tool::GRACE_PERIOD;
use xcsh_loader_core::{
    CallOptions, CancelToken, Content, Provider, Session, ToolOutcome, ToolSpec, RESOLVE_REMINDER,
    RESOLVE_TOOL_NAME,
};

/// Keep a private copy of stdout for the protocol, then point fd 1 at stderr: anything else
/// that writes to stdout (a plugin's `println!`, a C library) lands in the log instead. Call
/// it once, before any plugin is loaded, and write the protocol to the file it returns.
#[cfg(unix)]
pub fn protocol_stdout() -> std::io::Result<std::fs::File> {
    use std::io::Write;
    // Held across the swap, so no thread of this program writes to fd 1 mid-way.
    let mut stdout = std::io::stdout().lock();
    stdout.flush()?;
    let protocol = xcsh_loader_core::for_layers::divert_stdout_to_stderr()?;
    drop(stdout);
    Ok(protocol)
}

mod progress {
    //! A tool's partial updates (`ctx.update`) as MCP `notifications/progress`, for a call
    //! whose request carried a progress token. A chatty tool cannot flood the client: the
    //! updates are paced by a [`ProgressThrottle`](xcsh_loader_core::tool::ProgressThrottle) (one per
    //! [`PROGRESS_INTERVAL`](xcsh_loader_core::tool::PROGRESS_INTERVAL); the newest
    //! held back goes out when it is due, or when the call ends).

    use rmcp::model::{ProgressNotificationParam, ProgressToken};
    use rmcp::service::{Peer, RoleServer};

    use xcsh_loader_core::tool::PacedUpdates;

    /// Forwards one call's updates to the client, paced.
    pub(super) fn forwarder(peer: Peer<RoleServer>, token: ProgressToken) -> PacedUpdates {
        PacedUpdates::start(move |n, partial| {
            let (peer, token) = (peer.clone(), token.clone());
            async move { send(&peer, &token, n, partial.joined_text()).await }
        })
    }

    async fn send(peer: &Peer<RoleServer>, token: &ProgressToken, n: u32, message: String) {
        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(n));
        param.message = Some(message);
        if let Err(error) = peer.notify_progress(param).await {
            tracing::debug!(%error, "cannot send a progress notification");
        }
    }
}

/// `_meta` key: how many actions are pending after the call (on every result, 0 included).
pub const META_PENDING: &str = "xcsh/pending";
/// `_meta` key: the tool choice that forces `resolve` (Anthropic's shape).
pub const META_TOOL_CHOICE: &str = "xcsh/toolChoice";
/// `_meta` key: the result's structured `details`.
pub const META_DETAILS: &str = "xcsh/details";
/// `_meta` key: how the result looks (the JSON of `xcsh_plugin_api::view::View`, as the session
/// bounded it), when the tool gave a view; the text content says the same for clients that do
/// not draw it.
pub const META_VIEW: &str = "xcsh/view";
/// `_meta` key, while something is pending: every pending action newest first (`[0]` is what
/// the next `resolve` takes), each `{"label", "sourceToolName", "details"}`, `details` left
/// out when the action has none. One entry per action, so it lines up with `xcsh/pending` and
/// with the order `resolve` goes in; `xcsh/details` stays the result's own.
pub const META_PENDING_DETAILS: &str = "xcsh/pendingDetails";

/// How often the server looks for changed plugin files.
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// How long the server waits, once its client is gone, for the calls it cancelled to end.
const CALLS_END_LIMIT: Duration = Duration::from_secs(5);

/// Told to the client at `initialize` when `resolve` is registered.
const INSTRUCTIONS: &str = "Some tools only preview their changes and leave a pending action. \
While anything is pending, call the `resolve` tool (action \"apply\" or \"discard\", with a \
reason) before doing anything else.";

/// An MCP error that ended the protocol.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The handshake failed.
    #[error("MCP session did not start: {0}")]
    Start(String),
    /// The connection ended abnormally.
    #[error("MCP server stopped abnormally: {0}")]
    Stopped(String),
}

/// Serve `session` over MCP on `reader`/`writer` until the client disconnects.
///
/// When the client closes its input, the calls still running are cancelled at once, and this
/// returns only once they have ended (or after a bound), the session ended.
pub async fn serve<R, W>(session: Session, reader: R, writer: W) -> Result<QuitReason, McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    serve_with_plugin_logs(session, None, reader, writer).await
}

/// [`serve`], sending the client what the session's plugins log (`logs` is the relay whose
/// [`PluginLogs::sink`] the session was built with).
pub async fn serve_with_plugin_logs<R, W>(
    session: Session,
    logs: Option<Arc<PluginLogs>>,
    reader: R,
    writer: W,
) -> Result<QuitReason, McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let mut server = McpServer::new(session);
    if let Some(logs) = &logs {
        logs.discard_earlier();
    }
    server.plugin_logs = logs.clone();
    tracing::info!(tools = server.listing().tools.len(), "serving MCP");
    let in_flight = Arc::clone(&server.in_flight);
    let closed = CancelToken::new();
    let on_close = tokio::spawn({
        let (closed, in_flight) = (closed.clone(), Arc::clone(&in_flight));
        async move {
            closed.cancelled().await;
            in_flight.cancel_all();
        }
    });
    let service = match server
        .serve(checked::Checked::new(
            input::Watched::new(reader, closed),
            writer,
        ))
        .await
    {
        Ok(service) => service,
        Err(error) => {
            on_close.abort();
            return Err(McpError::Start(error.to_string()));
        }
    };
    let session = Arc::clone(&service.service().session);
    let forwarding = logs.as_ref().and_then(|logs| {
        logs.start(
            service.peer().clone(),
            Arc::clone(&service.service().log_level),
        )
    });
    let reloads = tokio::spawn(watch_plugins(
        service.service().clone(),
        service.peer().clone(),
    ));
    let quit = service
        .waiting()
        .await
        .map_err(|e| McpError::Stopped(e.to_string()));
    // The watcher holds the session too: stop it before taking the session back.
    reloads.abort();
    let _ = reloads.await;
    if let Some(forwarding) = forwarding {
        forwarding.abort();
    }
    on_close.abort();
    // Whatever ended the protocol, nothing is left running under the exit: calls still running
    // are cancelled (an apply undoes what it did) and waited for.
    in_flight.cancel_all();
    if !in_flight.all_ended(CALLS_END_LIMIT).await {
        tracing::warn!(
            "calls cancelled at the end of input still run after {}s; ending anyway",
            CALLS_END_LIMIT.as_secs()
        );
    }
    // End of input (or a stop): whatever is still pending is rejected, newest first, and
    // the plugin processes are stopped and waited for. A call still running holds the
    // session; then only the rejecting happens here, and the processes end with the session.
    let rejected = match take_back(session).await {
        Ok(session) => session.shutdown().await,
        Err(session) => session.close().await,
    };
    for outcome in rejected {
        tracing::info!(
            is_error = outcome.is_error,
            "session ended; rejected a pending action: {}",
            outcome.text()
        );
    }
    quit
}

/// The session, once the request handlers that held it are gone (they end right after their
/// call did); the shared session when one still holds it after the grace period.
async fn take_back(mut session: Arc<Session>) -> Result<Session, Arc<Session>> {
    let deadline = tokio::time::Instant::now() + GRACE_PERIOD;
    loop {
        match Arc::try_unwrap(session) {
            Ok(owned) => return Ok(owned),
            Err(shared) if tokio::time::Instant::now() >= deadline => return Err(shared),
            Err(shared) => session = shared,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every [`RELOAD_INTERVAL`]: reload the plugin files that changed, log what came of it, and
/// tell the client when its tool list is out of date.
async fn watch_plugins(server: McpServer, peer: Peer<RoleServer>) {
    let mut ticks = tokio::time::interval(RELOAD_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        server.reload().await;
        server.announce_tool_changes(&peer).await;
    }
}

impl McpServer {
    /// A call on protocol 2026-07-28 or later: run until it ends or asks (see `rounds`); a
    /// retry (`requestState`) answers the question its call is paused at.
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let round = match &request.request_state {
            Some(state) => {
                let responses = request.input_responses.as_ref();
                self.paused.resume(state, responses, &context.ct).await
            }
            None => {
                let (questions, asked) = tokio::sync::mpsc::unbounded_channel();
                let cancel = CancelToken::new();
                let server = self.clone();
                let name = request.name.to_string();
                let arguments = Value::Object(request.arguments.unwrap_or_default());
                // The call outlives this request: its own context, cancelled only through
                // `cancel` (by a later request's cancellation, or when it expires).
                let mut own = context.clone();
                own.ct = tokio_util::sync::CancellationToken::new();
                let call_cancel = cancel.clone();
                let outcome = tokio::spawn(async move {
                    server
                        .call(&name, arguments, &own, Some((questions, call_cancel)))
                        .await
                });
                let call = rounds::RoundCall {
                    outcome,
                    questions: asked,
                    cancel,
                };
                self.paused.drive(call, &context.ct).await
            }
        };
        self.announce_tool_changes(&context.peer).await;
        match round {
            rounds::Round::Done(outcome) => Ok(self.result(outcome?).into()),
            rounds::Round::InputRequired(input) => Ok(input.into()),
        }
    }
}

/// The MCP face of one session: an `rmcp` server handler.
#[derive(Clone)]
pub struct McpServer {
    session: Arc<Session>,
    /// What `tools/list` answers, for the session's tools of one generation.
    listing: Arc<Mutex<Listing>>,
    /// The generation of the tools the client was last told about.
    announced: Arc<AtomicU64>,
    /// The least severe log level the client wants (`logging/setLevel`), as [`log_rank`].
    log_level: Arc<AtomicU8>,
    /// The calls running now.
    in_flight: Arc<InFlight>,
    /// Where the plugins' log lines come from, when the client gets them.
    plugin_logs: Option<Arc<PluginLogs>>,
    /// Calls paused at a plugin's question on protocol 2026-07-28 and later.
    paused: Arc<rounds::PausedCalls>,
}

/// The tools a client sees, for one generation of the session's tools.
#[derive(Clone)]
struct Listing {
    generation: u64,
    tools: Arc<Vec<Tool>>,
    /// The names a client may call: exactly the listed ones.
    callable: Arc<HashSet<String>>,
}

impl Listing {
    fn of(session: &Session) -> Self {
        let generation = session.tools_generation();
        let tools: Vec<Tool> = session
            .tools()
            .iter()
            .filter(|spec| spec.name == RESOLVE_TOOL_NAME || !spec.hidden)
            .map(mcp_tool)
            .collect();
        let callable = tools.iter().map(|tool| tool.name.to_string()).collect();
        Self {
            generation,
            tools: Arc::new(tools),
            callable: Arc::new(callable),
        }
    }
}

impl McpServer {
    /// A server for `session`.
    pub fn new(session: Session) -> Self {
        let listing = Listing::of(&session);
        Self {
            announced: Arc::new(AtomicU64::new(listing.generation)),
            session: Arc::new(session),
            listing: Arc::new(Mutex::new(listing)),
            log_level: Arc::new(AtomicU8::new(0)),
            in_flight: Arc::default(),
            plugin_logs: None,
            paused: Arc::default(),
        }
    }

    /// Send the client each load error of the session, as an `error` log message.
    #[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
    async fn report_load_errors(&self, peer: &Peer<RoleServer>) {
        if log_rank(LogLevel::Error) < self.log_level.load(Ordering::Relaxed) {
            return;
        }
        for error in self.session.load_errors() {
            let data = json!({
                "message": error.to_string(),
                "path": error.path().display().to_string(),
                "cause": error.cause(),
            });
            let message = rmcp::model::LoggingMessageNotificationParam::new(LogLevel::Error, data)
                .with_logger(LOGGER);
            if let Err(error) = peer.notify_logging_message(message).await {
                tracing::debug!(%error, "cannot send a log message to the client");
            }
        }
    }

    /// What `tools/list` answers now.
    fn listing(&self) -> Listing {
        let mut listing = xcsh_plugin_api::__private::lock(&self.listing);
        if listing.generation != self.session.tools_generation() {
            *listing = Listing::of(&self.session);
        }
        listing.clone()
    }

    /// Reload the plugin files that changed (the session logs what came of it).
    async fn reload(&self) {
        self.session.reload().await;
    }

    /// Send `notifications/tools/list_changed` if the tools changed since the client was
    /// last told.
    async fn announce_tool_changes(&self, peer: &Peer<RoleServer>) {
        let now = self.session.tools_generation();
        if self.announced.swap(now, Ordering::SeqCst) != now {
            tracing::info!("the tools changed; telling the client");
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(%error, "cannot send notifications/tools/list_changed");
            }
        }
    }

    /// Run one call, cancelling it in the session when the client cancels the request.
    async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &RequestContext<RoleServer>,
        rounds: Option<(rounds::Questions, CancelToken)>,
    ) -> Result<ToolOutcome, ErrorData> {
        // A tool a reload took away answers like any unknown tool; one it added is callable
        // once the session has it (a call of an unknown name reloads what changed).
        if !self.listing().callable.contains(name) {
            self.reload().await;
            let listing = self.listing();
            if !listing.callable.contains(name) {
                let known = listing.tools.iter().map(|tool| tool.name.as_ref());
                let closest = xcsh_loader_core::messages::closest_names(name, known);
                let message = xcsh_loader_core::messages::tool_not_found(name, &closest);
                let data = json!({"tool": name, "didYouMean": closest});
                return Err(ErrorData::invalid_params(message, Some(data)));
            }
        }
        let (questions, running) = match rounds {
            Some((questions, cancel)) => (Some(questions), self.in_flight.start_with(cancel)),
            None => (None, self.in_flight.start()),
        };
        let cancel = running.cancel.clone();
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| progress::forwarder(context.peer.clone(), token));
        // What this request's client declared (at `initialize`, or in the request's `_meta`
        // on protocol 2026-07-28) decides what its plugin may ask of it; read per call, since
        // rmcp may run a call before its `notifications/initialized` is handled.
        let services = client_services::McpClientServices::new(
            context.peer.clone(),
            context.client_capabilities().as_ref(),
            questions,
        );
        let options = CallOptions {
            tool_call_id: Some(format!("mcp_{}", context.id)),
            cancel: cancel.clone(),
            updates: progress
                .as_ref()
                .map(xcsh_loader_core::tool::PacedUpdates::sink),
            services: Some(Arc::new(services)),
            ..CallOptions::default()
        };
        let call = self.session.call_with(name, arguments, options);
        tokio::pin!(call);
        let outcome = tokio::select! {
            outcome = &mut call => {
                // Cancelled as it ended: rmcp drops the response, so say how it ended.
                if context.ct.is_cancelled() {
                    self.report_cancelled(context, name, &outcome).await;
                }
                outcome
            }
            () = context.ct.cancelled() => {
                tracing::info!(tool = name, id = %context.id, "call cancelled by the client");
                cancel.cancel();
                // The session ends the call promptly and settles its own state (a `resolve`
                // that was interrupted has consumed its action); the response is not sent.
                let outcome = call.await;
                tracing::info!(tool = name, id = %context.id, "cancelled call ended");
                self.report_cancelled(context, name, &outcome).await;
                outcome
            }
        };
        if self.in_flight.closing() {
            let how = if outcome.is_error {
                "ended"
            } else {
                "had completed"
            };
            tracing::warn!(
                tool = name,
                id = %context.id,
                "the client closed its input while the call ran; it {how}: {}",
                outcome.text()
            );
        }
        drop(running);
        // What the plugin logged during the call reaches the client before its result.
        if let Some(logs) = &self.plugin_logs {
            logs.flush().await;
        }
        if let Some(progress) = progress {
            // The last update the rate limit held back goes out before the result.
            progress.finish().await;
        }
        Ok(outcome)
    }

    /// Tell the client how a call it cancelled ended (it gets no response): a log message,
    /// level `notice`, whose `completed` is whether the call's result stands (a `resolve`
    /// whose apply had completed before the cancellation reached it) or not (it was stopped;
    /// an apply was undone).
    #[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
    async fn report_cancelled(
        &self,
        context: &RequestContext<RoleServer>,
        name: &str,
        outcome: &ToolOutcome,
    ) {
        if log_rank(LogLevel::Notice) < self.log_level.load(Ordering::Relaxed) {
            return;
        }
        let completed = !outcome.is_error;
        let how = if completed {
            "was cancelled, but it had completed"
        } else {
            "was cancelled"
        };
        let data = json!({
            "message": format!("tools/call {} ({name}) {how}: {}", context.id, outcome.text()),
            "requestId": context.id.to_string(),
            "tool": name,
            "completed": completed,
            "text": outcome.text(),
        });
        let message = rmcp::model::LoggingMessageNotificationParam::new(LogLevel::Notice, data)
            .with_logger(LOGGER);
        if let Err(error) = context.peer.notify_logging_message(message).await {
            tracing::debug!(%error, "cannot tell the client how a cancelled call ended");
        }
    }

    /// The MCP result for an outcome, with the pending-action steering (`_meta` keys above, reminder last).
    fn result(&self, outcome: ToolOutcome) -> CallToolResult {
        let mut content: Vec<ContentBlock> = outcome
            .result
            .content
            .into_iter()
            .map(|block| match block {
                Content::Text { text } => ContentBlock::text(text),
                Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
                Content::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
                Content::Resource { resource } => resource_block(resource),
            })
            .collect();
        let mut meta = Map::new();
        let pending = self
            .session
            .store()
            .map(|store| store.summaries())
            .unwrap_or_default();
        meta.insert(META_PENDING.to_owned(), json!(pending.len()));
        if !pending.is_empty() {
            content.push(ContentBlock::text(RESOLVE_REMINDER));
            let choice = forced_tool_choice(Provider::Anthropic, RESOLVE_TOOL_NAME);
            meta.insert(META_TOOL_CHOICE.to_owned(), choice.json);
            meta.insert(META_PENDING_DETAILS.to_owned(), json!(pending));
        }
        if let Some(details) = outcome.result.details {
            meta.insert(META_DETAILS.to_owned(), details);
        }
        if let Some(view) = &outcome.result.view {
            meta.insert(META_VIEW.to_owned(), view.to_json());
        }
        let mut result = if outcome.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        result.meta = Some(MetaObject(meta));
        result
    }
}

/// A tool as MCP lists it: the parameter schema as `inputSchema`, the label as `title`, and
/// the tool's hints as `annotations`. Whatever the tool says, `resolve` is destructive (it
/// applies) and a deferrable tool is not (it only previews; docs/guide/src/mcp.md). A hint the tool
/// does not give, as none from a plugin built before `xcsh-plugin-api` 0.3, is left out, and MCP
/// clients fall back to the protocol's defaults.
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
    annotations.read_only_hint = spec.hints.read_only;
    annotations.destructive_hint = spec.hints.destructive;
    annotations.idempotent_hint = spec.hints.idempotent;
    annotations.open_world_hint = spec.hints.open_world;
    if spec.name == RESOLVE_TOOL_NAME {
        annotations.destructive_hint = Some(true);
    } else if spec.deferrable {
        annotations.destructive_hint = Some(false);
    }
    tool.annotate(annotations)
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // `enable_logging`: see `report_load_errors`.
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_logging()
                .build(),
        )
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
        Ok(ListToolsResult::with_all_items(
            self.listing().tools.as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let in_rounds = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        if in_rounds {
            return self.call_in_rounds(request, context).await;
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = self.call(&request.name, arguments, &context, None).await;
        // A call may have reloaded a plugin whose tools changed.
        self.announce_tool_changes(&context.peer).await;
        Ok(self.result(outcome?).into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.session
            .session_event(xcsh_loader_core::services::SessionChange::new(
                xcsh_loader_core::services::SessionReason::Start,
            ))
            .await;
        self.report_load_errors(&context.peer).await;
    }

    #[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(log_rank(request.level), Ordering::Relaxed);
        Ok(())
    }
}

/// The logger name of the server's log messages.
const LOGGER: &str = "xcsh-plugins";

#[allow(deprecated)] // MCP logging: SEP-2577 deprecates it; clients still use it.
use rmcp::model::LoggingLevel as LogLevel;

/// A log level's severity, least severe first (the MCP levels are syslog's).
#[allow(deprecated)]
fn log_rank(level: LogLevel) -> u8 {
    match level {
        LogLevel::Debug => 0,
        LogLevel::Info => 1,
        LogLevel::Notice => 2,
        LogLevel::Warning => 3,
        LogLevel::Error => 4,
        LogLevel::Critical => 5,
        LogLevel::Alert => 6,
        LogLevel::Emergency => 7,
    }
}

/// An embedded resource as an MCP `resource` block (text or base64 `blob`).
fn resource_block(resource: xcsh_plugin_api::EmbeddedResource) -> ContentBlock {
    use rmcp::model::ResourceContents;
    let xcsh_plugin_api::EmbeddedResource {
        uri,
        mime_type,
        text,
        blob,
    } = resource;
    let contents = match (text, blob) {
        (None, Some(blob)) => ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            meta: None,
        },
        (text, _) => ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text: text.unwrap_or_default(),
            meta: None,
        },
    };
    ContentBlock::resource(contents)
}
