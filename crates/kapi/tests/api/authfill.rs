//! The rest of the authentication and authorization surface: the whole
//! upstream bootstrap policy (component, node, controller and namespaced
//! roles, checked against rules written from upstream's fixtures), service
//! account issuer discovery (OpenID configuration and key set), TokenRequest
//! expiration capping and extension, and `authentication.k8s.io/v1beta1`
//! SelfSubjectReview (what kubectl 1.27's `auth whoami` asks).

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use http_body_util::BodyExt as _;
use kube::Client;
use serde_json::{json, Value};

use crate::authorization::{admin_create, call};
use crate::harness::{self, TestServer};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

const EVENTS_VERBS: &[&str] = &["create", "patch", "update"];

/// Expected rules, written from upstream 1.33's testdata fixtures.
fn expected() -> Vec<(&'static str, Value)> {
    let events = rule(EVENTS_VERBS, &["", "events.k8s.io"], &["events"]);
    let glw = &["get", "list", "watch"][..];
    vec![
        (
            "system:node-proxier",
            json!([
                rule(&["list", "watch"], &[""], &["endpoints", "services"]),
                rule(glw, &[""], &["nodes"]),
                events,
                rule(
                    &["list", "watch"],
                    &["discovery.k8s.io"],
                    &["endpointslices"]
                ),
            ]),
        ),
        (
            "system:kube-dns",
            json!([rule(&["list", "watch"], &[""], &["endpoints", "services"])]),
        ),
        (
            "system:kube-aggregator",
            json!([rule(glw, &[""], &["endpoints", "services"])]),
        ),
        (
            "system:volume-scheduler",
            json!([
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumes"]
                ),
                rule(glw, &["storage.k8s.io"], &["storageclasses"]),
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[""],
                    &["persistentvolumeclaims"]
                ),
            ]),
        ),
        (
            "system:certificates.k8s.io:kubelet-serving-approver",
            json!([{"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"],
                "resources": ["signers"], "resourceNames": ["kubernetes.io/kubelet-serving"]}]),
        ),
        (
            "system:service-account-issuer-discovery",
            json!([{"verbs": ["get"],
                "nonResourceURLs": ["/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"]}]),
        ),
        (
            "system:controller:replicaset-controller",
            json!([
                rule(
                    &["get", "list", "update", "watch"],
                    &["apps", "extensions"],
                    &["replicasets"]
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/status"]
                ),
                rule(
                    &["update"],
                    &["apps", "extensions"],
                    &["replicasets/finalizers"]
                ),
                rule(
                    &["create", "delete", "list", "patch", "watch"],
                    &[""],
                    &["pods"]
                ),
                rule(EVENTS_VERBS, &["", "events.k8s.io"], &["events"]),
            ]),
        ),
        (
            "system:controller:pod-garbage-collector",
            json!([
                rule(&["delete", "list", "watch"], &[""], &["pods"]),
                rule(glw, &[""], &["nodes"]),
                rule(&["patch"], &[""], &["pods/status"]),
            ]),
        ),
        (
            "system:controller:namespace-controller",
            json!([
                rule(&["delete", "get", "list", "watch"], &[""], &["namespaces"]),
                rule(
                    &["update"],
                    &[""],
                    &["namespaces/finalize", "namespaces/status"]
                ),
                rule(
                    &["delete", "deletecollection", "get", "list", "watch"],
                    &["*"],
                    &["*"]
                ),
            ]),
        ),
    ]
}

/// Names upstream's bootstrap policy creates (a sample across every file).
const CLUSTER_ROLES: &[&str] = &[
    "system:node",
    "system:node-bootstrapper",
    "system:node-problem-detector",
    "system:kubelet-api-admin",
    "system:heapster",
    "system:kube-scheduler",
    "system:persistent-volume-provisioner",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:certificates.k8s.io:legacy-unknown-approver",
    "system:certificates.k8s.io:kube-apiserver-client-approver",
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
    "system:controller:attachdetach-controller",
    "system:controller:generic-garbage-collector",
    "system:controller:service-cidrs-controller",
    "system:controller:validatingadmissionpolicy-status-controller",
    "system:controller:legacy-service-account-token-cleaner",
    "system:controller:selinux-warning-controller",
];

