//! The `apps/v1` group: deployments, replicasets, statefulsets, daemonsets.
//!
//! This file holds what the four workloads share: label-selector validation
//! (`ValidateLabelSelector`), the selector-matches-template rule, pod-template
//! validation for replica-managing controllers, int-or-percent checks, selector
//! immutability, and the CONTAINERS / IMAGES / SELECTOR table cells.
//!
//! Invariants: pod-template defaulting and validation are `core::podspec*`, never
//! re-implemented here; every workload tracks `metadata.generation`.
//!
//! Where to look next: one file per kind; `registry.rs` for the scale subresources.

pub mod controllerrevision;
pub mod daemonset;
pub mod deployment;
pub mod replicaset;
pub mod statefulset;

pub use controllerrevision::ControllerRevisionStrategy;
pub use daemonset::DaemonSetStrategy;
pub use deployment::DeploymentStrategy;
pub use replicaset::ReplicaSetStrategy;
pub use statefulset::StatefulSetStrategy;

use kapi_machinery::labels::{from_label_selector_json, LabelSelector};
use kapi_machinery::validation::{
    is_qualified_name, is_valid_label_value, regex_error, validate_labels, ErrorList, FieldError,
    FieldPath, FIELD_IMMUTABLE_ERROR_MSG, IS_NEGATIVE_ERROR_MSG,
};
use serde_json::{json, Value};

use crate::core::podspec_validation::validate_pod_template_spec;
use crate::core::util::{arr_at, i64_at, present, str_at};

/// `spec.selector` of a workload as a selector; a missing selector selects nothing.
pub fn selector_of(obj: &Value) -> Result<LabelSelector, String> {
    let selector = obj.pointer("/spec/selector").unwrap_or(&Value::Null);
    from_label_selector_json(selector).map_err(|e| e.message().to_string())
}

/// Upstream `ValidateLabelSelector` plus the required / non-empty rules every workload
/// applies; `kind` names the workload in the empty-selector message.
pub fn validate_selector(obj: &Value, kind: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(selector) = present(obj, "/spec/selector") else {
        errs.push(FieldError::required(path, ""));
        return errs;
    };
    errs.extend(validate_labels(
        present(selector, "/matchLabels"),
        &path.child("matchLabels"),
    ));
    for (i, req) in arr_at(selector, "/matchExpressions").iter().enumerate() {
        errs.extend(validate_requirement(
            req,
            &path.child("matchExpressions").index(i),
        ));
    }
    if arr_at(selector, "/matchExpressions").is_empty()
        && selector
            .get("matchLabels")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
    {
        let msg = format!("empty selector is invalid for {kind}");
        errs.push(FieldError::invalid(path, selector.clone(), msg));
    }
    errs
}

/// Upstream `ValidateLabelSelectorRequirement`.
pub fn validate_requirement(req: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let values = arr_at(req, "/values");
    match str_at(req, "/operator") {
        "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
            &path.child("values"),
            "must be specified when `operator` is 'In' or 'NotIn'",
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
            &path.child("values"),
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        )),
        "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
        op => errs.push(FieldError::invalid(
            &path.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    let key = str_at(req, "/key");
    errs.extend(
        is_qualified_name(key)
            .into_iter()
            .map(|m| FieldError::invalid(&path.child("key"), key, m)),
    );
    for (i, v) in values.iter().filter_map(Value::as_str).enumerate() {
        let p = path.child("values").index(i);
        errs.extend(
            is_valid_label_value(v)
                .into_iter()
                .map(|m| FieldError::invalid(&p, v, m)),
        );
    }
    errs
}

/// The selector-matches-template rule (`spec.template.metadata.labels`).
pub fn selector_matches_template(
    obj: &Value,
    selector: &LabelSelector,
    path: &FieldPath,
) -> ErrorList {
    if selector.is_empty()
        || selector.matches_object(obj.pointer("/spec/template").unwrap_or(&Value::Null))
    {
        return Vec::new();
    }
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or(json!({}));
    let msg = "`selector` does not match template `labels`";
    vec![FieldError::invalid(
        &path.child("metadata").child("labels"),
        labels,
        msg,
    )]
}

/// Upstream `ValidatePodTemplateSpecForReplicaSet` (deployments and replicasets).
pub fn validate_template_for_replicaset(obj: &Value, spec_path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = spec_path.child("template");
    match selector_of(obj) {
        Err(_) => {
            let selector = obj
                .pointer("/spec/selector")
                .cloned()
                .unwrap_or(Value::Null);
            errs.push(FieldError::invalid(
                &spec_path.child("selector"),
                selector,
                "invalid label selector",
            ));
            return errs;
        }
        Ok(selector) => errs.extend(selector_matches_template(obj, &selector, &path)),
    }
    let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
    errs.extend(validate_pod_template_spec(template, &path));
    errs.extend(restart_and_deadline(template, "ReplicaSet", &path));
    errs
}

/// Controllers' pods must restart `Always` and may not carry `activeDeadlineSeconds`.
pub fn restart_and_deadline(template: &Value, kind: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let restart = str_at(template, "/spec/restartPolicy");
    if restart != "Always" {
        errs.push(FieldError::not_supported(
            &path.child("spec").child("restartPolicy"),
            restart,
            &["Always"],
        ));
    }
    if present(template, "/spec/activeDeadlineSeconds").is_some() {
        let msg = format!("activeDeadlineSeconds in {kind} is not Supported");
        errs.push(FieldError::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            msg,
        ));
    }
    errs
}

