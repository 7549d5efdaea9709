//! Authorization end to end: clients with other identities (static tokens from
//! `harness::TOKENS`, anonymous) against RBAC objects the admin creates — the
//! matrix of users × verbs × resources × namespaces × subresources, upstream's
//! 403 messages, anonymous access, escalation prevention and the access reviews.

use kube::Client;
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

/// Send `method path` (JSON body) as `client`; the status code and JSON body.
pub async fn call(client: &Client, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    call_with(client, method, path, body, &[]).await
}

pub async fn call_with(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    let mut req = http::Request::builder().method(method).uri(path);
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        req = req.header("content-type", "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let resp = client
        .send(req.body(body).unwrap().map(kube::client::Body::from))
        .await
        .expect("transport");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Create `obj` at `path` as the admin, expecting 201.
pub async fn admin_create(s: &TestServer, path: &str, obj: Value) {
    let (code, out) = call(&s.client, "POST", path, Some(obj)).await;
    assert_eq!(code, 201, "{path}: {out}");
}

pub fn role(kind: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "rules": rules})
}

pub fn binding(kind: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects})
}

pub fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

pub const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// A rule on configmaps with `verbs`.
pub fn cm_rule(verbs: &[&str]) -> Value {
    json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}])
}

/// The policy of the matrix: alice reads configmaps in `ns-a`; group `ops`
/// (carol) reads pods/status everywhere; bob may get configmap `c1` in `ns-b`
/// only; dave may get any `*/scale` of apps in `ns-b`.
async fn matrix_policy(s: &TestServer) {
    for ns in ["ns-a", "ns-b"] {
        s.namespace(ns).await;
        for cm in ["c1", "c2"] {
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm}});
            admin_create(s, &format!("/api/v1/namespaces/{ns}/configmaps"), obj).await;
        }
    }
    let a = format!("{RBAC}/namespaces/ns-a");
    let b = format!("{RBAC}/namespaces/ns-b");
    admin_create(s, &format!("{a}/roles"), role("Role", "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
               {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}]))).await;
    admin_create(
        s,
        &format!("{a}/rolebindings"),
        binding(
            "RoleBinding",
            "alice-reads",
            "Role",
            "cm-reader",
            json!([user("alice")]),
        ),
    )
    .await;
    admin_create(
        s,
        &format!("{RBAC}/clusterroles"),
        role(
            "ClusterRole",
            "pod-status",
            json!([{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}]),
        ),
    )
    .await;
    admin_create(
        s,
        &format!("{RBAC}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            "ops-status",
            "ClusterRole",
            "pod-status",
            json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops"}]),
        ),
    )
    .await;
    admin_create(s, &format!("{b}/roles"), role("Role", "one-cm",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"], "resourceNames": ["c1"]}]))).await;
    admin_create(
        s,
        &format!("{b}/rolebindings"),
        binding(
            "RoleBinding",
            "bob-one",
            "Role",
            "one-cm",
            json!([user("bob")]),
        ),
    )
    .await;
    admin_create(
        s,
        &format!("{RBAC}/clusterroles"),
        role(
            "ClusterRole",
            "scaler",
            json!([{"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]}]),
        ),
    )
    .await;
    admin_create(
        s,
        &format!("{b}/rolebindings"),
        binding(
            "RoleBinding",
            "dave-scales",
            "ClusterRole",
            "scaler",
            json!([user("dave")]),
        ),
    )
    .await;
}

#[tokio::test]
async fn rbac_matrix() {
    let s = harness::start().await;
    matrix_policy(&s).await;
    let cm = |ns: &str, rest: &str| format!("/api/v1/namespaces/{ns}/configmaps{rest}");
    let deploy = |ns: &str, rest: &str| format!("/apis/apps/v1/namespaces/{ns}/deployments{rest}");
    let pod = |ns: &str, rest: &str| format!("/api/v1/namespaces/{ns}/pods{rest}");
    let new_cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}});
    // (user, method, path, body, expected status): 403 = refused by RBAC;
    // anything else means the request got past authorization.
    let cases: Vec<(&str, &str, String, Option<Value>, u16)> = vec![
        ("alice", "GET", cm("ns-a", ""), None, 200),
        ("alice", "GET", cm("ns-a", "/c1"), None, 200),
        ("alice", "GET", cm("ns-a", "/missing"), None, 404),
        ("alice", "GET", cm("ns-b", ""), None, 403),
        (
            "alice",
            "GET",
            cm("ns-a", "?watch=1&timeoutSeconds=1"),
            None,
            200,
        ),
        (
            "alice",
            "GET",
            cm("ns-b", "?watch=1&timeoutSeconds=1"),
            None,
            403,
        ),
        (
            "bob",
            "GET",
            cm("ns-b", "?watch=1&fieldSelector=metadata.name%3Dc1"),
            None,
            403,
        ),
        ("alice", "GET", cm("ns-b", "/c1"), None, 403),
        ("alice", "POST", cm("ns-a", ""), Some(new_cm.clone()), 403),
        ("alice", "DELETE", cm("ns-a", "/c1"), None, 403),
        ("alice", "DELETE", cm("ns-a", ""), None, 403),
        ("alice", "GET", "/api/v1/configmaps".into(), None, 403),
        ("alice", "GET", "/api/v1/namespaces".into(), None, 403),
        ("alice", "GET", "/api/v1/secrets".into(), None, 403),
        // A namespace is read in its own namespace.
        ("alice", "GET", "/api/v1/namespaces/ns-a".into(), None, 200),
        ("alice", "GET", "/api/v1/namespaces/ns-b".into(), None, 403),
        ("carol", "GET", pod("ns-a", "/p/status"), None, 404),
        ("carol", "GET", pod("ns-b", "/p/status"), None, 404),
        ("carol", "GET", pod("ns-a", "/p"), None, 403),
        (
            "carol",
            "PUT",
            pod("ns-a", "/p/status"),
            Some(json!({})),
            403,
        ),
        ("bob", "GET", cm("ns-b", "/c1"), None, 200),
        ("bob", "GET", cm("ns-b", "/c2"), None, 403),
        ("bob", "GET", cm("ns-b", ""), None, 403),
        (
            "bob",
            "GET",
            cm("ns-b", "?fieldSelector=metadata.name%3Dc1"),
            None,
            200,
        ),
        ("bob", "GET", cm("ns-a", "/c1"), None, 403),
        ("dave", "GET", deploy("ns-b", "/web/scale"), None, 404),
        (
            "dave",
            "GET",
            "/apis/apps/v1/namespaces/ns-b/replicasets/web/scale".into(),
            None,
            404,
        ),
        ("dave", "GET", deploy("ns-b", "/web"), None, 403),
        (
            "dave",
            "PUT",
            deploy("ns-b", "/web/scale"),
            Some(json!({})),
            403,
        ),
        ("dave", "GET", deploy("ns-a", "/web/scale"), None, 403),
        // Every authenticated user: discovery, health, self reviews.
        ("bob", "GET", "/api".into(), None, 200),
        ("bob", "GET", "/apis/apps/v1".into(), None, 200),
        ("bob", "GET", "/healthz".into(), None, 200),
        ("bob", "GET", "/healthz/ping".into(), None, 403),
        ("bob", "GET", "/openapi/v2".into(), None, 200),
    ];
    let mut failures = Vec::new();
    for (who, method, path, body, want) in cases {
        let client = s.client_with_token(&format!("{who}-token")).await;
        let (code, out) = auth_call(&client, method, &path, body).await;
        if code != want {
            failures.push(format!(
                "{who} {method} {path}: want {want}, got {code}: {out}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `call`, keeping only the first 200 bytes of a body for messages.
async fn auth_call(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let (code, out) = call(client, method, path, body).await;
    let text = out.to_string();
    (code, text.chars().take(200).collect())
}

#[tokio::test]
async fn forbidden_messages_have_upstream_shape() {
    let s = harness::start().await;
    let bob = s.client_with_token("bob-token").await;
    let cases = [
        (
            "GET",
            "/api/v1/namespaces/default/configmaps",
            r#"configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace "default""#,
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/x",
            r#"configmaps "x" is forbidden: User "bob" cannot get resource "configmaps" in API group "" in the namespace "default""#,
        ),
        (
            "GET",
            "/api/v1/namespaces",
            r#"namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope"#,
        ),
        (
            "GET",
            "/apis/apps/v1/namespaces/default/deployments/web/scale",
            r#"deployments.apps "web" is forbidden: User "bob" cannot get resource "deployments/scale" in API group "apps" in the namespace "default""#,
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/pods",
            r#"pods is forbidden: User "bob" cannot deletecollection resource "pods" in API group "" in the namespace "default""#,
        ),
        (
            "GET",
            "/foo",
            r#"forbidden: User "bob" cannot get path "/foo""#,
        ),
    ];
    for (method, path, msg) in cases {
        let (code, out) = call(&bob, method, path, None).await;
        assert_eq!(code, 403, "{path}: {out}");
        assert_eq!(out["message"], msg, "{path}");
        assert_eq!(
            (out["kind"].as_str(), out["reason"].as_str()),
            (Some("Status"), Some("Forbidden"))
        );
    }
    let (_, out) = call(
        &bob,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web",
        None,
    )
    .await;
    assert_eq!(
        out["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
    // A binding to a missing role shows up in the reason, as upstream.
    admin_create(
        &s,
        &format!("{RBAC}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            "dangling",
            "ClusterRole",
            "nope",
            json!([user("bob")]),
        ),
    )
    .await;
    let (_, out) = call(&bob, "GET", "/api/v1/namespaces/default/secrets", None).await;
    assert_eq!(
        out["message"],
        r#"secrets is forbidden: User "bob" cannot list resource "secrets" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found"#
    );
}

#[tokio::test]
async fn anonymous_reaches_only_public_info() {
    let s = harness::start().await;
    let anon = s.anonymous_client().await;
    for path in ["/healthz", "/livez", "/readyz", "/version", "/version/"] {
        assert_eq!(call(&anon, "GET", path, None).await.0, 200, "{path}");
    }
    for path in [
        "/api",
        "/apis",
        "/api/v1",
        "/openapi/v2",
        "/healthz/ping",
        "/api/v1/namespaces",
    ] {
        assert_eq!(call(&anon, "GET", path, None).await.0, 403, "{path}");
    }
    let (code, out) = call(&anon, "GET", "/api/v1/namespaces/default/configmaps", None).await;
    assert_eq!(code, 403);
    assert_eq!(
        out["message"],
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    // Granting system:unauthenticated something opens exactly that.
    admin_create(&s, &format!("{RBAC}/namespaces/default/rolebindings"),
        binding("RoleBinding", "anon-view", "ClusterRole", "view",
            json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:unauthenticated"}]))).await;
    // `view` is filled by aggregation; wait for it.
    let mut code = 0;
    for _ in 0..100 {
        code = call(&anon, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .0;
        if code == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(code, 200);
    assert_eq!(
        call(
            &anon,
            "GET",
            "/api/v1/namespaces/kube-system/configmaps",
            None
        )
        .await
        .0,
        403
    );
}

#[tokio::test]
async fn bad_credentials_are_unauthorized() {
    let s = harness::start().await;
    let issuer = kapi_auth::authn::serviceaccount::Issuer::ephemeral();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = |exp: i64| {
        json!({"iss": kapi_auth::authn::serviceaccount::DEFAULT_ISSUER,
        "aud": [kapi_auth::authn::serviceaccount::DEFAULT_ISSUER], "exp": exp, "nbf": now - 10, "iat": now - 10,
        "sub": "system:serviceaccount:default:default",
        "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "default", "uid": "x"}}})
    };
    let wrong_key = issuer.sign_claims(&claims(now + 3600)).await.unwrap();
    let expired = s
        .server
        .service_accounts
        .sign_claims(&claims(now - 600))
        .await
        .unwrap();
    for token in ["nope", "a.b.c", "", wrong_key.as_str(), expired.as_str()] {
        if token.is_empty() {
            continue;
        }
        let client = s.client_with_token(token).await;
        let (code, out) = call(&client, "GET", "/version", None).await;
        assert_eq!(code, 401, "{token}");
        assert_eq!(
            out,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }
}

#[tokio::test]
async fn bootstrap_policy_keeps_user_edits() {
    let s = harness::start().await;
    let cr = |name: &str| format!("{RBAC}/clusterroles/{name}");
    let merge = [("content-type", "application/merge-patch+json")];
    let (_, discovery) = call(&s.client, "GET", &cr("system:discovery"), None).await;
    let mut rules = discovery["rules"].as_array().unwrap().clone();
    rules.push(json!({"verbs": ["get"], "nonResourceURLs": ["/custom"]}));
    let (code, _) = call_with(
        &s.client,
        "PATCH",
        &cr("system:discovery"),
        Some(json!({"rules": rules})),
        &merge,
    )
    .await;
    assert_eq!(code, 200);
    let frozen = json!({"metadata": {"annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
    let (code, _) = call_with(
        &s.client,
        "PATCH",
        &cr("system:public-info-viewer"),
        Some(frozen),
        &merge,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        call(&s.client, "DELETE", &cr("system:basic-user"), None)
            .await
            .0,
        200
    );

    kapi_auth::authz::policy::ensure(&s.server.apis)
        .await
        .unwrap();
    let (_, discovery) = call(&s.client, "GET", &cr("system:discovery"), None).await;
    let urls: Vec<Value> = discovery["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["nonResourceURLs"].as_array().unwrap().clone())
        .collect();
    assert!(
        urls.contains(&json!("/custom")) && urls.contains(&json!("/apis/*")),
        "{urls:?}"
    );
    let (_, viewer) = call(&s.client, "GET", &cr("system:public-info-viewer"), None).await;
    assert_eq!(
        viewer["rules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}])
    );
    let (code, basic) = call(&s.client, "GET", &cr("system:basic-user"), None).await;
    assert_eq!(code, 200, "{basic}");
    assert_eq!(
        basic["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    // The aggregated user-facing roles are filled by the aggregation controller.
    let mut admin_rules = 0;
    for _ in 0..100 {
        let (_, admin) = call(&s.client, "GET", &cr("admin"), None).await;
        admin_rules = admin["rules"].as_array().map_or(0, Vec::len);
        if admin_rules > 20 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        admin_rules > 20,
        "admin aggregates edit and view: {admin_rules} rules"
    );
}
