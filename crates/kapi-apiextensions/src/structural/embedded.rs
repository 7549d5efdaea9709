//! `x-kubernetes-embedded-resource`: objects inside a custom object that are
//! themselves Kubernetes objects (upstream's `objectmeta` package).
//!
//! - [`validate`]: an embedded resource needs a non-empty string `apiVersion` (a
//!   valid group/version) and `kind`; its `metadata` must decode as ObjectMeta and
//!   pass the ObjectMeta rules (with a stand-in name when none is given).
//! - [`prune_metadata`]: the `metadata` of an embedded resource keeps only ObjectMeta
//!   fields of the right JSON type (upstream decodes it into ObjectMeta, dropping
//!   unknown and malformed fields).
//!
//! The root's own metadata is the store's business and not touched here.

use kapi_machinery::validation::{validate_object_meta, validate_path_segment_name};
use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::{Map, Value};

use super::Node;

/// The JSON shape of each ObjectMeta field.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Str,
    Int,
    /// RFC 3339 time or null.
    Time,
    StrMap,
    StrList,
    ObjList,
}

const OBJECT_META: &[(&str, Shape)] = &[
    ("name", Shape::Str),
    ("generateName", Shape::Str),
    ("namespace", Shape::Str),
    ("selfLink", Shape::Str),
    ("uid", Shape::Str),
    ("resourceVersion", Shape::Str),
    ("generation", Shape::Int),
    ("creationTimestamp", Shape::Time),
    ("deletionTimestamp", Shape::Time),
    ("deletionGracePeriodSeconds", Shape::Int),
    ("labels", Shape::StrMap),
    ("annotations", Shape::StrMap),
    ("ownerReferences", Shape::ObjList),
    ("finalizers", Shape::StrList),
    ("managedFields", Shape::ObjList),
];

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(shape: Shape, v: &Value) -> bool {
    match shape {
        _ if v.is_null() => true,
        Shape::Str | Shape::Time => v.is_string(),
        Shape::Int => v.as_i64().is_some(),
        Shape::StrMap => v
            .as_object()
            .is_some_and(|m| m.values().all(|x| x.is_string() || x.is_null())),
        Shape::StrList => v
            .as_array()
            .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())),
        Shape::ObjList => v
            .as_array()
            .is_some_and(|a| a.iter().all(|x| x.is_object() || x.is_null())),
    }
}

fn go_field_type(shape: Shape) -> &'static str {
    match shape {
        Shape::Str => "string",
        Shape::Int => "int64",
        Shape::Time => "v1.Time",
        Shape::StrMap => "map[string]string",
        Shape::StrList => "[]string",
        Shape::ObjList => "[]v1.OwnerReference",
    }
}

/// Upstream's `GetObjectMeta` error for metadata that does not decode, if any.
fn object_meta_error(v: &Value) -> Option<String> {
    let Value::Object(m) = v else {
        return Some(format!(
            "invalid metadata: expected object, got {}",
            go_type(v)
        ));
    };
    for (k, shape) in OBJECT_META {
        if let Some(x) = m.get(*k).filter(|x| !fits(*shape, x)) {
            return Some(format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.{k} of type {}",
                json_kind(x),
                go_field_type(*shape)
            ));
        }
    }
    None
}

/// Validate every embedded resource in `x` (described by `s`).
pub(super) fn validate(path: &FieldPath, x: &Value, s: &Node) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !s.embedded_below {
        return errs;
    }
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource {
                errs.extend(resource(path, m));
            }
            for (k, v) in m {
                if let Some(p) = s.properties.get(k) {
                    errs.extend(validate(&child(path, k), v, p));
                } else if let Some(ap) = s.additional_schema() {
                    errs.extend(validate(&path.key(k), v, ap));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &s.items {
                for (i, v) in items.iter().enumerate() {
                    errs.extend(validate(&path.index(i), v, item));
                }
            }
        }
        _ => {}
    }
    errs
}

fn child(path: &FieldPath, k: &str) -> FieldPath {
    if path.to_string().is_empty() {
        FieldPath::new(k)
    } else {
        path.child(k)
    }
}

fn resource(path: &FieldPath, m: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !m.contains_key("apiVersion") {
        errs.push(FieldError::required(
            &child(path, "apiVersion"),
            "must not be empty",
        ));
    }
    if !m.contains_key("kind") {
        errs.push(FieldError::required(
            &child(path, "kind"),
            "must not be empty",
        ));
    }
    for (k, v) in m {
        let p = child(path, k);
        match (k.as_str(), v) {
            ("apiVersion" | "kind", Value::String(s)) if s.is_empty() => {
                errs.push(FieldError::invalid(&p, v.clone(), "must not be empty"));
            }
            ("apiVersion", Value::String(s)) if s.matches('/').count() > 1 => {
                let msg = format!("unexpected GroupVersion string: {s}");
                errs.push(FieldError::invalid(&p, v.clone(), msg));
            }
            ("apiVersion" | "kind", Value::String(_)) => {}
            ("apiVersion" | "kind", _) => {
                errs.push(FieldError::invalid(&p, v.clone(), "must be a string"));
            }
            ("metadata", _) => match object_meta_error(v) {
                Some(msg) => errs.push(FieldError::invalid(&p, v.clone(), msg)),
                None => errs.extend(meta(&p, v)),
            },
            _ => {}
        }
    }
    errs
}

fn meta(path: &FieldPath, v: &Value) -> Vec<FieldError> {
    let mut meta = v.clone();
    if let Value::Object(m) = &mut meta {
        if m.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            // Upstream sets a stand-in so a missing name is not an error here.
            m.insert("name".into(), Value::from("fakename"));
        }
    }
    let namespaced = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    validate_object_meta(&meta, namespaced, validate_path_segment_name, path)
}

/// Reduce the `metadata` of every embedded resource under `x` to ObjectMeta fields;
/// returns the dropped paths (`spec.template.metadata.foo`).
pub(super) fn prune_metadata(path: &str, x: &mut Value, s: &Node, out: &mut Vec<String>) {
    if !s.embedded_below {
        return;
    }
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource {
                if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                    let mp = join(path, "metadata");
                    meta.retain(|k, v| {
                        let keep = OBJECT_META
                            .iter()
                            .any(|(name, shape)| name == k && fits(*shape, v));
                        if !keep {
                            out.push(join(&mp, k));
                        }
                        keep
                    });
                }
            }
            for (k, v) in m.iter_mut() {
                if s.x_embedded_resource && k == "metadata" {
                    continue;
                }
                if let Some(sub) = s.child(k) {
                    prune_metadata(&join(path, k), v, sub, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &s.items {
                for (i, v) in items.iter_mut().enumerate() {
                    prune_metadata(&format!("{path}[{i}]"), v, item, out);
                }
            }
        }
        _ => {}
    }
}

pub(super) fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}
