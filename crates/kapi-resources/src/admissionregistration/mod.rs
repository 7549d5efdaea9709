//! The `admissionregistration.k8s.io/v1` group, stored and validated only
//! (calling webhooks and evaluating policies come with a later issue):
//! mutating/validating webhook configurations (`webhooks.rs`),
//! validatingadmissionpolicies (+status) and their bindings (`policies.rs`).
//!
//! This file holds the rules both halves share: rules with operations,
//! groups, versions, resources and scope; match policies; selectors.

pub mod cel;
pub mod policies;
pub mod webhooks;

pub use policies::{PolicyBindingStrategy, PolicyStrategy};
pub use webhooks::WebhookConfigurationStrategy;

use kapi_machinery::labels::from_label_selector_json;
use kapi_machinery::validation::{validate_labels, ErrorList, FieldError, FieldPath};
use serde_json::{json, Value};

use crate::apps::validate_requirement;
use crate::core::util::{arr_at, present, set_default, str_at};

pub const GROUP: &str = "admissionregistration.k8s.io";

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

/// Upstream defaults of a `MatchResources` / webhook: selectors `{}`,
/// `matchPolicy: Equivalent`, rule scope `*`.
pub fn default_matching(obj: &mut Value, rules_key: &str) {
    set_default(obj, "namespaceSelector", json!({}));
    set_default(obj, "objectSelector", json!({}));
    set_default(obj, "matchPolicy", json!("Equivalent"));
    crate::core::util::for_each_item(obj, rules_key, |r| set_default(r, "scope", json!("*")));
}

/// Upstream `ValidateLabelSelector` for a present selector.
pub fn validate_selector(obj: &Value, field: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(selector) = present(obj, &format!("/{field}")) else {
        return errs;
    };
    let p = path.child(field);
    errs.extend(validate_labels(
        present(selector, "/matchLabels"),
        &p.child("matchLabels"),
    ));
    for (i, req) in arr_at(selector, "/matchExpressions").iter().enumerate() {
        errs.extend(validate_requirement(
            req,
            &p.child("matchExpressions").index(i),
        ));
    }
    if errs.is_empty() && from_label_selector_json(selector).is_err() {
        errs.push(FieldError::invalid(
            &p,
            selector.clone(),
            "invalid label selector.",
        ));
    }
    errs
}

fn list_rules(rule: &Value, field: &str, path: &FieldPath, errs: &mut ErrorList) {
    let list = arr_at(rule, &format!("/{field}"));
    if list.is_empty() {
        errs.push(FieldError::required(&path.child(field), ""));
    }
    if list.len() > 1 && list.iter().any(|v| v == "*") {
        errs.push(FieldError::invalid(
            &path.child(field),
            Value::Array(list.to_vec()),
            "if '*' is present, must not specify other values",
        ));
    }
}

/// Upstream `validateRuleWithOperations` (with `validateRule`).
pub fn validate_rule(rule: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    list_rules(rule, "operations", path, &mut errs);
    for (i, op) in arr_at(rule, "/operations").iter().enumerate() {
        let op = op.as_str().unwrap_or("");
        if !OPERATIONS.contains(&op) {
            errs.push(FieldError::not_supported(
                &path.child("operations").index(i),
                op,
                OPERATIONS,
            ));
        }
    }
    for field in ["apiGroups", "apiVersions", "resources"] {
        list_rules(rule, field, path, &mut errs);
    }
    for (i, v) in arr_at(rule, "/apiVersions").iter().enumerate() {
        if v.as_str() == Some("") {
            errs.push(FieldError::required(
                &path.child("apiVersions").index(i),
                "",
            ));
        }
    }
    match str_at(rule, "/scope") {
        "" | "*" | "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("scope"),
            other,
            &["*", "Cluster", "Namespaced"],
        )),
    }
    errs
}

/// `failurePolicy` and `matchPolicy` values.
pub fn validate_policies(obj: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (field, valid) in [
        ("failurePolicy", &["Fail", "Ignore"][..]),
        ("matchPolicy", &["Equivalent", "Exact"][..]),
    ] {
        if let Some(v) = obj.get(field).and_then(Value::as_str) {
            if !valid.contains(&v) {
                errs.push(FieldError::not_supported(&path.child(field), v, valid));
            }
        }
    }
    errs
}
