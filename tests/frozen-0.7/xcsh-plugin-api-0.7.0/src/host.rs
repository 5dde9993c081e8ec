//! The host services' messages: what a running tool may ask of its host (docs/guide/src/ask.md) and
//! what the host answers, as they cross the ABI (JSON text through
//! [`ToolContextFfi::host_request`](crate::ffi::ToolContextFfi::host_request)) and, unchanged, the
//! plugin-process link.
//!
//! One request type carries every service, so that a service added later is one more variant
//! here and one more method in each host, never one more path through the ABI or the
//! protocol. Tool authors use the typed front of it, [`Ui`](crate::Ui) and
//! [`ToolContext::complete`](crate::ToolContext::complete); hosts (`xcsh-loader`,
//! `testing::PluginTest`) read these types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod form_fields;
pub use form_fields::{form_fields, ordered_fields, FieldInput, FieldOption, FormField};

/// What a running call may ask of its host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "service", rename_all = "snake_case")]
pub enum HostRequest {
    /// A yes/no question; answered [`HostReply::Confirmed`].
    Confirm {
        /// Short title.
        title: String,
        /// The question.
        message: String,
    },
    /// A choice of one option; answered [`HostReply::Chosen`].
    Select {
        /// Short title.
        title: String,
        /// The options, in order (non-empty, no duplicates).
        options: Vec<String>,
    },
    /// A line of text; answered [`HostReply::Chosen`].
    Input {
        /// Short title.
        title: String,
        /// Shown in the empty field.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        placeholder: Option<String>,
    },
    /// A form asked in one go; answered [`HostReply::Form`].
    Form {
        /// What the form is for.
        message: String,
        /// Its flat JSON Schema (see [`form_schema`](crate::form_schema)).
        schema: Value,
        /// The fields in the order to ask them (the struct's), when known: a JSON object's
        /// keys carry no order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        order: Vec<String>,
    },
    /// A message for the user; answered [`HostReply::Done`].
    Notify {
        /// The message.
        message: String,
        /// Its severity.
        level: NotifyLevel,
    },
    /// A status line under `key` (`None` clears it); answered [`HostReply::Done`].
    SetStatus {
        /// Which status line.
        key: String,
        /// Its text, or `None` to clear it.
        #[serde(default)]
        text: Option<String>,
    },
    /// A completion from the session's model; answered [`HostReply::Completion`].
    Complete {
        /// What to ask.
        request: CompletionRequest,
    },
    /// A program to run, sent only to a host whose [`HostFacts::runs_programs`] is set (a test
    /// harness's script); everywhere else `exec` runs it in the plugin's own process.
    /// Answered [`HostReply::Exec`].
    Exec {
        /// What to run.
        request: crate::exec::ExecRequest,
    },
}

impl HostRequest {
    /// Whether a user must answer this request (the host's user interface is needed).
    pub fn is_question(&self) -> bool {
        matches!(
            self,
            Self::Confirm { .. } | Self::Select { .. } | Self::Input { .. } | Self::Form { .. }
        )
    }

    /// The service's name, for messages (`confirm`, `select`, ...).
    pub fn service(&self) -> &'static str {
        match self {
            Self::Confirm { .. } => "confirm",
            Self::Select { .. } => "select",
            Self::Input { .. } => "input",
            Self::Form { .. } => "form",
            Self::Notify { .. } => "notify",
            Self::SetStatus { .. } => "set_status",
            Self::Complete { .. } => "complete",
            Self::Exec { .. } => "exec",
        }
    }
}

/// The host's answer to a [`HostRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum HostReply {
    /// The answer to a confirm.
    Confirmed {
        /// Whether the user said yes.
        yes: bool,
    },
    /// The answer to a select or an input: `None` when the user dismissed it.
    Chosen {
        /// The option chosen, or the text typed.
        #[serde(default)]
        value: Option<String>,
    },
    /// The answer to a form.
    Form {
        /// How the user answered.
        action: FormAction,
        /// The values, with `accept` only.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
    },
    /// A notification or status was taken.
    Done,
    /// The model's answer.
    Completion {
        /// Its text.
        text: String,
        /// The model that answered, when the host knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// What a program did (a test harness's script).
    Exec {
        /// Its output.
        output: crate::exec::ExecOutput,
    },
}

/// How a user answered a form (MCP elicitation's three outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormAction {
    /// Submitted the values.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed the form without choosing.
    Cancel,
}

