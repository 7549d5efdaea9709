//! What a write through `status` keeps of the client's metadata, kind by kind,
//! as upstream's status strategies decide (checked against kube-apiserver
//! 1.28.4 by hand; 1.33's strategies are the same for these kinds): most
//! built-in kinds keep the client's labels, annotations, finalizers and owner
//! references (only `spec` is reset); deployments keep their stored labels,
//! pods their stored owner references; volume attachments, API services and
//! admission policies keep all four as stored (`ResetObjectMetaForStatus`);
//! flow control objects and custom resources keep their stored metadata.
//!
//! The table must name every resource discovery lists with a `status`
//! subresource, so a new one cannot go unchecked.

use serde_json::{json, Value};

use crate::crd::{crontab_crd, establish};
use crate::harness::{self, TestServer};

const ALL: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];
const NONE: &[&str] = &[];

/// One resource: its collection path, an object to create there, and the
/// metadata fields a status write takes from the client.
struct Row {
    collection: &'static str,
    object: Value,
    kept: &'static [&'static str],
}

fn row(collection: &'static str, object: Value, kept: &'static [&'static str]) -> Row {
    Row {
        collection,
        object,
        kept,
    }
}

fn pod_template(app: &str) -> Value {
    json!({"metadata": {"labels": {"a": app}},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

fn workloads() -> Vec<Row> {
    let sel = |app: &str| json!({"matchLabels": {"a": app}});
    vec![
        row(
            "/apis/apps/v1/namespaces/st/deployments",
            json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "o"},
                   "spec": {"selector": sel("d"), "template": pod_template("d")}}),
            &["annotations", "finalizers", "ownerReferences"],
        ),
        row(
            "/apis/apps/v1/namespaces/st/daemonsets",
            json!({"kind": "DaemonSet", "apiVersion": "apps/v1", "metadata": {"name": "o"},
                   "spec": {"selector": sel("ds"), "template": pod_template("ds")}}),
            ALL,
        ),
        row(
            "/apis/apps/v1/namespaces/st/replicasets",
            json!({"kind": "ReplicaSet", "apiVersion": "apps/v1", "metadata": {"name": "o"},
                   "spec": {"replicas": 0, "selector": sel("rs"), "template": pod_template("rs")}}),
            ALL,
        ),
        row(
            "/apis/apps/v1/namespaces/st/statefulsets",
            json!({"kind": "StatefulSet", "apiVersion": "apps/v1", "metadata": {"name": "o"},
                   "spec": {"replicas": 0, "serviceName": "x", "selector": sel("ss"),
                            "template": pod_template("ss")}}),
            ALL,
        ),
        row(
            "/api/v1/namespaces/st/replicationcontrollers",
            json!({"kind": "ReplicationController", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"replicas": 0, "selector": {"a": "rc"}, "template": pod_template("rc")}}),
            ALL,
        ),
        row(
            "/apis/batch/v1/namespaces/st/jobs",
            json!({"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "o"},
                   "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}]}}}}),
            ALL,
        ),
        row(
            "/apis/batch/v1/namespaces/st/cronjobs",
            json!({"kind": "CronJob", "apiVersion": "batch/v1", "metadata": {"name": "o"},
                   "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                       "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
            ALL,
        ),
        row(
            "/api/v1/namespaces/st/pods",
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
            &["labels", "annotations", "finalizers"],
        ),
    ]
}

fn core_and_networking() -> Vec<Row> {
    vec![
        row(
            "/api/v1/namespaces/st/services",
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"ports": [{"port": 80}]}}),
            ALL,
        ),
        row(
            "/api/v1/namespaces/st/resourcequotas",
            json!({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"hard": {"pods": "100"}}}),
            ALL,
        ),
        row(
            "/api/v1/namespaces/st/persistentvolumeclaims",
            json!({"kind": "PersistentVolumeClaim", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "none",
                            "resources": {"requests": {"storage": "1Gi"}}}}),
            ALL,
        ),
        row(
            "/api/v1/persistentvolumes",
            json!({"kind": "PersistentVolume", "apiVersion": "v1", "metadata": {"name": "o"},
                   "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                            "hostPath": {"path": "/tmp/x"}}}),
            ALL,
        ),
        row(
            "/api/v1/nodes",
            json!({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "o"}}),
            ALL,
        ),
        row(
            "/api/v1/namespaces",
            json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "o"}}),
            ALL,
        ),
        row(
            "/apis/networking.k8s.io/v1/namespaces/st/ingresses",
            json!({"kind": "Ingress", "apiVersion": "networking.k8s.io/v1", "metadata": {"name": "o"},
                   "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
            ALL,
        ),
        row(
            "/apis/policy/v1/namespaces/st/poddisruptionbudgets",
            json!({"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "o"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "x"}}}}),
            ALL,
        ),
        row(
            "/apis/autoscaling/v2/namespaces/st/horizontalpodautoscalers",
            json!({"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
                   "metadata": {"name": "o"},
                   "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": "d"}, "minReplicas": 1, "maxReplicas": 2}}),
            ALL,
        ),
    ]
}

