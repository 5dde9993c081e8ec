//! Typed forms: a Rust struct turned into the flat JSON Schema a host can ask in one go
//! (MCP elicitation's `requestedSchema`), or refused, naming the field that cannot be asked.
//!
//! Elicitation allows an object of primitive fields only: text, numbers, integers, booleans,
//! single-choice enums (plain, titled with `oneOf`/`const`/`title`, or with the older
//! `enumNames`) and multi-choice arrays of such enums, with defaults. schemars writes enums
//! as `$ref`s into `$defs`, folded into the field here, so the host receives the schema as
//! elicitation spells it. An `Option<T>` field is already an optional field of type `T` in
//! [`schema_of`]'s schema (docs/guide/src/write.md); a schema written by hand with `null` among a
//! field's types (`[T, "null"]`, `anyOf [T, null]`) is folded the same way.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::tool::schema_of;
use crate::PluginError;

/// The keywords a form field keeps; anything else (`$ref` once resolved, `$schema`, `nullable`
/// markers) is left out.
const KEPT: &[&str] = &[
    "title",
    "description",
    "default",
    "minLength",
    "maxLength",
    "format",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "enumNames",
];

/// The flat form schema of `T`, as a host asks it.
///
/// ```
/// use xcsh_plugin_api::{form_schema, tool_params};
///
/// tool_params! {
///     struct Rename {
///         /// The new name.
///         name: String,
///         /// Keep a backup.
///         #[serde(default)]
///         backup: bool,
///         mode: Mode,
///     }
///     #[serde(rename_all = "lowercase")]
///     enum Mode { Copy, Move }
/// }
/// let schema = form_schema::<Rename>().unwrap();
/// assert_eq!(schema["properties"]["mode"]["enum"], serde_json::json!(["copy", "move"]));
/// assert_eq!(schema["required"], serde_json::json!(["name", "mode"]));
///
/// tool_params! { struct Nested { inner: Rename } }
/// let refused = form_schema::<Nested>().unwrap_err();
/// assert!(refused.message().contains("form field \"inner\""));
/// ```
///
/// # Errors
/// A field elicitation cannot express (a nested object, an array of anything but enum values,
/// a map), named in the message.
pub fn form_schema<T: JsonSchema>() -> Result<Value, PluginError> {
    flatten(&schema_of::<T>())
}

/// The names of `T`'s fields in declaration order (after serde's renames), read from its
/// `Deserialize` implementation: serde hands a struct's field names to the deserializer, and
/// a JSON object (what the schema is) keeps no order. Empty when `T` is not a plain struct.
///
/// ```
/// xcsh_plugin_api::tool_params! {
///     #[serde(rename_all = "camelCase")]
///     struct Person { user_name: String, email: String, age: u32 }
/// }
/// assert_eq!(xcsh_plugin_api::form::field_order::<Person>(), ["userName", "email", "age"]);
/// ```
pub fn field_order<'de, T: serde::Deserialize<'de>>() -> Vec<String> {
    let mut fields = Vec::new();
    let _ = T::deserialize(FieldNames(&mut fields));
    fields
}

/// A deserializer that only records the field names a struct asks for, then stops.
struct FieldNames<'a>(&'a mut Vec<String>);

/// Why [`FieldNames`] stops (never shown).
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names read")
    }
}

impl std::error::Error for Stop {}

impl serde::de::Error for Stop {
    fn custom<M: std::fmt::Display>(_message: M) -> Self {
        Stop
    }
}

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        self.0
            .extend(fields.iter().map(|field| (*field).to_owned()));
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The flat form of a root object schema.
pub(crate) fn flatten(root: &Value) -> Result<Value, PluginError> {
    let defs = root.get("$defs").and_then(Value::as_object);
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(PluginError::new(
            "a form must be a struct with named fields (its schema is not an object)",
        ));
    }
    let mut properties = Map::new();
    if let Some(fields) = root.get("properties").and_then(Value::as_object) {
        for (name, field) in fields {
            let flat = field_schema(field, defs).map_err(|cause| {
                PluginError::new(format!(
                    "form field \"{name}\": {cause}; a form asks text, numbers, booleans and choices only"
                ))
            })?;
            properties.insert(name.clone(), flat);
        }
    }
    let mut form = Map::new();
    form.insert("type".into(), "object".into());
    form.insert("properties".into(), Value::Object(properties));
    if let Some(required) = root.get("required") {
        form.insert("required".into(), required.clone());
    }
    Ok(Value::Object(form))
}

