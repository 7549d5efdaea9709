//! Pruning: drop object fields the schema does not specify (upstream's `pruning`
//! package plus the ObjectMeta coercion of embedded resources).
//!
//! Rules: under `x-kubernetes-preserve-unknown-fields: true` unknown fields stay but
//! known ones are still pruned inside; `additionalProperties` (a schema or `true`)
//! makes every key known, its value pruned by the schema (with `true` and no schema,
//! nested objects lose all their fields, as upstream); the root and every embedded
//! resource keep `apiVersion`, `kind` and `metadata`, and an embedded resource's
//! metadata keeps only ObjectMeta fields. Paths are returned sorted, in upstream's
//! unknown-field form (`spec.foo`, `spec.items[0].bar`).

use serde_json::Value;

use super::embedded::{join, prune_metadata};
use super::{Additional, Node};

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// What governs a value: a schema, or nothing (every field goes).
type Schema<'a> = Option<&'a Node>;

pub(super) fn prune(obj: &mut Value, root: &Node) -> Vec<String> {
    let mut out = Vec::new();
    walk(obj, Some(root), true, "", &mut out);
    prune_metadata("", obj, root, &mut out);
    out.sort();
    out
}

/// Prune a value that is not a resource (a default); returns the dropped paths.
pub(super) fn prune_value(v: &mut Value, s: &Node) -> Vec<String> {
    let mut out = Vec::new();
    walk(v, Some(s), false, "", &mut out);
    out.sort();
    out
}

/// The schema for map entries, and whether there is `additionalProperties` at all.
fn additional(s: &Node) -> (bool, Schema<'_>) {
    match &s.additional_properties {
        Some(Additional::Schema(n)) => (true, Some(n)),
        Some(Additional::Bool(_)) => (true, None),
        None => (false, None),
    }
}

fn walk(x: &mut Value, s: Schema<'_>, resource_root: bool, path: &str, out: &mut Vec<String>) {
    if let Some(n) = s.filter(|n| n.x_preserve_unknown_fields) {
        skip(x, n, resource_root, path, out);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(n) = s else {
                for k in m.keys() {
                    out.push(join(path, k));
                }
                m.clear();
                return;
            };
            let keeps_meta = resource_root || n.x_embedded_resource;
            let (has_ap, ap) = additional(n);
            m.retain(|k, v| {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                // Scalars have nothing to prune: build paths only for containers.
                let container = v.is_object() || v.is_array();
                if let Some(prop) = n.properties.get(k) {
                    if container {
                        walk(v, Some(prop), false, &join(path, k), out);
                    }
                    true
                } else if has_ap {
                    if container {
                        walk(v, ap, false, &join(path, k), out);
                    }
                    true
                } else {
                    out.push(join(path, k));
                    false
                }
            });
        }
        Value::Array(items) => {
            let item = s.and_then(|n| n.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                walk(v, item, false, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn skip(x: &mut Value, n: &Node, resource_root: bool, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            let keeps_meta = resource_root || n.x_embedded_resource;
            let (has_ap, ap) = additional(n);
            for (k, v) in m.iter_mut() {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if !(v.is_object() || v.is_array()) {
                    continue;
                }
                let p = join(path, k);
                if let Some(prop) = n.properties.get(k) {
                    walk(v, Some(prop), false, &p, out);
                } else if has_ap {
                    walk(v, ap, false, &p, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = n.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    skip(v, item, false, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}
