//! What kube-apiserver adds to the objects it creates, beyond their kinds'
//! defaults: the structs Go always writes, generations, the fields of the
//! creating manager, the admission plugins on by default (checked against
//! 1.28.4 by hand).

use serde_json::{json, Value};

use crate::harness;

/// What kube-apiserver's Go types and strategies add to created objects,
/// checked against 1.28.4 by hand: non-pointer structs are always written
/// (a CronJob's job and pod template metadata, a PodTemplate's template
/// metadata, an endpoint's conditions), a persistent volume's `hostPath`
/// gets its empty type, PodTemplates and EndpointSlices count generations,
/// a binding's `roleRef` is one atomic field for its manager, and a new Node
/// is tainted not-ready (TaintNodesByCondition, on by default).
#[tokio::test]
async fn created_objects_hold_what_upstream_adds() {
    let s =
        harness::start_configured(|o| o.admission = kapi_admission_plugins::Selection::default())
            .await;
    let post = |path: &'static str, body: Value| {
        let s = &s;
        async move {
            let (code, out) = s
                .send_json("POST", path, serde_json::to_vec(&body).unwrap())
                .await;
            assert_eq!(code, 201, "{path}: {out}");
            out
        }
    };
    let none = json!({"creationTimestamp": null});
    let cj = post(
        "/apis/batch/v1/namespaces/default/cronjobs",
        json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
    )
    .await;
    assert_eq!(cj["spec"]["jobTemplate"]["metadata"], none, "{cj}");
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["metadata"], none,
        "{cj}"
    );

    let pt = post(
        "/api/v1/namespaces/default/podtemplates",
        json!({
        "apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt"},
        "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}),
    )
    .await;
    assert_eq!(pt["template"]["metadata"], none, "{pt}");
    assert_eq!(pt["metadata"]["generation"], 1, "{pt}");
    let req = http::Request::patch("/api/v1/namespaces/default/podtemplates/pt")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"template":{"spec":{"activeDeadlineSeconds":5}}}"#.to_vec())
        .unwrap();
    let (code, pt) = s.raw(req).await;
    assert_eq!(
        (code, &pt["metadata"]["generation"]),
        (200, &json!(2)),
        "{pt}"
    );

    let es = post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "es"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.1.1"]}], "ports": [{"port": 80}]})).await;
    assert_eq!(es["endpoints"][0]["conditions"], json!({}), "{es}");
    assert_eq!(es["metadata"]["generation"], 1, "{es}");

    let pv = post(
        "/api/v1/persistentvolumes",
        json!({
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp"}}}),
    )
    .await;
    assert_eq!(
        pv["spec"]["hostPath"],
        json!({"path": "/tmp", "type": ""}),
        "{pv}"
    );

    let crb = post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u"}]}),
    )
    .await;
    let fields = &crb["metadata"]["managedFields"][0]["fieldsV1"];
    assert_eq!(fields["f:roleRef"], json!({}), "{fields}");

    let node = post(
        "/api/v1/nodes",
        json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}}),
    )
    .await;
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "a", "effect": "NoExecute"},
               {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        "{node}"
    );
    // An empty status as Go writes it; not the creating manager's fields.
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(node["status"]["nodeInfo"]["machineID"], "", "{node}");
    let fields = &node["metadata"]["managedFields"][0]["fieldsV1"];
    assert!(fields.get("f:status").is_none(), "{fields}");

    // A replication controller's template is a pointer: its metadata's null
    // creationTimestamp is a field of the creating manager, as upstream.
    let rc = post(
        "/api/v1/namespaces/default/replicationcontrollers",
        json!({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "rc"}},
                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    )
    .await;
    assert_eq!(
        rc["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:metadata"],
        json!({".": {}, "f:creationTimestamp": {}, "f:labels": {".": {}, "f:app": {}}}),
        "{rc}"
    );

    // A CSI driver's lifecycle modes are a set: its manager owns each value.
    let csi = post(
        "/apis/storage.k8s.io/v1/csidrivers",
        json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": "csi.example.com"}, "spec": {}}),
    )
    .await;
    assert_eq!(
        csi["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:volumeLifecycleModes"],
        json!({".": {}, "v:\"Persistent\"": {}}),
        "{csi}"
    );

    // autoscaling/v1 defaults the CPU target (the sender's field); its
    // scaleTargetRef is atomic. A ControllerRevision's data is one value.
    let hpa = post("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                 "maxReplicas": 3}})).await;
    assert_eq!(hpa["spec"]["targetCPUUtilizationPercentage"], 80, "{hpa}");
    let spec = &hpa["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert_eq!(spec["f:scaleTargetRef"], json!({}), "{spec}");
    assert!(
        spec.get("f:targetCPUUtilizationPercentage").is_some(),
        "{spec}"
    );
    let rev = post(
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"},
        "revision": 1, "data": {"a": 1}}),
    )
    .await;
    assert_eq!(
        rev["metadata"]["managedFields"][0]["fieldsV1"]["f:data"],
        json!({}),
        "{rev}"
    );

    // A PriorityClass's generation is 1 from its creation on.
    let pc = post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "pc"}, "value": 1000}),
    )
    .await;
    assert_eq!(pc["metadata"]["generation"], 1, "{pc}");
    let req = http::Request::patch("/apis/scheduling.k8s.io/v1/priorityclasses/pc")
        .header("content-type", "application/merge-patch+json")
        .body(br#"{"description":"changed"}"#.to_vec())
        .unwrap();
    let (code, pc) = s.raw(req).await;
    assert_eq!(
        (code, &pc["metadata"]["generation"]),
        (200, &json!(1)),
        "{pc}"
    );
}
