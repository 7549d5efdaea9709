//! RBAC escalation prevention end to end: a user may create or change roles
//! and bindings only with the permissions they grant, unless they may
//! `escalate` / `bind` (upstream's RBAC REST storage).

use serde_json::json;

use crate::authorization::{admin_create, binding, call, call_with, cm_rule, role, user, RBAC};
use crate::harness;

#[tokio::test]
async fn escalation_is_prevented() {
    let s = harness::start().await;
    s.namespace("team").await;
    let ns = format!("{RBAC}/namespaces/team");
    // alice manages roles and bindings in `team` and reads configmaps there
    // (explicit verbs: `*` would include `escalate` and `bind`).
    admin_create(
        &s,
        &format!("{ns}/roles"),
        role(
            "Role",
            "manager",
            json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        ),
    )
    .await;
    admin_create(
        &s,
        &format!("{ns}/rolebindings"),
        binding(
            "RoleBinding",
            "alice-manages",
            "Role",
            "manager",
            json!([user("alice")]),
        ),
    )
    .await;
    let alice = s.client_with_token("alice-token").await;

    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/roles"),
        Some(role("Role", "reader", cm_rule(&["get"]))),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/roles"),
        Some(role(
            "Role",
            "secrets",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]),
        )),
    )
    .await;
    assert_eq!(code, 403, "{out}");
    assert_eq!(
        out["message"],
        "roles.rbac.authorization.k8s.io \"secrets\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
    );
    // Updating a role to more than she holds: refused, through PUT and PATCH.
    let mut more = role("Role", "reader", cm_rule(&["get", "delete"]));
    more["metadata"]["namespace"] = "team".into();
    let (code, out) = call(&alice, "PUT", &format!("{ns}/roles/reader"), Some(more)).await;
    assert_eq!(code, 403, "{out}");
    let (code, _) = call_with(
        &alice,
        "PATCH",
        &format!("{ns}/roles/reader"),
        Some(json!({"rules": cm_rule(&["get", "delete"])})),
        &[("content-type", "application/merge-patch+json")],
    )
    .await;
    assert_eq!(code, 403);
    let (code, _) = call_with(
        &alice,
        "PATCH",
        &format!("{ns}/roles/reader"),
        Some(json!({"metadata": {"labels": {"a": "b"}}})),
        &[("content-type", "application/merge-patch+json")],
    )
    .await;
    assert_eq!(code, 200);
    // Binding what she holds is fine; binding cluster-admin is not.
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/rolebindings"),
        Some(binding(
            "RoleBinding",
            "bob-reads",
            "Role",
            "reader",
            json!([user("bob")]),
        )),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/rolebindings"),
        Some(binding(
            "RoleBinding",
            "me-admin",
            "ClusterRole",
            "cluster-admin",
            json!([user("alice")]),
        )),
    )
    .await;
    assert_eq!(code, 403, "{out}");
    assert!(
        out["message"].as_str().unwrap().starts_with(
            "rolebindings.rbac.authorization.k8s.io \"me-admin\" is forbidden: user \"alice\""
        ),
        "{out}"
    );
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/rolebindings"),
        Some(binding(
            "RoleBinding",
            "dangling",
            "ClusterRole",
            "nope",
            json!([user("bob")]),
        )),
    )
    .await;
    assert_eq!(code, 404, "{out}");
    // ClusterRoles are out of her reach entirely.
    let (code, _) = call(
        &alice,
        "POST",
        &format!("{RBAC}/clusterroles"),
        Some(role("ClusterRole", "x", cm_rule(&["get"]))),
    )
    .await;
    assert_eq!(code, 403);

    // `bind` on a named ClusterRole and `escalate` on roles lift the checks.
    admin_create(&s, &format!("{ns}/roles"), role("Role", "lifts", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["edit"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]))).await;
    admin_create(
        &s,
        &format!("{ns}/rolebindings"),
        binding(
            "RoleBinding",
            "alice-lifts",
            "Role",
            "lifts",
            json!([user("alice")]),
        ),
    )
    .await;
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/rolebindings"),
        Some(binding(
            "RoleBinding",
            "bob-edits",
            "ClusterRole",
            "edit",
            json!([user("bob")]),
        )),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let (code, _) = call(
        &alice,
        "POST",
        &format!("{ns}/rolebindings"),
        Some(binding(
            "RoleBinding",
            "bob-admin",
            "ClusterRole",
            "admin",
            json!([user("bob")]),
        )),
    )
    .await;
    assert_eq!(code, 403);
    let (code, out) = call(
        &alice,
        "POST",
        &format!("{ns}/roles"),
        Some(role(
            "Role",
            "secrets",
            json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
        )),
    )
    .await;
    assert_eq!(code, 201, "{out}");
}
