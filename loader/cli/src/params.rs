//! A tool's parameters in one line each (name, type, required, description), read from its
//! JSON Schema: what `list` and `describe` show under a tool, so a user sees what a tool takes
//! without reading the raw schema (`describe` and `--json` still give it whole).

use serde_json::Value;

/// One parameter of a tool, as the text output shows it.
#[derive(Debug, PartialEq)]
pub struct Param {
    pub name: String,
    /// A short type: `string`, `array of string`, `integer or null`, `"upper" | "lower"`.
    pub ty: String,
    pub required: bool,
    /// The first sentence of its description, when it has one.
    pub description: Option<String>,
}

/// The parameters `schema` (an object schema) declares: the required ones first, each group
/// by name.
pub fn params_of(schema: &Value) -> Vec<Param> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<Param> = properties
        .iter()
        .map(|(name, property)| Param {
            name: name.clone(),
            ty: type_of(property, schema, 0),
            required: required.contains(&name.as_str()),
            description: property
                .get("description")
                .and_then(Value::as_str)
                .map(first_sentence)
                .filter(|d| !d.is_empty()),
        })
        .collect();
    params.sort_by(|a, b| {
        b.required
            .cmp(&a.required)
            .then_with(|| a.name.cmp(&b.name))
    });
    params
}

/// The first sentence of `text` (doc comments wrap lines mid-sentence), at most
/// [`MAX_SUMMARY`] characters.
fn first_sentence(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentence = match joined.find(". ") {
        Some(end) => &joined[..=end],
        None => joined.as_str(),
    };
    if sentence.chars().count() <= MAX_SUMMARY {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(MAX_SUMMARY - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The longest description `list` shows for a parameter.
const MAX_SUMMARY: usize = 90;

/// Whether `schema` refuses arguments it does not declare.
pub fn is_strict(schema: &Value) -> bool {
    schema.get("additionalProperties") == Some(&Value::Bool(false))
}

/// How deep `$ref`s and nested schemas are followed before giving up (a recursive type).
const MAX_DEPTH: usize = 4;

fn type_of(schema: &Value, root: &Value, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "…".to_owned();
    }
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        return match resolve_ref(target, root) {
            Some(resolved) => type_of(resolved, root, depth + 1),
            None => target.rsplit('/').next().unwrap_or(target).to_owned(),
        };
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let mut types: Vec<String> = Vec::new();
            for option in options {
                let ty = type_of(option, root, depth + 1);
                if !types.contains(&ty) {
                    types.push(ty);
                }
            }
            return types.join(" or ");
        }
    }
    match schema.get("type") {
        Some(Value::String(ty)) => single_type(ty, schema, root, depth),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(|ty| single_type(ty, schema, root, depth))
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_owned(),
    }
}

fn single_type(ty: &str, schema: &Value, root: &Value, depth: usize) -> String {
    match (ty, schema.get("items")) {
        ("array", Some(items)) => format!("array of {}", type_of(items, root, depth + 1)),
        _ => ty.to_owned(),
    }
}

/// `#/$defs/Name` (or `#/definitions/Name`) inside `root`.
fn resolve_ref<'a>(target: &str, root: &'a Value) -> Option<&'a Value> {
    root.pointer(target.strip_prefix('#')?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_parameter_gets_its_type_and_whether_it_is_required() {
        let schema = json!({
            "type": "object",
            "properties": {
                "files": {"type": "array", "items": {"type": "string"}, "description": "Files.\nMore."},
                "case": {"$ref": "#/$defs/Case"},
                "limit": {"type": ["integer", "null"]},
                "mode": {"anyOf": [{"const": "a"}, {"const": "b"}]}
            },
            "required": ["files"],
            "additionalProperties": false,
            "$defs": {"Case": {"type": "string", "enum": ["upper", "lower"]}}
        });
        let params = params_of(&schema);
        let shown: Vec<(&str, &str, bool)> = params
            .iter()
            .map(|p| (p.name.as_str(), p.ty.as_str(), p.required))
            .collect();
        assert_eq!(
            shown,
            [
                ("files", "array of string", true),
                ("case", "\"upper\" | \"lower\"", false),
                ("limit", "integer or null", false),
                ("mode", "\"a\" or \"b\"", false),
            ]
        );
        assert_eq!(params[0].description.as_deref(), Some("Files."));
        assert_eq!(
            first_sentence("One line\nwrapped. Then more."),
            "One line wrapped."
        );
        assert!(first_sentence(&"x".repeat(200)).ends_with('…'));
        assert!(is_strict(&schema));
    }

    #[test]
    fn a_recursive_schema_ends() {
        let schema = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"$ref": "#/$defs/Node"}}
        });
        assert_eq!(params_of(&schema)[0].ty, "…");
    }
}
