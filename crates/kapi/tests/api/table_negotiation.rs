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

/// A table of flow schemas lists them in matching order (precedence, then
/// name), as upstream's printer sorts them; the plain list stays by name.
#[tokio::test]
async fn flow_schema_tables_are_in_matching_order() {
    let s = harness::start().await;
    let req = http::Request::get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
        .header("accept", TABLE)
        .body(Vec::new())
        .unwrap();
    let table = s.exchange(req).await.json();
    let names: Vec<&str> = table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "exempt",
            "probes",
            "system-leader-election",
            "endpoint-controller",
            "workload-leader-election",
            "system-node-high",
            "system-nodes",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "service-accounts",
            "global-default",
            "catch-all",
        ]
    );
    let (_, list) = s
        .get_json("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
        .await;
    assert_eq!(list["items"][0]["metadata"]["name"], "catch-all");
}
