//! The codec scenario: protobuf versus JSON encode and decode cost of one
//! object, for a Pod (a Deployment-made pod: two containers, env, probes,
//! volumes, status) and a ConfigMap (ten keys), in this process, no server.
//! "JSON" is what kapi does on its slow path (`serde_json` from and to a
//! `Value`); "protobuf" is the enveloped form `kapi_protobuf` writes and reads,
//! from and to the same `Value`.

use std::hint::black_box;
use std::time::Instant;

use serde_json::{json, Value};

fn pod() -> Value {
    let container = |name: &str| {
        json!({
            "name": name, "image": "registry.example/app:1.2.3", "imagePullPolicy": "IfNotPresent",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "env": [{"name": "MODE", "value": "fast"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}],
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                              "initialDelaySeconds": 5, "periodSeconds": 10, "timeoutSeconds": 1,
                              "successThreshold": 1, "failureThreshold": 3},
            "volumeMounts": [{"name": "conf", "mountPath": "/etc/app", "readOnly": true}],
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        })
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web-7d4b9c8f5-x2x9z", "generateName": "web-7d4b9c8f5-", "namespace": "default",
            "uid": "3c1b7f2e-5a4d-4e0b-9a57-1f0e6c2d8b11", "resourceVersion": "123456",
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c8f5"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f5",
                                 "uid": "9b7c1f4e-2a3d-4c5b-8e6f-7a8b9c0d1e2f", "controller": true,
                                 "blockOwnerDeletion": true}],
        },
        "spec": {
            "containers": [container("app"), container("sidecar")],
            "volumes": [{"name": "conf", "configMap": {"name": "app-conf", "defaultMode": 420}}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": "node-1", "schedulerName": "default-scheduler",
            "securityContext": {}, "enableServiceLinks": true, "priority": 0,
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.5", "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}],
            "startTime": "2024-05-06T07:08:10Z", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-06T07:08:20Z"}],
        },
    })
}

fn configmap() -> Value {
    let data: serde_json::Map<String, Value> = (0..10)
        .map(|i| {
            (
                format!("key-{i}"),
                json!(format!("value number {i} with some text")),
            )
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "settings", "namespace": "default", "resourceVersion": "42",
                        "uid": "0f4e3d2c-1b0a-4f9e-8d7c-6b5a4f3e2d1c",
                        "creationTimestamp": "2024-05-06T07:08:09Z", "labels": {"tier": "web"}},
           "data": data})
}

/// Nanoseconds per call of `f`, the best of five rounds of `n` calls.
fn time(n: u32, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..n {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(n)
        })
        .fold(f64::INFINITY, f64::min)
}

/// One row per object: nanoseconds per encode and decode, bytes per encoding.
pub fn run(iterations: u32) -> Vec<Value> {
    let mut rows = Vec::new();
    for (name, obj) in [("Pod", pod()), ("ConfigMap", configmap())] {
        let json_bytes = serde_json::to_vec(&obj).expect("JSON");
        let pb_bytes = kapi_protobuf::encode_object(&obj).expect("a built-in kind");
        assert_eq!(
            kapi_protobuf::decode_object(&pb_bytes, None).expect("round trip"),
            obj
        );
        let je = time(iterations, || {
            black_box(serde_json::to_vec(black_box(&obj)).expect("JSON"));
        });
        let pe = time(iterations, || {
            black_box(kapi_protobuf::encode_object(black_box(&obj)).expect("protobuf"));
        });
        let jd = time(iterations, || {
            black_box(serde_json::from_slice::<Value>(black_box(&json_bytes)).expect("JSON"));
        });
        let pd = time(iterations, || {
            black_box(kapi_protobuf::decode_object(black_box(&pb_bytes), None).expect("protobuf"));
        });
        rows.push(json!({
            "object": name,
            "json_encode_ns": je.round(), "protobuf_encode_ns": pe.round(),
            "json_decode_ns": jd.round(), "protobuf_decode_ns": pd.round(),
            "json_bytes": json_bytes.len(), "protobuf_bytes": pb_bytes.len(),
        }));
    }
    rows
}

pub fn print_table(rows: &[Value]) {
    println!("| object | JSON encode | protobuf encode | JSON decode | protobuf decode | JSON bytes | protobuf bytes |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} ns | {} ns | {} ns | {} ns | {} | {} |",
            r["object"].as_str().unwrap_or(""),
            r["json_encode_ns"],
            r["protobuf_encode_ns"],
            r["json_decode_ns"],
            r["protobuf_decode_ns"],
            r["json_bytes"],
            r["protobuf_bytes"]
        );
    }
}
