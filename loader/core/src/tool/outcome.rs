//! What a call gives back ([`ToolOutcome`]), the options it takes ([`CallOptions`]), and the
//! one place where a running call is bounded by cancellation and a timeout.

use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use xcsh_plugin_api::AgentToolResult;

use crate::tool::{CancelToken, UpdateSink};

/// The outcome of a call: a result, flagged when it reports an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The result (for errors, one text block with the message).
    pub result: AgentToolResult,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutcome {
    /// A successful outcome.
    pub fn success(result: AgentToolResult) -> Self {
        Self {
            result,
            is_error: false,
        }
    }

    /// An error outcome carrying `message`.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            result: AgentToolResult::text(message),
            is_error: true,
        }
    }

    /// The same outcome with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.result.details = Some(details);
        self
    }

    /// The non-empty text blocks joined by `\n`.
    pub fn text(&self) -> String {
        self.result.joined_text()
    }
}

/// Why a bounded future did not finish.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Interrupted {
    Cancelled,
    TimedOut(Duration),
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interrupted::Cancelled => f.write_str("was cancelled"),
            Interrupted::TimedOut(limit) => write!(f, "timed out after {}s", limit.as_secs_f64()),
        }
    }
}

/// Run `future` until it finishes, `cancel` fires, or `timeout` passes. An abandoned future is
/// dropped, which cancels plugin code at its next `.await`.
pub(crate) async fn bounded<T>(
    future: impl Future<Output = T>,
    cancel: &CancelToken,
    timeout: Option<Duration>,
) -> Result<T, Interrupted> {
    let limit = async {
        match timeout {
            Some(limit) => {
                tokio::time::sleep(limit).await;
                Interrupted::TimedOut(limit)
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        output = future => Ok(output),
        () = cancel.cancelled() => Err(Interrupted::Cancelled),
        interrupted = limit => Err(interrupted),
    }
}

/// Options for one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// The model's tool-call id (a fresh one is made when absent).
    pub tool_call_id: Option<String>,
    /// Cancels the call.
    pub cancel: CancelToken,
    /// Abandon the call after this long (overrides the session default).
    pub timeout: Option<Duration>,
    /// Receives partial results.
    pub updates: Option<UpdateSink>,
    /// Who answers this call's host-service requests, instead of the session's services (an
    /// MCP server answers each call with what its client declared for that request).
    pub services: Option<std::sync::Arc<dyn crate::services::HostServices>>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("tool_call_id", &self.tool_call_id)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// `result` with its view as every host may draw it: cleaned and bounded
/// ([`View::bounded`](xcsh_plugin_api::view::View::bounded)), and left out when it names a path
/// outside the session's directory `cwd` (the text still says what the result is). Done once
/// here, for every host (MCP, the command line, the Node binding), on results and partial
/// results alike.
pub fn drawable(mut result: AgentToolResult, cwd: &std::path::Path) -> AgentToolResult {
    result.view = result
        .view
        .take()
        .map(|view| view.bounded())
        .filter(|view| match view.check_paths(cwd) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!("a tool's view is not drawn: {error}");
                false
            }
        });
    result
}

/// `updates` passing each partial result on [`drawable`].
pub fn drawable_updates(updates: UpdateSink, cwd: std::path::PathBuf) -> UpdateSink {
    std::sync::Arc::new(move |partial| updates(drawable(partial, &cwd)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.
mod tests {
    use super::*;
    use xcsh_plugin_api::view::{Block, DiffLine, Role, State, View};

    #[test]
    fn a_view_is_bounded_once_for_every_host_and_left_out_when_it_leaves_the_session() {
        let cwd = std::path::Path::new("/work/project");
        let long = (0..xcsh_plugin_api::view::MAX_DIFF_LINES + 1).map(|_| DiffLine::added("x"));
        let view = View::status(State::Success, "t\u{1b}[2J")
            .block(Block::diff("src/a.rs", long))
            .block(Block::line("fine", Role::Muted));
        let drawn = drawable(AgentToolResult::text("t").with_view(view), cwd);
        let view = drawn.view.unwrap();
        assert_eq!(view.status.unwrap().title, "t");
        let Block::Diff { omitted, .. } = &view.blocks[0] else {
            panic!()
        };
        assert_eq!(*omitted, 1);

        let outside = View::default().block(Block::files(["../../etc/passwd"]));
        let drawn = drawable(AgentToolResult::text("t").with_view(outside), cwd);
        assert_eq!(drawn.view, None);
        assert_eq!(drawn.joined_text(), "t", "the text stays");

        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink: UpdateSink = {
            let seen = std::sync::Arc::clone(&seen);
            std::sync::Arc::new(move |partial: AgentToolResult| seen.lock().unwrap().push(partial))
        };
        let partial = View::default().block(Block::files(["/elsewhere/x"]));
        drawable_updates(sink, cwd.to_path_buf())(AgentToolResult::text("p").with_view(partial));
        assert_eq!(seen.lock().unwrap()[0].view, None, "partial results too");
    }
}
