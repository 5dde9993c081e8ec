//! The host services an MCP client offers (docs/guide/src/mcp.md): a plugin's questions become
//! `elicitation/create` requests, its `complete` a `sampling/createMessage`, its `notify` a
//! `notifications/message`, each only where the client declared the capability at
//! `initialize` (otherwise the session's defaults hold: no user, no model).
//!
//! Questions map onto elicitation's flat forms: `confirm` is one boolean field, `select` a
//! string field with the options as its `enum`, `input` a string field, a form its own schema.
//! A question withdrawn (its call cancelled) sends `notifications/cancelled` for the request.
//! rmcp has no timeout on these requests: a question waits as long as its call may run (the
//! session's timeout bounds the call, and with it the question).
//!
//! On protocol 2026-07-28 and later a server may not send requests to its client: there each
//! question becomes one round of "input required" instead (see `rounds`).

// Sampling and logging are deprecated by SEP-2577 (protocol 2026-07-28); they are what every
// client of 2025-11-25 speaks, and what docs/guide/src/mcp.md asks for.
#![allow(deprecated)]

use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientResult, CreateMessageRequest,
    CreateMessageRequestParams, CreateMessageResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, LoggingLevel,
    LoggingMessageNotificationParam, SamplingMessage, ServerRequest,
};

use super::rounds::{Question, Questions};
use rmcp::service::{Peer, PeerRequestOptions, RoleServer};
use serde_json::{json, Value};

use xcsh_loader_core::services::{
    CompletionRequest, FormAction, HostReply, HostRequest, HostServices, NotifyLevel, Role,
};
use xcsh_loader_core::store::BoxFuture;
use xcsh_loader_core::tool::PluginError;

/// The field a question's one answer goes in.
const ANSWER: &str = "answer";

/// The services of one connected MCP client.
pub(super) struct McpClientServices {
    peer: Peer<RoleServer>,
    elicitation: bool,
    sampling: bool,
    /// On protocol 2026-07-28 and later: where the call's questions go, to be sent as rounds
    /// of "input required" (`None`: as requests to the client).
    rounds: Option<Questions>,
}

impl McpClientServices {
    pub(super) fn new(
        peer: Peer<RoleServer>,
        capabilities: Option<&ClientCapabilities>,
        rounds: Option<Questions>,
    ) -> Self {
        Self {
            elicitation: capabilities.is_some_and(|c| c.elicitation.is_some()),
            sampling: capabilities.is_some_and(|c| c.sampling.is_some()),
            peer,
            rounds,
        }
    }
}

/// Ask the client: as a request, or as a round of "input required"; the result as JSON.
async fn ask(
    peer: &Peer<RoleServer>,
    rounds: Option<&Questions>,
    request: InputRequest,
) -> Result<Value, PluginError> {
    if let Some(rounds) = rounds {
        let (answer, answered) = tokio::sync::oneshot::channel();
        rounds
            .send(Question { request, answer })
            .map_err(|_| PluginError::new("the call's client is gone"))?;
        return answered
            .await
            .map_err(|_| PluginError::new("the client never answered (the paused call expired)"))?
            .map_err(PluginError::new);
    }
    let request = match request {
        InputRequest::Elicitation(request) => ServerRequest::ElicitRequest(request),
        InputRequest::CreateMessage(request) => ServerRequest::CreateMessageRequest(request),
        _ => return Err(PluginError::new("not a request this server sends")),
    };
    let result = ask_client(peer, request).await?;
    serde_json::to_value(result).map_err(|e| PluginError::new(e.to_string()))
}

/// The elicitation form and message of a question.
fn form_of(question: &HostRequest) -> Option<(String, Value)> {
    let one = |field: Value| json!({"type": "object", "properties": {ANSWER: field}, "required": [ANSWER]});
    Some(match question {
        HostRequest::Confirm { title, message } => (
            message.clone(),
            one(json!({"type": "boolean", "title": title, "description": message})),
        ),
        HostRequest::Select { title, options } => (
            title.clone(),
            one(json!({"type": "string", "title": title, "enum": options})),
        ),
        HostRequest::Input { title, placeholder } => {
            let mut field = json!({"type": "string", "title": title});
            if let Some(placeholder) = placeholder {
                field["description"] = json!(placeholder);
            }
            (title.clone(), one(field))
        }
        HostRequest::Form {
            message,
            schema,
            order,
        } => (message.clone(), in_order(schema, order)),
        _ => return None,
    })
}

