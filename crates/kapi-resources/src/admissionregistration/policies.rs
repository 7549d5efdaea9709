//! ValidatingAdmissionPolicies (+status) and their bindings: v1 defaults and
//! the structural rules of upstream's validation. CEL expressions must compile
//! (`cel.rs`); `kapi-server`'s admission runs them.

use std::collections::BTreeSet;

use kapi_machinery::cel::is_identifier;
use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use kapi_registry::strategy::RESET_FOR_STATUS;
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Value};

use super::cel::{compile, Env};
use super::{default_matching, validate_policies, validate_rule, validate_selector};
use crate::core::table::{age_cell, age_column, int_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, present, set_default, str_at};

pub struct PolicyStrategy;
pub struct PolicyBindingStrategy;

fn validate_match_resources(m: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = validate_policies(m, path);
    errs.extend(validate_selector(m, "namespaceSelector", path));
    errs.extend(validate_selector(m, "objectSelector", path));
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in arr_at(m, &format!("/{key}")).iter().enumerate() {
            errs.extend(validate_rule(rule, &path.child(key).index(i)));
        }
    }
    errs
}

fn named_expressions(obj: &Value, key: &str, path: &FieldPath, errs: &mut ErrorList) {
    let params = present(obj, "/paramKind").is_some();
    let env = Env::Policy { params };
    let mut names = BTreeSet::new();
    for (i, item) in arr_at(obj, &format!("/{key}")).iter().enumerate() {
        let p = path.child(key).index(i);
        let expr = str_at(item, "/expression");
        if expr.trim().is_empty() {
            errs.push(FieldError::required(&p.child("expression"), ""));
        } else if let Err(e) = compile(expr, env) {
            errs.push(FieldError::invalid(&p.child("expression"), expr, &e));
        }
        let message = str_at(item, "/messageExpression");
        if key == "validations" && !message.trim().is_empty() {
            if let Err(e) = compile(message, Env::Message { params }) {
                let mp = p.child("messageExpression");
                errs.push(FieldError::invalid(&mp, message, &e));
            }
        }
        let name = str_at(item, "/name");
        if key == "variables" && !name.is_empty() && !is_identifier(name) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        if let Some(name) = item.get("name").and_then(Value::as_str) {
            if name.is_empty() {
                errs.push(FieldError::required(&p.child("name"), ""));
            } else if !names.insert(name.to_string()) {
                errs.push(FieldError::duplicate(&p.child("name"), name));
            }
        }
    }
}

