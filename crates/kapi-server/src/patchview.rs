//! How upstream prints a patch in its strict-decoding error (the `Invalid
//! value` of the field `patch`): a strategic merge patch as Go prints a
//! `map[string]interface{}`, a JSON or merge patch as the patched object's
//! JSON as its patch library writes it — the objects the patch touched with
//! sorted keys, the rest as stored (metadata in the field order of Go's
//! `ObjectMeta`). Also the order upstream reports a patched object's fields
//! in (sorted, as those maps are).

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// `ObjectMeta`'s fields in Go's declaration order.
const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The order of two dotted field paths (`spec.ports[1].name`) as sorted
/// maps print them: key by key, indexes by number.
pub fn path_order(a: &str, b: &str) -> Ordering {
    segments(a).cmp(&segments(b))
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Seg<'a> {
    Index(u64),
    Key(&'a str),
}

fn segments(path: &str) -> Vec<Seg<'_>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').unwrap_or((part, ""));
        out.push(Seg::Key(key));
        for idx in rest.split('[') {
            if let Ok(i) = idx.trim_end_matches(']').parse() {
                out.push(Seg::Index(i));
            }
        }
    }
    out
}

/// `v` as Go's `%v` prints the value `encoding/json` decodes it to.
pub fn go_map(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_map).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", go_map(&m[*k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// A float64 as Go's `%v` prints it: the shortest digits, in exponent form
/// below 1e-4 and from 1e+06 on (`%g` of the shortest representation).
fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// The patched object's JSON as upstream's patch library writes it, for a
/// merge patch `patch` (an object) or a JSON patch (a list of operations).
pub fn merged_json(patched: &Value, patch: &Value) -> String {
    let touched = match patch {
        Value::Array(ops) => touched_by_ops(ops),
        other => other.clone(),
    };
    let mut out = String::new();
    write(&mut out, patched, Some(&touched), false);
    out
}

/// The objects JSON patch operations change (the parents of the paths they
/// name; the values they add are written as sent), as an object of objects.
fn touched_by_ops(ops: &[Value]) -> Value {
    let mut root = Value::Object(Map::new());
    for op in ops {
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let parents = path.rsplit_once('/').map_or("", |(p, _)| p);
        let mut at = &mut root;
        for part in parents.split('/').skip(1) {
            let Some(m) = at.as_object_mut() else { break };
            at = m
                .entry(part.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    root
}

fn write(out: &mut String, v: &Value, touched: Option<&Value>, metadata: bool) {
    let Value::Object(m) = v else {
        match (v, touched) {
            (Value::Array(items), _) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(out, item, None, false);
                }
                out.push(']');
            }
            _ => out.push_str(&v.to_string()),
        }
        return;
    };
    let touched_map = touched.and_then(Value::as_object);
    let mut keys: Vec<&String> = m.keys().collect();
    if touched_map.is_some() {
        keys.sort();
    } else if metadata {
        let rank = |k: &str| {
            META_ORDER
                .iter()
                .position(|f| *f == k)
                .unwrap_or(META_ORDER.len())
        };
        keys.sort_by_key(|k| rank(k));
    }
    out.push('{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        let child = touched_map.and_then(|t| t.get(k.as_str()));
        let is_meta = k == "metadata" && touched.is_some();
        write(out, &m[k], child.filter(|c| c.is_object()), is_meta);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_prints_maps_sorted_with_its_own_float_and_nil_forms() {
        let patch = json!({"foo": 1, "data": {"a": "2"}, "bar": [1, "x", true, null, 1.5, {"z": 1}],
                           "big": 100000000, "small": 0.00001, "mid": 123456});
        assert_eq!(
            go_map(&patch),
            "map[bar:[1 x true <nil> 1.5 map[z:1]] big:1e+08 data:map[a:2] foo:1 mid:123456 small:1e-05]"
        );
    }

    #[test]
    fn merged_json_sorts_what_the_patch_touched_and_orders_metadata_as_go() {
        let patched = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"uid": "u", "name": "dp", "namespace": "default"},
            "data": {"b": "1", "a": "2"}, "zzz": 1});
        let patch = json!({"zzz": 1, "data": {"b": "1", "a": "2"}});
        assert_eq!(
            merged_json(&patched, &patch),
            r#"{"apiVersion":"v1","data":{"a":"2","b":"1"},"kind":"ConfigMap","metadata":{"name":"dp","namespace":"default","uid":"u"},"zzz":1}"#
        );
        let ops = json!([{"op": "add", "path": "/data", "value": {"b": "1", "a": "2"}}]);
        assert!(merged_json(&patched, &ops)
            .starts_with(r#"{"apiVersion":"v1","data":{"b":"1","a":"2"}"#));
        let ops = json!([{"op": "add", "path": "/data/c", "value": "3"}]);
        assert!(merged_json(&patched, &ops)
            .starts_with(r#"{"apiVersion":"v1","data":{"a":"2","b":"1"}"#));
    }

    #[test]
    fn paths_sort_by_key_then_index() {
        let mut p = vec!["spec.b", "foo", "spec.a[10].x", "spec.a[2].x", "data.a"];
        p.sort_by(|a, b| path_order(a, b));
        assert_eq!(
            p,
            ["data.a", "foo", "spec.a[2].x", "spec.a[10].x", "spec.b"]
        );
    }
}
