//! The conformance suite's tools that use the host services (docs/guide/src/ask.md): forms
//! (elicitation), the model (sampling), and audio and embedded-resource content. Written on the
//! typed API an author uses: `ctx.ui().form::<T>()` with a struct, `ctx.complete(..)`,
//! `Content::Audio`.

use xcsh_plugin_api::schemars::JsonSchema;
use xcsh_plugin_api::serde::{Deserialize, Serialize};
use xcsh_plugin_api::{
    json, tool_params, AgentToolResult, CompletionRequest, Content, CustomTool, EmbeddedResource,
    FormAnswer, PluginError, ToolContext, Value,
};

/// A minimal WAV file, base64 (the suite's own).
const TINY_WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// What a form answer prints as: `action=.., content={..}`.
fn answered<T: Serialize>(answer: &FormAnswer<T>) -> String {
    match answer {
        FormAnswer::Accept(content) => format!(
            "action=accept, content={}",
            xcsh_plugin_api::serde_json::to_string(content).unwrap_or_default()
        ),
        FormAnswer::Decline => "action=decline, content={}".to_owned(),
        FormAnswer::Cancel => "action=cancel, content={}".to_owned(),
    }
}

/// The suite's `test_elicitation` requires an error where no one can answer.
fn require_ui(ctx: &ToolContext) -> Result<(), PluginError> {
    if ctx.ui().has_ui() {
        Ok(())
    } else {
        Err(PluginError::new(
            "no one can answer a form here: the client did not declare elicitation",
        ))
    }
}

tool_params! {
    /// `test_elicitation`'s arguments.
    pub struct ElicitationParams {
        /// The message shown with the form.
        pub message: String,
    }
}

/// `test_elicitation`'s form.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
struct UserInfo {
    /// User's response
    username: String,
    /// User's email address
    email: String,
}

#[derive(Default)]
pub(crate) struct Elicitation;

impl CustomTool for Elicitation {
    type Params = ElicitationParams;
    fn name(&self) -> &str {
        "test_elicitation"
    }
    fn label(&self) -> &str {
        "Elicitation"
    }
    fn description(&self) -> &str {
        "Asks the user for a username and an email"
    }
    async fn execute(
        &self,
        _id: String,
        params: ElicitationParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        require_ui(&ctx)?;
        let answer = ctx.ui().form::<UserInfo>(params.message).await?;
        Ok(AgentToolResult::text(format!(
            "User response: {}",
            answered(&answer)
        )))
    }
}

/// `test_elicitation_sep1034_defaults`' form: one field of each primitive kind, each with a
/// default.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
struct WithDefaults {
    /// User name
    #[serde(default = "default_name")]
    name: String,
    /// User age
    #[serde(default = "default_age")]
    age: i64,
    /// User score
    #[serde(default = "default_score")]
    score: f64,
    /// User status
    #[serde(default)]
    status: Status,
    /// Verification status
    #[serde(default = "yes")]
    verified: bool,
}

fn default_name() -> String {
    "John Doe".to_owned()
}
fn default_age() -> i64 {
    30
}
fn default_score() -> f64 {
    95.5
}
fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
enum Status {
    #[default]
    Active,
    Inactive,
    Pending,
}

/// `test_elicitation_sep1330_enums`' form: every way of spelling a choice.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "camelCase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
struct Choices {
    /// Select one option
    #[serde(default)]
    untitled_single: Option<Plain>,
    /// Select one option with titles
    #[serde(default)]
    titled_single: Option<Titled>,
    /// Select one option (legacy)
    #[serde(default)]
    #[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: Option<Legacy>,
    /// Select multiple options
    #[serde(default)]
    #[schemars(length(min = 1, max = 3))]
    untitled_multi: Vec<Plain>,
    /// Select multiple options with titles
    #[serde(default)]
    #[schemars(length(min = 1, max = 3))]
    titled_multi: Vec<TitledMulti>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
enum Plain {
    Option1,
    Option2,
    Option3,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
enum Titled {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "xcsh_plugin_api::serde", rename_all = "lowercase")]
#[schemars(crate = "xcsh_plugin_api::schemars")]
enum TitledMulti {
    #[schemars(title = "First Choice")]
    Value1,
    #[schemars(title = "Second Choice")]
    Value2,
    #[schemars(title = "Third Choice")]
    Value3,
}

fn no_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}

