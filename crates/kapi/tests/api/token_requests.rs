//! Service account tokens from TokenRequest end to end: expiry, audiences,
//! tokens bound to pods and secrets, and refusal once what they are bound to
//! is deleted.

use std::time::Duration;

use serde_json::{json, Value};

use crate::authorization::{admin_create, binding, call, cm_rule, role, RBAC};
use crate::harness::{self, TestServer};

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
        "kubernetes.io": {"namespace": "apps", "serviceaccount": {"name": "robot", "uid": sa["metadata"]["uid"]}}}))
        .await
        .unwrap();
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
