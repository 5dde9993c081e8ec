//! A form as a host without forms asks it: one prompt per field, then "Submit?" (the
//! terminal, the Node runtime's dialogs). [`form_fields`] reads the schema once, here, into
//! the list every such host asks from, so a field is asked the same way wherever it is asked:
//! the same label, the same kind of prompt, the same choices and default. A host with forms of
//! its own (an MCP client's elicitation) takes the schema as it is.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A form's fields in the order to ask them: those `order` names first, in that order, then
/// any others of the schema's `properties`.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}});
/// let order = ["c".to_owned(), "a".to_owned()];
/// let names: Vec<&str> = xcsh_plugin_api::host::ordered_fields(&schema, &order)
///     .into_iter()
///     .map(|(name, _)| name)
///     .collect();
/// assert_eq!(names, ["c", "a", "b"]);
/// ```
pub fn ordered_fields<'a>(schema: &'a Value, order: &'a [String]) -> Vec<(&'a str, &'a Value)> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut fields: Vec<(&str, &Value)> = order
        .iter()
        .filter_map(|name| properties.get(name).map(|field| (name.as_str(), field)))
        .collect();
    for (name, field) in properties {
        if !order.contains(name) {
            fields.push((name.as_str(), field));
        }
    }
    fields
}

/// One field of a form as a host asks it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormField {
    /// The field's name: its key in the form's answer.
    pub name: String,
    /// What the prompt shows: the field's `title`, else its `description`, else its name.
    pub label: String,
    /// The prompt to ask it with.
    pub input: FieldInput,
    /// The schema's `default`, if it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// The prompt a field is asked with, from its schema's `type` and choices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FieldInput {
    /// Yes or no (`boolean`).
    YesNo,
    /// One of the options (a string with `enum`, or `oneOf`/`anyOf` of titled constants).
    Choice {
        /// The options, in the schema's order.
        options: Vec<FieldOption>,
    },
    /// Any of the options (an `array` of such choices); the answer is the chosen values.
    Choices {
        /// The options, in the schema's order.
        options: Vec<FieldOption>,
    },
    /// A whole number (`integer`).
    Integer,
    /// A number (`number`).
    Number,
    /// Text (`string`, or a field of no type).
    Text,
}

/// One option of a choice: the value the answer holds, and what the user sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldOption {
    /// The value the answer holds.
    pub value: String,
    /// What the user sees: the option's `title` (or `enumNames` entry), else its value.
    pub label: String,
}

/// A form's fields, in [`ordered_fields`]'s order, as a host without forms asks them.
///
/// ```
/// use serde_json::json;
/// use xcsh_plugin_api::host::{form_fields, FieldInput, FieldOption};
/// let schema = json!({"type": "object", "properties": {
///     "name": {"type": "string", "title": "Your name"},
///     "size": {"type": "string", "oneOf": [
///         {"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
///     "ok": {"type": "boolean", "default": true},
/// }});
/// let fields = form_fields(&schema, &["name".to_owned(), "size".to_owned()]);
/// assert_eq!(fields[0].label, "Your name");
/// assert_eq!(fields[0].input, FieldInput::Text);
/// let small = FieldOption { value: "s".into(), label: "Small".into() };
/// assert!(matches!(&fields[1].input, FieldInput::Choice { options } if options[0] == small));
/// assert_eq!((fields[2].input.clone(), fields[2].default.clone()), (FieldInput::YesNo, Some(json!(true))));
/// ```
pub fn form_fields(schema: &Value, order: &[String]) -> Vec<FormField> {
    ordered_fields(schema, order)
        .into_iter()
        .map(|(name, field)| FormField {
            name: name.to_owned(),
            label: field
                .get("title")
                .or_else(|| field.get("description"))
                .and_then(Value::as_str)
                .unwrap_or(name)
                .to_owned(),
            input: input_of(field),
            default: field.get("default").cloned(),
        })
        .collect()
}

fn input_of(field: &Value) -> FieldInput {
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    if kind == "array" {
        let options = field.get("items").and_then(options_of).unwrap_or_default();
        return FieldInput::Choices { options };
    }
    if let Some(options) = options_of(field) {
        return FieldInput::Choice { options };
    }
    match kind {
        "boolean" => FieldInput::YesNo,
        "integer" => FieldInput::Integer,
        "number" => FieldInput::Number,
        _ => FieldInput::Text,
    }
}

/// The options of a choice, from `enum` (with `enumNames`, the older spelling of titles) or
/// `oneOf`/`anyOf` of titled constants; `None` when the field is not a choice.
fn options_of(schema: &Value) -> Option<Vec<FieldOption>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        let options = values.iter().enumerate().filter_map(|(i, value)| {
            let value = value.as_str()?;
            let label = names.and_then(|names| names.get(i)).and_then(Value::as_str);
            Some(option(value, label))
        });
        return Some(options.collect());
    }
    let members = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)?;
    let options = members.iter().filter_map(|member| {
        let value = member.get("const")?.as_str()?;
        Some(option(value, member.get("title").and_then(Value::as_str)))
    });
    Some(options.collect())
}

fn option(value: &str, label: Option<&str>) -> FieldOption {
    FieldOption {
        value: value.to_owned(),
        label: label.unwrap_or(value).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn options(values: &[(&str, &str)]) -> Vec<FieldOption> {
        values.iter().map(|(v, l)| option(v, Some(l))).collect()
    }

    #[test]
    fn every_kind_of_field_is_read_into_its_prompt() {
        let schema = json!({"type": "object", "properties": {
            "plain": {"type": "string", "enum": ["a", "b"]},
            "legacy": {"type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]},
            "many": {"type": "array", "items": {"anyOf": [
                {"const": "p", "title": "Pea"}, {"const": "q"}]}},
            "count": {"type": "integer", "description": "How many", "default": 3},
            "ratio": {"type": "number"},
            "untyped": {},
        }});
        let fields = form_fields(&schema, &[]);
        let by_name = |name: &str| fields.iter().find(|f| f.name == name).unwrap().clone();
        assert_eq!(
            by_name("plain").input,
            FieldInput::Choice {
                options: options(&[("a", "a"), ("b", "b")])
            }
        );
        assert_eq!(
            by_name("legacy").input,
            FieldInput::Choice {
                options: options(&[("x", "Ex"), ("y", "Why")])
            }
        );
        assert_eq!(
            by_name("many").input,
            FieldInput::Choices {
                options: options(&[("p", "Pea"), ("q", "q")])
            }
        );
        let count = by_name("count");
        assert_eq!(
            (count.label.as_str(), count.input),
            ("How many", FieldInput::Integer)
        );
        assert_eq!(count.default, Some(json!(3)));
        assert_eq!(by_name("ratio").input, FieldInput::Number);
        assert_eq!(by_name("untyped").input, FieldInput::Text);
        assert_eq!(by_name("untyped").label, "untyped");
    }

    #[test]
    fn the_wire_form_is_what_the_node_binding_reads() {
        let field = FormField {
            name: "size".into(),
            label: "Size".into(),
            input: FieldInput::Choice {
                options: options(&[("s", "Small")]),
            },
            default: None,
        };
        assert_eq!(
            serde_json::to_value(&field).unwrap(),
            json!({"name": "size", "label": "Size",
                   "input": {"kind": "choice", "options": [{"value": "s", "label": "Small"}]}})
        );
        assert_eq!(
            serde_json::to_value(FieldInput::YesNo).unwrap(),
            json!({"kind": "yes_no"})
        );
    }
}
