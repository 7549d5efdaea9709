//! Mutating and validating webhook configurations: v1 defaults
//! (`failurePolicy: Fail`, `timeoutSeconds: 10`, `reinvocationPolicy: Never`
//! for mutating ones, service port 443, …) and upstream's webhook rules —
//! three-segment unique names, exactly one client config, required side
//! effects and review versions, timeouts of 1–30 seconds.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1123_subdomain, is_qualified_name, ErrorList, FieldError, FieldPath,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::{default_matching, validate_policies, validate_rule, validate_selector};
use crate::core::table::{age_cell, age_column, int_column, name_cell, name_column};
use crate::core::util::{arr_at, for_each_item, i64_at, present, set_default, str_at};

/// `mutating` selects the mutating flavour (reinvocation policy).
pub struct WebhookConfigurationStrategy {
    pub mutating: bool,
}

fn validate_client_config(cc: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let empty = json!({});
    let cc = cc.unwrap_or(&empty);
    match (present(cc, "/url"), present(cc, "/service")) {
        (Some(_), Some(_)) | (None, None) => {
            errs.push(FieldError::required(
                path,
                "exactly one of url or service is required",
            ));
        }
        (Some(url), None) => {
            let url = url.as_str().unwrap_or("");
            if !url.starts_with("https://") {
                errs.push(FieldError::invalid(
                    &path.child("url"),
                    url,
                    "'https' is the only allowed URL scheme",
                ));
            }
        }
        (None, Some(svc)) => {
            let sp = path.child("service");
            for f in ["name", "namespace"] {
                if str_at(svc, &format!("/{f}")).is_empty() {
                    errs.push(FieldError::required(
                        &sp.child(f),
                        format!("service {f} is required"),
                    ));
                }
            }
            if let Some(port) = i64_at(svc, "/port").filter(|p| !(1..=65535).contains(p)) {
                errs.push(FieldError::invalid(
                    &sp.child("port"),
                    port,
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
    errs
}

fn validate_webhook(
    hook: &Value,
    mutating: bool,
    path: &FieldPath,
    names: &mut BTreeSet<String>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(hook, "/name");
    for msg in is_qualified_name(name) {
        errs.push(FieldError::invalid(&path.child("name"), name, msg));
    }
    if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(
            &path.child("name"),
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
    if !names.insert(name.to_string()) {
        errs.push(FieldError::duplicate(&path.child("name"), name));
    }
    for (i, rule) in arr_at(hook, "/rules").iter().enumerate() {
        errs.extend(validate_rule(rule, &path.child("rules").index(i)));
    }
    errs.extend(validate_policies(hook, path));
    match hook.get("sideEffects").and_then(Value::as_str) {
        None => errs.push(FieldError::required(
            &path.child("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some("None" | "NoneOnDryRun") => {}
        Some(other) => errs.push(FieldError::not_supported(
            &path.child("sideEffects"),
            other,
            &["None", "NoneOnDryRun"],
        )),
    }
    let versions = arr_at(hook, "/admissionReviewVersions");
    if !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
        errs.push(FieldError::required(
            &path.child("admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        ));
    }
    if let Some(t) = i64_at(hook, "/timeoutSeconds").filter(|t| !(1..=30).contains(t)) {
        errs.push(FieldError::invalid(
            &path.child("timeoutSeconds"),
            t,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    if mutating {
        if let Some(p) = hook.get("reinvocationPolicy").and_then(Value::as_str) {
            if !["IfNeeded", "Never"].contains(&p) {
                errs.push(FieldError::not_supported(
                    &path.child("reinvocationPolicy"),
                    p,
                    &["IfNeeded", "Never"],
                ));
            }
        }
    }
    errs.extend(validate_selector(hook, "namespaceSelector", path));
    errs.extend(validate_selector(hook, "objectSelector", path));
    errs.extend(validate_client_config(
        hook.get("clientConfig"),
        &path.child("clientConfig"),
    ));
    for (i, mc) in arr_at(hook, "/matchConditions").iter().enumerate() {
        let mcp = path.child("matchConditions").index(i);
        let n = str_at(mc, "/name");
        for msg in is_dns1123_subdomain(&n.to_lowercase())
            .into_iter()
            .take(1)
            .filter(|_| !n.is_empty())
        {
            errs.push(FieldError::invalid(&mcp.child("name"), n, msg));
        }
        let expr = str_at(mc, "/expression");
        if expr.trim().is_empty() {
            errs.push(FieldError::required(&mcp.child("expression"), ""));
        } else if let Err(e) = super::cel::compile(expr, super::cel::Env::WebhookMatch) {
            errs.push(FieldError::invalid(&mcp.child("expression"), expr, &e));
        }
    }
    errs
}

impl Strategy for WebhookConfigurationStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        let mutating = self.mutating;
        for_each_item(obj, "webhooks", |h| {
            default_matching(h, "rules");
            set_default(h, "failurePolicy", json!("Fail"));
            set_default(h, "timeoutSeconds", json!(10));
            if mutating {
                set_default(h, "reinvocationPolicy", json!("Never"));
            }
            if let Some(svc) = h
                .pointer_mut("/clientConfig/service")
                .filter(|s| s.is_object())
            {
                set_default(svc, "port", json!(443));
            }
        });
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("webhooks");
        let mut names = BTreeSet::new();
        arr_at(obj, "/webhooks")
            .iter()
            .enumerate()
            .flat_map(|(i, h)| validate_webhook(h, self.mutating, &path.index(i), &mut names))
            .collect()
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column(
                "Webhooks",
                "Webhooks indicates the number of webhooks registered in this configuration",
            ),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(arr_at(obj, "/webhooks").len()),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn webhook_defaults_and_rules() {
        let s = WebhookConfigurationStrategy { mutating: true };
        let mut cfg = json!({"webhooks": [{"name": "pods.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]});
        s.default(&mut cfg);
        let h = &cfg["webhooks"][0];
        assert_eq!(
            (h["failurePolicy"].as_str(), h["timeoutSeconds"].as_i64()),
            (Some("Fail"), Some(10))
        );
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        assert_eq!(h["rules"][0]["scope"], "*");
        assert!(s.validate(&cfg).is_empty(), "{:?}", s.validate(&cfg));
        let bad =
            json!({"webhooks": [{"name": "short", "timeoutSeconds": 31, "clientConfig": {}}]});
        assert_eq!(
            msgs(s.validate(&bad)),
            vec![
                "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ]
        );
    }
}
