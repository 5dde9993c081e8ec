//! The messages a host and its plugin child exchange over their socketpair, and the framing:
//! each message is one `serde_json` document in a length-delimited frame
//! (`tokio_util::codec::LengthDelimitedCodec`, 4-byte big-endian length).
//!
//! The child is plugin code, so nothing it sends is trusted: a frame over [`MAX_FRAME`] or a
//! message that does not parse ends the connection, and the host treats the child as crashed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::codec::LengthDelimitedCodec;
use xcsh_plugin_api::AgentToolResult;

use crate::load::LoadErrorKind;

/// The largest frame either side accepts (a 50 MiB result still fits, with JSON escaping).
pub(crate) const MAX_FRAME: usize = 256 * 1024 * 1024;

/// The codec of both directions.
pub(crate) fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// One tool's static description, as the child reports it at the handshake.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ToolDefinition {
    pub name: String,
    pub label: String,
    pub description: String,
    pub parameters: Value,
    pub hidden: bool,
    pub deferrable: bool,
}

/// Host → child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum HostMessage {
    /// Run `tool`; the answer is a [`ChildMessage::Done`] with the same `call`.
    Execute {
        call: u64,
        tool: String,
        tool_call_id: String,
        arguments: Value,
    },
    /// The call was cancelled: `is_cancelled()` turns true and its future is dropped.
    Cancel { call: u64 },
    /// Apply the pending action `action`; answered by [`ChildMessage::Resolved`].
    Apply {
        request: u64,
        action: u64,
        reason: String,
    },
    /// Reject the pending action `action`; answered by [`ChildMessage::Resolved`].
    Reject {
        request: u64,
        action: u64,
        reason: String,
    },
    /// The host dropped the unresolved action `action` (a cleared store, an ended session).
    DropAction { action: u64 },
    /// The session ended: cancel everything and exit.
    Shutdown,
}

/// How an `apply` or `reject` ended in the child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Resolution {
    Applied { result: AgentToolResult },
    Rejected { result: Option<AgentToolResult> },
    Failed { message: String },
}

/// Child → host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ChildMessage {
    /// The library loaded and its factory ran: its API version and tools.
    Hello {
        api_version: String,
        tools: Vec<ToolDefinition>,
    },
    /// The library did not load, or its factory failed; the child exits next.
    LoadFailed { kind: LoadErrorKind },
    /// A partial result of a running call.
    Update { call: u64, result: AgentToolResult },
    /// A line for the host's log.
    Log { level: LogLevel, message: String },
    /// The plugin pushed a pending action; it lives in the child under `action`. Sent before
    /// the `Done` of the call that pushed it.
    Push {
        action: u64,
        label: String,
        source_tool_name: String,
        details: Option<Value>,
        has_reject: bool,
    },
    /// A call ended.
    Done {
        call: u64,
        outcome: Result<AgentToolResult, String>,
    },
    /// An `apply` or `reject` ended.
    Resolved {
        request: u64,
        resolution: Resolution,
    },
}

/// Severity of a [`ChildMessage::Log`] line.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// Encode a message; `None` only if serialisation fails (it cannot for these types).
pub(crate) fn encode<T: Serialize>(message: &T) -> Option<bytes::Bytes> {
    serde_json::to_vec(message).ok().map(bytes::Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn messages_round_trip_as_json() {
        let message = ChildMessage::Done {
            call: 7,
            outcome: Ok(AgentToolResult::text("hi")),
        };
        let bytes = encode(&message).unwrap();
        let back: ChildMessage = serde_json::from_slice(&bytes).unwrap();
        assert!(
            matches!(back, ChildMessage::Done { call: 7, outcome: Ok(r) } if r.joined_text() == "hi")
        );
        let garbage = serde_json::from_slice::<HostMessage>(b"{\"type\":\"nope\"}");
        assert!(garbage.is_err());
    }
}
