//! Roles and ClusterRoles: policy-rule validation (a namespaced role may not name
//! non-resource URLs) and ClusterRole aggregation-rule validation. Both print the
//! generic `NAME CREATED AT` table, as upstream has no printer for them.
//!
//! Where to look next: `rules.rs` (what the rules mean), `kapi-server`'s
//! `clusterroles.rs` (the aggregation controller).

use kapi_machinery::labels::from_label_selector_json;
use kapi_machinery::validation::{
    validate_labels, validate_path_segment_name, ErrorList, FieldError, FieldPath, ValidateNameFn,
};
use kapi_registry::Strategy;
use serde_json::Value;

use crate::apps::validate_requirement;
use crate::core::util::{arr_at, present, set_default};

pub struct RoleStrategy;
pub struct ClusterRoleStrategy;

/// Upstream `ValidatePolicyRule`.
pub fn validate_policy_rule(rule: &Value, namespaced: bool, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let list = |f: &str| arr_at(rule, &format!("/{f}"));
    if list("verbs").is_empty() {
        errs.push(FieldError::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = list("nonResourceURLs");
    if !urls.is_empty() {
        let value = Value::Array(urls.to_vec());
        if namespaced {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                value.clone(),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let resourceful = ["apiGroups", "resources", "resourceNames"];
        if resourceful.iter().any(|f| !list(f).is_empty()) {
            errs.push(FieldError::invalid(
                &path.child("nonResourceURLs"),
                value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if list("apiGroups").is_empty() {
        errs.push(FieldError::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if list("resources").is_empty() {
        errs.push(FieldError::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn validate_rules(obj: &Value, namespaced: bool) -> ErrorList {
    let path = FieldPath::new("rules");
    arr_at(obj, "/rules")
        .iter()
        .enumerate()
        .flat_map(|(i, r)| validate_policy_rule(r, namespaced, &path.index(i)))
        .collect()
}

/// A missing `rules` is Go's nil slice, which encodes as `null`.
fn default_rules(obj: &mut Value) {
    set_default(obj, "rules", Value::Null);
}

/// Upstream `ValidateLabelSelector` (invalid label values are rejected, as for
/// new objects) plus the `LabelSelectorAsSelector` conversion check.
fn validate_aggregation(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(rule) = present(obj, "/aggregationRule") else {
        return errs;
    };
    let path = FieldPath::new("aggregationRule").child("clusterRoleSelectors");
    let selectors = arr_at(rule, "/clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(FieldError::required(
            &path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let p = path.index(i);
        errs.extend(validate_labels(
            present(selector, "/matchLabels"),
            &p.child("matchLabels"),
        ));
        for (j, req) in arr_at(selector, "/matchExpressions").iter().enumerate() {
            errs.extend(validate_requirement(
                req,
                &p.child("matchExpressions").index(j),
            ));
        }
        if errs.is_empty() && from_label_selector_json(selector).is_err() {
            errs.push(FieldError::invalid(
                &p,
                selector.clone(),
                "invalid label selector.",
            ));
        }
    }
    errs
}

impl Strategy for RoleStrategy {
    fn default(&self, obj: &mut Value) {
        default_rules(obj);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_rules(obj, true)
    }

    fn name_rule(&self) -> ValidateNameFn {
        validate_path_segment_name
    }
}

impl Strategy for ClusterRoleStrategy {
    fn default(&self, obj: &mut Value) {
        default_rules(obj);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = validate_rules(obj, false);
        errs.extend(validate_aggregation(obj));
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        validate_path_segment_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn policy_rules() {
        let role = json!({"rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            {"apiGroups": [""]},
            {"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]},
        ]});
        assert_eq!(
            msgs(RoleStrategy.validate(&role)),
            vec![
                "rules[1].verbs: Required value: verbs must contain at least one value",
                "rules[1].resources: Required value: resource rules must supply at least one resource",
                "rules[2].nonResourceURLs: Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                "rules[2].nonResourceURLs: Invalid value: []string{\"/healthz\"}: rules cannot apply to both regular resources and non-resource URLs",
            ]
        );
        let cluster = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
        assert!(ClusterRoleStrategy.validate(&cluster).is_empty());
    }

    #[test]
    fn aggregation_rule() {
        let empty = json!({"aggregationRule": {}});
        assert_eq!(
            msgs(ClusterRoleStrategy.validate(&empty)),
            vec!["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
        let bad = json!({"aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}]}});
        assert_eq!(
            msgs(ClusterRoleStrategy.validate(&bad)),
            vec!["aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: \"Bogus\": not a valid selector operator"]
        );
        let ok =
            json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        assert!(ClusterRoleStrategy.validate(&ok).is_empty());
    }

    #[test]
    fn names_are_path_segments_and_rules_default_to_null() {
        assert!((RoleStrategy.name_rule())("system:admin", false).is_empty());
        assert!(!(RoleStrategy.name_rule())("a/b", false).is_empty());
        let mut role = json!({});
        RoleStrategy.default(&mut role);
        assert_eq!(role, json!({"rules": null}));
    }
}
