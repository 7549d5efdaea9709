//! The bootstrap RBAC policy kube-apiserver keeps at start (upstream
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/`): the ClusterRoles and
//! ClusterRoleBindings of `policy.go` (`roles.rs`), the controller roles of
//! `controller_policy.go` (`controller_roles.rs`), and the Roles and
//! RoleBindings of `kube-system` / `kube-public` (`namespace_policy.go`).
//!
//! Reconciliation as upstream's `reconciliation.ReconcileRole`, non-tightening:
//! a missing object is created; an existing one whose
//! `rbac.authorization.kubernetes.io/autoupdate` annotation is not `"false"`
//! gets the labels, annotations, rules (not already covered), aggregation
//! selectors and subjects it lacks — nothing the user added is removed; one
//! annotated `"false"` is left exactly as it is.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};

use super::roles::{AUTOUPDATE, GROUP};
use kapi_registry::apis::Apis;

/// Every bootstrap ClusterRole.
pub fn cluster_roles() -> Vec<Value> {
    let mut all = super::roles::cluster_roles();
    all.extend(super::controller_roles::roles());
    all
}

/// Every bootstrap ClusterRoleBinding.
pub fn cluster_role_bindings() -> Vec<Value> {
    let mut all = super::roles::cluster_role_bindings();
    all.extend(super::controller_roles::bindings());
    all
}

/// Create or reconcile every bootstrap object.
pub async fn ensure(apis: &Apis) -> Result<(), ApiError> {
    let lookup = |r: &str| apis.lookup(GROUP, "v1", r);
    let (Some(roles), Some(bindings), Some(ns_roles), Some(ns_bindings)) = (
        lookup("clusterroles"),
        lookup("clusterrolebindings"),
        lookup("roles"),
        lookup("rolebindings"),
    ) else {
        return Ok(());
    };
    for (entry, objs) in [
        (&roles, cluster_roles()),
        (&bindings, cluster_role_bindings()),
        (&ns_roles, super::roles::namespaced_roles()),
        (&ns_bindings, super::roles::namespaced_role_bindings()),
    ] {
        for want in objs {
            reconcile(entry, want).await?;
        }
    }
    Ok(())
}

async fn reconcile(entry: &kapi_registry::apis::Entry, want: Value) -> Result<(), ApiError> {
    let name = want["metadata"]["name"].as_str().unwrap_or("").to_owned();
    let namespace = want["metadata"]["namespace"].as_str().map(str::to_owned);
    let opts = WriteOptions {
        field_manager: Some("kube-apiserver".into()),
        ..WriteOptions::default()
    };
    match entry.store.create(want.clone(), &opts).await {
        Ok(_) => return Ok(()),
        Err(e) if e.is_already_exists() => {}
        Err(e) => return Err(e),
    }
    let result = entry
        .store
        .update_with(
            namespace.as_deref(),
            &name,
            UpdateTarget::Main,
            &opts,
            false,
            |cur| {
                let cur = cur.cloned().unwrap_or_default();
                Ok(merged(cur, &want))
            },
        )
        .await;
    if let Err(e) = result {
        tracing::warn!(%name, error = %e, "bootstrap RBAC object not reconciled");
    }
    Ok(())
}

/// `cur` with what `want` adds, unless `cur` opted out of updates.
fn merged(mut cur: Value, want: &Value) -> Value {
    if cur.pointer(&format!(
        "/metadata/annotations/{}",
        AUTOUPDATE.replace('/', "~1")
    )) == Some(&json!("false"))
    {
        return cur;
    }
    for field in ["labels", "annotations"] {
        if let Some(map) = want["metadata"][field].as_object() {
            let target = &mut cur["metadata"][field];
            if !target.is_object() {
                *target = json!({});
            }
            for (k, v) in map {
                target
                    .as_object_mut()
                    .expect("object")
                    .entry(k.clone())
                    .or_insert(v.clone());
            }
        }
    }
    if let Some(sel) = want.pointer("/aggregationRule/clusterRoleSelectors") {
        let have = cur["aggregationRule"]["clusterRoleSelectors"]
            .as_array()
            .cloned();
        let mut all = have.unwrap_or_default();
        for s in sel.as_array().into_iter().flatten() {
            if !all.contains(s) {
                all.push(s.clone());
            }
        }
        cur["aggregationRule"] = json!({"clusterRoleSelectors": all});
    } else if let Some(rules) = want.get("rules").and_then(Value::as_array) {
        let mut have = cur["rules"].as_array().cloned().unwrap_or_default();
        for r in rules {
            if !super::escalation::covers(&have, std::slice::from_ref(r)).0 {
                have.push(r.clone());
            }
        }
        cur["rules"] = json!(have);
    }
    if let Some(subjects) = want.get("subjects").and_then(Value::as_array) {
        let mut have = cur["subjects"].as_array().cloned().unwrap_or_default();
        for s in subjects {
            if !have
                .iter()
                .any(|h| h["kind"] == s["kind"] && h["name"] == s["name"])
            {
                have.push(s.clone());
            }
        }
        cur["subjects"] = json!(have);
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_adds_but_never_removes_and_respects_opt_out() {
        let want = cluster_roles()
            .into_iter()
            .find(|r| r["metadata"]["name"] == "system:discovery")
            .unwrap();
        let user_edit = json!({"metadata": {"name": "system:discovery", "labels": {"mine": "x"}},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/custom"]}]});
        let out = merged(user_edit.clone(), &want);
        let rules = out["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["nonResourceURLs"], json!(["/custom"]));
        assert_eq!(out["metadata"]["labels"]["mine"], "x");
        assert_eq!(out["metadata"]["annotations"][AUTOUPDATE], "true");
        // Reconciling again changes nothing.
        assert_eq!(merged(out.clone(), &want), out);
        let mut frozen = user_edit;
        frozen["metadata"]["annotations"] = json!({AUTOUPDATE: "false"});
        assert_eq!(merged(frozen.clone(), &want), frozen);
    }

    /// Upstream's rule builder sorts every list of a rule.
    #[test]
    fn every_rule_lists_its_members_sorted() {
        let mut all = cluster_roles();
        all.extend(super::super::controller_roles::roles());
        for role in all.iter().filter(|r| r.get("rules").is_some()) {
            for rule in role["rules"].as_array().unwrap() {
                for key in [
                    "verbs",
                    "apiGroups",
                    "resources",
                    "resourceNames",
                    "nonResourceURLs",
                ] {
                    let Some(list) = rule.get(key).and_then(Value::as_array) else {
                        continue;
                    };
                    let mut sorted = list.clone();
                    sorted.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                    assert_eq!(list, &sorted, "{} {key}", role["metadata"]["name"]);
                }
            }
        }
    }
}
