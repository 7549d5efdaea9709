//! NodeRestriction (kubeadm's `--enable-admission-plugins=NodeRestriction`)
//! with `--authorization-mode=Node,RBAC`: a kubelet (impersonated by the
//! admin as `system:node:n1` in `system:nodes`) may create only mirror pods
//! bound to and owned by itself (its Node's uid) that reference nothing,
//! delete only its pods, change only the kubelet's labels of its own Node and
//! not its taints; other users are not restricted. Without the plugin the
//! Node authorizer alone lets the same writes through.

use serde_json::{json, Value};

use crate::admission::{flags, post};
use crate::harness::{self, TestServer};
use kapi_auth::authz::Mode;

async fn as_node(s: &TestServer, method: &str, path: &str, body: Value) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header(
            "content-type",
            if method == "PATCH" {
                "application/merge-patch+json"
            } else {
                "application/json"
            },
        )
        .header("impersonate-user", "system:node:n1")
        .header("impersonate-group", "system:nodes")
        .body(body.to_string().into_bytes())
        .unwrap();
    s.raw(req).await
}

/// A mirror pod on `node`, owned by the Node of uid `uid`, as a kubelet
/// makes it.
fn mirror(name: &str, node: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name,
        "annotations": {"kubernetes.io/config.mirror": "hash"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
            "uid": uid, "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]}})
}

/// The uid of Node `name`.
async fn node_uid(s: &TestServer, name: &str) -> String {
    let (code, node) = s.get_json(&format!("/api/v1/nodes/{name}")).await;
    assert_eq!(code, 200, "{node}");
    node["metadata"]["uid"].as_str().unwrap().to_owned()
}

async fn server(restricted: bool) -> TestServer {
    let s = harness::start_configured(move |o| {
        o.authorization_modes = vec![Mode::Node, Mode::Rbac];
        let enable: &[&str] = if restricted {
            &["NodeRestriction"]
        } else {
            &[]
        };
        o.admission = flags(enable, &["ServiceAccount"]);
    })
    .await;
    for n in ["n1", "n2"] {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}});
        assert_eq!(post(&s, "/api/v1/nodes", node).await.0, 201);
    }
    s
}

fn message(out: &Value) -> &str {
    out["message"].as_str().unwrap_or_default()
}

/// A kubelet's create of pod `body` is refused 403, the message ending `want`.
async fn refused(s: &TestServer, body: Value, want: &str) {
    let (code, out) = as_node(s, "POST", "/api/v1/namespaces/default/pods", body).await;
    assert_eq!(code, 403, "{out}");
    assert!(message(&out).ends_with(want), "{want}: {out}");
}

#[tokio::test]
async fn node_restriction_limits_kubelet_pod_writes() {
    let s = server(true).await;
    let (n1, n2) = (node_uid(&s, "n1").await, node_uid(&s, "n2").await);
    let pods = "/api/v1/namespaces/default/pods";
    let mut plain = mirror("plain", "n1", &n1);
    plain["metadata"]["annotations"] = json!({});
    refused(&s, plain, "pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods").await;
    refused(
        &s,
        mirror("elsewhere", "n2", &n2),
        "node \"n1\" can only create pods with spec.nodeName set to itself",
    )
    .await;
    let mut orphan = mirror("orphan", "n1", &n1);
    orphan["metadata"]["ownerReferences"] = json!([]);
    refused(
        &s,
        orphan,
        "node \"n1\" can only create pods with an owner reference set to itself",
    )
    .await;
    let mut not_controller = mirror("nc", "n1", &n1);
    not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    refused(
        &s,
        not_controller,
        "node \"n1\" can only create pods with a controller owner reference set to itself",
    )
    .await;
    refused(
        &s,
        mirror("stale", "n1", "0000"),
        &format!("node n1 UID mismatch: expected 0000 got {n1}"),
    )
    .await;
    let mut secretive = mirror("secretive", "n1", &n1);
    secretive["spec"]["volumes"] = json!([{"name": "s", "secret": {"secretName": "x"}}]);
    refused(
        &s,
        secretive,
        "node \"n1\" can not create pods that reference secrets",
    )
    .await;
    let mut bundle = mirror("bundle", "n1", &n1);
    bundle["spec"]["volumes"] = json!([{"name": "b", "projected": {"sources": [
        {"clusterTrustBundle": {"name": "x", "path": "ca.crt"}}]}}]);
    refused(
        &s,
        bundle,
        "node \"n1\" can not create pods that reference clustertrustbundles",
    )
    .await;
    let (code, out) = as_node(&s, "POST", pods, mirror("ok", "n1", &n1)).await;
    assert_eq!(code, 201, "{out}");
    // Deleting another node's pod is refused; its own is fine.
    assert_eq!(post(&s, pods, mirror("theirs", "n2", &n2)).await.0, 201);
    let (code, out) = as_node(&s, "DELETE", &format!("{pods}/theirs"), json!({})).await;
    assert_eq!(code, 403, "{out}");
    assert!(message(&out)
        .ends_with("node \"n1\" can only delete pods with spec.nodeName set to itself"));
    let (code, out) = as_node(&s, "DELETE", &format!("{pods}/ok"), json!({})).await;
    assert_eq!(code, 200, "{out}");
    // The admin is not a node: nothing is restricted.
    let mut by_admin = mirror("admins", "n2", &n2);
    by_admin["metadata"]["annotations"] = json!({});
    assert_eq!(post(&s, pods, by_admin).await.0, 201);
}

#[tokio::test]
async fn node_restriction_limits_kubelet_node_changes() {
    let s = server(true).await;
    let patch = |labels: Value| json!({"metadata": {"labels": labels}});
    let (code, out) = as_node(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        patch(json!({"kubernetes.io/hostname": "n1", "example.com/team": "a"})),
    )
    .await;
    assert_eq!(code, 200, "{out}");
    let (code, out) = as_node(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        patch(json!({"node-role.kubernetes.io/control-plane": ""})),
    )
    .await;
    assert_eq!(code, 403, "{out}");
    assert!(
        message(&out)
            .ends_with("is not allowed to modify labels: node-role.kubernetes.io/control-plane"),
        "{out}"
    );
    let taint = json!({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}});
    let (code, out) = as_node(&s, "PATCH", "/api/v1/nodes/n1", taint).await;
    assert_eq!(code, 403, "{out}");
    assert!(
        message(&out).ends_with("node \"n1\" is not allowed to modify taints"),
        "{out}"
    );
}

#[tokio::test]
async fn without_node_restriction_the_authorizer_alone_decides() {
    let s = server(false).await;
    let mut plain = mirror("plain", "n2", "any");
    plain["metadata"]["annotations"] = json!({});
    let (code, out) = as_node(&s, "POST", "/api/v1/namespaces/default/pods", plain).await;
    assert_eq!(code, 201, "{out}");
    let (code, out) = as_node(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}}}),
    )
    .await;
    assert_eq!(code, 200, "{out}");
}
