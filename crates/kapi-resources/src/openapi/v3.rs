//! The OpenAPI 3.0 rewrite of the swagger 2.0 material: `$ref`s move to
//! `#/components/schemas/`, a `$ref` with siblings (a description) becomes
//! `allOf: [{$ref}]` plus the siblings, body parameters become `requestBody`,
//! response schemas move under `content` per media type, non-body parameters get
//! a `schema`, and `IntOrString`/`Quantity` get upstream's v3 `oneOf` forms.
//!
//! Invariants: pure functions of their input; keys keep their order, so equal
//! inputs give equal bytes (and hashes).
//! Where to look next: `mod.rs` (which document holds what).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::defs::{Defs, INT_OR_STRING, QUANTITY, REF_PREFIX};
use super::render::{Part, Sources};

const V3_PREFIX: &str = "#/components/schemas/";

fn rewrite_ref(r: &str) -> String {
    match r.strip_prefix(REF_PREFIX) {
        Some(name) => format!("{V3_PREFIX}{name}"),
        None => r.to_string(),
    }
}

/// One schema (recursively) in 3.0 form.
pub fn schema(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            match map.get("$ref") {
                Some(Value::String(r)) if map.len() > 1 => {
                    out.insert("allOf".into(), json!([{"$ref": rewrite_ref(r)}]));
                }
                Some(Value::String(r)) => {
                    out.insert("$ref".into(), rewrite_ref(r).into());
                }
                _ => {}
            }
            for (k, v) in map {
                if k == "$ref" && v.is_string() {
                    continue;
                }
                out.insert(k.clone(), schema(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(schema).collect()),
        other => other.clone(),
    }
}

fn one_of(def: &Value, types: &[&str], format: Option<&str>) -> Value {
    let mut out = Map::new();
    if let Some(description) = def.get("description") {
        out.insert("description".into(), description.clone());
    }
    if let Some(format) = format {
        out.insert("format".into(), format.into());
    }
    let alternatives: Vec<Value> = types.iter().map(|t| json!({"type": t})).collect();
    out.insert("oneOf".into(), Value::Array(alternatives));
    Value::Object(out)
}

/// `components.schemas` for the given definitions.
pub fn schemas(defs: &Defs) -> Map<String, Value> {
    defs.iter()
        .map(|(name, def)| {
            let converted = match name.as_str() {
                INT_OR_STRING => one_of(def, &["integer", "string"], Some("int-or-string")),
                QUANTITY => one_of(def, &["string", "number"], None),
                _ => schema(def),
            };
            (name.clone(), converted)
        })
        .collect()
}

/// A non-body parameter: `type`/`uniqueItems` move into `schema`.
fn parameter(p: &Value) -> Value {
    let mut out = Map::new();
    let mut param_schema = Map::new();
    for (k, v) in p.as_object().into_iter().flatten() {
        match k.as_str() {
            "type" | "uniqueItems" | "format" => {
                param_schema.insert(k.clone(), v.clone());
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out.insert("schema".into(), Value::Object(param_schema));
    Value::Object(out)
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    let items = v.and_then(Value::as_array);
    items
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn content(types: &[&str], body_schema: &Value) -> Value {
    let converted = schema(body_schema);
    let map: Map<String, Value> = types
        .iter()
        .map(|t| {
            let media = [("schema".to_string(), converted.clone())];
            (t.to_string(), Value::Object(media.into_iter().collect()))
        })
        .collect();
    Value::Object(map)
}

/// One operation in 3.0 form.
fn operation(op: &Value) -> Value {
    let consumes = strings(op.get("consumes"));
    let produces = strings(op.get("produces"));
    let mut out = Map::new();
    for (k, v) in op.as_object().into_iter().flatten() {
        match k.as_str() {
            "consumes" | "produces" | "schemes" => {}
            "parameters" => {
                let all = v.as_array().map(Vec::as_slice).unwrap_or_default();
                let (body, rest): (Vec<&Value>, Vec<&Value>) =
                    all.iter().partition(|p| p["in"] == "body");
                if !rest.is_empty() {
                    out.insert(k.clone(), rest.into_iter().map(parameter).collect());
                }
                if let Some(body) = body.first() {
                    let mut request = json!({"content": content(&consumes, &body["schema"])});
                    if body.get("required") == Some(&Value::Bool(true)) {
                        request["required"] = true.into();
                    }
                    out.insert("requestBody".into(), request);
                }
            }
            "responses" => {
                let mut responses = Map::new();
                for (code, r) in v.as_object().into_iter().flatten() {
                    let mut resp = json!({"description": r["description"]});
                    if let Some(s) = r.get("schema") {
                        resp["content"] = content(&produces, s);
                    }
                    responses.insert(code.clone(), resp);
                }
                out.insert(k.clone(), Value::Object(responses));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// `paths` in 3.0 form.
pub fn paths(paths: &Map<String, Value>) -> Map<String, Value> {
    let convert_item = |item: &Value| -> Value {
        let mut out = Map::new();
        for (k, v) in item.as_object().into_iter().flatten() {
            let converted = match k.as_str() {
                "parameters" => v.as_array().into_iter().flatten().map(parameter).collect(),
                _ => operation(v),
            };
            out.insert(k.clone(), converted);
        }
        Value::Object(out)
    };
    paths
        .iter()
        .map(|(p, item)| (p.clone(), convert_item(item)))
        .collect()
}

/// A complete 3.0 document: `paths` (swagger form) converted, with the named
/// definitions (already in 3.0 form in `sources`).
pub fn document<'a>(
    v2_paths: &Map<String, Value>,
    names: &'a BTreeSet<String>,
    sources: Sources<'a>,
) -> Part<'a> {
    let security = json!({"BearerToken": super::bearer_token()});
    let components = vec![
        ("schemas", Part::Defs(names, sources)),
        ("securitySchemes", Part::Value(security)),
    ];
    Part::Map(vec![
        ("components", Part::Map(components)),
        ("info", Part::Value(super::info())),
        ("openapi", Part::Value("3.0.0".into())),
        ("paths", Part::Value(Value::Object(paths(v2_paths)))),
    ])
}
