//! The in-process controllers: cascading deletion in its three modes (chains of
//! Deployment → ReplicaSet → Pod made by hand, since workload controllers are not
//! part of kapi), `blockOwnerDeletion`, dangling and stale owner references, the
//! default ServiceAccount and `kube-root-ca.crt` in every namespace, the
//! `default/kubernetes` endpoints, and namespace deletion with its conditions.
//!
//! Controllers act asynchronously, so tests wait for the expected state (with a
//! generous bound that only a hang reaches); they never assert on timings.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{self, TestServer};

const PATIENCE: Duration = Duration::from_secs(60);

pub(crate) async fn create(srv: &TestServer, path: &str, body: Value) -> Value {
    let (code, obj) = srv
        .send_json("POST", path, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(code, 201, "create {path}: {obj}");
    obj
}

pub(crate) async fn get(srv: &TestServer, path: &str) -> Option<Value> {
    let (code, obj) = srv.get_json(path).await;
    match code {
        200 => Some(obj),
        404 => None,
        _ => panic!("GET {path}: {code} {obj}"),
    }
}

pub(crate) async fn delete(srv: &TestServer, path: &str, policy: &str) -> (u16, Value) {
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
    srv.send_json("DELETE", path, serde_json::to_vec(&body).unwrap())
        .await
}

/// Wait until `check` gives `Some`, panicking with `what` after [`PATIENCE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn gone(srv: &TestServer, path: &str) {
    eventually(&format!("{path} to be deleted"), || async {
        get(srv, path).await.is_none().then_some(())
    })
    .await
}

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({"apiVersion": owner["apiVersion"], "kind": owner["kind"],
           "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
           "controller": true, "blockOwnerDeletion": block})
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// Deployment `web` → ReplicaSet `web-1` → Pod `web-1-a`; the pod may carry finalizers.
struct Chain {
    deploy: String,
    rs: String,
    pod: String,
}

async fn chain(srv: &TestServer, ns: &str, block: bool, pod_finalizers: &[&str]) -> Chain {
    let apps = format!("/apis/apps/v1/namespaces/{ns}");
    let d = create(
        srv,
        &format!("{apps}/deployments"),
        json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}),
    )
    .await;
    let rs = create(
        srv,
        &format!("{apps}/replicasets"),
        json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-1", "ownerReferences": [owner_ref(&d, block)]},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}}),
    )
    .await;
    create(
        srv,
        &format!("/api/v1/namespaces/{ns}/pods"),
        json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1-a", "labels": {"app": "web"},
                     "finalizers": pod_finalizers, "ownerReferences": [owner_ref(&rs, block)]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .await;
    Chain {
        deploy: format!("{apps}/deployments/web"),
        rs: format!("{apps}/replicasets/web-1"),
        pod: format!("/api/v1/namespaces/{ns}/pods/web-1-a"),
    }
}

fn finalizers(obj: &Value) -> Vec<String> {
    serde_json::from_value(obj["metadata"]["finalizers"].clone()).unwrap_or_default()
}

async fn drop_finalizers(srv: &TestServer, path: &str) {
    let patch = json!({"metadata": {"finalizers": null}});
    let req = http::Request::patch(path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&patch).unwrap())
        .unwrap();
    let (code, body) = srv.raw(req).await;
    assert!(code == 200 || code == 404, "patch {path}: {code} {body}");
}

