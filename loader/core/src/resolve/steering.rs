//! Steering the model while something is pending: the forced tool choice in each provider's
//! shape, and the hidden reminder queued on every push.

use std::str::FromStr;

use serde_json::{json, Value};

pub use crate::messages::{RESOLVE_REMINDER, RESOLVE_REMINDER_TAG};

/// A model provider whose tool-choice shape the session knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses API.
    OpenAiResponses,
    /// Google Gemini.
    Google,
    /// AWS Bedrock Converse.
    Bedrock,
}

impl Provider {
    /// Every provider, in documentation order.
    pub const ALL: [Provider; 5] = [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::OpenAiResponses,
        Provider::Google,
        Provider::Bedrock,
    ];

    /// The provider's name as written in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Google => "google",
            Provider::Bedrock => "bedrock",
        }
    }
}

impl FromStr for Provider {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Provider::ALL
            .into_iter()
            .find(|provider| provider.as_str() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Provider::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown provider \"{name}\" (known: {})", known.join(", "))
            })
    }
}

/// A tool-choice override for the next model request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolChoice {
    /// The provider-specific JSON.
    pub json: Value,
    /// Set when the provider cannot combine a forced tool with extended thinking: the caller
    /// must turn thinking off for this request.
    pub incompatible_with_extended_thinking: bool,
}

/// The choice that forces a call to `tool_name`, in `provider`'s shape.
pub fn forced_tool_choice(provider: Provider, tool_name: &str) -> ToolChoice {
    let json = match provider {
        Provider::Anthropic => json!({"type": "tool", "name": tool_name}),
        Provider::OpenAi => json!({"type": "function", "function": {"name": tool_name}}),
        Provider::OpenAiResponses => json!({"type": "function", "name": tool_name}),
        Provider::Google => json!({
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [tool_name]}
        }),
        Provider::Bedrock => json!({"tool": {"name": tool_name}}),
    };
    ToolChoice {
        json,
        incompatible_with_extended_thinking: provider == Provider::Anthropic,
    }
}

/// A hidden message the runtime should send to the model before its next turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SteeringMessage {
    /// The message text.
    pub content: String,
    /// What kind of steering it is ([`RESOLVE_REMINDER_TAG`]).
    pub tag: String,
    /// The tool whose push caused it.
    pub source_tool_name: String,
}

impl SteeringMessage {
    pub(crate) fn resolve_reminder(source_tool_name: &str) -> Self {
        Self {
            content: RESOLVE_REMINDER.to_owned(),
            tag: RESOLVE_REMINDER_TAG.to_owned(),
            source_tool_name: source_tool_name.to_owned(),
        }
    }
}

/// How many steering messages a session keeps for a runtime that does not take them (the
/// newest; see [`crate::Session::take_steering_messages`]).
pub const STEERING_QUEUE_CAPACITY: usize = 64;

/// The session's queue of steering messages, until the runtime takes them.
///
/// Bounded: a runtime that never takes them (the MCP server, whose reminder rides on each
/// result instead) must not make a long session grow by one message per push. Only the
/// newest [`SteeringQueue::CAPACITY`] are kept; a runtime that takes them between model
/// requests never comes close.
#[derive(Debug, Default)]
pub(crate) struct SteeringQueue {
    messages: std::sync::Mutex<std::collections::VecDeque<SteeringMessage>>,
}

impl SteeringQueue {
    /// How many messages are kept at most (the oldest go first).
    pub(crate) const CAPACITY: usize = STEERING_QUEUE_CAPACITY;

    pub(crate) fn push(&self, message: SteeringMessage) {
        let mut messages = xcsh_plugin_api::__private::lock(&self.messages);
        if messages.len() == Self::CAPACITY {
            messages.pop_front();
        }
        messages.push_back(message);
    }

    /// Everything queued, oldest first, leaving the queue empty (and its memory returned).
    pub(crate) fn take(&self) -> Vec<SteeringMessage> {
        let taken = std::mem::take(&mut *xcsh_plugin_api::__private::lock(&self.messages));
        taken.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_keeps_the_newest_messages_only() {
        let queue = SteeringQueue::default();
        for i in 0..10_000 {
            queue.push(SteeringMessage::resolve_reminder(&format!("tool{i}")));
        }
        let taken = queue.take();
        assert_eq!(taken.len(), SteeringQueue::CAPACITY);
        assert_eq!(
            taken[0].source_tool_name,
            format!("tool{}", 10_000 - SteeringQueue::CAPACITY)
        );
        assert_eq!(
            taken[SteeringQueue::CAPACITY - 1].source_tool_name,
            "tool9999"
        );
        assert!(queue.take().is_empty());
    }

    #[test]
    fn provider_shapes_match_the_spec() {
        let shapes: Vec<String> = Provider::ALL
            .into_iter()
            .map(|p| forced_tool_choice(p, "resolve").json.to_string())
            .collect();
        assert_eq!(
            shapes,
            [
                r#"{"name":"resolve","type":"tool"}"#,
                r#"{"function":{"name":"resolve"},"type":"function"}"#,
                r#"{"name":"resolve","type":"function"}"#,
                r#"{"functionCallingConfig":{"allowedFunctionNames":["resolve"],"mode":"ANY"}}"#,
                r#"{"tool":{"name":"resolve"}}"#,
            ]
        );
        assert!(
            forced_tool_choice(Provider::Anthropic, "resolve").incompatible_with_extended_thinking
        );
        assert!(
            !forced_tool_choice(Provider::Google, "resolve").incompatible_with_extended_thinking
        );
    }

    #[test]
    fn providers_parse_by_name() {
        for provider in Provider::ALL {
            assert_eq!(provider.as_str().parse::<Provider>(), Ok(provider));
        }
        assert!("mistral"
            .parse::<Provider>()
            .unwrap_err()
            .contains("mistral"));
    }
}