/// `schema` with `$ref`s resolved and `Option`'s `null` taken out, outer keywords (a field's
/// description and default) kept over the referenced ones.
fn resolved(schema: &Value, defs: Option<&Map<String, Value>>) -> Result<Value, String> {
    let Some(object) = schema.as_object() else {
        return Err("its schema is not an object".into());
    };
    let mut base = object.clone();
    for _ in 0..8 {
        let Some(reference) = base.remove("$ref") else {
            break;
        };
        let name = reference
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
            .ok_or_else(|| format!("it refers to {reference}, outside the form"))?;
        let target = defs
            .and_then(|defs| defs.get(name))
            .and_then(Value::as_object)
            .ok_or_else(|| format!("it refers to {name}, which the schema does not define"))?;
        for (key, value) in target {
            base.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    // `Option<T>`: `type: [T, "null"]` or `anyOf: [T, {type: null}]`.
    if let Some(Value::Array(types)) = base.get("type") {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if let [only] = kept.as_slice() {
            let only = (*only).clone();
            base.insert("type".into(), only);
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(members)) = base.get(key) else {
            continue;
        };
        let non_null: Vec<&Value> = members
            .iter()
            .filter(|m| m.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        if non_null.len() == 1 && members.len() == 2 {
            let inner = resolved(non_null[0], defs)?;
            base.remove(key);
            if let Value::Object(inner) = inner {
                for (k, v) in inner {
                    base.entry(k).or_insert(v);
                }
            }
        }
    }
    Ok(Value::Object(base))
}

/// The options of a choice: `enum` (with `enumNames` when given) or `oneOf`/`anyOf` members
/// that are each a `const` (titled by `title`, or by the variant's doc comment).
fn choice(schema: &Map<String, Value>) -> Option<Value> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        if values.iter().all(Value::is_string) {
            let mut out = Map::new();
            out.insert("type".into(), "string".into());
            out.insert("enum".into(), Value::Array(values.clone()));
            return Some(Value::Object(out));
        }
    }
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(members)) = schema.get(key) else {
            continue;
        };
        let mut options = Vec::new();
        for member in members {
            let constant = member.get("const").filter(|c| c.is_string())?;
            let title = member
                .get("title")
                .or_else(|| member.get("description"))
                .unwrap_or(constant);
            options.push(serde_json::json!({"const": constant, "title": title}));
        }
        let mut out = Map::new();
        out.insert("type".into(), "string".into());
        out.insert("oneOf".into(), Value::Array(options));
        return Some(Value::Object(out));
    }
    None
}

fn field_schema(field: &Value, defs: Option<&Map<String, Value>>) -> Result<Value, String> {
    let field = resolved(field, defs)?;
    let Value::Object(field) = field else {
        return Err("its schema is not an object".into());
    };
    let mut flat = if let Some(choice) = choice(&field) {
        choice
    } else {
        match field.get("type").and_then(Value::as_str) {
            Some(kind @ ("string" | "number" | "integer" | "boolean")) => {
                serde_json::json!({"type": kind})
            }
            Some("array") => {
                let items = field
                    .get("items")
                    .ok_or("it is a list without an item type")?;
                let items = resolved(items, defs)?;
                let items = items
                    .as_object()
                    .and_then(choice)
                    .ok_or("it is a list of something other than choices")?;
                // Multi-select: `items.enum`, or `items.anyOf` of titled constants.
                let items = match items.get("oneOf") {
                    Some(options) => serde_json::json!({"anyOf": options}),
                    None => items,
                };
                serde_json::json!({"type": "array", "items": items})
            }
            Some("object") => return Err("it is a nested object".into()),
            Some(other) => return Err(format!("it is of type {other}")),
            None => return Err("it has no single type".into()),
        }
    };
    if let Value::Object(flat) = &mut flat {
        let is_text = flat.get("type").and_then(Value::as_str) == Some("string");
        for key in KEPT {
            // schemars writes `format: int64` / `double` for numbers; elicitation's formats
            // (email, uri, date, date-time) are for text only.
            if *key == "format" && !is_text {
                continue;
            }
            if let Some(value) = field.get(*key) {
                flat.insert((*key).into(), value.clone());
            }
        }
    }
    Ok(flat)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_and_refs_fold_into_the_field() {
        let root = json!({
            "type": "object",
            "properties": {
                "size": {"anyOf": [{"$ref": "#/$defs/Size"}, {"type": "null"}], "default": "s"},
                "note": {"type": ["string", "null"], "description": "A note"},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
            },
            "required": [],
            "$defs": {
                "Size": {"type": "string", "enum": ["s", "m"]},
                "Tag": {"oneOf": [
                    {"type": "string", "const": "a", "description": "Alpha"},
                    {"type": "string", "const": "b", "title": "Beta"}
                ]}
            }
        });
        let flat = flatten(&root).unwrap();
        assert_eq!(
            flat["properties"]["size"],
            json!({"type": "string", "enum": ["s", "m"], "default": "s"})
        );
        assert_eq!(
            flat["properties"]["note"],
            json!({"type": "string", "description": "A note"})
        );
        assert_eq!(
            flat["properties"]["tags"],
            json!({"type": "array", "items": {"anyOf": [
                {"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}
            ]}})
        );
    }

    #[test]
    fn lists_of_text_are_refused_by_name() {
        let root = json!({"type": "object", "properties": {
            "paths": {"type": "array", "items": {"type": "string"}}
        }});
        let error = flatten(&root).unwrap_err();
        assert!(
            error
                .message()
                .contains("form field \"paths\": it is a list of something other than choices"),
            "{}",
            error.message()
        );
    }
}
