//! `--authorization-mode=Node,RBAC`: a kubelet (`system:node:<name>` in
//! `system:nodes`, here by impersonation) reads the secrets, config maps,
//! claims, volumes and service account tokens of the pods bound to it, its
//! own Node and Lease, and nothing of other nodes' pods; anyone else is left
//! to RBAC. SubjectAccessReview asks the same chain.

use serde_json::{json, Value};

use crate::harness::{self, TestServer};
use kapi_auth::authz::Mode;

const NODE_GROUP: &str = "system:nodes";

/// A request as `user` in `groups` (the admin impersonates them).
async fn as_user(
    s: &TestServer,
    user: &str,
    groups: &[&str],
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("impersonate-user", user);
    for g in groups {
        req = req.header("impersonate-group", *g);
    }
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    s.raw(req.body(body).unwrap()).await
}

async fn node_get(s: &TestServer, node: &str, path: &str) -> (u16, Value) {
    let user = format!("system:node:{node}");
    as_user(s, &user, &[NODE_GROUP], "GET", path, None).await
}

async fn create(s: &TestServer, path: &str, obj: Value) {
    let (code, out) = s
        .send_json("POST", path, obj.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{path}: {out}");
}

fn pod(name: &str, node: &str, secret: &str, extra: Value) -> Value {
    let mut spec = json!({
        "nodeName": node,
        "containers": [{"name": "c", "image": "busybox", "env": [
            {"name": "S", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}]}]
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"k": "dg=="}})
}

/// A server authorizing with `Node,RBAC`, as kubeadm's.
async fn start() -> TestServer {
    harness::start_configured(|o| o.authorization_modes = Mode::parse_list("Node,RBAC").unwrap())
        .await
}

async fn setup(s: &TestServer) -> String {
    let ns = s.namespace("nodeauthz").await;
    let base = format!("/api/v1/namespaces/{ns}");
    for name in ["s1", "s2", "s3"] {
        create(s, &format!("{base}/secrets"), secret(name)).await;
    }
    create(
        s,
        &format!("{base}/configmaps"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}}),
    )
    .await;
    for sa in ["sa1", "sa2"] {
        let obj = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}});
        create(s, &format!("{base}/serviceaccounts"), obj).await;
    }
    create(
        s,
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "claimRef": {"namespace": ns, "name": "c1"},
                "csi": {"driver": "d.example.com", "volumeHandle": "h",
                    "nodePublishSecretRef": {"name": "s3"}}}}),
    )
    .await;
    // A volume claimed by nobody's pod.
    create(
        s,
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv2"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "claimRef": {"namespace": ns, "name": "other"},
                "hostPath": {"path": "/tmp"}}}),
    )
    .await;
    create(
        s,
        &format!("{base}/persistentvolumeclaims"),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c1"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv1",
                "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    let extra = json!({
        "serviceAccountName": "sa1",
        "volumes": [{"name": "cm", "configMap": {"name": "cm1"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "c1"}}]
    });
    create(s, &format!("{base}/pods"), pod("p1", "n1", "s1", extra)).await;
    create(s, &format!("{base}/pods"), pod("p2", "n2", "s2", json!({}))).await;
    create(
        s,
        "/api/v1/nodes",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    )
    .await;
    ns
}

