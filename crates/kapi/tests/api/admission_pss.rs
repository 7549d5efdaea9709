//! PodSecurity: the namespace's `enforce` level refuses pods with upstream's
//! message, `warn` lets them through with a `Warning` header, workload
//! templates are only warned about, and bad label values are invalid.

use serde_json::{json, Value};

use crate::admission::{pod, post};
use crate::harness::{self, TestServer};

async fn namespace(srv: &TestServer, name: &str, labels: Value) -> (u16, Value) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}});
    post(srv, "/api/v1/namespaces", ns).await
}

/// POST returning the status and the Warning headers.
async fn post_warnings(srv: &TestServer, path: &str, body: Value) -> (u16, Vec<String>) {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let resp = srv.client.send(req).await.expect("transport");
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (resp.status().as_u16(), warnings)
}

fn restricted_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
                 "containers": [{"name": "c", "image": "nginx", "securityContext": {
                     "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

#[tokio::test]
async fn enforce_refuses_and_warn_warns() {
    // The privileged deployment below needs --allow-privileged, as kubeadm sets it.
    let srv = harness::start_configured(|o| o.allow_privileged = true).await;
    let labels = json!({"pod-security.kubernetes.io/enforce": "restricted"});
    assert_eq!(namespace(&srv, "strict", labels).await.0, 201);
    let (code, body) = post(&srv, "/api/v1/namespaces/strict/pods", pod("p")).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"p\" is forbidden: violates PodSecurity \"restricted:latest\": \
         allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
         unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
         runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
         seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    let (code, body) = post(&srv, "/api/v1/namespaces/strict/pods", restricted_pod("ok")).await;
    assert_eq!(code, 201, "{body}");

    let labels = json!({"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.33"});
    assert_eq!(namespace(&srv, "lenient", labels).await.0, 201);
    let mut host = pod("host");
    host["spec"]["hostNetwork"] = json!(true);
    let (code, warnings) = post_warnings(&srv, "/api/v1/namespaces/lenient/pods", host).await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        vec!["299 - \"would violate PodSecurity \\\"baseline:v1.33\\\": host namespaces (hostNetwork=true)\"".to_string()]
    );
    // Workloads are never refused, only warned about at the enforce level.
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"containers": [{"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}}}});
    let (code, warnings) =
        post_warnings(&srv, "/apis/apps/v1/namespaces/strict/deployments", deploy).await;
    assert_eq!(code, 201);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("would violate PodSecurity \\\"restricted:latest\\\": privileged (container \\\"c\\\" must not set securityContext.privileged=true)"), "{warnings:?}");
}

#[tokio::test]
async fn bad_levels_are_invalid() {
    let srv = harness::start().await;
    let (code, body) = namespace(
        &srv,
        "bad",
        json!({"pod-security.kubernetes.io/enforce": "strictest"}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("must be one of privileged, baseline, restricted"),
        "{body}"
    );
}