#[derive(Default)]
pub(crate) struct ElicitationDefaults;

impl CustomTool for ElicitationDefaults {
    type Params = Value;
    fn name(&self) -> &str {
        "test_elicitation_sep1034_defaults"
    }
    fn label(&self) -> &str {
        "Elicitation with defaults"
    }
    fn description(&self) -> &str {
        "Asks a form whose every field has a default"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        require_ui(&ctx)?;
        let answer = ctx
            .ui()
            .form::<WithDefaults>("Please review and update the form fields with defaults")
            .await?;
        Ok(AgentToolResult::text(format!(
            "Elicitation completed: {}",
            answered(&answer)
        )))
    }
}

#[derive(Default)]
pub(crate) struct ElicitationEnums;

impl CustomTool for ElicitationEnums {
    type Params = Value;
    fn name(&self) -> &str {
        "test_elicitation_sep1330_enums"
    }
    fn label(&self) -> &str {
        "Elicitation with choices"
    }
    fn description(&self) -> &str {
        "Asks a form with single and multiple choices, titled and not"
    }
    fn parameters_schema(&self) -> Value {
        no_parameters()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        require_ui(&ctx)?;
        let answer = ctx
            .ui()
            .form::<Choices>("Please select options from the enum fields")
            .await?;
        Ok(AgentToolResult::text(format!(
            "Elicitation completed: {}",
            answered(&answer)
        )))
    }
}

tool_params! {
    /// `test_sampling`'s arguments.
    pub struct SamplingParams {
        /// What to ask the model.
        pub prompt: String,
    }
}

#[derive(Default)]
pub(crate) struct Sampling;

impl CustomTool for Sampling {
    type Params = SamplingParams;
    fn name(&self) -> &str {
        "test_sampling"
    }
    fn label(&self) -> &str {
        "Sampling"
    }
    fn description(&self) -> &str {
        "Asks the session's model"
    }
    async fn execute(
        &self,
        _id: String,
        params: SamplingParams,
        ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let text = ctx
            .complete(CompletionRequest::new(params.prompt).with_max_tokens(100))
            .await?;
        Ok(AgentToolResult::text(format!("LLM response: {text}")))
    }
}

/// The three content tools: each returns fixed blocks.
macro_rules! content_tool {
    ($type:ident, $name:literal, $label:literal, $blocks:expr) => {
        #[derive(Default)]
        pub(crate) struct $type;

        impl CustomTool for $type {
            type Params = Value;
            fn name(&self) -> &str {
                $name
            }
            fn label(&self) -> &str {
                $label
            }
            fn description(&self) -> &str {
                $label
            }
            fn parameters_schema(&self) -> Value {
                no_parameters()
            }
            async fn execute(
                &self,
                _id: String,
                _params: Value,
                _ctx: ToolContext,
            ) -> Result<AgentToolResult, PluginError> {
                Ok(AgentToolResult {
                    content: $blocks,
                    details: None,
                    view: None,
                })
            }
        }
    };
}

fn text_resource(uri: &str, mime_type: &str, text: &str) -> Content {
    Content::Resource {
        resource: EmbeddedResource {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.to_owned()),
            text: Some(text.to_owned()),
            blob: None,
        },
    }
}

content_tool!(
    AudioContent,
    "test_audio_content",
    "Returns a tiny WAV file",
    vec![Content::Audio {
        data: TINY_WAV.to_owned(),
        mime_type: "audio/wav".to_owned(),
    }]
);

content_tool!(
    EmbeddedResourceContent,
    "test_embedded_resource",
    "Returns an embedded text resource",
    vec![text_resource(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content."
    )]
);

content_tool!(
    MixedContent,
    "test_multiple_content_types",
    "Returns text, an image and a resource",
    vec![
        Content::Text {
            text: "Multiple content types test:".to_owned()
        },
        Content::Image {
            data: super::RED_PIXEL_PNG.to_owned(),
            mime_type: "image/png".to_owned(),
        },
        text_resource(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#
        ),
    ]
);

#[cfg(test)]
mod tests {
    use xcsh_plugin_api::host::HostRequest;
    use xcsh_plugin_api::testing::{Answer, PluginTest};
    use xcsh_plugin_api::{json, tools, Value};

    use super::*;

