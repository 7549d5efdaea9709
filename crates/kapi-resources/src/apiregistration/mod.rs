//! The `apiregistration.k8s.io/v1` group: APIServices, the objects the
//! aggregator (kapi-server `aggregator/`) routes group-versions by. Upstream
//! `ValidateAPIService` (name `<version>.<group>`, group and version names,
//! priority ranges, local vs service-backed rules for `caBundle` and
//! `insecureSkipTLSVerify`), `ValidateAPIServiceStatus` and the
//! `NAME SERVICE AVAILABLE AGE` table of kube-aggregator's REST storage.
//!
//! Where to look next: `registry.rs` / `group_registry.rs` (the declaration), kapi-aggregator
//! `aggregator/` (what reads these objects).

use kapi_machinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, validate_path_segment_name, ErrorList, FieldError,
    FieldPath, ValidateNameFn,
};
use kapi_registry::strategy::RESET_FOR_STATUS;
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Value};

use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{base64_decoded_len, bool_at, i64_at, present, str_at};

pub const GROUP: &str = "apiregistration.k8s.io";

pub struct ApiServiceStrategy;

const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

fn validate_spec(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let group = str_at(obj, "/spec/group");
    let version = str_at(obj, "/spec/version");
    let required = format!("{version}.{group}");
    let name = str_at(obj, "/metadata/name");
    if !name.is_empty() && validate_path_segment_name(name, false).is_empty() && name != required {
        errs.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            name,
            format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    let spec = FieldPath::new("spec");
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            &spec.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for msg in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&spec.child("group"), group, &msg));
        }
    }
    for msg in is_dns1035_label(version) {
        errs.push(FieldError::invalid(&spec.child("version"), version, &msg));
    }
    let group_min = i64_at(obj, "/spec/groupPriorityMinimum").unwrap_or(0);
    if group_min <= 0 || group_min > 20000 {
        errs.push(FieldError::invalid(
            &spec.child("groupPriorityMinimum"),
            group_min,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = i64_at(obj, "/spec/versionPriority").unwrap_or(0);
    if version_priority <= 0 || version_priority > 1000 {
        errs.push(FieldError::invalid(
            &spec.child("versionPriority"),
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_len = base64_decoded_len(str_at(obj, "/spec/caBundle"));
    let insecure = bool_at(obj, "/spec/insecureSkipTLSVerify");
    let Some(service) = present(obj, "/spec/service").filter(|s| s.is_object()) else {
        if ca_len != 0 {
            errs.push(FieldError::invalid(
                &spec.child("caBundle"),
                format!("{ca_len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                &spec.child("insecureSkipTLSVerify"),
                insecure,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    let svc = spec.child("service");
    if str_at(service, "/namespace").is_empty() {
        errs.push(FieldError::required(&svc.child("namespace"), ""));
    }
    if str_at(service, "/name").is_empty() {
        errs.push(FieldError::required(&svc.child("name"), ""));
    }
    if insecure && ca_len > 0 {
        errs.push(FieldError::invalid(
            &spec.child("insecureSkipTLSVerify"),
            insecure,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

fn validate_status(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = FieldPath::new("status").child("conditions");
    let conditions = present(obj, "/status/conditions").and_then(Value::as_array);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let status = str_at(c, "/status");
        if !CONDITION_STATUSES.contains(&status) {
            errs.push(FieldError::not_supported(
                &path.index(i).child("status"),
                status,
                &CONDITION_STATUSES,
            ));
        }
    }
    errs
}

/// The `Available` condition, if any.
pub fn available_condition(obj: &Value) -> Option<&Value> {
    present(obj, "/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
}

impl Strategy for ApiServiceStrategy {
    /// Status writes keep the stored labels, annotations, finalizers and
    /// owner references (upstream's `ResetObjectMetaForStatus`).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(RESET_FOR_STATUS)
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_spec(obj)
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> ErrorList {
        validate_spec(new)
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, _old: &Value) -> ErrorList {
        validate_status(new)
    }

    fn name_rule(&self) -> ValidateNameFn {
        validate_path_segment_name
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column(
                "Service",
                "The reference to the service that hosts this API endpoint.",
            ),
            string_column("Available", "Whether this service is available."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let service = match present(obj, "/spec/service").filter(|s| s.is_object()) {
            Some(s) => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
            None => "Local".to_owned(),
        };
        let available = match available_condition(obj) {
            None => "Unknown".to_owned(),
            Some(c) => {
                let status = str_at(c, "/status");
                let reason = str_at(c, "/reason");
                if status == "True" || reason.is_empty() {
                    status.to_owned()
                } else {
                    format!("{status} ({reason})")
                }
            }
        };
        vec![
            name_cell(obj),
            json!(service),
            json!(available),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(obj: &Value) -> Vec<String> {
        ApiServiceStrategy
            .validate(obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn local_and_remote_rules() {
        let local = json!({"metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15}});
        assert!(errors(&local).is_empty(), "{:?}", errors(&local));
        let bad = json!({"metadata": {"name": "v1.other.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 0,
                     "versionPriority": 1001, "caBundle": "AAAA", "insecureSkipTLSVerify": true}});
        assert_eq!(
            errors(&bad),
            vec![
                "metadata.name: Invalid value: \"v1.other.com\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let remote = json!({"metadata": {"name": "v1.example.com"},
            "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {}, "caBundle": "AAAA", "insecureSkipTLSVerify": true}});
        assert_eq!(
            errors(&remote),
            vec![
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn table_cells() {
        let obj = json!({"metadata": {"name": "v1.example.com"},
            "spec": {"service": {"namespace": "ns", "name": "api"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        let cells = ApiServiceStrategy.cells(&obj);
        assert_eq!(cells[1], "ns/api");
        assert_eq!(cells[2], "False (MissingEndpoints)");
        let local = json!({"metadata": {"name": "v1."}, "spec": {}});
        assert_eq!(ApiServiceStrategy.cells(&local)[1], "Local");
        assert_eq!(ApiServiceStrategy.cells(&local)[2], "Unknown");
    }
}
