//! `x-kubernetes-list-type` invariants: elements of a `set` are unique, keys of a
//! `map` are unique (upstream's `listtype` package). A duplicate is reported once, at
//! its second appearance; a `map` list whose elements are not objects reports the
//! first such element only.

use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::{Map, Value};

use std::collections::HashMap;

use super::canon::canonical;
use super::Node;

fn child(path: Option<&FieldPath>, name: &str) -> FieldPath {
    path.map_or_else(|| FieldPath::new(name), |p| p.child(name))
}

fn key(path: Option<&FieldPath>, name: &str) -> FieldPath {
    // Upstream's `(*Path)(nil).Key(k)` prints `[k]`.
    path.map_or_else(|| FieldPath::default().key(name), |p| p.key(name))
}

/// Check every list under `obj` (an object validated by `s`). `path` is `None` at
/// the root.
pub(super) fn validate(path: Option<&FieldPath>, s: &Node, obj: &Value) -> Vec<FieldError> {
    let Value::Object(m) = obj else {
        return Vec::new();
    };
    object(path, s, m)
}

fn object(path: Option<&FieldPath>, s: &Node, m: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(ap) = s.additional_schema() {
        for (k, v) in m {
            errs.extend(value(&key(path, k), ap, v));
        }
    }
    for (k, v) in m {
        if let Some(sub) = s.properties.get(k) {
            errs.extend(value(&child(path, k), sub, v));
        }
    }
    errs
}

fn value(path: &FieldPath, s: &Node, v: &Value) -> Vec<FieldError> {
    if !s.list_type_below {
        return Vec::new();
    }
    match v {
        Value::Array(items) => array(path, s, items),
        Value::Object(m) => object(Some(path), s, m),
        _ => Vec::new(),
    }
}

fn array(path: &FieldPath, s: &Node, items: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match s.x_list_type.as_deref() {
        Some("set") => {
            for i in non_unique(items) {
                errs.push(FieldError::duplicate(&path.index(i), items[i].clone()));
            }
        }
        Some("map") => errs.extend(list_map(path, s, items)),
        _ => {}
    }
    if let Some(item) = &s.items {
        for (i, v) in items.iter().enumerate() {
            errs.extend(value(&path.index(i), item, v));
        }
    }
    errs
}

/// Indices of the second appearance of each repeated element.
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(items.len());
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let times = seen.entry(canonical(x)).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn list_map(path: &FieldPath, s: &Node, items: &[Value]) -> Vec<FieldError> {
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !x.is_null() && !x.is_object())
    {
        return vec![FieldError::invalid(
            &path.index(i),
            x.clone(),
            "must be an object for an array of list-type map",
        )];
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Value::Object(m) = x {
                for k in &s.x_list_map_keys {
                    if let Some(v) = m.get(k) {
                        key.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    non_unique(&keys)
        .into_iter()
        .map(|i| FieldError::duplicate(&path.index(i), keys[i].clone()))
        .collect()
}
