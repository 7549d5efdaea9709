//! The errors a strategic merge patch answers with, worded as upstream's
//! (values printed as Go's `%v` prints them).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::PatchError;

/// Upstream `sliceElementType`: all elements of both lists share one kind.
pub(super) fn elem_kind(original: &[Value], patch: &[Value]) -> Result<&'static str, PatchError> {
    let mut kind = None;
    for v in original.iter().chain(patch) {
        let k = kind_name(v);
        if k == "list" {
            return Err(PatchError::ListOfLists);
        }
        if kind.is_some_and(|prev| prev != k) {
            let all = [original, patch].map(|l| go_fmt(&Value::Array(l.to_vec())));
            return Err(PatchError::MixedElements(format!(
                "[{} {}]",
                all[0], all[1]
            )));
        }
        kind = Some(k);
    }
    Ok(kind.unwrap_or("null"))
}

pub(super) fn as_object(v: &Value) -> Result<&Map<String, Value>, PatchError> {
    v.as_object().ok_or_else(|| bad_arg("map", v))
}

pub(super) fn bad_arg(expected: &'static str, v: &Value) -> PatchError {
    PatchError::BadArgType {
        expected,
        actual: kind_name(v),
    }
}

pub(super) fn bad_patch_type(directive: &Value, map: &Map<String, Value>) -> PatchError {
    PatchError::BadPatchType {
        directive: go_fmt(directive),
        map: go_fmt(&Value::Object(map.clone())),
    }
}

pub(super) fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError::NoMergeKey {
        map: go_fmt(item),
        key: key.to_string(),
    }
}

pub(super) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Renders a value the way Go's `%v` renders decoded JSON (`map[k:v]`, `[a b]`),
/// so error messages match upstream's.
pub(super) fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(go_fmt).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_fmt(v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
        other => other.to_string(),
    }
}
