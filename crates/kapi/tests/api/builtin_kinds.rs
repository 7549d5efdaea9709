//! The other built-in resources through the kube client: one round trip per kind
//! (create with defaults, get, list, patch, a 422 with upstream's cause, delete,
//! watch) for core pod templates, replication controllers (+scale), persistent
//! volumes and claims, limit ranges, quotas; policy PDBs; leases; endpoint slices;
//! ingresses, ingress classes, network policies; controller revisions.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{
    DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use crate::harness::{self, api_error, dynamic, TestServer};

/// One kind's round trip.
struct Case {
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    valid: Value,
    /// A merge patch that must succeed, and a pointer + value it must produce.
    patch: Value,
    patched: (&'static str, Value),
    /// A default the server fills, as pointer + value.
    default: (&'static str, Value),
    invalid: Value,
    /// The expected first 422 cause of `invalid`: field and message.
    cause: (&'static str, &'static str),
}

async fn round_trip(s: &TestServer, c: Case) {
    let ns = c.namespaced.then_some("default");
    let api: Api<DynamicObject> = dynamic(&s.client, c.group, "v1", c.kind, c.plural, ns);
    let name = c.valid["metadata"]["name"].as_str().unwrap().to_string();
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(30)
        .disable_bookmarks();
    let mut events = api.watch(&wp, "0").await.unwrap().boxed();

    let obj: DynamicObject = serde_json::from_value(c.valid.clone()).unwrap();
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", c.kind));
    let created = serde_json::to_value(&created).unwrap();
    assert_eq!(
        created.pointer(c.default.0),
        Some(&c.default.1),
        "{} default {}",
        c.kind,
        c.default.0
    );
    let got = serde_json::to_value(api.get(&name).await.unwrap()).unwrap();
    assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
    let listed = api.list(&ListParams::default()).await.unwrap();
    // Controllers own objects of some kinds in `default` (the `kubernetes`
    // EndpointSlice): count this test's object only.
    let ours = listed.items.iter().filter(|o| o.name_any() == name).count();
    assert_eq!(ours, 1, "{}", c.kind);

    let patched = api
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(c.patch.clone()),
        )
        .await
        .unwrap_or_else(|e| panic!("{} patch: {e}", c.kind));
    let patched = serde_json::to_value(patched).unwrap();
    assert_eq!(
        patched.pointer(c.patched.0),
        Some(&c.patched.1),
        "{} patch",
        c.kind
    );

    let bad: DynamicObject = serde_json::from_value(c.invalid.clone()).unwrap();
    let err = api_error(api.create(&PostParams::default(), &bad).await);
    assert_eq!(
        (err.code, err.reason.as_str()),
        (422, "Invalid"),
        "{}",
        c.kind
    );
    let cause = &err.details.expect("details").causes[0];
    assert_eq!(
        (cause.field.as_str(), cause.message.as_str()),
        c.cause,
        "{}",
        c.kind
    );
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        listed.items.len(),
        "{} store unchanged",
        c.kind
    );

    api.delete(&name, &DeleteParams::background())
        .await
        .unwrap();
    // In-process controllers may write too (the quota controller fills a
    // ResourceQuota's status): more MODIFIED events may come between.
    let mut seen = Vec::new();
    while seen.last() != Some(&"DELETED") {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("event in time")
            .expect("no error")
            .expect("open");
        seen.push(match ev {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            _ => continue,
        });
    }
    seen.dedup();
    assert_eq!(seen, vec!["ADDED", "MODIFIED", "DELETED"], "{}", c.kind);
}

fn meta(api_version: &str, kind: &str, name: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}})
}

fn with(mut base: Value, extra: Value) -> Value {
    json_patch::merge(&mut base, &extra);
    base
}

const CONTAINERS: &str = r#"[{"name": "c", "image": "nginx"}]"#;

fn containers() -> Value {
    serde_json::from_str(CONTAINERS).unwrap()
}

