//! Secrets: `type: Opaque` by default, `stringData` folded into `data` (as upstream's
//! v1 conversion does, so `stringData` is never stored), per-type required keys,
//! immutable type, `immutable: true` freezing data, the `type` field selector and the
//! `NAME TYPE DATA AGE` table.
//!
//! Where to look next: `configmap.rs` for the shared key, size and immutability checks.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Map, Value};

use super::configmap::{check_keys, immutable_errors, MAX_SIZE};
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{base64_decoded_len, base64_encode, child_obj, len_obj, set_default_str, str_at};

pub struct SecretStrategy;

/// Keys a secret of a given type must carry in `data`.
fn required_keys(type_: &str) -> &'static [&'static str] {
    match type_ {
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    }
}

/// The key whose content must be a JSON object for the docker config types.
fn docker_config_key(type_: &str) -> Option<&'static str> {
    match type_ {
        "kubernetes.io/dockercfg" => Some(".dockercfg"),
        "kubernetes.io/dockerconfigjson" => Some(".dockerconfigjson"),
        _ => None,
    }
}

/// Why a docker config value (base64 in `data`) is not a JSON object, in the words
/// of Go's `json.Unmarshal` into `map[string]interface{}` for the common cases.
fn docker_config_error(value: &Value) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(value.as_str().unwrap_or(""))
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Some("unexpected end of JSON input".into());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(_)) | Ok(Value::Null) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".into()),
        Err(e) => {
            let first = trimmed.chars().next().unwrap_or(' ');
            let starts_value = matches!(first, '{' | '[' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n');
            Some(if starts_value {
                e.to_string()
            } else {
                format!("invalid character '{first}' looking for beginning of value")
            })
        }
    }
}

impl Strategy for SecretStrategy {
    // A TLS secret whose certificate and key are not a pair is stored with
    // the reason as a warning (upstream's `warningsForSecret`).
    crate::core::object_warnings::warning_methods!(tls_warnings);

    fn default(&self, obj: &mut Value) {
        if !obj.is_object() {
            return;
        }
        set_default_str(obj, "type", "Opaque");
        let Some(Value::Object(string_data)) =
            obj.as_object_mut().and_then(|m| m.remove("stringData"))
        else {
            return;
        };
        if let Some(data) = child_obj(obj, "data") {
            for (k, v) in string_data {
                data[&k] = json!(base64_encode(v.as_str().unwrap_or("").as_bytes()));
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let data_path = FieldPath::new("data");
        if check_keys(obj, "/data", &mut errs, base64_decoded_len) > MAX_SIZE {
            errs.push(FieldError::too_long(&data_path, "", MAX_SIZE));
        }
        let empty = Map::new();
        let data = obj.get("data").and_then(Value::as_object).unwrap_or(&empty);
        let type_ = str_at(obj, "/type");
        match type_ {
            "kubernetes.io/service-account-token" => {
                let key = "kubernetes.io/service-account.name";
                if str_at(
                    obj,
                    &format!("/metadata/annotations/{}", key.replace('/', "~1")),
                )
                .is_empty()
                {
                    let path = FieldPath::new("metadata").child("annotations").key(key);
                    errs.push(FieldError::required(&path, ""));
                }
            }
            "kubernetes.io/basic-auth"
                if !data.contains_key("username") && !data.contains_key("password") =>
            {
                errs.push(FieldError::required(&data_path.key("username"), ""));
                errs.push(FieldError::required(&data_path.key("password"), ""));
            }
            "kubernetes.io/ssh-auth" if str_at(obj, "/data/ssh-privatekey").is_empty() => {
                errs.push(FieldError::required(&data_path.key("ssh-privatekey"), ""));
            }
            _ => {
                for key in required_keys(type_)
                    .iter()
                    .filter(|k| !data.contains_key(**k))
                {
                    errs.push(FieldError::required(&data_path.key(key), ""));
                }
            }
        }
        if let Some(key) = docker_config_key(type_) {
            if let Some(msg) = data.get(key).and_then(docker_config_error) {
                let redacted = "<secret contents redacted>";
                errs.push(FieldError::invalid(&data_path.key(key), redacted, msg));
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        if new.get("type") != old.get("type") {
            let t = str_at(new, "/type");
            errs.push(FieldError::invalid(
                &FieldPath::new("type"),
                t,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs.extend(immutable_errors(new, old, &["data"]));
        errs.extend(self.validate(new));
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["type"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "type").then(|| str_at(obj, "/type").to_string())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Type", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
            string_column("Data", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(str_at(obj, "/type")),
            json!(len_obj(obj, "/data")),
            age_cell(obj),
        ]
    }
}

fn tls_warnings(obj: &Value) -> Vec<String> {
    use base64::Engine as _;
    if obj.get("type").and_then(Value::as_str) != Some("kubernetes.io/tls") {
        return Vec::new();
    }
    let bytes = |key: &str| {
        obj.get("data")
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default()
    };
    super::tls_pair::key_pair_error(&bytes("tls.crt"), &bytes("tls.key"))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_type_and_folds_string_data() {
        let mut s = json!({"data": {"a": "YQ=="}, "stringData": {"b": "foo"}});
        SecretStrategy.default(&mut s);
        assert_eq!(
            s,
            json!({"type": "Opaque", "data": {"a": "YQ==", "b": "Zm9v"}})
        );
    }

    #[test]
    fn type_specific_keys() {
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}});
        assert_eq!(
            msgs(SecretStrategy.validate(&tls)),
            vec!["data[tls.key]: Required value"]
        );
        let sa = json!({"type": "kubernetes.io/service-account-token"});
        assert_eq!(
            msgs(SecretStrategy.validate(&sa)),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        let bad = json!({"type": "Opaque", "data": {"a/b": ""}});
        assert!(
            msgs(SecretStrategy.validate(&bad))[0].starts_with("data[a/b]: Invalid value: \"a/b\"")
        );
    }

    #[test]
    fn type_and_immutable_data_cannot_change() {
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "YQ=="}});
        let new = json!({"type": "kubernetes.io/tls", "immutable": true, "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            msgs(SecretStrategy.validate_update(&new, &old)),
            vec![
                "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }

    #[test]
    fn table_and_field_selector() {
        let s = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "", "b": ""}});
        let cells = SecretStrategy.cells(&s);
        assert_eq!(
            (cells[1].clone(), cells[2].clone()),
            (json!("Opaque"), json!(2))
        );
        assert_eq!(SecretStrategy.field_value(&s, "type").unwrap(), "Opaque");
    }

    #[test]
    fn docker_config_must_be_a_json_object() {
        let secret = |content: &str| {
            json!({"type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": base64_encode(content.as_bytes())}})
        };
        assert!(SecretStrategy
            .validate(&secret(r#"{"auths": {}}"#))
            .is_empty());
        assert_eq!(
            msgs(SecretStrategy.validate(&secret("x"))),
            vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'x' looking for beginning of value"]
        );
        assert_eq!(
            msgs(SecretStrategy.validate(&secret("[]"))),
            vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"]
        );
        assert_eq!(
            msgs(SecretStrategy.validate(&secret(""))),
            vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": unexpected end of JSON input"]
        );
    }
}