fn cluster_kinds() -> Vec<Row> {
    vec![
        row(
            "/apis/certificates.k8s.io/v1/certificatesigningrequests",
            json!({"kind": "CertificateSigningRequest", "apiVersion": "certificates.k8s.io/v1",
                   "metadata": {"name": "o"},
                   "spec": {"signerName": "example.com/x", "usages": ["digital signature"],
                            "request": crate::reviews::csr_pem()}}),
            ALL,
        ),
        row(
            "/apis/storage.k8s.io/v1/volumeattachments",
            json!({"kind": "VolumeAttachment", "apiVersion": "storage.k8s.io/v1",
                   "metadata": {"name": "o"},
                   "spec": {"attacher": "x.csi", "nodeName": "n1",
                            "source": {"persistentVolumeName": "pv1"}}}),
            NONE,
        ),
        row(
            "/apis/apiregistration.k8s.io/v1/apiservices",
            json!({"kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1",
                   "metadata": {"name": "v1.local.example.com"},
                   "spec": {"group": "local.example.com", "version": "v1",
                            "groupPriorityMinimum": 100, "versionPriority": 10}}),
            NONE,
        ),
        row(
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            json!({"kind": "ValidatingAdmissionPolicy",
                   "apiVersion": "admissionregistration.k8s.io/v1", "metadata": {"name": "o"},
                   "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
                            "apiVersions": ["v1"], "operations": ["CREATE"],
                            "resources": ["configmaps"]}]},
                            "validations": [{"expression": "true"}]}}),
            NONE,
        ),
        row(
            "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
            json!({"kind": "PriorityLevelConfiguration",
                   "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "metadata": {"name": "o"},
                   "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
                            "limitResponse": {"type": "Reject"}}}}),
            NONE,
        ),
        row(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            json!({"kind": "FlowSchema", "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                   "metadata": {"name": "o"},
                   "spec": {"priorityLevelConfiguration": {"name": "o"}, "matchingPrecedence": 9000}}),
            NONE,
        ),
        row(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json!(null),
            ALL,
        ),
        row(
            "/apis/stable.example.com/v1/namespaces/st/crontabs",
            json!({"kind": "CronTab", "apiVersion": "stable.example.com/v1",
                   "metadata": {"name": "o"}, "spec": {"replicas": 1}}),
            NONE,
        ),
    ]
}

/// Every `<resource>/status` discovery lists, as `<group-version path>/<resource>`.
async fn discovered_status(s: &TestServer) -> Vec<String> {
    let mut paths = vec!["/api/v1".to_owned()];
    let (_, groups) = s.get_json("/apis").await;
    for g in groups["groups"].as_array().unwrap() {
        for v in g["versions"].as_array().unwrap() {
            paths.push(format!("/apis/{}", v["groupVersion"].as_str().unwrap()));
        }
    }
    let mut out = Vec::new();
    for p in paths {
        let (_, list) = s.get_json(&p).await;
        for r in list["resources"].as_array().unwrap() {
            let name = r["name"].as_str().unwrap();
            if let Some(res) = name.strip_suffix("/status") {
                out.push(format!("{p}/{res}"));
            }
        }
    }
    out
}

/// The group and resource of a path (`/apis/apps/v1/namespaces/st/deployments`).
fn group_resource(path: &str) -> (String, String) {
    let parts: Vec<&str> = path.split('/').collect();
    let group = if parts[1] == "api" { "" } else { parts[2] };
    (group.to_owned(), parts.last().unwrap().to_string())
}

/// Whether `out` carries the client's value of metadata field `f` (as sent
/// in `patch`; labels and annotations are merged into what is there).
fn took(out: &Value, patch: &Value, f: &str) -> bool {
    let (got, sent) = (&out["metadata"][f], &patch["metadata"][f]);
    match f {
        "labels" | "annotations" => sent.as_object().unwrap().iter().all(|(k, v)| &got[k] == v),
        _ => got == sent,
    }
}

#[tokio::test]
async fn status_writes_keep_the_metadata_upstreams_strategies_keep() {
    let s = harness::start().await;
    s.namespace("st").await;
    let (_, owner) = s.get_json("/api/v1/namespaces/st").await;
    let owner_ref = json!([{"apiVersion": "v1", "kind": "Namespace", "name": "st",
                            "uid": owner["metadata"]["uid"]}]);
    establish(&s, crontab_crd()).await;
    let mut rows = workloads();
    rows.extend(core_and_networking());
    rows.extend(cluster_kinds());

    let mut listed = discovered_status(&s).await;
    listed.sort();
    listed.dedup();
    for l in &listed {
        assert!(
            rows.iter()
                .any(|r| group_resource(r.collection) == group_resource(l)),
            "{l} has a status subresource but no row"
        );
    }

    let patch = json!({"metadata": {"labels": {"x": "y"}, "annotations": {"a": "b"},
                                    "finalizers": ["example.com/f"], "ownerReferences": owner_ref},
                       "status": {}});
    for r in rows {
        let url = if r.object.is_null() {
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com"
                .to_owned()
        } else {
            let body = serde_json::to_vec(&r.object).unwrap();
            let (code, created) = s.send_json("POST", r.collection, body).await;
            assert_eq!(code, 201, "{}: {created}", r.collection);
            format!(
                "{}/{}",
                r.collection,
                created["metadata"]["name"].as_str().unwrap()
            )
        };
        let req = http::Request::patch(format!("{url}/status"))
            .header("content-type", "application/merge-patch+json")
            .body(serde_json::to_vec(&patch).unwrap())
            .unwrap();
        let (code, out) = s.raw(req).await;
        assert_eq!(code, 200, "{url}: {out}");
        for f in ALL {
            let kept = took(&out, &patch, f);
            assert_eq!(kept, r.kept.contains(f), "{url}: metadata.{f} in {out:#}");
        }
    }
}