#[tokio::test]
async fn background_deletion_collects_the_whole_chain() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-bg").await;
    let c = chain(&srv, &ns, true, &[]).await;
    let (code, _) = delete(&srv, &c.deploy, "Background").await;
    assert_eq!(code, 200);
    assert!(get(&srv, &c.deploy).await.is_none());
    gone(&srv, &c.rs).await;
    gone(&srv, &c.pod).await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-fg").await;
    let c = chain(&srv, &ns, true, &["example.com/hold"]).await;
    let (code, owner) = delete(&srv, &c.deploy, "Foreground").await;
    assert_eq!(code, 200, "{owner}");
    assert_eq!(finalizers(&owner), vec!["foregroundDeletion"]);
    assert!(owner["metadata"]["deletionTimestamp"].is_string());
    // The ReplicaSet has a dependent and a waiting owner: deleted in the foreground too.
    let pod = eventually("the pod to be deleting", || async {
        get(&srv, &c.pod)
            .await
            .filter(|p| p["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    assert_eq!(finalizers(&pod), vec!["example.com/hold"]);
    let rs = get(&srv, &c.rs)
        .await
        .expect("the replicaset waits for its pod");
    assert!(rs["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(finalizers(&rs), vec!["foregroundDeletion"]);
    let d = get(&srv, &c.deploy).await.expect("the deployment waits");
    assert_eq!(finalizers(&d), vec!["foregroundDeletion"]);
    drop_finalizers(&srv, &c.pod).await;
    gone(&srv, &c.pod).await;
    gone(&srv, &c.rs).await;
    gone(&srv, &c.deploy).await;
}

#[tokio::test]
async fn foreground_deletion_does_not_wait_for_non_blocking_dependents() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-nb").await;
    let c = chain(&srv, &ns, false, &["example.com/hold"]).await;
    delete(&srv, &c.rs, "Foreground").await;
    // The pod does not block: the replicaset goes while the pod is held.
    gone(&srv, &c.rs).await;
    let pod = get(&srv, &c.pod).await.expect("held by its finalizer");
    assert!(pod["metadata"]["deletionTimestamp"].is_string());
    assert!(get(&srv, &c.deploy).await.is_some());
    drop_finalizers(&srv, &c.pod).await;
    gone(&srv, &c.pod).await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents_without_the_reference() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-orphan").await;
    let c = chain(&srv, &ns, true, &[]).await;
    let (code, owner) = delete(&srv, &c.deploy, "Orphan").await;
    assert_eq!(code, 200);
    assert_eq!(finalizers(&owner), vec!["orphan"]);
    gone(&srv, &c.deploy).await;
    let rs = get(&srv, &c.rs).await.expect("orphaned, not deleted");
    assert!(rs["metadata"]["ownerReferences"].is_null(), "{rs}");
    assert!(rs["metadata"]["deletionTimestamp"].is_null());
    let pod = get(&srv, &c.pod).await.expect("untouched");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["name"], "web-1");
}

#[tokio::test]
async fn legacy_orphan_dependents_flag() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-legacy").await;
    let c = chain(&srv, &ns, true, &[]).await;
    let body = json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true});
    let (code, owner) = srv
        .send_json("DELETE", &c.deploy, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(
        (code, finalizers(&owner)),
        (200, vec!["orphan".to_string()])
    );
    gone(&srv, &c.deploy).await;
    let rs = eventually("the reference to be removed", || async {
        get(&srv, &c.rs)
            .await
            .filter(|rs| rs["metadata"]["ownerReferences"].is_null())
    })
    .await;
    assert!(rs["metadata"]["deletionTimestamp"].is_null());
    // Both options together are refused, as upstream.
    let both = json!({"orphanDependents": false, "propagationPolicy": "Foreground"});
    let (code, status) = srv
        .send_json("DELETE", &c.rs, serde_json::to_vec(&both).unwrap())
        .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["details"]["kind"], "DeleteOptions");
    assert_eq!(
        status["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
    );
    let bogus = json!({"propagationPolicy": "Sometimes"});
    let (code, _) = srv
        .send_json("DELETE", &c.rs, serde_json::to_vec(&bogus).unwrap())
        .await;
    assert_eq!(code, 422);
    assert!(get(&srv, &c.rs).await.is_some());
}

#[tokio::test]
async fn delete_options_change_gc_finalizers_of_a_deleting_object() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-switch").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    create(
        &srv,
        &path,
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let one = format!("{path}/held");
    let (_, first) = delete(&srv, &one, "Orphan").await;
    assert_eq!(finalizers(&first), vec!["example.com/hold", "orphan"]);
    let stamp = first["metadata"]["deletionTimestamp"].clone();
    let (_, second) = delete(&srv, &one, "Foreground").await;
    assert_eq!(second["metadata"]["deletionTimestamp"], stamp);
    let f = finalizers(&second);
    assert!(f.contains(&"example.com/hold".to_string()) && !f.contains(&"orphan".to_string()));
    drop_finalizers(&srv, &one).await;
    gone(&srv, &one).await;
}

#[tokio::test]
async fn dangling_and_stale_references() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-dangling").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let owner = create(&srv, &path, json!({"metadata": {"name": "owner"}})).await;
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost",
                       "uid": "00000000-0000-0000-0000-00000000dead"});
    // Two owners, one gone: only the dangling reference is removed.
    create(
        &srv,
        &path,
        json!({"metadata": {"name": "two-owners",
        "ownerReferences": [owner_ref(&owner, false), ghost]}}),
    )
    .await;
    // The owner's name with another uid: the owner was recreated, the reference dangles.
    let mut stale = owner_ref(&owner, false);
    stale["uid"] = json!("00000000-0000-0000-0000-0000000000aa");
    create(
        &srv,
        &path,
        json!({"metadata": {"name": "stale", "ownerReferences": [stale]}}),
    )
    .await;
    gone(&srv, &format!("{path}/stale")).await;
    let kept = eventually("the dangling reference to be removed", || async {
        get(&srv, &format!("{path}/two-owners"))
            .await
            .filter(|o| o["metadata"]["ownerReferences"].as_array().map(Vec::len) == Some(1))
    })
    .await;
    assert_eq!(kept["metadata"]["ownerReferences"][0]["name"], "owner");
    assert!(get(&srv, &format!("{path}/owner")).await.is_some());
}