/// `schema` with its properties in the order to ask them (the plugin's struct order), as
/// JSON text: `serde_json::Value` keeps object keys sorted, rmcp's elicitation schema keeps
/// them as read.
fn in_order(schema: &Value, order: &[String]) -> Value {
    let mut text = String::from("{");
    for (key, value) in schema.as_object().into_iter().flatten() {
        if key == "properties" {
            continue;
        }
        text.push_str(&format!("{}:{},", json!(key), value));
    }
    let fields: Vec<String> = xcsh_plugin_api::host::ordered_fields(schema, order)
        .into_iter()
        .map(|(name, field)| format!("{}:{}", json!(name), field))
        .collect();
    text.push_str("\"properties\":{");
    text.push_str(&fields.join(","));
    text.push_str("}}");
    Value::String(text)
}

/// The question's answer from the client's elicitation result.
fn reply_of(
    question: &HostRequest,
    action: ElicitationAction,
    content: Option<Value>,
) -> Result<HostReply, String> {
    let accepted = matches!(action, ElicitationAction::Accept);
    let answer = |content: &Option<Value>| content.as_ref().and_then(|c| c.get(ANSWER)).cloned();
    let malformed = |what: &str| {
        format!(
            "the client's answer to the {} is malformed: {what}",
            question.service()
        )
    };
    Ok(match question {
        HostRequest::Confirm { .. } if accepted => match answer(&content) {
            Some(Value::Bool(yes)) => HostReply::Confirmed { yes },
            _ => return Err(malformed("an accepted confirm needs a boolean \"answer\"")),
        },
        HostRequest::Confirm { .. } => HostReply::Confirmed { yes: false },
        HostRequest::Select { .. } | HostRequest::Input { .. } if accepted => {
            match answer(&content) {
                Some(Value::String(value)) => HostReply::Chosen { value: Some(value) },
                _ => return Err(malformed("an accepted answer needs a string \"answer\"")),
            }
        }
        HostRequest::Select { .. } | HostRequest::Input { .. } => HostReply::Chosen { value: None },
        _ => HostReply::Form {
            action: match action {
                ElicitationAction::Accept => FormAction::Accept,
                ElicitationAction::Decline => FormAction::Decline,
                // Cancel, and any outcome a later protocol adds: the user did not answer.
                _ => FormAction::Cancel,
            },
            content: if accepted {
                Some(content.unwrap_or_else(|| json!({})))
            } else {
                None
            },
        },
    })
}

/// Sends `notifications/cancelled` for a request whose answer is no longer wanted.
struct Withdraw {
    peer: Peer<RoleServer>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = Some("the tool call that asked was cancelled".to_owned());
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                    .await;
            });
        }
    }
}

