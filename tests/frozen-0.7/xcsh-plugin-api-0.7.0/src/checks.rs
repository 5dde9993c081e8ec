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
    // `validator_for` checks the schema against its draft's meta-schema before compiling it
    // (a second `jsonschema::meta::validate` here cost as much again: issue 53).
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

/// Check a call's arguments as every host does before `execute`: first a `null` sent for an
/// optional property whose schema does not allow `null` is taken as the property left out
/// (removed from `arguments`, at the top level and in nested objects), then the rest is
/// validated ([`validate_arguments`]).
///
/// A derived schema publishes an `Option<T>` field as an optional property of type `T`
/// (docs/guide/src/write.md), yet models often send `null` for "no value"; serde reads the missing
/// field as `None`, just as it read the `null`. A `null` for a required property stays, and is
/// refused naming it; so does a `null` inside an array, and one the schema allows.
///
/// ```
/// use xcsh_plugin_api::checks::{check_arguments, compile_schema};
/// use serde_json::json;
/// let schema = json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["name"],
///     "additionalProperties": false
/// });
/// let validator = compile_schema(&schema).unwrap();
/// let mut arguments = json!({"name": "a", "limit": null});
/// assert!(check_arguments("find", &validator, &mut arguments).is_ok());
/// assert_eq!(arguments, json!({"name": "a"}));
/// let mut arguments = json!({"name": null});
/// assert_eq!(
///     check_arguments("find", &validator, &mut arguments).unwrap_err(),
///     "Invalid arguments for tool \"find\": at /name: null is not of type \"string\""
/// );
/// ```
pub fn check_arguments(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &mut Value,
) -> Result<(), String> {
    drop_refused_nulls(validator, arguments);
    validate_arguments(name, validator, arguments)
}

/// Remove from `arguments` each object property whose value is `null` where the schema
/// refuses `null` and the property is not required. The validator decides both, so `$ref`s,
/// `anyOf`s and nested objects need no schema walking here: the nulls it reports an error at
/// are removed, and those whose removal makes it report the property missing are put back.
/// Arguments the schema accepts as they are (every well-formed call) are not copied.
fn drop_refused_nulls(validator: &jsonschema::Validator, arguments: &mut Value) {
    if validator.is_valid(arguments) {
        return;
    }
    let mut refused: Vec<String> = validator
        .iter_errors(arguments)
        .filter(|error| error.instance().is_null())
        .map(|error| error.instance_path().as_str().to_owned())
        .collect();
    refused.sort();
    refused.dedup();
    let mut stripped = arguments.clone();
    let mut removed: Vec<(String, String)> = Vec::new();
    for pointer in &refused {
        let Some((parent, key)) = split_pointer(pointer) else {
            continue;
        };
        // An array's item is a value, not an absence: only object properties go.
        if let Some(Value::Object(object)) = stripped.pointer_mut(parent) {
            if object.get(&key).is_some_and(Value::is_null) {
                object.remove(&key);
                removed.push((parent.to_owned(), key));
            }
        }
    }
    if removed.is_empty() {
        return;
    }
    let missing: Vec<(String, String)> = validator
        .iter_errors(&stripped)
        .filter_map(|error| match error.kind() {
            jsonschema::error::ValidationErrorKind::Required { property } => property
                .as_str()
                .map(|key| (error.instance_path().as_str().to_owned(), key.to_owned())),
            _ => None,
        })
        .collect();
    for (parent, key) in removed {
        if missing.contains(&(parent.clone(), key.clone())) {
            if let Some(Value::Object(object)) = stripped.pointer_mut(&parent) {
                object.insert(key, Value::Null);
            }
        }
    }
    *arguments = stripped;
}

