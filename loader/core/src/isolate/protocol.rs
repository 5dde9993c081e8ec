//! The messages a host and its plugin child exchange over their socketpair, and the framing:
//! each message is one `serde_json` document in a length-delimited frame
//! (`tokio_util::codec::LengthDelimitedCodec`, 4-byte big-endian length).
//!
//! The child is plugin code, so nothing it sends is trusted: a frame over [`MAX_FRAME`] or a
//! message that does not parse ends the connection, and the host treats the child as crashed.
//!
//! Both sides use blocking sockets on threads of their own ([`FrameReader`], [`FrameWriter`]):
//! a call's round trip then wakes as few threads as possible (the caller writes its own
//! frame; one reader thread on each side).

use std::io::{Read, Write};
use std::sync::Mutex;

use bytes::BytesMut;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};
use xcsh_plugin_api::host::{HostFacts, HostReply, HostRequest, SessionEvent};
use xcsh_plugin_api::AgentToolResult;

use crate::loading::LoadErrorKind;

/// The version of these messages. The host passes it to the child (`--protocol N`), which
/// refuses to serve a host of another version: `xcsh-plugin-host` must come from the same
/// build as the loader.
pub const PROTOCOL_VERSION: u32 = 6;

/// The largest frame either side accepts (a 50 MiB result still fits, with JSON escaping).
pub const MAX_FRAME: usize = 256 * 1024 * 1024;

/// The codec of both directions.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

pub use crate::tool::definition::ToolDefinition;

/// Host → child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostMessage {
    /// Run `tool`; the answer is a [`ChildMessage::Done`] with the same `call`.
    Execute {
        call: u64,
        tool: String,
        tool_call_id: String,
        arguments: Value,
        /// What the host can do for the call (protocol 5).
        #[serde(default)]
        facts: HostFacts,
    },
    /// The answer to the [`ChildMessage::Service`] numbered `request` (protocol 5).
    ServiceReply {
        request: u64,
        reply: Result<HostReply, String>,
    },
    /// Tell `tool` of a session event; answered by [`ChildMessage::Heard`] once the tool has
    /// heard it (protocol 5). `call` numbers it among the calls, so a shutdown waits for it
    /// like for a call.
    SessionEvent {
        call: u64,
        tool: String,
        event: SessionEvent,
    },
    /// The call, or the apply or reject request, numbered `call` was cancelled (calls and
    /// requests are numbered from one counter): `is_cancelled()` turns true and its future is
    /// dropped; a cancelled request is still answered (protocol 4).
    Cancel { call: u64 },
    /// Apply the pending action `action`; answered by [`ChildMessage::Resolved`]. While it
    /// runs, the plugin's host requests and updates come as those of a call numbered
    /// `request` (protocol 6).
    Apply {
        request: u64,
        action: u64,
        reason: String,
        /// What the host can do for the apply (protocol 6).
        #[serde(default)]
        facts: HostFacts,
    },
    /// Reject the pending action `action`; answered by [`ChildMessage::Resolved`]; its host
    /// requests as an apply's.
    Reject {
        request: u64,
        action: u64,
        reason: String,
        /// What the host can do for the reject (protocol 6).
        #[serde(default)]
        facts: HostFacts,
    },
    /// The host dropped the unresolved action `action` (a cleared store, an ended session).
    DropAction { action: u64 },
    /// The answer to the [`ChildMessage::Push`] of `action`: taken (`refused` is `None`), or
    /// refused by the session's store with this message (the child drops the action, and
    /// the plugin's push fails with the message).
    PushAnswered {
        action: u64,
        refused: Option<String>,
    },
    /// The session ended: cancel everything and exit once it has ended (within the grace
    /// period).
    Shutdown,
}

/// How an `apply` or `reject` ended in the child.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Resolution {
    Applied { result: AgentToolResult },
    Rejected { result: Option<AgentToolResult> },
    Failed { message: String },
}

/// Child → host.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChildMessage {
    /// The library loaded and its factory ran: its API version and tools.
    Hello {
        api_version: String,
        tools: Vec<ToolDefinition>,
        /// What the child's sandbox enforces (set up before the library was loaded).
        #[serde(default)]
        confinement: Option<crate::sys::sandbox::Confinement>,
    },
    /// The library did not load, or its factory failed; the child exits next.
    LoadFailed { kind: LoadErrorKind },
    /// `--probe`: the child runs and its sandbox is set up; it loads the library next (so a
    /// child that ends before saying this never got to the library).
    Probing,
    /// `--probe`: the library was loaded, its ABI and layout checked and its factory run, or
    /// why not; the child exits next.
    Probed { error: Option<LoadErrorKind> },
    /// A partial result of a running call.
    Update { call: u64, result: AgentToolResult },
    /// A line for the host's log.
    Log {
        level: crate::plugin_log::PluginLogLevel,
        message: String,
    },
    /// The plugin pushed a pending action; it lives in the child under `action`. Sent before
    /// the `Done` of the call that pushed it; the plugin's push waits for the host's
    /// [`HostMessage::PushAnswered`].
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
    /// The tool heard the [`HostMessage::SessionEvent`] numbered `call` (its `on_session`
    /// returned), so what the host sends next finds its state rebuilt.
    Heard { call: u64 },
    /// An `apply` or `reject` ended.
    Resolved {
        request: u64,
        resolution: Resolution,
    },
    /// The plugin's call `call` asks the host a service (a question, a notification, a
    /// completion); answered by [`HostMessage::ServiceReply`] with the same `request`
    /// (protocol 5).
    Service {
        call: u64,
        request: u64,
        body: HostRequest,
    },
    /// The plugin asked not to be stopped while idle (`keep`), or let that go. Sent after
    /// `Hello` (a request made by the factory follows the `Hello` at once).
    KeepAlive { keep: bool },
}

