//! Structural defaulting (upstream's `defaulting` package), run on create, update and
//! every read from storage.
//!
//! Two passes, as upstream's decoder: first a `null` in a field that is neither
//! nullable nor defaulted is removed; then each missing field with a `default` gets a
//! copy of it, and a non-nullable `null` with a default is replaced by the default.
//! Defaults are applied top-down, so a defaulted object is itself defaulted inside.
//! List items and map values that are `null` take the item/value schema's default.

use serde_json::Value;

use super::Node;

pub(super) fn default(obj: &mut Value, root: &Node) {
    prune_nulls(obj, Some(root));
    apply(obj, root);
}

fn non_nullable_null(x: &Value, s: Option<&Node>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

fn prune_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                let sub = s.and_then(|s| s.child(k));
                let drop = non_nullable_null(v, sub) && sub.is_some_and(|s| s.default.is_none());
                if !drop {
                    prune_nulls(v, sub);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let item = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_nulls(v, item);
            }
        }
        _ => {}
    }
}

fn apply(x: &mut Value, s: &Node) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                let missing = m.get(k).is_none_or(|v| non_nullable_null(v, Some(prop)));
                if missing {
                    m.insert(k.clone(), d.clone());
                }
            }
            let ap = s.additional_schema();
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop);
                } else if let Some(ap) = ap {
                    if non_nullable_null(v, Some(ap)) {
                        if let Some(d) = &ap.default {
                            *v = d.clone();
                        }
                    }
                    apply(v, ap);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref() else {
                return;
            };
            for v in items.iter_mut() {
                if non_nullable_null(v, Some(item)) {
                    if let Some(d) = &item.default {
                        *v = d.clone();
                    }
                }
                apply(v, item);
            }
        }
        _ => {}
    }
}
