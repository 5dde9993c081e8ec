//! The checks a host makes on a plugin's tools, in one place: a tool's name, its parameter
//! schema, and a call's arguments against that schema, with the messages the host reports.
//!
//! The loader (`xcsh-loader`) and the in-process test harness ([`crate::testing`]) both use
//! these, so a tool that passes the harness's checks passes the host's. Behind the cargo
//! feature `checks` (which `testing` turns on), since they need `jsonschema`.

use serde_json::Value;

/// A tool name the model providers accept: `[A-Za-z0-9_-]`, 1 to 64 characters. The error
/// says what is wrong.
///
/// ```
/// use xcsh_plugin_api::checks::check_tool_name;
/// assert!(check_tool_name("batch_rename_preview").is_ok());
/// assert_eq!(
///     check_tool_name("bad name!").unwrap_err(),
///     "name contains ' '; use only letters, digits, '_' and '-'"
/// );
/// ```
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("name must be 1 to 64 characters".to_owned());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "name contains {bad:?}; use only letters, digits, '_' and '-'"
        ));
    }
    Ok(())
}

/// Compile a tool's parameter schema: it must be a JSON object whose root has
/// `"type": "object"`, and a valid JSON Schema.
///
/// ```
/// use xcsh_plugin_api::checks::compile_schema;
/// use serde_json::json;
/// assert!(compile_schema(&json!({"type": "object"})).is_ok());
/// // What `type Params = serde_json::Value` gives without a schema of its own.
/// assert!(compile_schema(&json!(true))
///     .unwrap_err()
///     .contains("override `parameters_schema()`"));
/// ```
pub fn compile_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    // What `type Params = serde_json::Value` gives without a schema of its own: anything goes.
    const UNTYPED_HINT: &str = "; a tool whose `Params` is `serde_json::Value` must describe \
        its arguments: derive `JsonSchema` on a parameter struct, or override \
        `parameters_schema()` with an object schema";
    let Some(object) = schema.as_object() else {
        let hint = if *schema == Value::Bool(true) {
            UNTYPED_HINT
        } else {
            ""
        };
        return Err(format!(
            "the schema must be a JSON object, found {schema}{hint}"
        ));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        let untyped = object
            .keys()
            .all(|k| k == "$schema" || k == "title" || k == "description");
        let hint = if untyped { UNTYPED_HINT } else { "" };
        return Err(format!(
            "the schema's root must have \"type\": \"object\"{hint}"
        ));
    }
    jsonschema::meta::validate(schema).map_err(|error| error.to_string())?;
    jsonschema::validator_for(schema).map_err(|error| error.to_string())
}

/// Check a call's arguments; the error names the tool and each offending path (at most five).
///
/// ```
/// use xcsh_plugin_api::checks::{compile_schema, validate_arguments};
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
/// let validator = compile_schema(&schema).unwrap();
/// assert!(validate_arguments("count", &validator, &json!({"n": 3})).is_ok());
/// assert!(validate_arguments("count", &validator, &json!({"n": "x"}))
///     .unwrap_err()
///     .starts_with("Invalid arguments for tool \"count\": at /n: "));
/// ```
pub fn validate_arguments(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Result<(), String> {
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(5)
        .map(|error| {
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            format!("at {path}: {error}")
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Invalid arguments for tool \"{name}\": {}",
            problems.join("; ")
        ))
    }
}

/// Check that `reply` answers `request` and stays inside it: the right kind of answer, an
/// option that was offered, form values the form's schema accepts (with a `form` answer of
/// `accept` only). The error names the service, and the field or the value. Hosts run it on
/// every answer before the plugin sees it, so an answer outside the question never reaches a
/// plugin.
///
/// ```
/// use xcsh_plugin_api::checks::check_reply;
/// use xcsh_plugin_api::host::{HostReply, HostRequest};
/// let select = HostRequest::Select { title: "Pick".into(), options: vec!["a".into(), "b".into()] };
/// assert!(check_reply(&select, &HostReply::Chosen { value: Some("b".into()) }).is_ok());
/// assert_eq!(
///     check_reply(&select, &HostReply::Chosen { value: Some("z".into()) }).unwrap_err(),
///     "the answer to select \"Pick\" is \"z\", which is not one of its options (a, b)"
/// );
/// ```
pub fn check_reply(
    request: &crate::host::HostRequest,
    reply: &crate::host::HostReply,
) -> Result<(), String> {
    use crate::host::{FormAction, HostReply as Reply, HostRequest as Request};
    match (request, reply) {
        (Request::Confirm { .. }, Reply::Confirmed { .. })
        | (Request::Input { .. }, Reply::Chosen { .. })
        | (Request::Notify { .. } | Request::SetStatus { .. }, Reply::Done)
        | (Request::Complete { .. }, Reply::Completion { .. }) => Ok(()),
        (Request::Select { title, options }, Reply::Chosen { value }) => match value {
            Some(value) if !options.contains(value) => Err(format!(
                "the answer to select \"{title}\" is \"{value}\", which is not one of its options ({})",
                options.join(", ")
            )),
            _ => Ok(()),
        },
        (Request::Form { schema, .. }, Reply::Form { action, content }) => {
            match (action, content) {
                (FormAction::Accept, Some(content)) => check_form_values(schema, content),
                (FormAction::Accept, None) => {
                    Err("the form was accepted without its values".to_owned())
                }
                (_, Some(_)) => Err("a declined or cancelled form carries no values".to_owned()),
                (_, None) => Ok(()),
            }
        }
        (request, reply) => Err(format!(
            "{} was answered with {reply:?}, which is not its kind of answer",
            request.service()
        )),
    }
}

/// A form's values against its schema; the error names each offending field.
fn check_form_values(schema: &Value, content: &Value) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|error| format!("the form's schema is not valid: {error}"))?;
    // Elicitation schemas cannot say `additionalProperties: false`; a field the form did not
    // ask is refused here all the same.
    let asked = schema.get("properties").and_then(Value::as_object);
    if let (Some(asked), Some(given)) = (asked, content.as_object()) {
        if let Some(extra) = given.keys().find(|key| !asked.contains_key(*key)) {
            return Err(format!("form field \"{extra}\" was not asked"));
        }
    }
    let problems: Vec<String> = validator
        .iter_errors(content)
        .take(5)
        .map(|error| {
            let path = error.instance_path().to_string();
            let field = path.trim_start_matches('/');
            if field.is_empty() {
                format!("the form's answer: {error}")
            } else {
                format!("form field \"{field}\": {error}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Check that a form's schema is one a host can ask: an object of flat fields (see
/// [`form_schema`](crate::form_schema)); the error names the field that is not.
pub fn check_form_schema(schema: &Value) -> Result<(), String> {
    crate::form::flatten(schema)
        .map(drop)
        .map_err(|error| error.message().to_owned())
}
