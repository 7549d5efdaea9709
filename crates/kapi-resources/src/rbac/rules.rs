//! What RBAC rules mean, as pure functions over JSON `PolicyRule`s: the
//! per-field matchers of upstream's `pkg/apis/rbac/v1/evaluation_helpers.go`
//! (kept here so the authorizer can reuse them) and the ClusterRole aggregation
//! rule the clusterrole-aggregation controller applies.
//!
//! Invariants: `*` matches every verb, group, resource and URL; `*/sub` matches
//! that subresource of every resource; a non-resource URL rule ending in `*` is a
//! prefix match. Aggregated rules keep first-seen order, per selector, over the
//! matching roles sorted by name, and never include the aggregating role itself.

use kapi_machinery::labels::from_label_selector_json;
use serde_json::Value;

use crate::core::util::arr_at;

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    arr_at(rule, &format!("/{field}"))
        .iter()
        .filter_map(Value::as_str)
}

fn has_or_star(rule: &Value, field: &str, want: &str) -> bool {
    strings(rule, field).any(|v| v == "*" || v == want)
}

/// Upstream `VerbMatches`.
pub fn verb_matches(rule: &Value, verb: &str) -> bool {
    has_or_star(rule, "verbs", verb)
}

/// Upstream `APIGroupMatches`.
pub fn api_group_matches(rule: &Value, group: &str) -> bool {
    has_or_star(rule, "apiGroups", group)
}

/// Upstream `ResourceMatches`: `resource` is `pods` or `pods/log`.
pub fn resource_matches(rule: &Value, resource: &str, subresource: &str) -> bool {
    strings(rule, "resources").any(|r| {
        r == "*"
            || r == resource
            || (!subresource.is_empty()
                && r.strip_prefix("*/").is_some_and(|sub| sub == subresource))
    })
}

/// Upstream `ResourceNameMatches`: an empty list matches every name.
pub fn resource_name_matches(rule: &Value, name: &str) -> bool {
    let mut names = strings(rule, "resourceNames").peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

/// Upstream `NonResourceURLMatches`.
pub fn non_resource_url_matches(rule: &Value, url: &str) -> bool {
    strings(rule, "nonResourceURLs")
        .any(|u| u == "*" || u == url || u.strip_suffix('*').is_some_and(|p| url.starts_with(p)))
}

/// Whether `rule` allows a resource request.
pub fn allows_resource(
    rule: &Value,
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
    name: &str,
) -> bool {
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    verb_matches(rule, verb)
        && api_group_matches(rule, group)
        && resource_matches(rule, &combined, subresource)
        && resource_name_matches(rule, name)
}

/// Whether `rule` allows a non-resource request.
pub fn allows_non_resource(rule: &Value, verb: &str, url: &str) -> bool {
    verb_matches(rule, verb) && non_resource_url_matches(rule, url)
}

/// A rule with empty lists dropped, so `[]` and a missing list compare equal
/// (upstream's semantic equality).
fn normalized(rule: &Value) -> Value {
    let mut out = rule.clone();
    if let Some(m) = out.as_object_mut() {
        m.retain(|_, v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
    }
    out
}

/// Whether two rule lists are semantically equal.
pub fn same_rules(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| normalized(x) == normalized(y))
}

/// The rules an aggregated ClusterRole should hold, given every ClusterRole;
/// `None` when `role` has no `aggregationRule`.
pub fn aggregate(role: &Value, all: &[Value]) -> Option<Vec<Value>> {
    let rule = role.get("aggregationRule").filter(|r| !r.is_null())?;
    let own_name = role.pointer("/metadata/name");
    let mut sorted: Vec<&Value> = all.iter().collect();
    sorted.sort_by_key(|r| r.pointer("/metadata/name").and_then(Value::as_str));
    let mut out: Vec<Value> = Vec::new();
    for selector in arr_at(rule, "/clusterRoleSelectors") {
        let Ok(selector) = from_label_selector_json(selector) else {
            continue;
        };
        let matching = sorted
            .iter()
            .filter(|r| r.pointer("/metadata/name") != own_name)
            .filter(|r| selector.matches_object(r));
        for other in matching {
            for r in arr_at(other, "/rules") {
                let n = normalized(r);
                if !out.iter().any(|x| normalized(x) == n) {
                    out.push(r.clone());
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers() {
        let rule = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"], "resourceNames": ["a"]});
        assert!(allows_resource(&rule, "get", "", "pods", "", "a"));
        assert!(!allows_resource(&rule, "get", "", "pods", "", "b"));
        assert!(!allows_resource(&rule, "delete", "", "pods", "", "a"));
        assert!(allows_resource(
            &rule,
            "list",
            "",
            "deployments",
            "status",
            "a"
        ));
        assert!(!allows_resource(&rule, "get", "apps", "pods", "", "a"));
        let star = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        assert!(allows_resource(
            &star,
            "watch",
            "apps",
            "deployments",
            "scale",
            "x"
        ));
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]});
        assert!(allows_non_resource(&urls, "get", "/healthz"));
        assert!(allows_non_resource(&urls, "get", "/api/v1"));
        assert!(!allows_non_resource(&urls, "get", "/apis"));
    }

    #[test]
    fn aggregation_unions_matching_roles_by_name() {
        let agg = json!({"metadata": {"name": "agg", "labels": {"x": "1"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "1"}}]}});
        let b = json!({"metadata": {"name": "b", "labels": {"x": "1"}},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        let a = json!({"metadata": {"name": "a", "labels": {"x": "1"}},
            "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
                      {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []}]});
        let other = json!({"metadata": {"name": "c"}, "rules": [{"verbs": ["*"]}]});
        let all = vec![agg.clone(), b, a, other];
        let rules = aggregate(&agg, &all).unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["verbs"], json!(["list"]));
        assert_eq!(rules[1]["verbs"], json!(["get"]));
        assert!(aggregate(&all[1], &all).is_none());
        assert!(same_rules(&rules, &rules.clone()));
    }
}
