//! ABAC policies as upstream's tests and documentation describe them.

use super::*;
use crate::authz::ResourceAttrs;
use kapi_http::user::UserDetails;

const FILE: &str = r#"
# Comments and blank lines are skipped.
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "alice", "namespace": "*", "resource": "*", "apiGroup": "*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "bob", "namespace": "projectCaribou", "resource": "pods", "apiGroup": "", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group": "system:authenticated", "readonly": true, "nonResourcePath": "/api*"}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user": "*", "readonly": true, "nonResourcePath": "/version"}}
{"user": "legacy"}
"#;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo::from(UserDetails {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    })
}

fn res(u: &UserInfo, verb: &str, group: &str, resource: &str, ns: &str) -> Attributes {
    Attributes::resource(
        u,
        verb,
        ResourceAttrs {
            group: group.into(),
            resource: resource.into(),
            namespace: ns.into(),
            ..Default::default()
        },
    )
}

fn path(u: &UserInfo, verb: &str, p: &str) -> Attributes {
    Attributes {
        user: u.clone(),
        verb: verb.into(),
        resource: None,
        path: Some(p.into()),
    }
}

async fn allowed(abac: &Abac, a: &Attributes) -> bool {
    abac.authorize(a).await.allowed()
}

#[tokio::test]
async fn policies_match_subject_verb_and_resource_or_path() {
    let abac = Abac::parse(FILE).unwrap();
    let alice = user("alice", &["system:authenticated"]);
    let bob = user("bob", &["system:authenticated"]);
    let carol = user("carol", &["system:authenticated"]);
    assert!(allowed(&abac, &res(&alice, "delete", "apps", "deployments", "x")).await);
    assert!(allowed(&abac, &res(&bob, "list", "", "pods", "projectCaribou")).await);
    assert!(!allowed(&abac, &res(&bob, "create", "", "pods", "projectCaribou")).await);
    assert!(!allowed(&abac, &res(&bob, "get", "", "pods", "other")).await);
    assert!(!allowed(&abac, &res(&bob, "get", "", "secrets", "projectCaribou")).await);
    // The non-resource policies: a prefix, an exact path; read-only.
    assert!(allowed(&abac, &path(&carol, "get", "/apis/apps")).await);
    assert!(allowed(&abac, &path(&carol, "get", "/version")).await);
    assert!(!allowed(&abac, &path(&carol, "post", "/version")).await);
    assert!(!allowed(&abac, &path(&carol, "get", "/metrics")).await);
    let d = abac.authorize(&res(&carol, "get", "", "pods", "x")).await;
    assert_eq!(d.reason, "No policy matched.");
    // v0: a user with everything else empty may do anything anywhere.
    let legacy = user("legacy", &[]);
    assert!(allowed(&abac, &res(&legacy, "create", "batch", "jobs", "y")).await);
    assert!(allowed(&abac, &path(&legacy, "put", "/anything")).await);
}

#[tokio::test]
async fn rules_list_what_matching_policies_grant() {
    let abac = Abac::parse(FILE).unwrap();
    let bob = user("bob", &["system:authenticated"]);
    let rules = abac.rules_for(&bob, "projectCaribou").await;
    assert_eq!(
        rules.resource_rules,
        vec![json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]})]
    );
    // As upstream, a policy's namespace applies to its non-resource path
    // too: policies without one list their paths for the namespace "" only.
    assert!(rules.non_resource_rules.is_empty());
    let cluster = abac.rules_for(&bob, "").await;
    assert!(cluster.resource_rules.is_empty());
    assert_eq!(
        cluster.non_resource_rules,
        vec![
            json!({"verbs": ["get", "list", "watch"], "nonResourceURLs": ["/api*"]}),
            json!({"verbs": ["get", "list", "watch"], "nonResourceURLs": ["/version"]}),
        ]
    );
    assert!(abac
        .rules_for(&bob, "other")
        .await
        .resource_rules
        .is_empty());
}

#[test]
fn bad_lines_are_named() {
    let err = Abac::parse("\n{\"apiVersion\": \"abac.authorization.kubernetes.io/v1\", \"kind\": \"Policy\", \"spec\": {}}\n")
        .unwrap_err();
    assert_eq!(err.0, 2);
    assert!(
        err.2.contains("no kind \"Policy\" is registered"),
        "{err:?}"
    );
    let err = Abac::parse("{not json").unwrap_err();
    assert_eq!(err.0, 1);
}