/// Reads whole frames from a blocking stream.
pub struct FrameReader<R> {
    stream: R,
    buffer: BytesMut,
    codec: LengthDelimitedCodec,
}

/// Why [`FrameReader::next`] gave no message.
#[derive(Debug)]
pub enum ReadError {
    /// The other side closed the stream (or it failed).
    Closed,
    /// An oversized frame, or one that is not a message: the other side is not trusted.
    Malformed(String),
}

impl<R: Read> FrameReader<R> {
    pub fn new(stream: R) -> Self {
        Self {
            stream,
            buffer: BytesMut::with_capacity(64 * 1024),
            codec: codec(),
        }
    }

    /// The next message, blocking until it is complete.
    // Not `Iterator::next`: it reads a frame of the type asked for, and fails with why.
    #[allow(clippy::should_implement_trait)]
    pub fn next<T: DeserializeOwned>(&mut self) -> Result<T, ReadError> {
        loop {
            match self.codec.decode(&mut self.buffer) {
                Ok(Some(frame)) => {
                    return serde_json::from_slice(&frame)
                        .map_err(|e| ReadError::Malformed(e.to_string()))
                }
                Ok(None) => {}
                Err(error) => return Err(ReadError::Malformed(error.to_string())),
            }
            let start = self.buffer.len();
            self.buffer.resize(start + 64 * 1024, 0);
            let read = loop {
                match self.stream.read(&mut self.buffer[start..]) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            match read {
                Ok(0) | Err(_) => return Err(ReadError::Closed),
                Ok(n) => self.buffer.truncate(start + n),
            }
        }
    }
}

/// Writes whole frames to a blocking stream, one writer at a time.
pub struct FrameWriter<W> {
    stream: Mutex<W>,
}

impl<W: Write> FrameWriter<W> {
    pub fn new(stream: W) -> Self {
        Self {
            stream: Mutex::new(stream),
        }
    }

    /// Send one message; `false` once the other side is gone (see [`Self::try_send`]).
    pub fn send<T: Serialize>(&self, message: &T) -> bool {
        self.try_send(message).is_ok()
    }

    /// Send one message, or say why it could not be written.
    pub fn try_send<T: Serialize>(&self, message: &T) -> std::io::Result<()> {
        let json = serde_json::to_vec(message)?;
        let mut frame = BytesMut::with_capacity(json.len() + 4);
        codec().encode(bytes::Bytes::from(json), &mut frame)?;
        let mut stream = xcsh_plugin_api::__private::lock(&self.stream);
        stream.write_all(&frame)
    }
}

/// The child's end of the link carries its plugin's host services to the host
/// ([`ChildMessage::Service`], answered by [`HostMessage::ServiceReply`]): the host applies the
/// rules (defaults without a user, one question at a time, answers checked against their
/// question); the child only carries requests and replies (a [`crate::forward::ForwardedHost`]
/// over this writer), so the plugin's sandbox stays as it is: the child never opens a terminal
/// or a connection of its own. Here rather than in the child's crate because the writer and
/// the trait are both the core's.
impl crate::forward::HostLink for FrameWriter<crate::sys::spawn::ChildWrite> {
    const PEER: &'static str = "the host";

    fn send(
        &self,
        call: u64,
        request: u64,
        body: xcsh_plugin_api::host::HostRequest,
    ) -> Result<(), String> {
        let sent = FrameWriter::send(
            self,
            &ChildMessage::Service {
                call,
                request,
                body,
            },
        );
        if sent {
            Ok(())
        } else {
            Err(format!("{} is gone", Self::PEER))
        }
    }
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
        let mut wire = Vec::new();
        assert!(FrameWriter::new(&mut wire).send(&message));
        assert!(FrameWriter::new(&mut wire).send(&HostMessage::Shutdown));
        let mut reader = FrameReader::new(wire.as_slice());
        let back: ChildMessage = reader.next().unwrap();
        assert!(
            matches!(back, ChildMessage::Done { call: 7, outcome: Ok(r) } if r.joined_text() == "hi")
        );
        assert!(matches!(
            reader.next::<HostMessage>(),
            Ok(HostMessage::Shutdown)
        ));
        assert!(matches!(
            reader.next::<HostMessage>(),
            Err(ReadError::Closed)
        ));
    }

    #[test]
    fn garbage_and_oversized_frames_are_malformed() {
        let mut wire = vec![0, 0, 0, 4];
        wire.extend_from_slice(b"nope");
        let mut reader = FrameReader::new(wire.as_slice());
        assert!(matches!(
            reader.next::<HostMessage>(),
            Err(ReadError::Malformed(_))
        ));
        let huge = [0xff_u8, 0xff, 0xff, 0xff, b'x'];
        let mut reader = FrameReader::new(&huge[..]);
        assert!(matches!(
            reader.next::<HostMessage>(),
            Err(ReadError::Malformed(_))
        ));
    }
}
