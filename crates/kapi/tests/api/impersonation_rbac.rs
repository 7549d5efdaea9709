//! Impersonation end to end: `kubectl --as`/`--as-group` headers honoured for
//! users who may `impersonate`, refused with upstream's 403 for others.

use serde_json::json;

use crate::authorization::{admin_create, binding, call_with, role, user, RBAC};
use crate::harness;

#[tokio::test]
async fn impersonation_allowed_and_denied() {
    let s = harness::start().await;
    let alice = s.client_with_token("alice-token").await;
    let whoami = |client: kube::Client, headers: Vec<(&'static str, &'static str)>| async move {
        call_with(
            &client,
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
            &headers,
        )
        .await
    };
    let (code, out) = whoami(alice.clone(), vec![("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403);
    assert_eq!(
        out["message"],
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    admin_create(&s, &format!("{RBAC}/clusterroles"), role("ClusterRole", "impersonator", json!([
        {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]},
        {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"], "resourceNames": ["ops"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}]))).await;
    admin_create(
        &s,
        &format!("{RBAC}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            "alice-impersonates",
            "ClusterRole",
            "impersonator",
            json!([user("alice")]),
        ),
    )
    .await;
    let (code, out) = whoami(alice.clone(), vec![("Impersonate-User", "bob")]).await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(
        out["status"]["userInfo"],
        json!({"username": "bob", "groups": ["system:authenticated"]})
    );
    let (code, out) = whoami(
        alice.clone(),
        vec![("Impersonate-User", "bob"), ("Impersonate-Group", "ops")],
    )
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(
        out["status"]["userInfo"]["groups"],
        json!(["ops", "system:authenticated"])
    );
    let (code, _) = whoami(
        alice.clone(),
        vec![
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
    )
    .await;
    assert_eq!(code, 403);
    let (code, _) = whoami(alice.clone(), vec![("Impersonate-User", "carol")]).await;
    assert_eq!(code, 403);
    let (code, _) = whoami(
        alice.clone(),
        vec![("Impersonate-Uid", "u1"), ("Impersonate-User", "bob")],
    )
    .await;
    assert_eq!(code, 403, "uids need their own grant");
    let (code, out) = whoami(
        alice.clone(),
        vec![("Impersonate-User", "system:serviceaccount:default:robot")],
    )
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(
        out["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let (code, _) = whoami(alice.clone(), vec![("Impersonate-Group", "ops")]).await;
    assert_eq!(code, 500, "groups without a user");
    // The admin impersonating bob has bob's rights, not its own.
    let (code, out) = call_with(
        &s.client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        &[("Impersonate-User", "bob")],
    )
    .await;
    assert_eq!(code, 403, "{out}");
    assert!(out["message"]
        .as_str()
        .unwrap()
        .contains(r#"User "bob" cannot list"#));
}
