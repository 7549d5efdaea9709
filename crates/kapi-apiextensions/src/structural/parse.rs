//! JSONSchemaProps JSON → [`Node`]. Keys of the wrong JSON type fail with a message
//! naming the key path; unknown keys (`$schema`, `id`, `example`, `definitions`, …)
//! are kept out of the tree because nothing downstream uses them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Additional, Node, Rule};

fn wrong(path: &str, key: &str, want: &str) -> String {
    let p = if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    };
    format!("{p}: must be {want}")
}

fn get_str(m: &Map<String, Value>, path: &str, key: &str) -> Result<String, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(wrong(path, key, "a string")),
    }
}

fn get_bool(m: &Map<String, Value>, path: &str, key: &str) -> Result<Option<bool>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(wrong(path, key, "a boolean")),
    }
}

fn get_f64(m: &Map<String, Value>, path: &str, key: &str) -> Result<Option<f64>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(wrong(path, key, "a number")),
    }
}

fn get_i64(m: &Map<String, Value>, path: &str, key: &str) -> Result<Option<i64>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| wrong(path, key, "an integer")),
        Some(_) => Err(wrong(path, key, "an integer")),
    }
}

fn get_strings(m: &Map<String, Value>, path: &str, key: &str) -> Result<Vec<String>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| wrong(path, key, "a list of strings"))
            })
            .collect(),
        Some(_) => Err(wrong(path, key, "a list of strings")),
    }
}

fn get_nodes(m: &Map<String, Value>, path: &str, key: &str) -> Result<Vec<Node>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, v)| node(v, &format!("{}[{i}]", join(path, key))))
            .collect(),
        Some(_) => Err(wrong(path, key, "a list of schemas")),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn rules(m: &Map<String, Value>, path: &str) -> Result<Vec<Rule>, String> {
    let key = "x-kubernetes-validations";
    let Some(v) = m.get(key).filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let Value::Array(a) = v else {
        return Err(wrong(path, key, "a list of rules"));
    };
    let mut out = Vec::new();
    for (i, r) in a.iter().enumerate() {
        let p = format!("{}[{i}]", join(path, key));
        let Value::Object(rm) = r else {
            return Err(format!("{p}: must be an object"));
        };
        out.push(Rule {
            rule: get_str(rm, &p, "rule")?,
            message: get_str(rm, &p, "message")?,
            message_expression: get_str(rm, &p, "messageExpression")?,
            field_path: get_str(rm, &p, "fieldPath")?,
            reason: get_str(rm, &p, "reason")?,
            optional_old_self: get_bool(rm, &p, "optionalOldSelf")?,
        });
    }
    Ok(out)
}

/// Parse one schema object at `path` (for messages).
pub(super) fn node(v: &Value, path: &str) -> Result<Node, String> {
    let m = match v {
        Value::Object(m) => m,
        Value::Null => return Ok(Node::default()),
        _ => return Err(format!("{}: must be an object", display(path))),
    };
    let mut n = Node {
        ty: get_str(m, path, "type")?,
        format: get_str(m, path, "format")?,
        nullable: get_bool(m, path, "nullable")?.unwrap_or(false),
        default: m.get("default").cloned(),
        title: get_str(m, path, "title")?,
        description: get_str(m, path, "description")?,
        required: get_strings(m, path, "required")?,
        maximum: get_f64(m, path, "maximum")?,
        exclusive_maximum: get_bool(m, path, "exclusiveMaximum")?.unwrap_or(false),
        minimum: get_f64(m, path, "minimum")?,
        exclusive_minimum: get_bool(m, path, "exclusiveMinimum")?.unwrap_or(false),
        multiple_of: get_f64(m, path, "multipleOf")?,
        max_length: get_i64(m, path, "maxLength")?,
        min_length: get_i64(m, path, "minLength")?,
        max_items: get_i64(m, path, "maxItems")?,
        min_items: get_i64(m, path, "minItems")?,
        unique_items: get_bool(m, path, "uniqueItems")?.unwrap_or(false),
        max_properties: get_i64(m, path, "maxProperties")?,
        min_properties: get_i64(m, path, "minProperties")?,
        all_of: get_nodes(m, path, "allOf")?,
        any_of: get_nodes(m, path, "anyOf")?,
        one_of: get_nodes(m, path, "oneOf")?,
        x_embedded_resource: get_bool(m, path, "x-kubernetes-embedded-resource")?.unwrap_or(false),
        x_int_or_string: get_bool(m, path, "x-kubernetes-int-or-string")?.unwrap_or(false),
        x_list_map_keys: get_strings(m, path, "x-kubernetes-list-map-keys")?,
        x_validations: rules(m, path)?,
        has_external_docs: m.get("externalDocs").is_some_and(|v| !v.is_null()),
        ..Node::default()
    };
    let pattern = get_str(m, path, "pattern")?;
    if !pattern.is_empty() {
        n.pattern_re = super::go_regex::compile(&pattern).ok().map(super::Pattern);
        n.pattern = Some(pattern);
    }
    if let Some(p) = get_bool(m, path, "x-kubernetes-preserve-unknown-fields")? {
        n.x_preserve_set = true;
        n.x_preserve_unknown_fields = p;
    }
    let list_type = get_str(m, path, "x-kubernetes-list-type")?;
    n.x_list_type = (!list_type.is_empty()).then_some(list_type);
    let map_type = get_str(m, path, "x-kubernetes-map-type")?;
    n.x_map_type = (!map_type.is_empty()).then_some(map_type);
    match m.get("enum") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => n.enum_values = Some(a.clone()),
        Some(_) => return Err(wrong(path, "enum", "a list")),
    }
    match m.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(props)) => {
            let mut out = BTreeMap::new();
            for (k, v) in props {
                out.insert(k.clone(), node(v, &format!("{path}.properties[{k}]"))?);
            }
            n.properties = out;
        }
        Some(_) => return Err(wrong(path, "properties", "an object")),
    }
    match m.get("additionalProperties") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => n.additional_properties = Some(Additional::Bool(*b)),
        Some(v @ Value::Object(_)) => {
            let p = join(path, "additionalProperties");
            n.additional_properties = Some(Additional::Schema(Box::new(node(v, &p)?)));
        }
        Some(_) => return Err(wrong(path, "additionalProperties", "a boolean or a schema")),
    }
    match m.get("items") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Object(_)) => {
            n.items = Some(Box::new(node(v, &join(path, "items"))?));
        }
        Some(Value::Array(_)) => {
            return Err(format!(
                "{}: must be a schema, not a list (items as an array is not supported)",
                join(path, "items")
            ));
        }
        Some(_) => return Err(wrong(path, "items", "a schema")),
    }
    match m.get("not") {
        None | Some(Value::Null) => {}
        Some(v) => n.not = Some(Box::new(node(v, &join(path, "not"))?)),
    }
    let (embedded, lists) = n
        .properties
        .values()
        .chain(n.items.as_deref())
        .chain(n.additional_schema())
        .fold((false, false), |(e, l), c| {
            (e || c.embedded_below, l || c.list_type_below)
        });
    n.embedded_below = embedded || n.x_embedded_resource;
    n.list_type_below = lists;
    n.list_type_below |= matches!(n.x_list_type.as_deref(), Some("set" | "map"));
    Ok(n)
}

fn display(path: &str) -> &str {
    if path.is_empty() {
        "<root>"
    } else {
        path
    }
}