#[tokio::test]
async fn core_kinds_round_trip() {
    let s = harness::start().await;
    let template =
        json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers()}});
    round_trip(
        &s,
        Case {
            group: "",
            kind: "PodTemplate",
            plural: "podtemplates",
            namespaced: true,
            valid: with(
                meta("v1", "PodTemplate", "pt"),
                json!({"template": template}),
            ),
            patch: json!({"metadata": {"labels": {"l": "1"}}}),
            patched: ("/metadata/labels/l", json!("1")),
            default: ("/template/spec/restartPolicy", json!("Always")),
            invalid: with(
                meta("v1", "PodTemplate", "bad"),
                json!({"template": {"spec": {"containers": [{"name": "c"}]}}}),
            ),
            cause: ("template.spec.containers[0].image", "Required value"),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "",
            kind: "ReplicationController",
            plural: "replicationcontrollers",
            namespaced: true,
            valid: with(
                meta("v1", "ReplicationController", "rc"),
                json!({"spec": {"template": template}}),
            ),
            patch: json!({"spec": {"replicas": 3}}),
            patched: ("/spec/replicas", json!(3)),
            default: ("/spec/selector", json!({"app": "x"})),
            invalid: with(
                meta("v1", "ReplicationController", "bad"),
                json!({"spec": {"selector": {"app": "y"}, "template": template}}),
            ),
            cause: (
                "spec.template.metadata.labels",
                "Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
            ),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "",
            kind: "PersistentVolume",
            plural: "persistentvolumes",
            namespaced: false,
            valid: with(
                meta("v1", "PersistentVolume", "pv1"),
                json!({"spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
            ),
            patch: json!({"spec": {"storageClassName": "slow"}}),
            patched: ("/spec/storageClassName", json!("slow")),
            default: ("/spec/persistentVolumeReclaimPolicy", json!("Retain")),
            invalid: with(
                meta("v1", "PersistentVolume", "bad"),
                json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}}),
            ),
            cause: ("spec.accessModes", "Required value"),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "",
            kind: "PersistentVolumeClaim",
            plural: "persistentvolumeclaims",
            namespaced: true,
            valid: with(
                meta("v1", "PersistentVolumeClaim", "data"),
                json!({"spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
            ),
            patch: json!({"metadata": {"annotations": {"a": "b"}}}),
            patched: ("/metadata/annotations/a", json!("b")),
            default: ("/status/phase", json!("Pending")),
            invalid: with(
                meta("v1", "PersistentVolumeClaim", "bad"),
                json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}}),
            ),
            cause: (
                "spec.accessModes",
                "Required value: at least 1 access mode is required",
            ),
        },
    )
    .await;
    round_trip(&s, Case {
        group: "", kind: "LimitRange", plural: "limitranges", namespaced: true,
        valid: with(meta("v1", "LimitRange", "lr"), json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}})),
        patch: json!({"metadata": {"labels": {"l": "1"}}}), patched: ("/metadata/labels/l", json!("1")),
        default: ("/spec/limits/0/defaultRequest/cpu", json!("1")),
        invalid: with(meta("v1", "LimitRange", "bad"), json!({"spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}})),
        cause: ("spec.limits[0].min[cpu]", "Invalid value: \"2\": min value 2 is greater than max value 1"),
    }).await;
    round_trip(
        &s,
        Case {
            group: "",
            kind: "ResourceQuota",
            plural: "resourcequotas",
            namespaced: true,
            valid: with(
                meta("v1", "ResourceQuota", "q"),
                json!({"spec": {"hard": {"pods": "10"}}}),
            ),
            patch: json!({"spec": {"hard": {"pods": "20"}}}),
            patched: ("/spec/hard/pods", json!("20")),
            default: ("/spec/hard/pods", json!("10")),
            invalid: with(
                meta("v1", "ResourceQuota", "bad"),
                json!({"spec": {"hard": {"pods": "-1"}}}),
            ),
            cause: (
                "spec.hard[pods]",
                "Invalid value: \"-1\": must be greater than or equal to 0",
            ),
        },
    )
    .await;
}

