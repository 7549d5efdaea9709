//! ConfigMaps: key and total-size validation, `immutable: true` freezing data, and the
//! `NAME DATA AGE` table.
//!
//! Invariant: the size limit counts `data` values plus decoded `binaryData` values
//! against upstream's 1 MiB (`MaxSecretSize`), reported on the whole object (path "").
//!
//! Where to look next: `secret.rs` (the same rules with secret types).

use kapi_machinery::member::{pointer, Members};
use kapi_machinery::validation::{is_config_map_key, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{base64_decoded_len, len_obj, obj_at};

pub struct ConfigMapStrategy;

/// Upstream `core.MaxSecretSize`.
pub const MAX_SIZE: usize = 1024 * 1024;
pub const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";

/// Reports invalid keys of the map at `ptr`; returns the total value size.
pub fn check_keys(obj: &Value, ptr: &str, errs: &mut ErrorList, size: fn(&str) -> usize) -> usize {
    let path = FieldPath::new(&ptr[1..]);
    let mut total = 0;
    for (key, value) in obj_at(obj, ptr).into_iter().flatten() {
        for msg in is_config_map_key(key) {
            errs.push(FieldError::invalid(&path.key(key), key.as_str(), msg));
        }
        total += size(value.as_str().unwrap_or(""));
    }
    total
}

/// Upstream `ValidateConfigMapUpdate` / `ValidateSecretUpdate` immutability.
pub fn immutable_errors(new: &Value, old: &Value, fields: &[&str]) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return errs;
    }
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(FieldError::forbidden(
            &FieldPath::new("immutable"),
            IMMUTABLE_MSG,
        ));
    }
    for field in fields {
        if new.get(*field) != old.get(*field) {
            errs.push(FieldError::forbidden(&FieldPath::new(field), IMMUTABLE_MSG));
        }
    }
    errs
}

impl Strategy for ConfigMapStrategy {
    fn has_defaults(&self) -> bool {
        false
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let mut total = check_keys(obj, "/data", &mut errs, str::len);
        for key in obj_at(obj, "/data").into_iter().flatten().map(|(k, _)| k) {
            if pointer(obj, "/binaryData")
                .and_then(|b| b.member(key))
                .is_some()
            {
                let msg = "duplicate of key present in binaryData";
                errs.push(FieldError::invalid(
                    &FieldPath::new("data").key(key),
                    key.as_str(),
                    msg,
                ));
            }
        }
        total += check_keys(obj, "/binaryData", &mut errs, base64_decoded_len);
        if total > MAX_SIZE {
            errs.push(FieldError::too_long(&FieldPath::new(""), "", MAX_SIZE));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = immutable_errors(new, old, &["data", "binaryData"]);
        errs.extend(self.validate(new));
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Data", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let count = len_obj(obj, "/data") + len_obj(obj, "/binaryData");
        vec![name_cell(obj), json!(count), age_cell(obj)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn invalid_keys_and_size() {
        let cm = json!({"data": {"ok.key": "v", "bad key": "v"}, "binaryData": {"ok.key": "dg=="}});
        let errs = msgs(ConfigMapStrategy.validate(&cm));
        assert!(errs[0].starts_with("data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters"), "{errs:?}");
        assert!(errs.contains(
            &"data[ok.key]: Invalid value: \"ok.key\": duplicate of key present in binaryData"
                .to_string()
        ));
        let big = json!({"data": {"a": "x".repeat(MAX_SIZE + 1)}});
        assert_eq!(
            msgs(ConfigMapStrategy.validate(&big)),
            vec![": Too long: must have at most 1048576 bytes"]
        );
    }

    #[test]
    fn immutable_blocks_data_changes() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        assert_eq!(
            msgs(ConfigMapStrategy.validate_update(&new, &old)),
            vec!["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let unset = json!({"data": {"a": "1"}});
        assert_eq!(
            msgs(ConfigMapStrategy.validate_update(&unset, &old)),
            vec!["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
        assert!(ConfigMapStrategy
            .validate_update(&new, &json!({"data": {}}))
            .is_empty());
    }

    #[test]
    fn table_counts_both_maps() {
        let cm =
            json!({"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
        assert_eq!(ConfigMapStrategy.cells(&cm)[1], 2);
    }
}