#[tokio::test]
async fn owner_recreated_with_the_same_name_does_not_adopt() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-recreate").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let first = create(&srv, &path, json!({"metadata": {"name": "owner"}})).await;
    let (code, _) = delete(&srv, &format!("{path}/owner"), "Orphan").await;
    assert_eq!(code, 200);
    gone(&srv, &format!("{path}/owner")).await;
    create(&srv, &path, json!({"metadata": {"name": "owner"}})).await;
    // A dependent of the first owner, created after its owner was recreated.
    create(
        &srv,
        &path,
        json!({"metadata": {"name": "child",
        "ownerReferences": [owner_ref(&first, true)]}}),
    )
    .await;
    gone(&srv, &format!("{path}/child")).await;
    assert!(get(&srv, &format!("{path}/owner")).await.is_some());
}

#[tokio::test]
async fn cluster_scoped_owner_of_namespaced_dependents() {
    let srv = harness::start().await;
    let ns = srv.namespace("gc-cluster").await;
    let node = create(&srv, "/api/v1/nodes", json!({"metadata": {"name": "n1"}})).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    create(
        &srv,
        &path,
        json!({"metadata": {"name": "on-node",
        "ownerReferences": [owner_ref(&node, false)]}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(get(&srv, &format!("{path}/on-node")).await.is_some());
    delete(&srv, "/api/v1/nodes/n1", "Background").await;
    gone(&srv, &format!("{path}/on-node")).await;
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_and_the_root_ca() {
    let srv = harness::start_with_all_controllers().await;
    let ns = srv.namespace("with-defaults").await;
    let sa_path = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    let cm_path = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
    let sa = eventually("the default service account", || get(&srv, &sa_path)).await;
    let cm = eventually("kube-root-ca.crt", || get(&srv, &cm_path)).await;
    let ca = cm["data"]["ca.crt"].as_str().expect("ca.crt").to_owned();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    assert!(cm["metadata"]["annotations"]["kubernetes.io/description"]
        .as_str()
        .unwrap()
        .starts_with("Contains a CA bundle"));
    // Deleted: recreated.
    srv.send_json("DELETE", &sa_path, Vec::new()).await;
    eventually("a new default service account", || async {
        get(&srv, &sa_path)
            .await
            .filter(|n| n["metadata"]["uid"] != sa["metadata"]["uid"])
    })
    .await;
    srv.send_json("DELETE", &cm_path, Vec::new()).await;
    eventually("a new kube-root-ca.crt", || async {
        get(&srv, &cm_path)
            .await
            .filter(|n| n["metadata"]["uid"] != cm["metadata"]["uid"])
    })
    .await;
    // Edited: put back.
    let edit = json!({"data": {"ca.crt": "tampered", "extra": "x"}});
    let req = http::Request::patch(&cm_path)
        .header("content-type", "application/merge-patch+json")
        .body(serde_json::to_vec(&edit).unwrap())
        .unwrap();
    assert_eq!(srv.raw(req).await.0, 200);
    eventually("the CA bundle to be restored", || async {
        get(&srv, &cm_path)
            .await
            .filter(|c| c["data"] == json!({"ca.crt": ca}))
    })
    .await;
}

#[tokio::test]
async fn the_kubernetes_service_has_endpoints_at_the_server() {
    let srv = harness::start().await;
    let svc = get(&srv, "/api/v1/namespaces/default/services/kubernetes")
        .await
        .expect("service");
    let port = svc["spec"]["ports"][0]["targetPort"].clone();
    let path = "/api/v1/namespaces/default/endpoints/kubernetes";
    let ep = eventually("the kubernetes endpoints", || get(&srv, path)).await;
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port);
    assert_eq!(ep["subsets"][0]["ports"][0]["name"], "https");
    assert_eq!(
        ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"],
        "true"
    );
    srv.send_json("DELETE", path, Vec::new()).await;
    eventually("the endpoints to come back", || async {
        get(&srv, path)
            .await
            .filter(|e| e["metadata"]["uid"] != ep["metadata"]["uid"])
    })
    .await;
    // The EndpointSlice exists when (and only when) its resource is served.
    let (code, _) = srv.get_json("/apis/discovery.k8s.io/v1").await;
    if code == 200 {
        let slice_path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes";
        let slice = eventually("the kubernetes endpointslice", || get(&srv, slice_path)).await;
        assert_eq!(slice["addressType"], "IPv4");
        assert_eq!(slice["endpoints"][0]["addresses"][0], "127.0.0.1");
        assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
        assert_eq!(slice["ports"][0]["port"], port);
        assert_eq!(
            slice["metadata"]["labels"]["kubernetes.io/service-name"],
            "kubernetes"
        );
    }
    srv.send_json(
        "DELETE",
        "/api/v1/namespaces/default/services/kubernetes",
        Vec::new(),
    )
    .await;
    eventually("the kubernetes service to come back", || async {
        get(&srv, "/api/v1/namespaces/default/services/kubernetes")
            .await
            .filter(|s| s["metadata"]["uid"] != svc["metadata"]["uid"])
    })
    .await;
}

fn condition<'a>(ns: &'a Value, ty: &str) -> Option<&'a Value> {
    ns["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

#[tokio::test]
async fn namespace_deletion_reports_progress_and_finishes() {
    let srv = harness::start_with_all_controllers().await;
    let ns = srv.namespace("doomed").await;
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    create(&srv, &cms, json!({"metadata": {"name": "plain"}})).await;
    create(
        &srv,
        &cms,
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let ns_path = format!("/api/v1/namespaces/{ns}");
    let (code, body) = srv.send_json("DELETE", &ns_path, Vec::new()).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Terminating");
    let terminating = eventually("the finalizer conditions", || async {
        get(&srv, &ns_path).await.filter(|n| {
            condition(n, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True")
        })
    })
    .await;
    let c = |ty| condition(&terminating, ty).expect(ty).clone();
    assert_eq!(
        c("NamespaceFinalizersRemaining")["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    assert_eq!(
        c("NamespaceFinalizersRemaining")["reason"],
        "SomeFinalizersRemain"
    );
    assert_eq!(
        c("NamespaceContentRemaining")["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    assert_eq!(c("NamespaceDeletionDiscoveryFailure")["status"], "False");
    assert_eq!(
        c("NamespaceDeletionDiscoveryFailure")["reason"],
        "ResourcesDiscovered"
    );
    assert_eq!(
        c("NamespaceDeletionContentFailure")["reason"],
        "ContentDeleted"
    );
    assert_eq!(terminating["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(get(&srv, &format!("{cms}/plain")).await.is_none());
    // New content is refused while terminating.
    let (code, _) = srv
        .send_json(
            "POST",
            &cms,
            serde_json::to_vec(&json!({"metadata": {"name": "late"}})).unwrap(),
        )
        .await;
    assert_eq!(code, 403);
    drop_finalizers(&srv, &format!("{cms}/held")).await;
    gone(&srv, &ns_path).await;
}

#[tokio::test]
async fn the_finalize_subresource_replaces_spec_finalizers() {
    let srv = harness::start().await;
    let ns = srv.namespace("finalize-me").await;
    let (code, disc) = srv.get_json("/api/v1").await;
    assert_eq!(code, 200);
    let fin = disc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces/finalize")
        .expect("namespaces/finalize in discovery")
        .clone();
    assert_eq!(fin["verbs"], json!(["update"]));
    let path = format!("/api/v1/namespaces/{ns}/finalize");
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                      "spec": {"finalizers": []}});
    let (code, out) = srv
        .send_json("PUT", &path, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(code, 200, "{out}");
    assert!(
        out["spec"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{out}"
    );
    // Without its finalizer the namespace goes at once when deleted.
    let (code, _) = srv
        .send_json("DELETE", &format!("/api/v1/namespaces/{ns}"), Vec::new())
        .await;
    assert_eq!(code, 200);
    gone(&srv, &format!("/api/v1/namespaces/{ns}")).await;
}

#[tokio::test]
async fn without_the_garbage_collector_gc_finalizers_stay() {
    // As with an external kube-controller-manager that is not running: the
    // apiserver still adds the finalizer, nobody in kapi removes it.
    let srv = harness::start_with_controllers(&["*", "-garbagecollector"]).await;
    let ns = srv.namespace("no-gc").await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    create(&srv, &path, json!({"metadata": {"name": "owner"}})).await;
    let (code, owner) = delete(&srv, &format!("{path}/owner"), "Orphan").await;
    assert_eq!(
        (code, finalizers(&owner)),
        (200, vec!["orphan".to_string()])
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let still = get(&srv, &format!("{path}/owner"))
        .await
        .expect("kept by its finalizer");
    assert_eq!(finalizers(&still), vec!["orphan"]);
}
