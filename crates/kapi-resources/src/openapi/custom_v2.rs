//! A custom resource's definition as upstream publishes it in OpenAPI v2
//! (`controller/openapi/builder` with `ToStructuralOpenAPIV2`), which kubectl
//! validates against: a kind whose root preserves unknown fields is a bare
//! object (only its group-version-kind), so clients check nothing in it;
//! otherwise the schema loses what swagger 2.0 and kubectl cannot take —
//! `allOf`/`oneOf`/`anyOf`/`not`, the type, items and properties of a
//! nullable node, the items and properties of a node preserving unknown
//! fields, the type of an array without items, and the `required` entries of
//! nullable fields. OpenAPI v3 keeps the whole schema.

use serde_json::{json, Map, Value};

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const GVK: &str = "x-kubernetes-group-version-kind";

/// The v2 form of custom definition `def` (as the apiextensions server
/// builds it: the version's schema with apiVersion, kind and metadata).
pub fn definition(def: &Value) -> Value {
    if def.get(PRESERVE) == Some(&Value::Bool(true)) {
        let mut bare = json!({"type": "object"});
        if let Some(gvk) = def.get(GVK) {
            bare[GVK] = gvk.clone();
        }
        return bare;
    }
    filter(def)
}

fn filter(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "allOf" | "oneOf" | "anyOf" | "not"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if out.remove("nullable") == Some(Value::Bool(true)) {
        for k in ["type", "items", "properties"] {
            out.remove(k);
        }
    }
    if out.get(PRESERVE) == Some(&Value::Bool(true)) {
        out.remove("items");
        out.remove("properties");
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.remove("type");
    }
    let nullable_fields: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, f)| f.get("nullable") == Some(&Value::Bool(true)))
        .map(|(n, _)| n.clone())
        .collect();
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| !nullable_fields.iter().any(|n| r == n));
    }
    let nullable_values = out
        .get("additionalProperties")
        .is_some_and(|a| a.get("nullable") == Some(&Value::Bool(true)));
    if nullable_values {
        out.remove("required");
    }
    if out
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        out.remove("required");
    }
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        for v in props.values_mut() {
            *v = filter(v);
        }
    }
    for k in ["items", "additionalProperties"] {
        if let Some(v) = out.get_mut(k).filter(|v| v.is_object()) {
            *v = filter(v);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_preserving_unknown_fields_is_a_bare_object() {
        let def = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"metadata": {"$ref": "#/definitions/x"}},
                         "x-kubernetes-group-version-kind": [{"group": "g", "kind": "K", "version": "v1"}]});
        assert_eq!(
            definition(&def),
            json!({"type": "object", "x-kubernetes-group-version-kind": [{"group": "g", "kind": "K", "version": "v1"}]})
        );
    }

    #[test]
    fn what_swagger2_and_kubectl_cannot_take_goes() {
        let def = json!({"type": "object", "required": ["a", "n"], "properties": {
            "a": {"type": "array"},
            "n": {"type": "object", "nullable": true, "properties": {"x": {"type": "string"}}},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"y": {"type": "string"}}},
            "o": {"oneOf": [{"type": "string"}], "type": "string"}}});
        assert_eq!(
            definition(&def),
            json!({"type": "object", "required": ["a"], "properties": {
                "a": {},
                "n": {},
                "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "o": {"type": "string"}}})
        );
    }
}