impl Strategy for PolicyStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    /// Status writes keep the stored labels, annotations, finalizers and
    /// owner references (upstream's `ResetObjectMetaForStatus`).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(RESET_FOR_STATUS)
    }

    fn default(&self, obj: &mut Value) {
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        set_default(spec, "failurePolicy", json!("Fail"));
        if let Some(m) = spec.get_mut("matchConstraints").filter(|m| m.is_object()) {
            default_matching(m, "resourceRules");
        }
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        let s = present(obj, "/spec").cloned().unwrap_or(json!({}));
        if arr_at(&s, "/validations").is_empty() && arr_at(&s, "/auditAnnotations").is_empty() {
            errs.push(FieldError::required(
                &spec.child("validations"),
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        match present(&s, "/matchConstraints") {
            None => errs.push(FieldError::required(&spec.child("matchConstraints"), "")),
            Some(m) => {
                let mp = spec.child("matchConstraints");
                if arr_at(m, "/resourceRules").is_empty() {
                    errs.push(FieldError::required(&mp.child("resourceRules"), ""));
                }
                errs.extend(validate_match_resources(m, &mp));
            }
        }
        errs.extend(validate_policies(&s, &spec));
        if let Some(pk) = present(&s, "/paramKind") {
            for f in ["apiVersion", "kind"] {
                if str_at(pk, &format!("/{f}")).is_empty() {
                    errs.push(FieldError::required(&spec.child("paramKind").child(f), ""));
                }
            }
        }
        named_expressions(&s, "validations", &spec, &mut errs);
        named_expressions(&s, "variables", &spec, &mut errs);
        named_expressions(&s, "matchConditions", &spec, &mut errs);
        for (i, a) in arr_at(&s, "/auditAnnotations").iter().enumerate() {
            let p = spec.child("auditAnnotations").index(i);
            if str_at(a, "/key").is_empty() {
                errs.push(FieldError::required(&p.child("key"), ""));
            }
            let value = str_at(a, "/valueExpression");
            if value.trim().is_empty() {
                errs.push(FieldError::required(&p.child("valueExpression"), ""));
            } else if let Err(e) = compile(
                value,
                Env::Policy {
                    params: present(&s, "/paramKind").is_some(),
                },
            ) {
                errs.push(FieldError::invalid(&p.child("valueExpression"), value, &e));
            }
        }
        errs
    }

    fn validate_subresource_update(&self, _sub: &str, _new: &Value, _old: &Value) -> ErrorList {
        ErrorList::new()
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column("Validations", "Validations indicates the number of validation rules defined in this configuration"),
            string_column("ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy"),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let param = match present(obj, "/spec/paramKind") {
            Some(pk) => format!("{} {}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
            None => "<unset>".to_string(),
        };
        vec![
            name_cell(obj),
            json!(arr_at(obj, "/spec/validations").len()),
            json!(param),
            age_cell(obj),
        ]
    }
}

const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

impl Strategy for PolicyBindingStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        if let Some(m) = obj
            .pointer_mut("/spec/matchResources")
            .filter(|m| m.is_object())
        {
            default_matching(m, "resourceRules");
        }
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let spec = FieldPath::new("spec");
        if str_at(obj, "/spec/policyName").is_empty() {
            errs.push(FieldError::required(&spec.child("policyName"), ""));
        }
        let actions = arr_at(obj, "/spec/validationActions");
        if actions.is_empty() {
            errs.push(FieldError::required(
                &spec.child("validationActions"),
                "at least one validation action is required",
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, a) in actions.iter().enumerate() {
            let a = a.as_str().unwrap_or("");
            let p = spec.child("validationActions").index(i);
            if !ACTIONS.contains(&a) {
                errs.push(FieldError::not_supported(&p, a, ACTIONS));
            }
            if !seen.insert(a) {
                errs.push(FieldError::duplicate(&p, a));
            }
        }
        if seen.contains("Deny") && seen.contains("Warn") {
            errs.push(FieldError::invalid(&spec.child("validationActions"), Value::Array(actions.to_vec()), "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"));
        }
        if let Some(m) = present(obj, "/spec/matchResources") {
            errs.extend(validate_match_resources(m, &spec.child("matchResources")));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("PolicyName", "PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to."),
            string_column("ParamRef", "ParamRef specifies the parameter resource used to configure the admission control policy."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let param = match present(obj, "/spec/paramRef") {
            Some(p) if !str_at(p, "/namespace").is_empty() => {
                format!("{}/{}", str_at(p, "/namespace"), str_at(p, "/name"))
            }
            Some(p) if !str_at(p, "/name").is_empty() => format!("*/{}", str_at(p, "/name")),
            Some(_) => "*/*".to_string(),
            None => "<unset>".to_string(),
        };
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/policyName")),
            json!(param),
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
    fn policy_and_binding_rules() {
        let mut p = json!({"spec": {"matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]}});
        PolicyStrategy.default(&mut p);
        assert_eq!(p["spec"]["failurePolicy"], "Fail");
        assert!(
            PolicyStrategy.validate(&p).is_empty(),
            "{:?}",
            PolicyStrategy.validate(&p)
        );
        assert_eq!(
            msgs(PolicyStrategy.validate(&json!({"spec": {}}))),
            vec![
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.matchConstraints: Required value",
            ]
        );
        let b = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}});
        assert!(msgs(PolicyBindingStrategy.validate(&b))[0].ends_with("serves no purpose)"));
        assert_eq!(PolicyBindingStrategy.cells(&b)[2], "<unset>");
    }
}
