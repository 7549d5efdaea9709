//! SubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview
//! answered from RBAC end to end, as `kubectl auth can-i [--list]` asks them.

use serde_json::json;

use crate::authorization::{admin_create, binding, call, cm_rule, role, user, RBAC};
use crate::harness;

#[tokio::test]
async fn access_reviews_answer_from_rbac() {
    let s = harness::start().await;
    s.namespace("ns-a").await;
    admin_create(
        &s,
        &format!("{RBAC}/namespaces/ns-a/roles"),
        role("Role", "cm-reader", cm_rule(&["get", "list"])),
    )
    .await;
    admin_create(
        &s,
        &format!("{RBAC}/namespaces/ns-a/rolebindings"),
        binding(
            "RoleBinding",
            "alice-reads",
            "Role",
            "cm-reader",
            json!([user("alice")]),
        ),
    )
    .await;
    let sar = |ns: &str, verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "resourceAttributes": {"namespace": ns, "verb": verb, "resource": "configmaps"}}})
    };
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let (_, out) = call(&s.client, "POST", path, Some(sar("ns-a", "list"))).await;
    assert_eq!(
        out["status"],
        json!({"allowed": true,
        "reason": r#"RBAC: allowed by RoleBinding "alice-reads/ns-a" of Role "cm-reader" to User "alice""#})
    );
    let (_, out) = call(&s.client, "POST", path, Some(sar("ns-b", "list"))).await;
    assert_eq!(out["status"], json!({"allowed": false}));
    let (_, out) = call(&s.client, "POST", path, Some(sar("ns-a", "delete"))).await;
    assert_eq!(out["status"]["allowed"], false);
    // Only those granted may ask about others.
    let alice = s.client_with_token("alice-token").await;
    assert_eq!(
        call(&alice, "POST", path, Some(sar("ns-a", "list")))
            .await
            .0,
        403
    );
    // Self reviews are open to every authenticated user (system:basic-user).
    let ssar = |verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "ns-a", "verb": verb, "resource": "configmaps"}}})
    };
    let spath = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    assert_eq!(
        call(&alice, "POST", spath, Some(ssar("get"))).await.1["status"]["allowed"],
        true
    );
    assert_eq!(
        call(&alice, "POST", spath, Some(ssar("create"))).await.1["status"]["allowed"],
        false
    );
    let (_, out) = call(&s.client, "POST", spath, Some(ssar("create"))).await;
    assert_eq!(
        out["status"]["allowed"], true,
        "system:masters may do anything"
    );
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "ns-a"}});
    let (code, out) = call(
        &alice,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(rules),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let rr = out["status"]["resourceRules"].as_array().unwrap();
    assert!(
        rr.contains(
            &json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]})
        ),
        "{rr:?}"
    );
    assert!(rr
        .iter()
        .any(|r| r["resources"] == json!(["selfsubjectaccessreviews", "selfsubjectrulesreviews"])));
    let nr = out["status"]["nonResourceRules"].as_array().unwrap();
    assert!(nr.iter().any(|r| r["nonResourceURLs"]
        .as_array()
        .unwrap()
        .contains(&json!("/apis/*"))));
    assert_eq!(out["status"]["incomplete"], false);
    // Local reviews answer for their own namespace.
    let local = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "metadata": {"namespace": "ns-a"},
        "spec": {"user": "alice", "resourceAttributes": {"namespace": "ns-a", "verb": "get", "resource": "configmaps"}}});
    let (_, out) = call(
        &s.client,
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/ns-a/localsubjectaccessreviews",
        Some(local),
    )
    .await;
    assert_eq!(out["status"]["allowed"], true);
}
