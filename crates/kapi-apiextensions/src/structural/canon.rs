//! Canonical text of JSON values, for hashing: object keys sorted, numbers as
//! written (`1` and `1.0` stay different, as Go's int64 and float64 do). Used to find
//! duplicates and to correlate list items in linear time.

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
