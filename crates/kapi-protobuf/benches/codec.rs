//! Codec benchmark: protobuf versus JSON encode and decode of one object, for a
//! Pod (a realistic Deployment-made pod: two containers, env, probes, volumes,
//! status) and a ConfigMap (ten keys).
//!
//! `cargo bench -p kapi-protobuf --bench codec` (add `-- --quick` for a short
//! run). Prints a Markdown table of nanoseconds per object and encoded sizes.
//! "JSON" is what kapi does today: `serde_json` from and to `Value`;
//! "protobuf" is the enveloped form `kapi_protobuf` writes and reads, from and
//! to the same `Value`.

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

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 2_000 } else { 20_000 };
    println!("| object | JSON encode | protobuf encode | JSON decode | protobuf decode | JSON bytes | protobuf bytes |");
    println!("|---|---|---|---|---|---|---|");
    for (name, obj) in [("Pod", pod()), ("ConfigMap", configmap())] {
        let json_bytes = serde_json::to_vec(&obj).unwrap();
        let pb_bytes = kapi_protobuf::encode_object(&obj).unwrap();
        assert_eq!(kapi_protobuf::decode_object(&pb_bytes, None).unwrap(), obj);
        let je = time(n, || {
            black_box(serde_json::to_vec(black_box(&obj)).unwrap());
        });
        let pe = time(n, || {
            black_box(kapi_protobuf::encode_object(black_box(&obj)).unwrap());
        });
        let jd = time(n, || {
            black_box(serde_json::from_slice::<Value>(black_box(&json_bytes)).unwrap());
        });
        let pd = time(n, || {
            black_box(kapi_protobuf::decode_object(black_box(&pb_bytes), None).unwrap());
        });
        println!(
            "| {name} | {je:.0} ns | {pe:.0} ns | {jd:.0} ns | {pd:.0} ns | {} | {} |",
            json_bytes.len(),
            pb_bytes.len()
        );
    }
}
