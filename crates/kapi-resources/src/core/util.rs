//! Small helpers for reading and defaulting JSON objects, shared by every strategy.
//!
//! Invariants: readers never panic on a wrongly shaped object (a missing or mistyped
//! member reads as empty); writers only touch JSON objects and leave any other value as
//! it is, so defaulting a malformed object is a no-op that validation then reports.
//!
//! Where to look next: `table.rs` for the table-cell helpers, `podspec.rs` for the
//! largest user of these functions.

use kapi_machinery::member::pointer;
use serde_json::{Map, Value};

/// The string at a JSON pointer, or `""`.
pub fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    pointer(v, ptr).and_then(Value::as_str).unwrap_or("")
}

/// The integer at a JSON pointer.
pub fn i64_at(v: &Value, ptr: &str) -> Option<i64> {
    pointer(v, ptr).and_then(Value::as_i64)
}

/// The boolean at a JSON pointer, `false` when absent.
pub fn bool_at(v: &Value, ptr: &str) -> bool {
    pointer(v, ptr).and_then(Value::as_bool).unwrap_or(false)
}

/// The array at a JSON pointer, or an empty slice.
pub fn arr_at<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    pointer(v, ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The object at a JSON pointer.
pub fn obj_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a Map<String, Value>> {
    pointer(v, ptr).and_then(Value::as_object)
}

/// A present, non-null member.
pub fn present<'a>(v: &'a Value, ptr: &str) -> Option<&'a Value> {
    pointer(v, ptr).filter(|x| !x.is_null())
}

/// Sets `obj[key] = value` when the member is missing or null. No-op on non-objects.
pub fn set_default(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        let slot = map.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// The `status` Go's encoder writes for an object whose status struct was never set:
/// `{}` plus the members without `omitempty` at their zero values (e.g. a new
/// ReplicaSet reads back `status: {replicas: 0}`, a Service `{loadBalancer: {}}`).
/// Missing members are added; a status that is not an object is replaced.
pub fn default_status(obj: &mut Value, zeros: Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert(Value::Null);
    if !status.is_object() {
        *status = Value::Object(Map::new());
    }
    if let Value::Object(zeros) = zeros {
        for (k, v) in zeros {
            set_default(status, &k, v);
        }
    }
}

/// Sets `obj[key] = value` when missing, null or the empty string.
pub fn set_default_str(obj: &mut Value, key: &str, value: &str) {
    if obj.get(key).and_then(Value::as_str) == Some("") {
        obj[key] = Value::from(value);
    }
    set_default(obj, key, Value::from(value));
}

/// The child object `obj[key]`, created (replacing a null) when missing. `None` when
/// `obj` is not an object or the member is some other type.
pub fn child_obj<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    set_default(obj, key, Value::Object(Map::new()));
    obj.get_mut(key).filter(|v| v.is_object())
}

/// Runs `f` on every object element of the array `obj[key]`.
pub fn for_each_item(obj: &mut Value, key: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(items) = obj.get_mut(key).and_then(Value::as_array_mut) {
        items.iter_mut().filter(|i| i.is_object()).for_each(&mut f);
    }
}

/// The number of members of the object at a pointer.
pub fn len_obj(v: &Value, ptr: &str) -> usize {
    obj_at(v, ptr).map_or(0, Map::len)
}

/// `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    present(obj, "/metadata/deletionTimestamp").is_some()
}

/// Upstream `labels.FormatLabels`: `k=v` pairs sorted by key, joined by `,`; `<none>`
/// when empty.
pub fn format_labels(map: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = map
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.join(",")
}

/// Standard base64 (RFC 4648) of `bytes`, as Go's `encoding/json` writes `[]byte`.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The decoded length of a base64 string (what a `[]byte` field holds), without
/// decoding it.
pub fn base64_decoded_len(s: &str) -> usize {
    let trimmed = s.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_default_fills_missing_and_null_only() {
        let mut v = json!({"a": null, "b": 1});
        set_default(&mut v, "a", json!(2));
        set_default(&mut v, "b", json!(3));
        set_default(&mut v, "c", json!(4));
        assert_eq!(v, json!({"a": 2, "b": 1, "c": 4}));
    }

    #[test]
    fn set_default_str_replaces_empty_string() {
        let mut v = json!({"a": ""});
        set_default_str(&mut v, "a", "x");
        assert_eq!(v, json!({"a": "x"}));
    }

    #[test]
    fn base64_round_numbers() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_decoded_len("Zm9vYmFy"), 6);
        assert_eq!(base64_decoded_len("Zg=="), 1);
    }

    #[test]
    fn format_labels_sorts_and_handles_empty() {
        let v = json!({"b": "2", "a": "1"});
        assert_eq!(format_labels(v.as_object()), "a=1,b=2");
        assert_eq!(format_labels(None), "<none>");
    }
}