/// Send `request` to the client and wait for its result; dropping the future withdraws it.
async fn ask_client(
    peer: &Peer<RoleServer>,
    request: ServerRequest,
) -> Result<ClientResult, PluginError> {
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .map_err(|e| PluginError::new(format!("cannot ask the MCP client: {e}")))?;
    let mut withdraw = Withdraw {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    withdraw.id = None;
    result.map_err(|e| PluginError::new(format!("the MCP client did not answer: {e}")))
}

impl HostServices for McpClientServices {
    fn has_ui(&self) -> bool {
        self.elicitation
    }

    fn ask(&self, question: HostRequest) -> BoxFuture<Result<HostReply, PluginError>> {
        let peer = self.peer.clone();
        let rounds = self.rounds.clone();
        Box::pin(async move {
            let (message, schema) =
                form_of(&question).ok_or_else(|| PluginError::new("not a question"))?;
            // A form arrives as ordered JSON text (see `in_order`); a question's one field as
            // a value.
            let requested_schema: Result<ElicitationSchema, _> = match &schema {
                Value::String(text) => serde_json::from_str(text),
                other => serde_json::from_value(other.clone()),
            };
            let requested_schema = requested_schema.map_err(|e| {
                PluginError::new(format!(
                    "this form cannot be sent as an MCP elicitation: {e}"
                ))
            })?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            };
            let request = InputRequest::Elicitation(ElicitRequest::new(params));
            let result = ask(&peer, rounds.as_ref(), request).await?;
            let result: ElicitResult = serde_json::from_value(result).map_err(|e| {
                PluginError::new(format!(
                    "the MCP client's elicitation result is malformed: {e}"
                ))
            })?;
            reply_of(&question, result.action, result.content).map_err(PluginError::new)
        })
    }

    fn notify(&self, message: &str, level: NotifyLevel) {
        let level = match level {
            NotifyLevel::Info => LoggingLevel::Info,
            NotifyLevel::Warning => LoggingLevel::Warning,
            NotifyLevel::Error => LoggingLevel::Error,
        };
        let peer = self.peer.clone();
        let data = json!(message);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let note =
                    LoggingMessageNotificationParam::new(level, data).with_logger("xcsh/notify");
                let _ = peer.notify_logging_message(note).await;
            });
        }
    }

    fn can_complete(&self) -> bool {
        self.sampling
    }

    fn complete(&self, request: CompletionRequest) -> BoxFuture<Result<String, PluginError>> {
        let peer = self.peer.clone();
        let rounds = self.rounds.clone();
        Box::pin(async move {
            let messages: Vec<SamplingMessage> = request
                .messages
                .iter()
                .map(|m| match m.role {
                    Role::User => SamplingMessage::user_text(m.text.clone()),
                    Role::Assistant => SamplingMessage::assistant_text(m.text.clone()),
                })
                .collect();
            let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
            if let Some(system) = request.system {
                params = params.with_system_prompt(system);
            }
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
            let result = ask(&peer, rounds.as_ref(), request).await?;
            let result: CreateMessageResult = serde_json::from_value(result).map_err(|e| {
                PluginError::new(format!(
                    "the MCP client's sampling result is malformed: {e}"
                ))
            })?;
            let text = result
                .message
                .content
                .first()
                .and_then(|c| c.as_text())
                .map(|t| t.text.clone());
            text.ok_or_else(|| PluginError::new("the MCP client's model answered without text"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confirm() -> HostRequest {
        HostRequest::Confirm {
            title: "Delete".into(),
            message: "40 files?".into(),
        }
    }

    #[test]
    fn a_client_s_malformed_answer_is_an_error_naming_the_question() {
        // Accepted without the boolean the question asked for.
        let error = reply_of(
            &confirm(),
            ElicitationAction::Accept,
            Some(json!({"answer": "yes"})),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "the client's answer to the confirm is malformed: an accepted confirm needs a boolean \"answer\""
        );
        let select = HostRequest::Select {
            title: "Pick".into(),
            options: vec!["a".into()],
        };
        assert!(reply_of(&select, ElicitationAction::Accept, None).is_err());
        // Declined and cancelled questions get their defaults.
        assert_eq!(
            reply_of(&confirm(), ElicitationAction::Decline, None),
            Ok(HostReply::Confirmed { yes: false })
        );
        assert_eq!(
            reply_of(&select, ElicitationAction::Cancel, None),
            Ok(HostReply::Chosen { value: None })
        );
    }

    #[test]
    fn a_form_goes_out_with_its_fields_in_the_struct_s_order() {
        let schema = json!({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}}, "required": ["b"]});
        let Value::String(text) = in_order(&schema, &["b".into(), "a".into()]) else {
            panic!("not text");
        };
        let b = text.find("\"b\":").unwrap();
        let a = text.find("\"a\":").unwrap();
        assert!(b < a, "{text}");
        let parsed: ElicitationSchema = serde_json::from_str(&text).unwrap();
        let back = serde_json::to_string(&parsed).unwrap();
        assert!(
            back.find("\"b\"").unwrap() < back.find("\"a\"").unwrap(),
            "{back}"
        );
    }
}