    /// The schema of the one form `tool` asked, answered with `answer`, and the result text.
    async fn form_of(tool: &str, answer: Answer) -> (Value, String) {
        let test = PluginTest::new(tools![Elicitation, ElicitationDefaults, ElicitationEnums])
            .with_ui([answer]);
        let arguments = if tool == "test_elicitation" {
            json!({"message": "Please provide your information"})
        } else {
            json!({})
        };
        let text = test.call(tool, arguments).await.unwrap().text();
        match test.asked().as_slice() {
            [HostRequest::Form { schema, .. }] => (schema.clone(), text),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn forms_are_spelled_as_the_suite_checks() {
        let (schema, text) = form_of(
            "test_elicitation",
            Answer::FormAccept(json!({"username": "testuser", "email": "test@example.com"})),
        )
        .await;
        assert_eq!(schema["required"], json!(["username", "email"]));
        assert_eq!(
            schema["properties"]["email"],
            json!({"type": "string", "description": "User's email address"})
        );
        assert_eq!(
            text,
            r#"User response: action=accept, content={"username":"testuser","email":"test@example.com"}"#
        );

        let (schema, _) = form_of("test_elicitation_sep1034_defaults", Answer::FormDecline).await;
        let p = &schema["properties"];
        assert_eq!(
            p["name"],
            json!({"type": "string", "description": "User name", "default": "John Doe"})
        );
        assert_eq!(p["age"]["type"], "integer");
        assert_eq!(p["age"]["default"], 30);
        assert_eq!(p["score"]["type"], "number");
        assert_eq!(p["score"]["default"], 95.5);
        assert_eq!(
            p["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert_eq!(p["status"]["default"], "active");
        assert_eq!(
            p["verified"],
            json!({"type": "boolean", "description": "Verification status", "default": true})
        );
        assert!(schema.get("required").is_none_or(|r| r == &json!([])));

        let (schema, text) = form_of(
            "test_elicitation_sep1330_enums",
            Answer::FormAccept(json!({
                "untitledSingle": "option1", "titledSingle": "value1", "legacyEnum": "opt1",
                "untitledMulti": ["option1", "option2"], "titledMulti": ["value1", "value2"]
            })),
        )
        .await;
        let p = &schema["properties"];
        assert_eq!(
            p["untitledSingle"]["enum"],
            json!(["option1", "option2", "option3"])
        );
        assert!(p["untitledSingle"].get("oneOf").is_none());
        assert_eq!(
            p["titledSingle"]["oneOf"][0],
            json!({"const": "value1", "title": "First Option"})
        );
        assert!(p["titledSingle"].get("enum").is_none());
        assert_eq!(
            p["legacyEnum"]["enumNames"],
            json!(["Option One", "Option Two", "Option Three"])
        );
        assert_eq!(p["legacyEnum"]["enum"], json!(["opt1", "opt2", "opt3"]));
        assert_eq!(
            p["untitledMulti"]["items"],
            json!({"type": "string", "enum": ["option1", "option2", "option3"]})
        );
        assert_eq!(
            (
                p["untitledMulti"]["minItems"].clone(),
                p["untitledMulti"]["maxItems"].clone()
            ),
            (json!(1), json!(3))
        );
        assert_eq!(
            p["titledMulti"]["items"]["anyOf"][2],
            json!({"const": "value3", "title": "Third Choice"})
        );
        assert!(
            text.starts_with("Elicitation completed: action=accept"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_answer_the_form_refuses_never_reaches_the_tool() {
        let test = PluginTest::new(tools![ElicitationEnums])
            .with_ui([Answer::FormAccept(json!({"untitledSingle": "option9"}))]);
        let error = test
            .call("test_elicitation_sep1330_enums", json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("form field \"untitledSingle\""), "{error}");
    }

    #[tokio::test]
    async fn sampling_goes_to_the_model_or_says_there_is_none() {
        let model = xcsh_plugin_api::ModelInfo {
            provider: "test".into(),
            id: "test-model".into(),
        };
        let test = PluginTest::new(tools![Sampling]).with_model(model, ["Hi there".to_owned()]);
        let outcome = test
            .call("test_sampling", json!({"prompt": "Say hi"}))
            .await
            .unwrap();
        assert_eq!(outcome.text(), "LLM response: Hi there");
        let none = PluginTest::new(tools![Sampling]);
        let error = none
            .call("test_sampling", json!({"prompt": "x"}))
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), xcsh_plugin_api::NO_MODEL);
    }
}
