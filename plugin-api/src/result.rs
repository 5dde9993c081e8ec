//! [`AgentToolResult`]: what a tool, an `apply` or a `reject` hands back to the agent.
//!
//! It mirrors the TypeScript `AgentToolResult`: a list of content blocks (text or image) plus
//! optional structured `details`. The serde form is the one the agent runtime speaks
//! (`{"type":"text","text":...}`, `{"type":"image","data":...,"mimeType":...}`).

use abi_stable::std_types::{ROption, RString};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ffi::{details_from_json, FfiContent, FfiContentKind, FfiToolResult, KnownContentKind};
use crate::view::View;

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
    /// Audio, base64-encoded (since 0.6).
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type such as `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource (since 0.6): a document the tool hands over whole.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// The resource of a [`Content::Resource`] block: text, or base64 data (`blob`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// Its URI.
    pub uri: String,
    /// Its MIME type, when known.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its base64 data, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// A one-line description of a block a host cannot show (audio, a resource): its kind,
    /// MIME type and size, as docs/guide/src/ask.md says. `None` for text and images.
    pub fn placeholder(&self) -> Option<String> {
        match self {
            Content::Text { .. } | Content::Image { .. } => None,
            Content::Audio { data, mime_type } => {
                Some(format!("[audio {mime_type}, {} bytes]", base64_len(data)))
            }
            Content::Resource { resource } => {
                let mime = resource.mime_type.as_deref().unwrap_or("unknown type");
                let size = match (&resource.text, &resource.blob) {
                    (Some(text), _) => text.len(),
                    (None, Some(blob)) => base64_len(blob),
                    (None, None) => 0,
                };
                Some(format!(
                    "[resource {} ({mime}), {size} bytes]",
                    resource.uri
                ))
            }
        }
    }
}

/// The number of bytes base64 text decodes to.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() * 3 / 4
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
    /// How the result looks, for hosts that draw it (since 0.8; see [`crate::view`]). Never
    /// shown to the model: the content says what the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<View>,
}

impl AgentToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::Text { text: text.into() }],
            details: None,
            view: None,
        }
    }

    /// The same result with `details` set.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same result with `view` set: how hosts that draw draw it (see [`crate::view`]).
    #[must_use]
    pub fn with_view(mut self, view: View) -> Self {
        self.view = Some(view);
        self
    }

    /// The text blocks, in order.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
    }

    /// The result as a host that shows text and images only gets it (xcsh's runtime, a
    /// terminal): each audio or resource block replaced by a text line naming its kind, MIME
    /// type and size ([`Content::placeholder`]).
    ///
    /// ```
    /// use xcsh_plugin_api::{AgentToolResult, Content};
    /// let result = AgentToolResult {
    ///     content: vec![Content::Audio { data: "UklGRg==".into(), mime_type: "audio/wav".into() }],
    ///     details: None,
    ///     view: None,
    /// };
    /// assert_eq!(result.with_placeholders().joined_text(), "[audio audio/wav, 4 bytes]");
    /// ```
    #[must_use]
    pub fn with_placeholders(mut self) -> Self {
        for block in &mut self.content {
            if let Some(text) = block.placeholder() {
                *block = Content::Text { text };
            }
        }
        self
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
                Content::Audio { data, mime_type } => FfiContent {
                    kind: FfiContentKind::AUDIO,
                    text: data.into(),
                    mime_type: mime_type.into(),
                },
                Content::Resource { resource } => FfiContent {
                    kind: FfiContentKind::RESOURCE,
                    mime_type: resource.mime_type.clone().unwrap_or_default().into(),
                    text: serde_json::json!({
                        "uri": resource.uri,
                        "text": resource.text,
                        "blob": resource.blob,
                    })
                    .to_string()
                    .into(),
                },
            })
            .chain(result.view.map(|view| FfiContent {
                kind: FfiContentKind::VIEW,
                text: view.to_json().to_string().into(),
                mime_type: RString::new(),
            }))
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

/// A text result: what a `#[tool]` function may return instead of an [`AgentToolResult`].
impl From<String> for AgentToolResult {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

/// A text result, as [`From<String>`].
impl From<&str> for AgentToolResult {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<FfiToolResult> for AgentToolResult {
    fn from(result: FfiToolResult) -> Self {
        let mut view = None;
        let mut content = Vec::with_capacity(result.content.len());
        for block in result.content {
            let block = match block.kind.known() {
                Some(KnownContentKind::Text) => Content::Text {
                    text: block.text.into_string(),
                },
                Some(KnownContentKind::Image) => Content::Image {
                    data: block.text.into_string(),
                    mime_type: block.mime_type.into_string(),
                },
                Some(KnownContentKind::Audio) => Content::Audio {
                    data: block.text.into_string(),
                    mime_type: block.mime_type.into_string(),
                },
                Some(KnownContentKind::Resource) => resource_from_ffi(&block),
                // Not content: the result's view. One that is not a view is left out (the
                // text says what the result is; a view that cannot be read is never an error).
                Some(KnownContentKind::View) => {
                    view = block.text.as_str().parse::<View>().ok().or(view);
                    continue;
                }
                // A kind from a newer library: reported, never misread as text or image.
                None => Content::Text {
                    text: format!(
                        "[unsupported content block of kind {} from a newer xcsh-plugin-api]",
                        block.kind.0
                    ),
                },
            };
            content.push(block);
        }
        AgentToolResult {
            content,
            details: details_from_json(result.details_json),
            view,
        }
    }
}

/// A resource block as it crossed the ABI (see `FfiContentKind::RESOURCE`); one the other
/// side garbled is reported as text, never dropped.
fn resource_from_ffi(block: &FfiContent) -> Content {
    #[derive(Deserialize)]
    struct Wire {
        uri: String,
        text: Option<String>,
        blob: Option<String>,
    }
    match serde_json::from_str::<Wire>(block.text.as_str()) {
        Ok(wire) => Content::Resource {
            resource: EmbeddedResource {
                uri: wire.uri,
                mime_type: (!block.mime_type.is_empty()).then(|| block.mime_type.to_string()),
                text: wire.text,
                blob: wire.blob,
            },
        },
        Err(error) => Content::Text {
            text: format!("[an embedded resource the plugin sent garbled: {error}]"),
        },
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
                Content::Audio {
                    data: "UklGRg==".into(),
                    mime_type: "audio/wav".into(),
                },
                Content::Resource {
                    resource: EmbeddedResource {
                        uri: "test://doc".into(),
                        mime_type: Some("text/plain".into()),
                        text: Some("hi".into()),
                        blob: None,
                    },
                },
            ],
            details: Some(serde_json::json!({"n": 1})),
            view: Some(
                crate::view::View::status(crate::view::State::Success, "t")
                    .block(crate::view::Block::files(["a.rs"])),
            ),
        };
        let ffi = FfiToolResult::from(original.clone());
        assert_eq!(ffi.content.len(), 5, "the view crosses as one more block");
        assert_eq!(ffi.content[4].kind, FfiContentKind::VIEW);
        let back = AgentToolResult::from(ffi);
        assert_eq!(back, original);
    }

    #[test]
    fn a_view_block_that_is_not_a_view_is_left_out_and_the_text_stays() {
        let mut ffi = FfiToolResult::from(AgentToolResult::text("the text"));
        ffi.content.push(FfiContent {
            kind: FfiContentKind::VIEW,
            text: "{not json".into(),
            mime_type: RString::new(),
        });
        let back = AgentToolResult::from(ffi);
        assert_eq!(back, AgentToolResult::text("the text"));
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
            view: None,
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
