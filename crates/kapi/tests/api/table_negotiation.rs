//! `as=Table` only where upstream has a table converter: every readable
//! resource; never the create-only ones (reviews, bindings) or create-only
//! subresources (eviction, binding, token), which answer 406 before doing
//! anything, or fall back to the client's next media type.

use serde_json::json;

use crate::harness;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

#[tokio::test]
async fn create_only_resources_have_no_table() {
    let s = harness::start().await;
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
    let cases = [
        (
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            ssar.clone(),
        ),
        (
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
        ),
        (
            "/apis/authentication.k8s.io/v1/tokenreviews",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "x"}}),
        ),
        (
            "/api/v1/namespaces/default/bindings",
            json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "nopod"},
                "target": {"kind": "Node", "name": "n1"}}),
        ),
        (
            "/api/v1/namespaces/default/pods/nopod/eviction",
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "nopod"}}),
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts/nosa/token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        ),
    ];
    for (path, body) in cases.clone() {
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .header("accept", TABLE)
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let reply = s.exchange(req).await;
        let out = reply.json();
        assert_eq!(reply.code, 406, "{path}: {out}");
        assert_eq!(out["reason"], "NotAcceptable", "{path}");
        assert_eq!(out["message"], NOT_ACCEPTABLE, "{path}");
    }
    let req = http::Request::post(cases[0].0)
        .header("content-type", "application/json")
        .header("accept", format!("{TABLE}, application/json"))
        .body(serde_json::to_vec(&ssar).unwrap())
        .unwrap();
    let reply = s.exchange(req).await;
    assert_eq!(reply.code, 201);
    assert_eq!(reply.json()["kind"], "SelfSubjectAccessReview");
    for path in [
        "/api/v1/namespaces",
        "/api/v1/componentstatuses",
        "/api/v1/namespaces/default",
    ] {
        let req = http::Request::get(path)
            .header("accept", TABLE)
            .body(Vec::new())
            .unwrap();
        let reply = s.exchange(req).await;
        assert_eq!(
            (reply.code, reply.json()["kind"].clone()),
            (200, json!("Table")),
            "{path}"
        );
    }
}
