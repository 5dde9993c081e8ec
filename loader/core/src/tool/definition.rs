//! A tool's [`ToolSpec`] without its origin, in a serialisable form: what a plugin child
//! reports at its handshake, and what the definitions caches (isolated and in-process) keep.
//! One shape for both, so a tool is described the same way wherever it was learned.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ToolHints, ToolOrigin, ToolSpec};

/// One tool's static description, without where it comes from (the plugin's path, which the
/// handshake's connection or the cache's key already names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The tool's name, as the model calls it.
    pub name: String,
    /// Its human-readable label.
    pub label: String,
    /// Its description, for the model.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: Value,
    /// Whether it is left out of the tool list.
    pub hidden: bool,
    /// Whether it may push a pending action.
    pub deferrable: bool,
    /// The tool's behaviour hints (each absent when the tool gives none).
    #[serde(default)]
    pub hints: Hints,
    /// How a call of it looks (xcsh-plugin-api 0.8), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_view: Option<xcsh_plugin_api::view::CallView>,
}

/// A tool's behaviour hints, serialised (see [`ToolHints`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hints {
    /// [`ToolHints::read_only`].
    pub read_only: Option<bool>,
    /// [`ToolHints::destructive`].
    pub destructive: Option<bool>,
    /// [`ToolHints::idempotent`].
    pub idempotent: Option<bool>,
    /// [`ToolHints::open_world`].
    pub open_world: Option<bool>,
}

impl ToolDefinition {
    /// `tool`'s definition.
    pub fn of(tool: &dyn super::Tool) -> Self {
        let spec = tool.spec();
        ToolDefinition {
            name: spec.name.clone(),
            label: spec.label.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            hidden: spec.hidden,
            deferrable: spec.deferrable,
            hints: spec.hints.into(),
            call_view: tool.call_view(),
        }
    }

    /// The spec of a tool so defined, coming from `origin` (its call view is
    /// [`ToolDefinition::call_view`], kept beside it by whoever runs the tool).
    pub fn into_spec(self, origin: ToolOrigin) -> ToolSpec {
        ToolSpec {
            name: self.name,
            label: self.label,
            description: self.description,
            parameters: self.parameters,
            hidden: self.hidden,
            deferrable: self.deferrable,
            hints: self.hints.into(),
            origin,
        }
    }
}

impl From<ToolHints> for Hints {
    fn from(hints: ToolHints) -> Self {
        Hints {
            read_only: hints.read_only,
            destructive: hints.destructive,
            idempotent: hints.idempotent,
            open_world: hints.open_world,
        }
    }
}

impl From<Hints> for ToolHints {
    fn from(hints: Hints) -> Self {
        ToolHints {
            read_only: hints.read_only,
            destructive: hints.destructive,
            idempotent: hints.idempotent,
            open_world: hints.open_world,
        }
    }
}
