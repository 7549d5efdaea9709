//! Escalation prevention on RBAC writes (upstream `pkg/registry/rbac`): nobody
//! writes a Role or ClusterRole with permissions they do not hold unless they
//! may `escalate` it, and nobody binds a role whose permissions they do not
//! hold unless they may `bind` it. Members of `system:masters` skip the check.
//!
//! A [`Guard`] is prepared (async: it asks the authorizer for `escalate` /
//! `bind` and reads the RBAC policy) before the store's write, then checks the
//! object the write would store synchronously, inside the store's
//! compare-and-swap closure for updates and patches. A write that only changes
//! `ownerReferences` / `finalizers` passes, as upstream lets the garbage
//! collector through.
//!
//! [`covers`] is upstream's `validation.Covers`: each requested rule is broken
//! into atomic rules (one group, resource, verb and name, or one URL and verb),
//! each of which some held rule must cover.

use std::collections::BTreeSet;
use std::sync::Arc;

use kapi_machinery::status::{ApiError, GroupResource, Reason};
use serde_json::{json, Value};

use super::rbac::Policy;
use super::{Attributes, Authorization, Authorizer, ResourceAttrs, PRIVILEGED_GROUP};
use kapi_http::user::UserInfo;
use kapi_registry::apis::Entry;

const GROUP: &str = "rbac.authorization.k8s.io";

fn strs(rule: &Value, field: &str) -> Vec<String> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn has(set: &[String], v: &str) -> bool {
    set.iter().any(|s| s == v)
}

fn has_all(set: &[String], want: &[String]) -> bool {
    want.iter().all(|w| has(set, w))
}

fn resource_covers_all(set: &[String], want: &[String]) -> bool {
    if has(set, "*") || has_all(set, want) {
        return true;
    }
    want.iter().all(|path| {
        has(set, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(set, &format!("*/{sub}")))
    })
}

fn url_covers(owner: &str, sub: &str) -> bool {
    owner == sub
        || owner
            .strip_suffix('*')
            .is_some_and(|p| sub.starts_with(p.trim_end_matches('*')))
}

/// Upstream `ruleCovers`.
fn rule_covers(owner: &Value, sub: &Value) -> bool {
    let (ov, sv) = (strs(owner, "verbs"), strs(sub, "verbs"));
    let (og, sg) = (strs(owner, "apiGroups"), strs(sub, "apiGroups"));
    let (or, sr) = (strs(owner, "resources"), strs(sub, "resources"));
    let (ou, su) = (strs(owner, "nonResourceURLs"), strs(sub, "nonResourceURLs"));
    let (on, sn) = (strs(owner, "resourceNames"), strs(sub, "resourceNames"));
    let verbs = has(&ov, "*") || has_all(&ov, &sv);
    let groups = has(&og, "*") || has_all(&og, &sg);
    let resources = resource_covers_all(&or, &sr);
    let urls = su.iter().all(|s| ou.iter().any(|o| url_covers(o, s)));
    let names = if sn.is_empty() {
        on.is_empty()
    } else {
        on.is_empty() || has_all(&on, &sn)
    };
    verbs && groups && resources && urls && names
}

/// Upstream `BreakdownRule`.
fn breakdown(rule: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let verbs = strs(rule, "verbs");
    let names = strs(rule, "resourceNames");
    for g in strs(rule, "apiGroups") {
        for r in strs(rule, "resources") {
            for v in &verbs {
                if names.is_empty() {
                    out.push(json!({"apiGroups": [g], "resources": [r], "verbs": [v]}));
                }
                for n in &names {
                    out.push(json!({"apiGroups": [g], "resources": [r], "verbs": [v], "resourceNames": [n]}));
                }
            }
        }
    }
    for u in strs(rule, "nonResourceURLs") {
        for v in &verbs {
            out.push(json!({"nonResourceURLs": [u], "verbs": [v]}));
        }
    }
    out
}

/// Whether `owner` covers every rule of `requested`; else the missing atomic rules.
pub fn covers(owner: &[Value], requested: &[Value]) -> (bool, Vec<Value>) {
    let missing: Vec<Value> = requested
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// Upstream `CompactString` over `CompactRules`: simple rules (one group, one
/// resource, no names) merge their verbs.
fn describe_missing(missing: &[Value]) -> Vec<String> {
    let mut merged: Vec<Value> = Vec::new();
    for m in missing {
        let simple = strs(m, "resourceNames").is_empty() && !strs(m, "resources").is_empty();
        let same = merged.iter_mut().find(|x| {
            simple
                && strs(x, "resourceNames").is_empty()
                && strs(x, "apiGroups") == strs(m, "apiGroups")
                && strs(x, "resources") == strs(m, "resources")
        });
        match same {
            Some(x) => {
                let mut verbs = strs(x, "verbs");
                verbs.extend(strs(m, "verbs"));
                x["verbs"] = json!(verbs);
            }
            None => merged.push(m.clone()),
        }
    }
    let set: BTreeSet<String> = merged
        .iter()
        .map(|r| {
            let mut parts = Vec::new();
            for (field, label) in [
                ("apiGroups", "APIGroups"),
                ("resources", "Resources"),
                ("nonResourceURLs", "NonResourceURLs"),
                ("resourceNames", "ResourceNames"),
                ("verbs", "Verbs"),
            ] {
                let v = strs(r, field);
                if !v.is_empty() {
                    parts.push(format!("{label}:{}", go_quoted(&v)));
                }
            }
            format!("{{{}}}", parts.join(", "))
        })
        .collect();
    set.into_iter().collect()
}

/// Upstream `ConfirmNoEscalation`: `Err` with its message.
fn confirm_no_escalation(
    policy: &Policy,
    user: &UserInfo,
    namespace: &str,
    rules: &[Value],
) -> Result<(), String> {
    let (held, errors) = policy.rules_for(user, namespace);
    let (ok, missing) = covers(&held, rules);
    if ok {
        return Ok(());
    }
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted(&user.groups),
        describe_missing(&missing).join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(msg)
}

/// The write a [`Guard`] is prepared for.
pub struct Write<'a> {
    pub entry: &'a Entry,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub subresource: Option<&'a str>,
    pub user: Option<&'a UserInfo>,
}