fn message(out: &Value) -> &str {
    out["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_node_reads_what_its_pods_use_and_nothing_else() {
    let s = start().await;
    let ns = setup(&s).await;
    let base = format!("/api/v1/namespaces/{ns}");
    for path in [
        format!("{base}/secrets/s1"),
        format!("{base}/configmaps/cm1"),
        format!("{base}/persistentvolumeclaims/c1"),
        "/api/v1/persistentvolumes/pv1".to_string(),
        format!("{base}/secrets/s3"),
        format!("{base}/pods/p1"),
        format!("{base}/secrets?fieldSelector=metadata.name%3Ds1"),
        "/api/v1/nodes/n1".to_string(),
    ] {
        let (code, out) = node_get(&s, "n1", &path).await;
        assert_eq!(code, 200, "{path}: {out}");
    }
    // Allowed, so the lookup itself answers: it does not exist yet.
    let (code, _) = node_get(
        &s,
        "n1",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
    )
    .await;
    assert_eq!(code, 404);

    let (code, out) = node_get(&s, "n1", &format!("{base}/secrets/s2")).await;
    assert_eq!(code, 403, "{out}");
    assert_eq!(
        message(&out),
        format!(
            "secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" \
             in API group \"\" in the namespace \"{ns}\": no relationship found between node 'n1' and this object"
        )
    );
    assert_eq!(out["reason"], "Forbidden");
    // The other node reads its own secret, not n1's.
    assert_eq!(
        node_get(&s, "n2", &format!("{base}/secrets/s2")).await.0,
        200
    );
    assert_eq!(
        node_get(&s, "n2", &format!("{base}/secrets/s1")).await.0,
        403
    );
    assert_eq!(
        node_get(&s, "n1", "/api/v1/persistentvolumes/pv2").await.0,
        403
    );
    assert_eq!(
        node_get(&s, "n2", "/api/v1/persistentvolumes/pv1").await.0,
        403
    );
    assert_eq!(
        node_get(&s, "n2", &format!("{base}/secrets/s3")).await.0,
        403
    );
    let (code, out) = node_get(&s, "n1", &format!("{base}/secrets")).await;
    assert_eq!(code, 403);
    assert!(message(&out).ends_with(": No Object name found"), "{out}");
    let (code, out) = node_get(&s, "n1", "/api/v1/nodes/n2").await;
    assert_eq!(code, 403);
    assert!(
        message(&out).ends_with(": node 'n1' cannot read 'n2', only its own Node object"),
        "{out}"
    );
    let (code, out) = node_get(
        &s,
        "n1",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2",
    )
    .await;
    assert_eq!(code, 403);
    assert!(
        message(&out)
            .ends_with("can only access node lease with the same name as the requesting node"),
        "{out}"
    );
    // Writes of a secret are never a node's.
    let (code, _) = as_user(
        &s,
        "system:node:n1",
        &[NODE_GROUP],
        "DELETE",
        &format!("{base}/secrets/s1"),
        None,
    )
    .await;
    assert_eq!(code, 403);

    // Service account tokens: only for a pod's own service account.
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    for (sa, want) in [("sa1", 201), ("sa2", 403)] {
        let path = format!("{base}/serviceaccounts/{sa}/token");
        let (code, out) = as_user(
            &s,
            "system:node:n1",
            &[NODE_GROUP],
            "POST",
            &path,
            Some(tr.clone()),
        )
        .await;
        assert_eq!(code, want, "{sa}: {out}");
    }

    // Not a node: the name alone, or the group alone, is left to RBAC.
    let path = format!("{base}/secrets/s1");
    assert_eq!(
        as_user(&s, "system:node:n1", &[], "GET", &path, None)
            .await
            .0,
        403
    );
    assert_eq!(
        as_user(&s, "bob", &[NODE_GROUP], "GET", &path, None)
            .await
            .0,
        403
    );
    // CertificateSigningRequests come from the static node rules.
    let (code, out) = node_get(
        &s,
        "n1",
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    )
    .await;
    assert_eq!(code, 200, "{out}");
}

#[tokio::test]
async fn deleting_the_pod_takes_the_grant_away() {
    let s = start().await;
    let ns = setup(&s).await;
    let secret = format!("/api/v1/namespaces/{ns}/secrets/s1");
    assert_eq!(node_get(&s, "n1", &secret).await.0, 200);
    let del = json!({"gracePeriodSeconds": 0}).to_string().into_bytes();
    let (code, out) = s
        .send_json("DELETE", &format!("/api/v1/namespaces/{ns}/pods/p1"), del)
        .await;
    assert_eq!(code, 200, "{out}");
    // As upstream's graph, the grant goes when the watch cache has the delete.
    let mut last = 0;
    for _ in 0..100 {
        last = node_get(&s, "n1", &secret).await.0;
        if last == 403 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(last, 403);
    // A pod bound later grants it again at once (the deny path reads consistently).
    let pod = pod("p3", "n1", "s1", json!({}));
    create(&s, &format!("/api/v1/namespaces/{ns}/pods"), pod).await;
    assert_eq!(node_get(&s, "n1", &secret).await.0, 200);
}

#[tokio::test]
async fn subject_access_review_asks_the_node_authorizer() {
    let s = start().await;
    let ns = setup(&s).await;
    let sar = |name: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "system:node:n1", "groups": [NODE_GROUP, "system:authenticated"],
                "resourceAttributes": {"verb": "get", "resource": "secrets", "namespace": ns, "name": name}}})
    };
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let (code, out) = s
        .send_json("POST", path, sar("s1").to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(out["status"]["allowed"], true, "{out}");
    let (_, out) = s
        .send_json("POST", path, sar("s2").to_string().into_bytes())
        .await;
    assert_eq!(out["status"]["allowed"], false, "{out}");
    assert_eq!(
        out["status"]["reason"], "no relationship found between node 'n1' and this object",
        "{out}"
    );
    // Upstream binds nobody to the system:node ClusterRole: RBAC alone gives
    // the nodes group nothing.
    let s = s
        .another(|o| o.authorization_modes = vec![Mode::Rbac])
        .await;
    let (_, out) = s
        .send_json("POST", path, sar("s1").to_string().into_bytes())
        .await;
    assert_eq!(out["status"]["allowed"], false, "{out}");
    let (code, crb) = s
        .get_json("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:node")
        .await;
    assert_eq!(code, 200);
    assert!(
        crb.get("subjects")
            .is_none_or(|v| v.as_array().is_some_and(Vec::is_empty)),
        "{crb}"
    );
}
