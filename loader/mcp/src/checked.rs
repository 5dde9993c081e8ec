//! The server's stdio transport, in place of `rmcp`'s `AsyncRwTransport` (the same framing:
//! one JSON message a line, the same 16 MiB bound): it answers, as JSON-RPC 2.0 and MCP say,
//! the lines `rmcp` 3.11 would otherwise drop or answer with the wrong error, and hands every
//! other message to `rmcp` as parsed.
//!
//! Why a transport of our own and not a patch of `rmcp`: `rmcp` decides these in `transport/async_rw.rs` (a line that
//! is not JSON is dropped without an answer, on purpose: rust-sdk issue 938), in the untagged
//! deserialization of `ClientRequest` (a known method whose params do not fit falls back to
//! `CustomRequest`, which the handler answers `-32601 Method not found`) and in
//! `service/server.rs` (a request before `initialize` is read as the draft's stateless
//! lifecycle, and answered with the draft's missing `_meta` keys). Answering them here keeps
//! `rmcp` as published, and every check below could move into `AsyncRwTransport::receive`
//! upstream as it is. What it answers:
//!
//! - a line that is not JSON: `-32700 Parse error`, id `null`; the session goes on (an
//!   answer without an id carries `"id": null`, as JSON-RPC 2.0 says; `rmcp` leaves it out,
//!   as the 2026-07-28 draft allows);
//! - JSON that is not a JSON-RPC message (a batch included, which MCP dropped): `-32600
//!   Invalid Request`, with the message's id when it has a usable one;
//! - a request for a method this server serves whose params do not fit (`tools/call` without
//!   `name`, `arguments` not an object, `logging/setLevel` with an unknown level): `-32602
//!   Invalid params`, saying what does not fit;
//! - before `initialize`, a request other than `initialize`, `ping` or `server/discover` that
//!   does not carry the draft's inline protocol version: `-32600`, saying the session is not
//!   initialized; a notification or a response then is dropped (`rmcp` would end the session
//!   on it).
//!
//! Everything else goes on to `rmcp` unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::model::JsonRpcMessage;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorData, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read (one message): `rmcp`'s own bound.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The methods this server serves: a request for one of them whose params do not fit gets
/// `-32602`, not `-32601`.
const SERVED: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "logging/setLevel",
];

/// Requests `rmcp` takes before `initialize`.
const BEFORE_INITIALIZE: &[&str] = &["initialize", "ping", "server/discover"];

/// The draft protocol's inline version key (`rmcp`'s `RequestMetaObject`): a request that
/// carries it is the draft's stateless lifecycle, which `rmcp` handles.
const INLINE_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// Told to a client whose request came before `initialize`.
pub(super) const NOT_INITIALIZED: &str =
    "the session is not initialized: send `initialize` (and `notifications/initialized`) first";

type Sending = Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

/// The checked stdio transport (see the module's documentation).
pub(super) struct Checked<R, W> {
    read: BufReader<R>,
    /// The line being read (kept across a cancelled `receive`).
    line: Vec<u8>,
    /// Dropping the rest of a line longer than [`MAX_LINE`].
    discarding: bool,
    /// The client's end, one message a line; `None` once closed.
    write: Arc<Mutex<Option<W>>>,
    /// An error answer on its way out (kept across a cancelled `receive`).
    sending: Option<Sending>,
    /// Whether an `initialize` request went on to `rmcp`.
    initialize_seen: bool,
}

impl<R, W> Checked<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(super) fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            write: Arc::new(Mutex::new(Some(write))),
            sending: None,
            initialize_seen: false,
        }
    }

    /// Read one whole line into `self.line`; `false` at the end of the input (or an error).
    /// Cancel-safe: what was read stays in `self.line`.
    async fn read_line(&mut self) -> bool {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) => return false,
                Ok(available) => available,
                Err(error) => {
                    tracing::error!(%error, "cannot read the client's input");
                    return false;
                }
            };
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len() + take > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                tracing::error!(max = MAX_LINE, "a message longer than the limit; dropped");
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() && !self.line.is_empty() {
                return true;
            }
        }
    }

    /// What to do with one line.
    fn check(&mut self, line: &[u8]) -> Verdict {
        let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, "a line that is not JSON");
                return Verdict::Answer(None, ErrorData::parse_error("Parse error", None));
            }
        };
        let id = value.get("id").and_then(request_id);
        let method = value.get("method").and_then(Value::as_str);
        let message = match serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
            Ok(message) => message,
            // A notification rmcp cannot read (one of another protocol's, or a newer one):
            // ignored, as rmcp does.
            Err(_) if method.is_some() && value.get("id").is_none() => return Verdict::Skip,
            Err(error) => {
                let data = json!({"reason": error.to_string()});
                return Verdict::Answer(
                    id,
                    ErrorData::invalid_request("Invalid Request", Some(data)),
                );
            }
        };
        match &message {
            ClientJsonRpcMessage::Request(request) => {
                let method = method.unwrap_or_default();
                if let ClientRequest::CustomRequest(_) = request.request {
                    if SERVED.contains(&method) {
                        let params = value.get("params").cloned().unwrap_or(Value::Null);
                        let reason = params_error(method, params);
                        let data = json!({"method": method, "reason": reason});
                        let text = format!("Invalid params for {method}: {reason}");
                        return Verdict::Answer(id, ErrorData::invalid_params(text, Some(data)));
                    }
                }
                if !self.initialize_seen {
                    let inline = value
                        .pointer("/params/_meta")
                        .and_then(|meta| meta.get(INLINE_VERSION_KEY))
                        .is_some();
                    if !inline && !BEFORE_INITIALIZE.contains(&method) {
                        let data = json!({"method": method});
                        return Verdict::Answer(
                            id,
                            ErrorData::invalid_request(NOT_INITIALIZED, Some(data)),
                        );
                    }
                    if method == "initialize" {
                        self.initialize_seen = true;
                    }
                }
            }
            _ if !self.initialize_seen => {
                tracing::debug!("a notification or response before initialize; dropped");
                return Verdict::Skip;
            }
            _ => {}
        }
        Verdict::Pass(Box::new(message))
    }
}

