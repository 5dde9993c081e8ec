//! docs/guide/src/write.md: an `Option<T>` parameter is an optional property of type `T` in every
//! derived schema (`schema_of`, `tool_params!`, `#[derive(JsonSchema)]`, typed forms), and a `null`
//! sent for it is accepted as absent, while a `null` for a required one is refused by name.

#![cfg(feature = "testing")]
#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use serde_json::json;
use xcsh_plugin_api::testing::{PluginTest, TestError};
use xcsh_plugin_api::*;

tool_params! {
    struct Params {
        /// The name.
        name: String,
        /// Whether to shout.
        loud: Option<bool>,
        /// How many times.
        times: Option<u32>,
        /// Tags to add.
        tags: Option<Vec<String>>,
        /// Where to write.
        target: Option<Target>,
        /// A note (`#[serde(default)]`).
        #[serde(default)]
        note: Option<String>,
    }

    /// A nested object with optional fields of its own.
    struct Target {
        path: String,
        append: Option<bool>,
    }
}

#[test]
fn options_are_optional_properties_of_their_type() {
    let schema = schema_of::<Params>();
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name."},
                "loud": {"type": "boolean", "description": "Whether to shout."},
                "times": {
                    "type": "integer", "format": "uint32", "minimum": 0,
                    "description": "How many times."
                },
                "tags": {
                    "type": "array", "items": {"type": "string"},
                    "description": "Tags to add."
                },
                "target": {"$ref": "#/$defs/Target", "description": "Where to write."},
                "note": {
                    "type": "string",
                    "description": "A note (`#[serde(default)]`)."
                }
            },
            "required": ["name"],
            "additionalProperties": false,
            "$defs": {
                "Target": {
                    "description": "A nested object with optional fields of its own.",
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "append": {"type": "boolean"}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                }
            }
        })
    );
    assert!(!schema.to_string().contains("null"), "{schema}");
}

#[test]
fn a_plain_derive_gets_the_same_schema() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)] // Only its schema is looked at.
    struct Plain {
        limit: Option<f64>,
        flag: Option<bool>,
    }
    assert_eq!(
        schema_of::<Plain>()["properties"],
        json!({"limit": {"type": "number", "format": "double"}, "flag": {"type": "boolean"}})
    );
}

#[test]
fn forms_ask_optional_fields_by_their_type() {
    tool_params! {
        struct Ask {
            /// Keep a copy.
            keep: Option<bool>,
            count: Option<u32>,
        }
    }
    let ask: Ask = serde_json::from_value(json!({"keep": true})).unwrap();
    assert_eq!((ask.keep, ask.count), (Some(true), None));
    let form = form_schema::<Ask>().unwrap();
    assert_eq!(
        form["properties"],
        json!({
            "keep": {"type": "boolean", "description": "Keep a copy."},
            "count": {"type": "integer", "minimum": 0}
        })
    );
}

#[derive(Default)]
struct Echo;

impl CustomTool for Echo {
    type Params = Params;
    fn name(&self) -> &str {
        "echo"
    }
    fn label(&self) -> &str {
        "Echo"
    }
    fn description(&self) -> &str {
        "Says what it got"
    }
    async fn execute(
        &self,
        _id: String,
        p: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let target = p.target.map(|t| (t.path, t.append));
        Ok(AgentToolResult::text(format!(
            "{} {:?} {:?} {:?} {:?} {:?}",
            p.name, p.loud, p.times, p.tags, target, p.note
        )))
    }
}

#[tokio::test]
async fn a_null_for_an_optional_field_is_absent() {
    let test = PluginTest::new(tools![Echo]);
    let out = test
        .call(
            "echo",
            json!({"name": "a", "loud": null, "times": null, "tags": null, "note": null,
                   "target": {"path": "p", "append": null}}),
        )
        .await
        .unwrap();
    assert_eq!(out.text(), r#"a None None None Some(("p", None)) None"#);
    let out = test
        .call("echo", json!({"name": "b", "target": null, "times": 2}))
        .await
        .unwrap();
    assert_eq!(out.text(), "b None Some(2) None None None");
}

#[tokio::test]
async fn a_null_for_a_required_field_is_refused_by_name() {
    let test = PluginTest::new(tools![Echo]);
    let error = test.call("echo", json!({"name": null})).await.unwrap_err();
    let TestError::InvalidArguments(message) = error else {
        panic!("not an argument error: {error:?}");
    };
    assert_eq!(
        message,
        "Invalid arguments for tool \"echo\": at /name: null is not of type \"string\""
    );
    let error = test
        .call("echo", json!({"name": "a", "target": {"path": null}}))
        .await
        .unwrap_err();
    assert!(
        format!("{error:?}").contains("at /target/path: null is not of type"),
        "{error:?}"
    );
}
