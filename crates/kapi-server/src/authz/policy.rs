//! The bootstrap RBAC policy kube-apiserver keeps at start (upstream
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`): the
//! user-facing roles `cluster-admin`, `admin` / `edit` / `view` (empty shells
//! filled by aggregation from `system:aggregate-to-*`), the discovery, basic
//! user, public info and monitoring roles, a few component roles, and their
//! ClusterRoleBindings.
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

use crate::Server;

const GROUP: &str = "rbac.authorization.k8s.io";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

fn named(verbs: &[&str], group: &str, resources: &[&str], names: &[&str]) -> Value {
    let mut r = rule(verbs, group, resources);
    r["resourceNames"] = json!(names);
    r
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}

fn meta(name: &str, labels: &[(&str, &str)]) -> Value {
    let mut l = serde_json::Map::new();
    l.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    for (k, v) in labels {
        l.insert((*k).into(), (*v).into());
    }
    json!({"name": name, "labels": l, "annotations": {AUTOUPDATE: "true"}})
}

fn role(name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": meta(name, &[]), "rules": rules})
}

fn labelled_role(name: &str, label: &str, rules: Vec<Value>) -> Value {
    let mut r = role(name, rules);
    r["metadata"] = meta(name, &[(label, "true")]);
    r
}

fn aggregated(name: &str, selector: &str, label: Option<&str>) -> Value {
    let labels: Vec<(&str, &str)> = label.map(|l| (l, "true")).into_iter().collect();
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": meta(name, &labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selector: "true"}}]},
        "rules": []})
}

const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

fn edit_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], "", &["serviceaccounts"]),
        rule(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        rule(&["create"], "", &["pods/eviction"]),
        rule(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
            ],
        ),
        rule(&["create"], "", &["serviceaccounts/token"]),
        rule(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        rule(WRITE, "batch", &["jobs", "cronjobs"]),
        rule(
            WRITE,
            "extensions",
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(WRITE, "policy", &["poddisruptionbudgets"]),
        rule(
            WRITE,
            "networking.k8s.io",
            &["networkpolicies", "ingresses"],
        ),
        rule(WRITE, "coordination.k8s.io", &["leases"]),
    ]
}

fn view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, "", &["namespaces"]),
        rule(READ, "discovery.k8s.io", &["endpointslices"]),
        rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        rule(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            "batch",
            &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
        ),
        rule(
            READ,
            "extensions",
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        rule(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ]
}

const HEALTH: &[&str] = &["/livez", "/readyz", "/healthz", "/version", "/version/"];

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let discovery: Vec<&str> = HEALTH
        .iter()
        .copied()
        .chain([
            "/openapi",
            "/openapi/*",
            "/api",
            "/api/*",
            "/apis",
            "/apis/*",
        ])
        .collect();
    let review = |g: &str, r: &[&str]| rule(&["create"], g, r);
    vec![
        role(
            "cluster-admin",
            vec![rule(&["*"], "*", &["*"]), urls(&["*"], &["*"])],
        ),
        role("system:discovery", vec![urls(&["get"], &discovery)]),
        role(
            "system:monitoring",
            vec![urls(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        role(
            "system:basic-user",
            vec![
                review(
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                review("authentication.k8s.io", &["selfsubjectreviews"]),
            ],
        ),
        role("system:public-info-viewer", vec![urls(&["get"], HEALTH)]),
        aggregated("admin", TO_ADMIN, None),
        aggregated("edit", TO_EDIT, Some(TO_ADMIN)),
        aggregated("view", TO_VIEW, Some(TO_EDIT)),
        labelled_role(
            "system:aggregate-to-admin",
            TO_ADMIN,
            vec![
                review("authorization.k8s.io", &["localsubjectaccessreviews"]),
                rule(READ_WRITE, GROUP, &["roles", "rolebindings"]),
            ],
        ),
        labelled_role("system:aggregate-to-edit", TO_EDIT, edit_rules()),
        labelled_role("system:aggregate-to-view", TO_VIEW, view_rules()),
        role(
            "system:auth-delegator",
            vec![
                review("authentication.k8s.io", &["tokenreviews"]),
                review("authorization.k8s.io", &["subjectaccessreviews"]),
            ],
        ),
        role(
            "system:service-account-issuer-discovery",
            vec![urls(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        role(
            "system:kube-controller-manager",
            vec![
                rule(&["create", "patch", "update"], "", &["events"]),
                rule(&["create", "patch", "update"], "events.k8s.io", &["events"]),
                rule(&["create"], "coordination.k8s.io", &["leases"]),
                named(
                    &["get", "update"],
                    "coordination.k8s.io",
                    &["leases"],
                    &["kube-controller-manager"],
                ),
                rule(&["create"], "", &["secrets", "serviceaccounts"]),
                rule(&["delete"], "", &["secrets"]),
                rule(
                    &["get"],
                    "",
                    &["namespaces", "secrets", "serviceaccounts", "configmaps"],
                ),
                rule(&["update"], "", &["secrets", "serviceaccounts"]),
                review("authentication.k8s.io", &["tokenreviews"]),
                review("authorization.k8s.io", &["subjectaccessreviews"]),
                rule(&["list", "watch"], "*", &["*"]),
                rule(&["create"], "", &["serviceaccounts/token"]),
            ],
        ),
    ]
}

fn subject(kind: &str, name: &str) -> Value {
    json!({"kind": kind, "apiGroup": GROUP, "name": name})
}

fn cluster_binding(name: &str, subjects: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": meta(name, &[]),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": subjects})
}

/// The bootstrap ClusterRoleBindings (each named after its ClusterRole).
pub fn cluster_role_bindings() -> Vec<Value> {
    let group = |n: &str| subject("Group", n);
    vec![
        cluster_binding("cluster-admin", vec![group("system:masters")]),
        cluster_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_binding("system:discovery", vec![group("system:authenticated")]),
        cluster_binding("system:basic-user", vec![group("system:authenticated")]),
        cluster_binding(
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        cluster_binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
        cluster_binding(
            "system:kube-controller-manager",
            vec![subject("User", "system:kube-controller-manager")],
        ),
    ]
}

/// Create or reconcile every bootstrap object.
pub async fn ensure(srv: &Server) -> Result<(), ApiError> {
    let (Some(roles), Some(bindings)) = (
        srv.apis.lookup(GROUP, "v1", "clusterroles"),
        srv.apis.lookup(GROUP, "v1", "clusterrolebindings"),
    ) else {
        return Ok(());
    };
    for (entry, objs) in [
        (&roles, cluster_roles()),
        (&bindings, cluster_role_bindings()),
    ] {
        for want in objs {
            reconcile(entry, want).await?;
        }
    }
    Ok(())
}

async fn reconcile(entry: &crate::apis::Entry, want: Value) -> Result<(), ApiError> {
    let name = want["metadata"]["name"].as_str().unwrap_or("").to_owned();
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
        .update_with(None, &name, UpdateTarget::Main, &opts, false, |cur| {
            let cur = cur.cloned().unwrap_or_default();
            Ok(merged(cur, &want))
        })
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
}