/// What a write to an RBAC object may contain, worked out before the write.
pub struct Guard {
    user: UserInfo,
    policy: Arc<Policy>,
    resource: String,
    namespace: String,
    /// `escalate` (roles) or `bind` (bindings) is granted.
    authorized: bool,
}

impl Guard {
    /// `None` when the request writes no RBAC object or its user may write anything.
    /// `obj` is the body (create/update); patches pass `None` and the stored
    /// object is read.
    pub async fn prepare(
        authz: &Authorization,
        w: &Write<'_>,
        obj: Option<&Value>,
    ) -> Result<Option<Guard>, ApiError> {
        let def = &w.entry.def;
        if def.group != GROUP || w.subresource.is_some() {
            return Ok(None);
        }
        let user = w.user.cloned().unwrap_or_else(UserInfo::anonymous);
        if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
            return Ok(None);
        }
        let namespace = w.namespace.unwrap_or("").to_owned();
        let stored;
        let obj = match obj {
            Some(o) => o,
            None => {
                stored = w.entry.store.get(w.namespace, w.name, None).await?;
                &stored
            }
        };
        let attrs = match def.resource.as_str() {
            "roles" | "clusterroles" => ResourceAttrs {
                group: GROUP.into(),
                resource: def.resource.clone(),
                namespace: namespace.clone(),
                name: w.name.to_owned(),
                ..Default::default()
            },
            "rolebindings" | "clusterrolebindings" => {
                let kind = obj.pointer("/roleRef/kind").and_then(Value::as_str);
                ResourceAttrs {
                    group: GROUP.into(),
                    resource: if kind == Some("Role") {
                        "roles"
                    } else {
                        "clusterroles"
                    }
                    .into(),
                    namespace: namespace.clone(),
                    name: obj
                        .pointer("/roleRef/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    ..Default::default()
                }
            }
            _ => return Ok(None),
        };
        let verb = if def.resource.ends_with("bindings") {
            "bind"
        } else {
            "escalate"
        };
        let authorized = authz
            .authorize(&Attributes::resource(&user, verb, attrs))
            .await
            .allowed();
        Ok(Some(Guard {
            user,
            policy: authz.rbac().policy(true).await,
            resource: def.resource.clone(),
            namespace,
            authorized,
        }))
    }

    /// Check the object a write would store (`old`: the stored one, on updates).
    pub fn check(&self, new: &Value, old: Option<&Value>) -> Result<(), ApiError> {
        if self.authorized || old.is_some_and(|o| only_gc_fields_differ(o, new)) {
            return Ok(());
        }
        let name = new
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let gr = GroupResource::new(GROUP, &self.resource);
        if self.resource.ends_with("bindings") {
            let kind = new
                .pointer("/roleRef/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role = new
                .pointer("/roleRef/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let rules = self
                .policy
                .role_rules(kind, role, &self.namespace)
                .map_err(|msg| ApiError::new(404, Reason::NotFound, msg))?;
            return confirm_no_escalation(&self.policy, &self.user, &self.namespace, rules)
                .map_err(|msg| ApiError::forbidden(gr, name, msg));
        }
        let rules = new
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        confirm_no_escalation(&self.policy, &self.user, &self.namespace, &rules)
            .map_err(|msg| ApiError::forbidden(gr.clone(), name, msg))?;
        let aggregates = new
            .pointer("/aggregationRule/clusterRoleSelectors")
            .is_some_and(|s| s.as_array().is_some_and(|a| !a.is_empty()));
        if aggregates {
            let full = [
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
            ];
            if confirm_no_escalation(&self.policy, &self.user, &self.namespace, &full).is_err() {
                return Err(ApiError::forbidden(
                    gr,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        Ok(())
    }
}

/// Upstream `IsOnlyMutatingGCFields`.
fn only_gc_fields_differ(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "ownerReferences",
                "finalizers",
                "resourceVersion",
                "managedFields",
            ] {
                m.remove(k);
            }
        }
        v
    };
    strip(old) == strip(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_as_upstream() {
        let owner = vec![
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]}),
            json!({"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}),
        ];
        let ok = [
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "services/status"], "resourceNames": ["a"]}),
            json!({"verbs": ["get"], "nonResourceURLs": ["/logs/x/y"]}),
        ];
        assert!(covers(&owner, &ok).0);
        let (fine, missing) = covers(
            &owner,
            &[json!({"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["secrets"]})],
        );
        assert!(!fine);
        assert_eq!(
            describe_missing(&missing),
            vec![r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}"#]
        );
        let named = vec![
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}),
        ];
        assert!(
            !covers(
                &named,
                &[json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})]
            )
            .0
        );
        let star = vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})];
        assert!(
            !covers(
                &star,
                &[json!({"verbs": ["get"], "nonResourceURLs": ["/x"]})]
            )
            .0
        );
    }
}