/// What a host can do for a call: asked once per call, so `has_ui()` and `model()` need no
/// round trip.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Whether someone can answer questions.
    #[serde(default)]
    pub has_ui: bool,
    /// The session's model, when the host knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelInfo>,
    /// Whether `complete` can reach a model (an MCP client may sample without naming one).
    #[serde(default)]
    pub can_complete: bool,
    /// Where the plugin may write, when its host confines it (a plugin process's sandbox):
    /// `exec` refuses a working directory elsewhere. `None`: not confined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable: Option<Vec<std::path::PathBuf>>,
    /// Whether the host runs programs for the plugin ([`HostRequest::Exec`]): a test
    /// harness's script. Real hosts leave it unset, and programs run in the plugin's process.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runs_programs: bool,
}

/// The session's model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Its provider (`anthropic`, `openai`, ...).
    pub provider: String,
    /// Its id (`claude-sonnet-4-5`, ...).
    pub id: String,
}

/// Severity of a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyLevel {
    /// Information.
    #[default]
    Info,
    /// Something to look at.
    Warning,
    /// Something failed.
    Error,
}

/// Who speaks in a [`CompletionMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user (the tool, asking).
    User,
    /// The model (an earlier answer).
    Assistant,
}

/// One message of a [`CompletionRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub text: String,
}

/// A request to the session's model.
///
/// ```
/// let request = xcsh_plugin_api::CompletionRequest::new("Name this function")
///     .with_system("Answer with one identifier")
///     .with_max_tokens(20);
/// assert_eq!(request.messages.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// The conversation, oldest first; at least one message.
    pub messages: Vec<CompletionMessage>,
    /// A system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
}

impl CompletionRequest {
    /// One user message, up to 1,000 tokens of answer.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            messages: vec![CompletionMessage {
                role: Role::User,
                text: prompt.into(),
            }],
            system: None,
            max_tokens: 1000,
        }
    }

    /// The same request with a system prompt.
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The same request with another cap on the answer's length.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
}

impl From<&str> for CompletionRequest {
    fn from(prompt: &str) -> Self {
        Self::new(prompt)
    }
}

impl From<String> for CompletionRequest {
    fn from(prompt: String) -> Self {
        Self::new(prompt)
    }
}

/// Why a session event was sent: the TypeScript `onSession` reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionReason {
    /// The session started (or, over MCP, a client initialized it).
    Start,
    /// Another session file was opened (`/new`, `/resume`, a fork).
    Switch,
    /// The conversation was branched.
    Branch,
    /// The user moved to another point of the session tree.
    Tree,
    /// The session ends.
    Shutdown,
    /// A reason this build does not know, passed through as the runtime named it.
    #[serde(untagged)]
    Other(String),
}

/// One earlier result of the tool on the session's current branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlierResult {
    /// The call's id.
    pub tool_call_id: String,
    /// The result's `details` (`null` when it had none).
    #[serde(default)]
    pub details: Value,
}

/// A session event, as a tool's [`on_session`](crate::CustomTool::on_session) hears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEvent {
    /// What happened.
    pub reason: SessionReason,
    /// The session file left behind, on `switch`, when the host knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_file: Option<String>,
    /// The tool's own earlier results on the current branch, oldest first: what a tool
    /// rebuilds its state from after a branch or a resume. Empty where the host keeps no
    /// history (a Rust session, MCP).
    #[serde(default)]
    pub results: Vec<EarlierResult>,
}

impl SessionEvent {
    /// An event with no history.
    pub fn new(reason: SessionReason) -> Self {
        Self {
            reason,
            previous_session_file: None,
            results: Vec::new(),
        }
    }
}

/// What [`ToolContext::complete`](crate::ToolContext::complete) fails with where no model
/// can be reached.
pub const NO_MODEL: &str = "No model available to plugins in this host.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_have_a_stable_json_shape() {
        let request = HostRequest::Confirm {
            title: "Rename".into(),
            message: "40 files?".into(),
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::json!({"service":"confirm","title":"Rename","message":"40 files?"})
        );
        let reply: HostReply =
            serde_json::from_value(serde_json::json!({"reply":"form","action":"decline"})).unwrap();
        assert_eq!(
            reply,
            HostReply::Form {
                action: FormAction::Decline,
                content: None
            }
        );
    }

    #[test]
    fn unknown_session_reasons_pass_through() {
        let event: SessionEvent =
            serde_json::from_value(serde_json::json!({"reason":"compact"})).unwrap();
        assert_eq!(event.reason, SessionReason::Other("compact".into()));
        let event: SessionEvent =
            serde_json::from_value(serde_json::json!({"reason":"branch","results":[]})).unwrap();
        assert_eq!(event.reason, SessionReason::Branch);
    }
}
