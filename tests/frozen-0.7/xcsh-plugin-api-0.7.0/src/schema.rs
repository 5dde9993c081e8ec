//! How a derived parameter schema says "optional": an `Option<T>` field is a property of type
//! `T` that may be left out (docs/guide/src/write.md), not a property that must be given and may be
//! `null`.
//!
//! schemars writes `Option<T>` as `T` or `null` (`"type": ["boolean", "null"]`,
//! `"anyOf": [{"$ref": ..}, {"type": "null"}]`, and `"default": null` under `#[serde(default)]`),
//! which models read as "send null", and `xcsh-plugins list` showed as `boolean or null`.
//! Serde already reads a missing `Option` field as `None`, so the `null` adds nothing to what a
//! tool accepts. schemars 1.x has no setting for this (0.8's `option_nullable` and
//! `option_add_null_type` are gone; its `AddNullable` transform is OpenAPI's `nullable` and
//! applies to every schema), so [`OptionalIsAbsent`] is a schemars [`Transform`] that
//! [`crate::schema_of`] adds to its generator: it runs over the root and every subschema
//! (`$defs` included) through schemars' own [`transform_subschemas`].
//!
//! Only properties left out of their object's `required` lose their `null`: a required
//! `Option<T>` (`#[schemars(required)]`), an array's items (`Vec<Option<T>>`) and a map's
//! values keep it, since there `null` is a value, not an absence. The host, for its part,
//! takes a `null` sent for a property whose schema refuses it as the property left out
//! (`checks::check_arguments`), so models that send `null` for "no value" keep working.

use schemars::transform::{transform_subschemas, Transform};
use schemars::Schema;
use serde_json::{Map, Value};

/// A schemars [`Transform`]: every optional property (one not in its object's `required`)
/// whose schema allows `null` besides something else allows only the something else, without
/// `"default": null`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OptionalIsAbsent;

impl Transform for OptionalIsAbsent {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let Some(Value::Object(properties)) = object.get_mut("properties") else {
            return;
        };
        for (name, property) in properties.iter_mut() {
            if required.contains(name) {
                continue;
            }
            if let Value::Object(property) = property {
                without_null(property);
            }
        }
    }
}

/// Whether `schema` is schemars' schema of `()`/`null`, as `allow_null` adds it to an `anyOf`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// Undo what schemars' `allow_null` does to a schema: `null` leaves `type`, `enum` and `anyOf`
/// when something else stays, and then `"default": null` goes too. A schema that allows only
/// `null` is left as it is.
fn without_null(schema: &mut Map<String, Value>) {
    let mut nullable = false;
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        if types.iter().any(|t| t == "null") && types.iter().any(|t| t != "null") {
            types.retain(|t| t != "null");
            nullable = true;
            if let [only] = types.as_slice() {
                let only = only.clone();
                schema.insert("type".to_owned(), only);
            }
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        if values.iter().any(Value::is_null) && values.iter().any(|v| !v.is_null()) {
            values.retain(|v| !v.is_null());
            nullable = true;
        }
    }
    if let Some(Value::Array(members)) = schema.get_mut("anyOf") {
        if members.iter().any(is_null_schema) && members.iter().any(|m| !is_null_schema(m)) {
            members.retain(|m| !is_null_schema(m));
            nullable = true;
            // `anyOf: [T, null]` was `T`: fold `T` in (its keys under the field's own, which
            // carry the field's doc comment and default).
            if let [Value::Object(only)] = members.as_slice() {
                let only = only.clone();
                schema.remove("anyOf");
                for (key, value) in only {
                    schema.entry(key).or_insert(value);
                }
            }
        }
    }
    if nullable && schema.get("default").is_some_and(Value::is_null) {
        schema.remove("default");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn transformed(value: Value) -> Value {
        let mut schema = Schema::try_from(value).expect("an object schema");
        OptionalIsAbsent.transform(&mut schema);
        schema.to_value()
    }

    #[test]
    fn optional_properties_lose_null_and_required_ones_keep_it() {
        let out = transformed(json!({
            "type": "object",
            "properties": {
                "flag": {"type": ["boolean", "null"], "default": null},
                "size": {"anyOf": [{"$ref": "#/$defs/Size"}, {"type": "null"}], "description": "d"},
                "pick": {"enum": ["a", "b", null]},
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                "kept": {"type": ["string", "null"]},
                "unit": {"type": "null"},
                "items": {"type": "array", "items": {"type": ["string", "null"]}}
            },
            "required": ["kept"]
        }));
        assert_eq!(out["properties"]["flag"], json!({"type": "boolean"}));
        assert_eq!(
            out["properties"]["size"],
            json!({"$ref": "#/$defs/Size", "description": "d"})
        );
        assert_eq!(out["properties"]["pick"], json!({"enum": ["a", "b"]}));
        assert_eq!(
            out["properties"]["either"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            out["properties"]["kept"],
            json!({"type": ["string", "null"]})
        );
        assert_eq!(out["properties"]["unit"], json!({"type": "null"}));
        assert_eq!(
            out["properties"]["items"]["items"],
            json!({"type": ["string", "null"]}),
            "an item's null is a value, not an absence"
        );
    }

    #[test]
    fn a_default_other_than_null_stays() {
        let out = transformed(json!({
            "type": "object",
            "properties": {"n": {"type": ["integer", "null"], "default": 3}}
        }));
        assert_eq!(
            out["properties"]["n"],
            json!({"type": "integer", "default": 3})
        );
    }

    #[test]
    fn definitions_are_transformed_too() {
        let out = transformed(json!({
            "type": "object",
            "properties": {"inner": {"$ref": "#/$defs/Inner"}},
            "$defs": {"Inner": {
                "type": "object",
                "properties": {"depth": {"type": ["integer", "null"]}}
            }}
        }));
        assert_eq!(
            out["$defs"]["Inner"]["properties"]["depth"],
            json!({"type": "integer"})
        );
    }
}