/// What becomes of one line.
enum Verdict {
    /// On to `rmcp`.
    Pass(Box<ClientJsonRpcMessage>),
    /// Answered here with this error.
    Answer(Option<RequestId>, ErrorData),
    /// Dropped.
    Skip,
}

/// A JSON-RPC id (a string or an integer); `None` for anything else.
fn request_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::String(_) | Value::Number(_) => serde_json::from_value(id.clone()).ok(),
        _ => None,
    }
}

/// Why `params` do not fit `method`.
#[allow(deprecated)] // `logging/setLevel`: SEP-2577 deprecates it; clients still use it.
fn params_error(method: &str, params: Value) -> String {
    use rmcp::model::{CallToolRequestParams, InitializeRequestParams, SetLevelRequestParams};
    let result = match method {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).map(drop),
        "logging/setLevel" => serde_json::from_value::<SetLevelRequestParams>(params).map(drop),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).map(drop),
        _ => return "the params do not fit the method".to_owned(),
    };
    match result {
        Err(error) => error.to_string(),
        Ok(()) => "the params do not fit the method".to_owned(),
    }
}

impl<R, W> Transport<RoleServer> for Checked<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = Arc::clone(&self.write);
        let line = encode(&item);
        async move {
            let line = line?;
            let mut write = write.lock().await;
            let Some(write) = write.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if let Some(sending) = self.sending.as_mut() {
                let sent = sending.await;
                self.sending = None;
                if let Err(error) = sent {
                    tracing::debug!(%error, "cannot answer the client");
                    return None;
                }
            }
            if !self.read_line().await {
                return None;
            }
            let line = std::mem::take(&mut self.line);
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            if trimmed.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match self.check(trimmed) {
                Verdict::Pass(message) => return Some(*message),
                Verdict::Skip => {}
                Verdict::Answer(id, error) => {
                    tracing::debug!(code = error.code.0, message = %error.message, "answered here");
                    self.sending =
                        Some(Box::pin(self.send(ServerJsonRpcMessage::error(error, id))));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut write) = self.write.lock().await.take() {
            write.flush().await?;
        }
        Ok(())
    }
}

/// One message as its line; an error answer without an id gets `"id": null`.
fn encode(item: &ServerJsonRpcMessage) -> std::io::Result<Vec<u8>> {
    let mut line = match item {
        JsonRpcMessage::Error(error) if error.id.is_none() => {
            let mut value = serde_json::to_value(item)?;
            if let Some(object) = value.as_object_mut() {
                object.insert("id".to_owned(), Value::Null);
            }
            serde_json::to_vec(&value)?
        }
        _ => serde_json::to_vec(item)?,
    };
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::io::AsyncBufReadExt;

    /// Feed `lines` to a checked transport; what `rmcp` gets and what was answered.
    async fn run(lines: &[&str]) -> (Vec<Value>, Vec<Value>) {
        let input = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let (out_write, out_read) = tokio::io::duplex(1 << 16);
        let mut transport = Checked::new(std::io::Cursor::new(input.into_bytes()), out_write);
        let mut passed = Vec::new();
        while let Some(message) = transport.receive().await {
            passed.push(serde_json::to_value(message).unwrap());
        }
        Transport::<RoleServer>::close(&mut transport)
            .await
            .unwrap();
        drop(transport);
        let mut answers = Vec::new();
        let mut reader = tokio::io::BufReader::new(out_read).lines();
        while let Some(line) = reader.next_line().await.unwrap() {
            answers.push(serde_json::from_str(&line).unwrap());
        }
        (passed, answers)
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    #[tokio::test]
    async fn answers_what_rmcp_would_drop_or_misname() {
        let (passed, answers) = run(&[
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            INIT,
            "not json",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"verbose"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
            r#"{"id":6}"#,
            r#"[]"#,
        ])
        .await;
        let codes: Vec<_> = answers
            .iter()
            .map(|a| (a["id"].clone(), a["error"]["code"].clone()))
            .collect();
        assert_eq!(
            codes,
            vec![
                (json!(1), json!(-32600)),
                (Value::Null, json!(-32700)),
                (json!(2), json!(-32602)),
                (json!(3), json!(-32602)),
                (json!(4), json!(-32602)),
                (json!(6), json!(-32600)),
                (Value::Null, json!(-32600)),
            ],
            "{answers:#?}"
        );
        assert!(answers[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not initialized"));
        assert!(answers[1].as_object().unwrap().contains_key("id"));
        let methods: Vec<_> = passed.iter().map(|m| m["method"].clone()).collect();
        assert_eq!(methods, vec![json!("initialize"), json!("tools/call")]);
    }
}