async fn sar(s: &TestServer, spec: Value) -> bool {
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": spec});
    let (code, out) = call(
        &s.client,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(body),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    out["status"]["allowed"] == true
}

fn attrs(verb: &str, group: &str, resource: &str, ns: &str) -> Value {
    json!({"verb": verb, "group": group, "resource": resource, "namespace": ns})
}

#[tokio::test]
async fn bootstrap_policy_is_upstreams() {
    let s = harness::start().await;
    for (name, rules) in expected() {
        let (code, role) = call(
            &s.client,
            "GET",
            &format!("{RBAC}/clusterroles/{name}"),
            None,
        )
        .await;
        assert_eq!(code, 200, "{name}: {role}");
        assert_eq!(role["rules"], rules, "{name}");
        assert_eq!(
            role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }
    for name in CLUSTER_ROLES {
        let (code, _) = call(
            &s.client,
            "GET",
            &format!("{RBAC}/clusterroles/{name}"),
            None,
        )
        .await;
        assert_eq!(code, 200, "{name}");
    }
    // Bindings: components, controllers (service accounts), and none for nodes.
    let (_, b) = call(
        &s.client,
        "GET",
        &format!("{RBAC}/clusterrolebindings/system:kube-dns"),
        None,
    )
    .await;
    assert_eq!(
        b["subjects"],
        json!([{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}])
    );
    let (_, b) = call(
        &s.client,
        "GET",
        &format!("{RBAC}/clusterrolebindings/system:controller:job-controller"),
        None,
    )
    .await;
    assert_eq!(b["subjects"][0]["name"], "job-controller");
    assert_eq!(b["roleRef"]["name"], "system:controller:job-controller");
    let (code, b) = call(
        &s.client,
        "GET",
        &format!("{RBAC}/clusterrolebindings/system:node"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert!(b.get("subjects").is_none(), "{b}");
    // Namespaced roles and bindings.
    let (code, r) = call(
        &s.client,
        "GET",
        &format!("{RBAC}/namespaces/kube-system/roles/extension-apiserver-authentication-reader"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{r}");
    assert_eq!(
        r["rules"][0]["resourceNames"],
        json!(["extension-apiserver-authentication"])
    );
    for (ns, name) in [
        ("kube-system", "system::leader-locking-kube-scheduler"),
        (
            "kube-system",
            "system::extension-apiserver-authentication-reader",
        ),
        ("kube-system", "system:controller:token-cleaner"),
        ("kube-public", "system:controller:bootstrap-signer"),
    ] {
        let (code, _) = call(
            &s.client,
            "GET",
            &format!("{RBAC}/namespaces/{ns}/rolebindings/{name}"),
            None,
        )
        .await;
        assert_eq!(code, 200, "{ns}/{name}");
    }

    // What they grant, through the authorizer.
    let user = |u: &str, a: Value| {
        let mut spec = json!({"user": u, "resourceAttributes": a});
        if u.starts_with("system:serviceaccount:") {
            spec["groups"] = json!(["system:serviceaccounts"]);
        }
        spec
    };
    assert!(
        sar(
            &s,
            user(
                "system:kube-proxy",
                attrs("watch", "discovery.k8s.io", "endpointslices", "")
            )
        )
        .await
    );
    assert!(
        !sar(
            &s,
            user("system:kube-proxy", attrs("create", "", "pods", "default"))
        )
        .await
    );
    let binding =
        json!({"verb": "create", "resource": "pods", "subresource": "binding", "namespace": "x"});
    assert!(sar(&s, user("system:kube-scheduler", binding)).await);
    assert!(
        sar(
            &s,
            user(
                "system:serviceaccount:kube-system:replicaset-controller",
                attrs("create", "", "pods", "x")
            )
        )
        .await
    );
    assert!(
        !sar(
            &s,
            user(
                "system:serviceaccount:kube-system:replicaset-controller",
                attrs("create", "", "secrets", "x")
            )
        )
        .await
    );
    assert!(
        sar(
            &s,
            user(
                "system:kube-scheduler",
                attrs("update", "coordination.k8s.io", "leases", "kube-system")
            )
        )
        .await
    );
    assert!(
        !sar(
            &s,
            user(
                "system:kube-scheduler",
                attrs("update", "coordination.k8s.io", "leases", "default")
            )
        )
        .await
    );
    // edit (through aggregation) writes events, as upstream.
    let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bob-edits"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]});
    s.namespace("team").await;
    admin_create(&s, &format!("{RBAC}/namespaces/team/rolebindings"), rb).await;
    let mut allowed = false;
    for _ in 0..100 {
        allowed = sar(&s, user("bob", attrs("create", "", "events", "team"))).await;
        if allowed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(allowed, "edit lets bob create events");
    assert!(!sar(&s, user("bob", attrs("create", "", "endpoints", "team"))).await);
}

async fn get_raw(client: &Client, path: &str) -> (u16, String, String) {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("transport");
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, ct, String::from_utf8_lossy(&bytes).into_owned())
}

async fn robot(s: &TestServer) -> String {
    s.namespace("apps").await;
    admin_create(
        s,
        "/api/v1/namespaces/apps/serviceaccounts",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    let (code, out) = call(
        &s.client,
        "POST",
        "/api/v1/namespaces/apps/serviceaccounts/robot/token",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    out["status"]["token"].as_str().unwrap().to_owned()
}

fn header(token: &str) -> Value {
    let h = token.split('.').next().unwrap();
    serde_json::from_slice(&B64.decode(h).unwrap()).unwrap()
}

fn claims(token: &str) -> Value {
    let p = token.split('.').nth(1).unwrap();
    serde_json::from_slice(&B64.decode(p).unwrap()).unwrap()
}

#[tokio::test]
async fn service_account_issuer_discovery() {
    let s = harness::start().await;
    let token = robot(&s).await;
    let anon = s.anonymous_client().await;
    assert_eq!(
        get_raw(&anon, "/.well-known/openid-configuration").await.0,
        403
    );
    assert_eq!(get_raw(&anon, "/openid/v1/jwks").await.0, 403);
    // Service accounts may read both (system:service-account-issuer-discovery).
    let sa = s.client_with_token(&token).await;
    let (code, ct, body) = get_raw(&sa, "/.well-known/openid-configuration").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(ct, "application/json");
    let config: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(config["issuer"], claims(&token)["iss"]);
    assert!(config["jwks_uri"].as_str().unwrap().starts_with("https://"));
    assert!(config["jwks_uri"]
        .as_str()
        .unwrap()
        .ends_with("/openid/v1/jwks"));
    assert_eq!(config["response_types_supported"], json!(["id_token"]));
    assert_eq!(config["subject_types_supported"], json!(["public"]));
    assert_eq!(
        config["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let (code, ct, body) = get_raw(&sa, "/openid/v1/jwks").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(ct, "application/jwk-set+json");
    let set: Value = serde_json::from_str(&body).unwrap();
    let keys = set["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{set}");
    // The token names its key by upstream's key id; the set publishes it.
    assert_eq!(keys[0]["kid"], header(&token)["kid"]);
    assert_eq!(keys[0]["kty"], "EC");
    assert_eq!(keys[0]["use"], "sig");
    // Both are served with a trailing slash too, as upstream serves them.
    let (code, _, slashed) = get_raw(&sa, "/.well-known/openid-configuration/").await;
    assert_eq!(code, 200, "{slashed}");
    assert_eq!(serde_json::from_str::<Value>(&slashed).unwrap(), config);
    let (code, ct, _) = get_raw(&sa, "/openid/v1/jwks/").await;
    assert_eq!((code, ct.as_str()), (200, "application/jwk-set+json"));
    // go-restful routes upstream: an Accept they do not produce is 406.
    let req = http::Request::get("/openid/v1/jwks")
        .header("accept", "application/json")
        .body(Vec::new())
        .unwrap();
    let resp = sa
        .send(req.map(kube::client::Body::from))
        .await
        .expect("transport");
    assert_eq!(resp.status().as_u16(), 406);
    // An ordinary user without the role is refused.
    let alice = s.client_with_token("alice-token").await;
    assert_eq!(get_raw(&alice, "/openid/v1/jwks").await.0, 403);
}

#[tokio::test]
async fn token_expiration_is_capped_and_extended() {
    use kapi_auth::authn::serviceaccount::Issuer;
    let s = harness::start_configured(|o| {
        o.service_accounts = Issuer::ephemeral().with_expiration(Some(7200), true)
    })
    .await;
    robot(&s).await;
    admin_create(
        &s,
        "/api/v1/namespaces/apps/pods",
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"}, "spec": {"serviceAccountName": "robot",
        "containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let req = |spec: Value| {
        let body = serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest", "spec": spec}))
        .unwrap();
        http::Request::post("/api/v1/namespaces/apps/serviceaccounts/robot/token")
            .header("content-type", "application/json")
            .body(body)
            .unwrap()
    };
    let resp = s
        .client
        .send(req(json!({"expirationSeconds": 10800})).map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let warning = resp
        .headers()
        .get("warning")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        warning,
        "299 - \"requested expiration of 10800 seconds shortened to 7200 seconds\""
    );
    let out: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(out["spec"]["expirationSeconds"], 7200);
    let c = claims(out["status"]["token"].as_str().unwrap());
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );
    assert!(c["kubernetes.io"].get("warnafter").is_none());

    // kubelet's projected token: pod-bound, 3607 s, API audience → a year, warnafter.
    let spec = json!({"expirationSeconds": 3607,
        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}});
    let (code, out) = call(
        &s.client,
        "POST",
        "/api/v1/namespaces/apps/serviceaccounts/robot/token",
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["spec"]["expirationSeconds"], 3607);
    let c = claims(out["status"]["token"].as_str().unwrap());
    let iat = c["iat"].as_i64().unwrap();
    assert_eq!(c["exp"].as_i64().unwrap() - iat, 365 * 24 * 3600);
    assert_eq!(
        c["kubernetes.io"]["warnafter"].as_i64().unwrap() - iat,
        3607
    );
    // Other audiences are not extended.
    let spec = json!({"expirationSeconds": 3607, "audiences": ["vault"],
        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}});
    let (_, out) = call(
        &s.client,
        "POST",
        "/api/v1/namespaces/apps/serviceaccounts/robot/token",
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
        ),
    )
    .await;
    let c = claims(out["status"]["token"].as_str().unwrap());
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );
}

#[tokio::test]
async fn self_subject_review_v1beta1() {
    let s = harness::start().await;
    let alice = s.client_with_token("alice-token").await;
    let (code, out) = call(
        &alice,
        "POST",
        "/apis/authentication.k8s.io/v1beta1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1beta1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["apiVersion"], "authentication.k8s.io/v1beta1");
    assert_eq!(out["status"]["userInfo"]["username"], "alice");
    assert_eq!(out["status"]["userInfo"]["uid"], "uid-alice");
    let (_, group) = call(&s.client, "GET", "/apis/authentication.k8s.io", None).await;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    // Only selfsubjectreviews is served at v1beta1.
    let (_, list) = call(
        &s.client,
        "GET",
        "/apis/authentication.k8s.io/v1beta1",
        None,
    )
    .await;
    let names: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["selfsubjectreviews"]);
}