/// A JSON pointer's parent and its last token, unescaped (`~1` is `/`, `~0` is `~`); `None`
/// for the root.
fn split_pointer(pointer: &str) -> Option<(&str, String)> {
    let at = pointer.rfind('/')?;
    let token = pointer[at + 1..].replace("~1", "/").replace("~0", "~");
    Some((&pointer[..at], token))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `tool_params!` derives (the macro names the crate by its external path).
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Params {
        name: String,
        flag: Option<bool>,
        count: Option<u32>,
        tags: Option<Vec<String>>,
        inner: Option<Inner>,
        items: Vec<Option<String>>,
        #[schemars(required)]
        must: Option<String>,
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        depth: Option<u32>,
        label: String,
    }

    fn check(arguments: Value) -> (Result<(), String>, Value) {
        let validator =
            compile_schema(&crate::schema_of::<Params>()).expect("the derived schema compiles");
        let mut arguments = arguments;
        let checked = check_arguments("t", &validator, &mut arguments);
        (checked, arguments)
    }

    #[test]
    fn nulls_for_optional_properties_are_absent_at_every_depth() {
        let (checked, arguments) = check(json!({
            "name": "a", "flag": null, "count": null, "tags": null, "must": "m",
            "inner": {"label": "l", "depth": null}, "items": []
        }));
        assert_eq!(checked, Ok(()));
        assert_eq!(
            arguments,
            json!({"name": "a", "must": "m", "inner": {"label": "l"}, "items": []})
        );
        let params: Params = serde_json::from_value(arguments).expect("deserializes");
        assert_eq!((params.flag, params.count, params.tags), (None, None, None));
        let inner = params.inner.expect("inner given");
        assert_eq!((inner.depth, inner.label.as_str()), (None, "l"));
        assert_eq!(
            (
                params.name.as_str(),
                params.items.len(),
                params.must.as_deref()
            ),
            ("a", 0, Some("m"))
        );
        let (checked, _) = check(json!({"name": "a", "inner": null, "items": [], "must": "m"}));
        assert_eq!(checked, Ok(()));
    }

    #[test]
    fn a_null_for_a_required_property_is_refused_by_name() {
        let (checked, arguments) = check(json!({"name": null, "items": [], "must": "m"}));
        assert_eq!(
            checked,
            Err(
                "Invalid arguments for tool \"t\": at /name: null is not of type \"string\""
                    .to_owned()
            )
        );
        assert_eq!(
            arguments["name"],
            Value::Null,
            "a required null stays as sent"
        );
        let (checked, _) = check(json!({"name": "a", "items": [], "must": "m",
            "inner": {"label": null}}));
        let message = checked.expect_err("a required nested null is refused");
        assert!(message.contains("at /inner/label: null"), "{message}");
    }

    #[test]
    fn nulls_the_schema_allows_and_array_items_are_kept() {
        let (checked, arguments) = check(json!({"name": "a", "items": ["x", null], "must": "m"}));
        assert_eq!(checked, Ok(()));
        assert_eq!(
            arguments,
            json!({"name": "a", "items": ["x", null], "must": "m"})
        );
        // A hand-written schema may allow `null`: then it is a value, and stays.
        let schema =
            json!({"type": "object", "properties": {"note": {"type": ["string", "null"]}}});
        let validator = compile_schema(&schema).expect("compiles");
        let mut arguments = json!({"note": null});
        assert_eq!(check_arguments("t", &validator, &mut arguments), Ok(()));
        assert_eq!(arguments, json!({"note": null}));
    }

    #[test]
    fn a_required_option_refuses_null_by_name() {
        // `#[schemars(required)]` on an `Option`: schemars publishes it required and not null.
        let (checked, _) = check(json!({"name": "a", "items": [], "must": null}));
        assert_eq!(
            checked,
            Err(
                "Invalid arguments for tool \"t\": at /must: null is not of type \"string\""
                    .to_owned()
            )
        );
    }

    #[test]
    fn other_errors_are_still_reported() {
        let (checked, _) = check(json!({"name": "a", "items": [], "must": "m", "flag": "yes",
            "count": null}));
        let message = checked.expect_err("a wrong type is refused");
        assert!(
            message.contains("at /flag: \"yes\" is not of type \"boolean\""),
            "{message}"
        );
        assert!(!message.contains("/count"), "{message}");
    }

    #[test]
    fn a_null_for_an_unknown_property_is_still_refused() {
        let (checked, _) = check(json!({"name": "a", "items": [], "must": "m", "bogus": null}));
        let message = checked.expect_err("an unknown property is refused");
        assert!(message.contains("'bogus' was unexpected"), "{message}");
    }

    #[test]
    fn pointers_split_into_parent_and_unescaped_key() {
        assert_eq!(
            split_pointer("/a/b~1c~0d"),
            Some(("/a", "b/c~d".to_owned()))
        );
        assert_eq!(split_pointer("/a"), Some(("", "a".to_owned())));
        assert_eq!(split_pointer(""), None);
    }

    #[test]
    fn a_schema_against_its_meta_schema_is_refused_with_what_is_wrong() {
        // `compile_schema` leaves this check to `validator_for` (issue 53): it must still run.
        let bad = json!({"type": "object", "properties": {"x": {"type": 12}}});
        let message = compile_schema(&bad).expect_err("a type of 12 is not a schema");
        assert!(message.contains("12"), "{message}");
        // Annotations are never compiled: only the meta-schema can refuse a description of 12.
        let annotation = json!({"type": "object", "properties": {"x": {"description": 12}}});
        let message = compile_schema(&annotation).expect_err("a description must be a string");
        assert!(message.contains("12"), "{message}");
        let pattern = json!({"type": "object", "properties": {"x": {"pattern": "("}}});
        assert!(
            compile_schema(&pattern).is_err(),
            "a pattern that is not a regex"
        );
    }
}
