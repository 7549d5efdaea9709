//! Canonical text of JSON values, for hashing: object keys sorted, numbers as
//! written (`1` and `1.0` stay different, as Go's int64 and float64 do). Used to find
//! duplicates and to correlate list items in linear time, and to align an old value's
//! set and map lists with the new value's order for CEL's `oldSelf`.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

use super::Node;

/// The canonical text of `v`.
pub(super) fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "{}:", Value::from(k.as_str()));
                write(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// The canonical text of the key fields of a list-map item (missing keys left out).
pub(super) fn map_key(item: &Value, keys: &[String]) -> String {
    let mut out = String::new();
    for k in keys {
        if let Some(v) = item.get(k) {
            let _ = write!(out, "{}=", Value::from(k.as_str()));
            write(v, &mut out);
        }
        out.push('\u{0}');
    }
    out
}

/// Old list items by how they correlate with new ones: `map` lists by their keys,
/// `set` lists by value (when `sets` is true); `None` when items do not correlate.
pub(super) fn old_items<'a>(
    n: &Node,
    old: Option<&'a Value>,
    sets: bool,
) -> Option<HashMap<String, &'a Value>> {
    let old = old?.as_array()?;
    match n.x_list_type.as_deref() {
        Some("map") if !n.x_list_map_keys.is_empty() => Some(
            old.iter()
                .map(|o| (map_key(o, &n.x_list_map_keys), o))
                .collect(),
        ),
        Some("set") if sets => Some(old.iter().map(|o| (canonical(o), o)).collect()),
        _ => None,
    }
}

/// The correlation key of new item `x` (see [`old_items`]).
pub(super) fn item_key(n: &Node, x: &Value) -> String {
    match n.x_list_type.as_deref() {
        Some("map") => map_key(x, &n.x_list_map_keys),
        _ => canonical(x),
    }
}

/// `old` with the items of every `set` and `map` list reordered to follow the
/// matching items of `new` (old-only items after them, in their order). CEL compares
/// lists in order, upstream compares set and map lists as sets and maps: aligning
/// `oldSelf` this way makes `self == oldSelf` agree with upstream.
pub(super) fn align_old(old: &Value, new: &Value, s: Option<&Node>) -> Value {
    match (old, new) {
        (Value::Object(om), Value::Object(nm)) => Value::Object(
            om.iter()
                .map(|(k, ov)| {
                    let sub = s.and_then(|s| s.child(k));
                    let aligned = match nm.get(k) {
                        Some(nv) => align_old(ov, nv, sub),
                        None => ov.clone(),
                    };
                    (k.clone(), aligned)
                })
                .collect(),
        ),
        (Value::Array(oa), Value::Array(na)) => {
            let Some(n) = s.filter(|n| matches!(n.x_list_type.as_deref(), Some("set" | "map")))
            else {
                let item = s.and_then(|s| s.items.as_deref());
                return Value::Array(
                    oa.iter()
                        .zip(na.iter().map(Some).chain(std::iter::repeat(None)))
                        .map(|(o, nv)| nv.map_or_else(|| o.clone(), |nv| align_old(o, nv, item)))
                        .collect(),
                );
            };
            let item = n.items.as_deref();
            let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, o) in oa.iter().enumerate().rev() {
                by_key.entry(item_key(n, o)).or_default().push(i);
            }
            let mut used = vec![false; oa.len()];
            let mut out = Vec::with_capacity(oa.len());
            for nv in na {
                if let Some(i) = by_key.get_mut(&item_key(n, nv)).and_then(Vec::pop) {
                    used[i] = true;
                    out.push(align_old(&oa[i], nv, item));
                }
            }
            out.extend(
                oa.iter()
                    .zip(&used)
                    .filter(|(_, u)| !**u)
                    .map(|(o, _)| o.clone()),
            );
            Value::Array(out)
        }
        _ => old.clone(),
    }
}
