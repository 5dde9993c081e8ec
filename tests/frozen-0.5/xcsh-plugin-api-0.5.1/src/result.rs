//! [`AgentToolResult`]: what a tool, an `apply` or a `reject` hands back to the agent.
//!
//! It mirrors the TypeScript `AgentToolResult`: a list of content blocks (text or image) plus
//! optional structured `details`. The serde form is the one the agent runtime speaks
//! (`{"type":"text","text":...}`, `{"type":"image","data":...,"mimeType":...}`).

use abi_stable::std_types::{ROption, RString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ffi::{details_from_json, FfiContent, FfiContentKind, FfiToolResult, KnownContentKind};

/// One block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Plain UTF-8 text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type such as `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

/// The result of a tool call, an `apply` or a `reject`.
///
/// ```
/// use xcsh_plugin_api::AgentToolResult;
///
/// let result = AgentToolResult::text("Renamed 2 files")
///     .with_details(serde_json::json!({ "renamed": 2 }));
/// assert_eq!(result.joined_text(), "Renamed 2 files");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentToolResult {
    /// Content blocks, in order.
    pub content: Vec<Content>,
    /// Structured details for the runtime (not shown to the model as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl AgentToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            details: None,
        }
    }

    /// The same result with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The text blocks, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            Content::Image { .. } => None,
        })
    }

    /// The non-empty text blocks joined by `\n`.
    pub fn joined_text(&self) -> String {
        self.texts()
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl From<AgentToolResult> for FfiToolResult {
    fn from(result: AgentToolResult) -> Self {
        let content = result
            .content
            .into_iter()
            .map(|block| match block {
                Content::Text { text } => FfiContent {
                    kind: FfiContentKind::TEXT,
                    text: text.into(),
                    mime_type: RString::new(),
                },
                Content::Image { data, mime_type } => FfiContent {
                    kind: FfiContentKind::IMAGE,
                    text: data.into(),
                    mime_type: mime_type.into(),
                },
            })
            .collect();
        let details_json = match result.details {
            Some(details) => ROption::RSome(RString::from(details.to_string())),
            None => ROption::RNone,
        };
        FfiToolResult {
            content,
            details_json,
        }
    }
}

impl From<FfiToolResult> for AgentToolResult {
    fn from(result: FfiToolResult) -> Self {
        let content = result
            .content
            .into_iter()
            .map(|block| match block.kind.known() {
                Some(KnownContentKind::Text) => Content::Text {
                    text: block.text.into_string(),
                },
                Some(KnownContentKind::Image) => Content::Image {
                    data: block.text.into_string(),
                    mime_type: block.mime_type.into_string(),
                },
                // A kind from a newer library: reported, never misread as text or image.
                None => Content::Text {
                    text: format!(
                        "[unsupported content block of kind {} from a newer xcsh-plugin-api]",
                        block.kind.0
                    ),
                },
            })
            .collect();
        AgentToolResult {
            content,
            details: details_from_json(result.details_json),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_ffi() {
        let original = AgentToolResult {
            content: vec![
                Content::Text { text: "a".into() },
                Content::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
            ],
            details: Some(serde_json::json!({"n": 1})),
        };
        let back = AgentToolResult::from(FfiToolResult::from(original.clone()));
        assert_eq!(back, original);
    }

    #[test]
    fn joined_text_skips_empty_blocks_and_images() {
        let result = AgentToolResult {
            content: vec![
                Content::Text { text: "one".into() },
                Content::Text {
                    text: String::new(),
                },
                Content::Image {
                    data: String::new(),
                    mime_type: "image/png".into(),
                },
                Content::Text { text: "two".into() },
            ],
            details: None,
        };
        assert_eq!(result.joined_text(), "one\ntwo");
    }

    #[test]
    fn serde_shape_matches_the_agent_runtime() {
        let json = serde_json::to_value(AgentToolResult::text("hi")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"content":[{"type":"text","text":"hi"}]})
        );
    }
}