/// Upstream `ValidateNonnegativeField` on an optional integer member.
pub fn nonnegative(obj: &Value, ptr: &str, path: &FieldPath) -> ErrorList {
    match i64_at(obj, ptr) {
        Some(v) if v < 0 => vec![FieldError::invalid(path, v, IS_NEGATIVE_ERROR_MSG)],
        _ => Vec::new(),
    }
}

/// An int-or-percent value: `Some(n)` for `n` or `"n%"`; `None` when malformed.
pub fn int_or_percent(v: Option<&Value>) -> Option<i64> {
    match v {
        None | Some(Value::Null) => Some(0),
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .filter(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
            .and_then(|n| n.parse().ok()),
        Some(v) => v.as_i64(),
    }
}

/// Upstream `ValidatePositiveIntOrPercent` plus `IsNotMoreThan100Percent`.
pub fn validate_int_or_percent(v: Option<&Value>, path: &FieldPath, max_100: bool) -> ErrorList {
    let Some(value) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    match (value, int_or_percent(v)) {
        (Value::String(_), None) => {
            let msg = "a valid percent string must be a numeric string followed by an ending '%'";
            let msg = regex_error(msg, "[0-9]+%", &["1%", "93%"]);
            vec![FieldError::invalid(path, value.clone(), msg)]
        }
        (Value::String(_), Some(p)) if max_100 && p > 100 => {
            vec![FieldError::invalid(
                path,
                value.clone(),
                "must not be greater than 100%",
            )]
        }
        (_, Some(n)) if n < 0 => vec![FieldError::invalid(path, n, IS_NEGATIVE_ERROR_MSG)],
        _ => Vec::new(),
    }
}

/// `spec.selector` may not change (apps/v1).
pub fn immutable_selector(new: &Value, old: &Value) -> ErrorList {
    let (n, o) = (new.pointer("/spec/selector"), old.pointer("/spec/selector"));
    if n == o {
        return Vec::new();
    }
    let path = FieldPath::new("spec").child("selector");
    vec![FieldError::invalid(
        &path,
        n.cloned().unwrap_or(Value::Null),
        FIELD_IMMUTABLE_ERROR_MSG,
    )]
}

/// Upstream `layoutContainerCells`: container names and images, comma-joined,
/// of the pod template at `/spec/template`.
pub fn container_cells(obj: &Value) -> (Value, Value) {
    template_container_cells(obj, "/spec/template")
}

/// [`container_cells`] of the pod template at `template` (a JSON pointer).
pub fn template_container_cells(obj: &Value, template: &str) -> (Value, Value) {
    let containers = arr_at(obj, &format!("{template}/spec/containers"));
    let join = |key: &str| {
        containers
            .iter()
            .map(|c| str_at(c, key))
            .collect::<Vec<_>>()
            .join(",")
    };
    (json!(join("/name")), json!(join("/image")))
}

/// Upstream `metav1.FormatLabelSelector` (`<none>` when empty, `<error>` when invalid).
pub fn format_selector(obj: &Value) -> Value {
    match selector_of(obj) {
        Err(_) => json!("<error>"),
        Ok(s) if s.to_string().is_empty() => json!("<none>"),
        Ok(s) => json!(s.to_string()),
    }
}

/// An integer cell from a pointer (0 when absent, as Go's zero value).
pub fn int_cell(obj: &Value, ptr: &str) -> Value {
    json!(i64_at(obj, ptr).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_rules() {
        let path = FieldPath::new("spec").child("selector");
        let none = json!({"spec": {}});
        assert_eq!(
            validate_selector(&none, "deployment", &path)[0].to_string(),
            "spec.selector: Required value"
        );
        let empty = json!({"spec": {"selector": {}}});
        assert_eq!(
            validate_selector(&empty, "deployment", &path)[0].to_string(),
            "spec.selector: Invalid value: {}: empty selector is invalid for deployment"
        );
        let bad_op =
            json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}});
        assert_eq!(validate_selector(&bad_op, "deployment", &path)[0].to_string(), "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'");
    }

    #[test]
    fn int_or_percent_rules() {
        let p = FieldPath::new("x");
        assert!(validate_int_or_percent(Some(&json!("25%")), &p, true).is_empty());
        assert!(validate_int_or_percent(Some(&json!(1)), &p, true).is_empty());
        assert_eq!(
            validate_int_or_percent(Some(&json!("150%")), &p, true)[0].detail,
            "must not be greater than 100%"
        );
        assert_eq!(
            validate_int_or_percent(Some(&json!(-1)), &p, true)[0].detail,
            IS_NEGATIVE_ERROR_MSG
        );
        assert_eq!(
            validate_int_or_percent(Some(&json!("abc")), &p, true).len(),
            1
        );
    }

    #[test]
    fn cells_helpers() {
        let obj = json!({"spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"spec": {"containers": [
            {"name": "a", "image": "i1"}, {"name": "b", "image": "i2"}]}}}});
        assert_eq!(container_cells(&obj), (json!("a,b"), json!("i1,i2")));
        // A PodTemplate keeps its template at `/template`.
        let tpl = json!({"template": obj["spec"]["template"].clone()});
        assert_eq!(
            template_container_cells(&tpl, "/template"),
            (json!("a,b"), json!("i1,i2"))
        );
        assert_eq!(format_selector(&obj), "app=a");
        assert_eq!(
            format_selector(&json!({"spec": {"selector": {}}})),
            "<none>"
        );
    }
}