#[tokio::test]
async fn replication_controller_scale() {
    let s = harness::start().await;
    let rc = with(
        meta("v1", "ReplicationController", "rc"),
        json!({"spec": {"selector": {"app": "x"},
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": containers()}}}}),
    );
    let (code, _) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/replicationcontrollers",
            serde_json::to_vec(&rc).unwrap(),
        )
        .await;
    assert_eq!(code, 201);
    let (code, scale) = s
        .get_json("/api/v1/namespaces/default/replicationcontrollers/rc/scale")
        .await;
    assert_eq!(code, 200);
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"]["selector"], "app=x");
}

#[tokio::test]
async fn group_kinds_round_trip() {
    let s = harness::start().await;
    round_trip(
        &s,
        Case {
            group: "policy",
            kind: "PodDisruptionBudget",
            plural: "poddisruptionbudgets",
            namespaced: true,
            valid: with(
                meta("policy/v1", "PodDisruptionBudget", "pdb"),
                json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}}),
            ),
            patch: json!({"spec": {"minAvailable": "50%"}}),
            patched: ("/spec/minAvailable", json!("50%")),
            default: ("/metadata/generation", json!(1)),
            invalid: with(
                meta("policy/v1", "PodDisruptionBudget", "bad"),
                json!({"spec": {"minAvailable": "150%"}}),
            ),
            cause: (
                "spec.minAvailable",
                "Invalid value: \"150%\": must not be greater than 100%",
            ),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "coordination.k8s.io",
            kind: "Lease",
            plural: "leases",
            namespaced: true,
            valid: with(
                meta("coordination.k8s.io/v1", "Lease", "l"),
                json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
            ),
            patch: json!({"spec": {"holderIdentity": "b"}}),
            patched: ("/spec/holderIdentity", json!("b")),
            default: ("/spec/leaseDurationSeconds", json!(15)),
            invalid: with(
                meta("coordination.k8s.io/v1", "Lease", "bad"),
                json!({"spec": {"leaseDurationSeconds": 0}}),
            ),
            cause: (
                "spec.leaseDurationSeconds",
                "Invalid value: 0: must be greater than 0",
            ),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "discovery.k8s.io",
            kind: "EndpointSlice",
            plural: "endpointslices",
            namespaced: true,
            valid: with(
                meta("discovery.k8s.io/v1", "EndpointSlice", "web-1"),
                json!({"addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
            ),
            patch: json!({"endpoints": [{"addresses": ["10.0.0.2"]}]}),
            patched: ("/endpoints/0/addresses/0", json!("10.0.0.2")),
            default: ("/ports/0/protocol", json!("TCP")),
            invalid: with(
                meta("discovery.k8s.io/v1", "EndpointSlice", "bad"),
                json!({"addressType": "IPv4", "endpoints": [{"addresses": ["x"]}]}),
            ),
            cause: (
                "endpoints[0].addresses[0]",
                "Invalid value: \"x\": must be a valid IPv4 address",
            ),
        },
    )
    .await;
    let rule = json!([{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix",
        "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]);
    round_trip(
        &s,
        Case {
            group: "networking.k8s.io",
            kind: "Ingress",
            plural: "ingresses",
            namespaced: true,
            valid: with(
                meta("networking.k8s.io/v1", "Ingress", "ing"),
                json!({"spec": {"rules": rule}}),
            ),
            patch: json!({"spec": {"ingressClassName": "nginx"}}),
            patched: ("/spec/ingressClassName", json!("nginx")),
            default: ("/metadata/generation", json!(1)),
            invalid: with(
                meta("networking.k8s.io/v1", "Ingress", "bad"),
                json!({"spec": {"rules": [{"http": {"paths": [{"path": "/",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
            ),
            cause: (
                "spec.rules[0].http.paths[0].pathType",
                "Required value: pathType must be specified",
            ),
        },
    )
    .await;
    round_trip(&s, Case {
        group: "networking.k8s.io", kind: "IngressClass", plural: "ingressclasses", namespaced: false,
        valid: with(meta("networking.k8s.io/v1", "IngressClass", "nginx"), json!({"spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"kind": "C", "name": "c", "apiGroup": "example.com"}}})),
        patch: json!({"metadata": {"annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}}}),
        patched: ("/metadata/annotations/ingressclass.kubernetes.io~1is-default-class", json!("true")),
        default: ("/spec/parameters/scope", json!("Cluster")),
        invalid: with(meta("networking.k8s.io/v1", "IngressClass", "bad"), json!({"spec": {"controller": "nope"}})),
        cause: ("spec.controller", "Invalid value: \"nope\": must be a domain-prefixed path (such as \"acme.io/foo\")"),
    }).await;
    round_trip(
        &s,
        Case {
            group: "networking.k8s.io",
            kind: "NetworkPolicy",
            plural: "networkpolicies",
            namespaced: true,
            valid: with(
                meta("networking.k8s.io/v1", "NetworkPolicy", "deny"),
                json!({"spec": {"podSelector": {}}}),
            ),
            patch: json!({"spec": {"podSelector": {"matchLabels": {"app": "x"}}}}),
            patched: ("/spec/podSelector/matchLabels/app", json!("x")),
            default: ("/spec/policyTypes", json!(["Ingress"])),
            invalid: with(
                meta("networking.k8s.io/v1", "NetworkPolicy", "bad"),
                json!({"spec": {"podSelector": {}, "policyTypes": ["Up"]}}),
            ),
            cause: (
                "spec.policyTypes[0]",
                "Unsupported value: \"Up\": supported values: \"Ingress\", \"Egress\"",
            ),
        },
    )
    .await;
    round_trip(
        &s,
        Case {
            group: "apps",
            kind: "ControllerRevision",
            plural: "controllerrevisions",
            namespaced: true,
            valid: with(
                meta("apps/v1", "ControllerRevision", "web-1"),
                json!({"data": {"spec": {}}, "revision": 1}),
            ),
            patch: json!({"metadata": {"labels": {"l": "1"}}}),
            patched: ("/metadata/labels/l", json!("1")),
            default: ("/revision", json!(1)),
            invalid: with(
                meta("apps/v1", "ControllerRevision", "bad"),
                json!({"revision": 1}),
            ),
            cause: ("data", "Required value: data is mandatory"),
        },
    )
    .await;
}

#[tokio::test]
async fn discovery_lists_new_groups_with_short_names() {
    let s = harness::start().await;
    let (_, core) = s.get_json("/api/v1").await;
    let short = |doc: &Value, name: &str| -> Value {
        doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["shortNames"].clone())
            .unwrap_or(Value::Null)
    };
    for (name, sn) in [
        ("persistentvolumeclaims", "pvc"),
        ("persistentvolumes", "pv"),
        ("replicationcontrollers", "rc"),
        ("limitranges", "limits"),
        ("resourcequotas", "quota"),
    ] {
        assert_eq!(short(&core, name), json!([sn]), "{name}");
    }
    let (_, groups) = s.get_json("/apis").await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for g in [
        "batch",
        "policy",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "networking.k8s.io",
    ] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    let (_, net) = s.get_json("/apis/networking.k8s.io/v1").await;
    assert_eq!(short(&net, "ingresses"), json!(["ing"]));
    assert_eq!(short(&net, "networkpolicies"), json!(["netpol"]));
    let (_, policy) = s.get_json("/apis/policy/v1").await;
    assert_eq!(short(&policy, "poddisruptionbudgets"), json!(["pdb"]));
}
