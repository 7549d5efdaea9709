//! Authorization end to end, continued: escalation prevention on RBAC writes,
//! impersonation, the access and token reviews, and service account tokens
//! from TokenRequest (expiry, bound objects, deletion).

use std::time::Duration;

use serde_json::{json, Value};

use crate::auth::{admin_create, binding, call, call_with, role, user};
use crate::harness::{self, TestServer};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

fn cm_rule(verbs: &[&str]) -> Value {
    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}])
}

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

async fn token_for(s: &TestServer, ns: &str, sa: &str, spec: Value) -> (u16, Value) {
    let req =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    call(
        &s.client,
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts/{sa}/token"),
        Some(req),
    )
    .await
}

/// Poll until `token` stops authenticating (the token's checks read the watch cache).
async fn becomes_unauthorized(s: &TestServer, token: &str) -> bool {
    let client = s.client_with_token(token).await;
    for _ in 0..100 {
        if call(&client, "GET", "/version", None).await.0 == 401 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn token_request_flow() {
    let s = harness::start().await;
    s.namespace("apps").await;
    for sa in ["robot", "other"] {
        admin_create(
            &s,
            "/api/v1/namespaces/apps/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}),
        )
        .await;
    }
    admin_create(&s, "/api/v1/namespaces/apps/pods", json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"}, "spec": {"serviceAccountName": "robot", "containers": [{"name": "c", "image": "x"}]}})).await;
    admin_create(
        &s,
        &format!("{RBAC}/namespaces/apps/roles"),
        role("Role", "cm-reader", cm_rule(&["list"])),
    )
    .await;
    admin_create(
        &s,
        &format!("{RBAC}/namespaces/apps/rolebindings"),
        binding(
            "RoleBinding",
            "robot-reads",
            "Role",
            "cm-reader",
            json!([{"kind": "ServiceAccount", "name": "robot"}]),
        ),
    )
    .await;

    let (code, out) = token_for(
        &s,
        "apps",
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}}),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["kind"], "TokenRequest");
    assert_eq!(out["spec"]["expirationSeconds"], 3600);
    assert!(out["status"]["expirationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    let token = out["status"]["token"].as_str().unwrap().to_owned();
    let robot = s.client_with_token(&token).await;
    assert_eq!(
        call(&robot, "GET", "/api/v1/namespaces/apps/configmaps", None)
            .await
            .0,
        200
    );
    assert_eq!(
        call(&robot, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .0,
        403
    );
    let (_, me) = call(
        &robot,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    let info = &me["status"]["userInfo"];
    assert_eq!(info["username"], "system:serviceaccount:apps:robot");
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:apps",
            "system:authenticated"
        ])
    );
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["p"])
    );

    // TokenReview: valid for the API audience, not for another.
    let review = |aud: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": aud}})
    };
    let tr = "/apis/authentication.k8s.io/v1/tokenreviews";
    let (_, out) = call(&s.client, "POST", tr, Some(review(json!([])))).await;
    assert_eq!(out["status"]["authenticated"], true, "{out}");
    assert_eq!(
        out["status"]["user"]["username"],
        "system:serviceaccount:apps:robot"
    );
    let (_, out) = call(&s.client, "POST", tr, Some(review(json!(["vault"])))).await;
    assert_eq!(out["status"]["authenticated"], false);
    let (code, out) = token_for(&s, "apps", "robot", json!({"audiences": ["vault"]})).await;
    assert_eq!(code, 201, "{out}");
    let vault_token = out["status"]["token"].as_str().unwrap();
    let (_, out) = call(
        &s.client,
        "POST",
        tr,
        Some(json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview", "spec": {"token": vault_token, "audiences": ["vault"]}})),
    )
    .await;
    assert_eq!(
        (
            out["status"]["authenticated"].clone(),
            out["status"]["audiences"].clone()
        ),
        (json!(true), json!(["vault"]))
    );
    let vault = s.client_with_token(vault_token).await;
    assert_eq!(
        call(&vault, "GET", "/version", None).await.0,
        401,
        "not for the API audience"
    );

    // A node-bound token names its node.
    admin_create(
        &s,
        "/api/v1/nodes",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    )
    .await;
    let (code, out) = token_for(
        &s,
        "apps",
        "robot",
        json!({"boundObjectRef": {"kind": "Node", "apiVersion": "v1", "name": "n1"}}),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    let node_token = out["status"]["token"].as_str().unwrap().to_owned();
    let (_, out) = call(
        &s.client,
        "POST",
        tr,
        Some(json!({"apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview", "spec": {"token": node_token}})),
    )
    .await;
    assert_eq!(
        out["status"]["user"]["extra"]["authentication.kubernetes.io/node-name"],
        json!(["n1"])
    );
    assert_eq!(
        call(&s.client, "DELETE", "/api/v1/nodes/n1", None).await.0,
        200
    );
    assert!(
        becomes_unauthorized(&s, &node_token).await,
        "node-bound token survives its node"
    );
    assert_eq!(
        token_for(
            &s,
            "apps",
            "robot",
            json!({"boundObjectRef": {"kind": "Service", "apiVersion": "v1", "name": "x"}})
        )
        .await
        .0,
        400
    );

    // Bad requests.
    assert_eq!(
        token_for(&s, "apps", "robot", json!({"expirationSeconds": 599}))
            .await
            .0,
        422
    );
    assert_eq!(token_for(&s, "apps", "ghost", json!({})).await.0, 404);
    assert_eq!(
        token_for(
            &s,
            "apps",
            "robot",
            json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "missing"}})
        )
        .await
        .0,
        404
    );
    assert_eq!(
        token_for(
            &s,
            "apps",
            "other",
            json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}})
        )
        .await
        .0,
        400
    );
    assert_eq!(token_for(&s, "apps", "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "wrong"}})).await.0, 409);

    // An expired token with real subjects is refused.
    let (_, sa) = call(
        &s.client,
        "GET",
        "/api/v1/namespaces/apps/serviceaccounts/robot",
        None,
    )
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let iss = kapi_auth::authn::serviceaccount::DEFAULT_ISSUER;
    let expired = s.server.service_accounts.sign_claims(&json!({"iss": iss, "aud": [iss],
        "exp": now - 120, "nbf": now - 4000, "iat": now - 4000, "sub": "system:serviceaccount:apps:robot",
        "kubernetes.io": {"namespace": "apps", "serviceaccount": {"name": "robot", "uid": sa["metadata"]["uid"]}}}));
    assert_eq!(
        call(
            &s.client_with_token(&expired).await,
            "GET",
            "/version",
            None
        )
        .await
        .0,
        401
    );

    // Deleting the bound pod, then the account, ends the tokens.
    let (code, out) = token_for(&s, "apps", "robot", json!({})).await;
    assert_eq!(code, 201, "{out}");
    let unbound = out["status"]["token"].as_str().unwrap().to_owned();
    assert_eq!(
        call(&s.client, "DELETE", "/api/v1/namespaces/apps/pods/p", None)
            .await
            .0,
        200
    );
    assert!(
        becomes_unauthorized(&s, &token).await,
        "pod-bound token survives its pod"
    );
    let still = s.client_with_token(&unbound).await;
    assert_eq!(call(&still, "GET", "/version", None).await.0, 200);
    assert_eq!(
        call(
            &s.client,
            "DELETE",
            "/api/v1/namespaces/apps/serviceaccounts/robot",
            None
        )
        .await
        .0,
        200
    );
    admin_create(
        &s,
        "/api/v1/namespaces/apps/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    assert!(
        becomes_unauthorized(&s, &unbound).await,
        "token survives its account's re-creation"
    );
}
