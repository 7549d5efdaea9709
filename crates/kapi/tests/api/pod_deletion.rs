//! Graceful deletion of pods, as kube-apiserver does it (checked against
//! 1.28.4; 1.33 also bumps a pod's `generation`): a pod a kubelet runs is
//! marked with a grace period — the one asked for, else its
//! `terminationGracePeriodSeconds` — and stays until the kubelet deletes it
//! with grace 0; a marked pod only takes a shorter period; a pod no kubelet
//! runs is marked, then deleted at once.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{json, Value};

use crate::harness::{self, TestServer};

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn create(ts: &TestServer, name: &str, spec: Value, meta: Value) {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "image": "nginx"}]);
    let mut metadata = meta;
    metadata["name"] = json!(name);
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
    let (code, out) = ts
        .send_json("POST", PODS, body.to_string().into_bytes())
        .await;
    assert_eq!(code, 201, "{out}");
}

async fn delete(ts: &TestServer, name_and_query: &str, body: Value) -> (u16, Value) {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    ts.send_json("DELETE", &format!("{PODS}/{name_and_query}"), body)
        .await
}

async fn get(ts: &TestServer, name: &str) -> (u16, Value) {
    ts.send_json("GET", &format!("{PODS}/{name}"), Vec::new())
        .await
}

async fn merge_patch(ts: &TestServer, path: &str, patch: Value) {
    let req = http::Request::builder()
        .method("PATCH")
        .uri(format!("{PODS}/{path}"))
        .header("content-type", "application/merge-patch+json")
        .body(patch.to_string().into_bytes())
        .unwrap();
    let (code, out) = ts.raw(req).await;
    assert_eq!(code, 200, "{out}");
}

fn grace(pod: &Value) -> Option<i64> {
    pod["metadata"]["deletionGracePeriodSeconds"].as_i64()
}

fn marked_at(pod: &Value) -> String {
    pod["metadata"]["deletionTimestamp"]
        .as_str()
        .expect("marked")
        .to_owned()
}

/// Seconds from `a` to `b`, RFC 3339 times.
fn seconds_between(a: &str, b: &str) -> i64 {
    let t = |s: &str| {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .unwrap()
            .unix_timestamp()
    };
    t(b) - t(a)
}

#[tokio::test]
async fn a_scheduled_pod_waits_its_grace_period_and_only_a_shorter_one_changes_it() {
    let ts = harness::start().await;
    create(&ts, "p1", json!({"nodeName": "n1"}), json!({})).await;

    // No grace asked: the pod's own (defaulted to 30 s).
    let (code, p) = delete(&ts, "p1", Value::Null).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(30));
    let first = marked_at(&p);
    assert_eq!(
        p["metadata"]["generation"], 2,
        "marking bumps the generation"
    );
    let (code, stored) = get(&ts, "p1").await;
    assert_eq!(code, 200);
    assert_eq!(grace(&stored), Some(30));

    // Asked again, without a grace or with a longer one: nothing changes.
    for body in [Value::Null, json!({"gracePeriodSeconds": 45})] {
        let (code, p) = delete(&ts, "p1", body).await;
        assert_eq!(code, 200, "{p}");
        assert_eq!(grace(&p), Some(30));
        assert_eq!(
            p["metadata"]["resourceVersion"],
            stored["metadata"]["resourceVersion"]
        );
    }

    // A shorter one moves the deletion time back by the difference.
    let (code, p) = delete(&ts, "p1", json!({"gracePeriodSeconds": 10})).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(10));
    assert_eq!(seconds_between(&marked_at(&p), &first), 20);
    assert_eq!(p["metadata"]["generation"], 2);

    // The kubelet's final delete (grace 0, the pod's UID as precondition).
    let uid = p["metadata"]["uid"].as_str().unwrap();
    let (code, p) = delete(
        &ts,
        "p1",
        json!({"gracePeriodSeconds": 0, "preconditions": {"uid": uid}}),
    )
    .await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(0));
    assert_eq!(get(&ts, "p1").await.0, 404);
}

#[tokio::test]
async fn grace_periods_come_from_the_request_the_pod_and_whether_a_kubelet_runs_it() {
    let ts = harness::start().await;
    create(
        &ts,
        "own",
        json!({"nodeName": "n1", "terminationGracePeriodSeconds": 5}),
        json!({}),
    )
    .await;
    let (_, p) = delete(&ts, "own", Value::Null).await;
    assert_eq!(grace(&p), Some(5));

    // A negative grace is 1 s.
    create(&ts, "negative", json!({"nodeName": "n1"}), json!({})).await;
    let (_, p) = delete(&ts, "negative?gracePeriodSeconds=-1", Value::Null).await;
    assert_eq!(grace(&p), Some(1));
    assert_eq!(get(&ts, "negative").await.0, 200);

    // Finished pods go at once.
    create(&ts, "done", json!({"nodeName": "n1"}), json!({})).await;
    let status = json!({"status": {"phase": "Succeeded"}});
    merge_patch(&ts, "done/status", status).await;
    let (code, p) = delete(&ts, "done?gracePeriodSeconds=60", Value::Null).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(0));
    assert_eq!(get(&ts, "done").await.0, 404);

    // A dry run answers the marked pod and stores nothing.
    create(&ts, "dry", json!({"nodeName": "n1"}), json!({})).await;
    let (code, p) = delete(&ts, "dry?dryRun=All", Value::Null).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(30));
    let (_, stored) = get(&ts, "dry").await;
    assert!(stored["metadata"].get("deletionTimestamp").is_none());

    // Finalizers hold a pod deleted with grace 0; it goes when they do.
    create(
        &ts,
        "held",
        json!({"nodeName": "n1"}),
        json!({"finalizers": ["example.com/hold"]}),
    )
    .await;
    let (_, p) = delete(&ts, "held?gracePeriodSeconds=0", Value::Null).await;
    assert_eq!(grace(&p), Some(0));
    assert_eq!(p["metadata"]["finalizers"], json!(["example.com/hold"]));
    let release = json!({"metadata": {"finalizers": null}});
    merge_patch(&ts, "held", release).await;
    assert_eq!(get(&ts, "held").await.0, 404);

    // An eviction deletes with the pod's grace period too.
    create(&ts, "evicted", json!({"nodeName": "n1"}), json!({})).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "evicted", "namespace": "default"}});
    let (code, out) = ts
        .send_json(
            "POST",
            &format!("{PODS}/evicted/eviction"),
            eviction.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let (code, p) = get(&ts, "evicted").await;
    assert_eq!(code, 200);
    assert_eq!(grace(&p), Some(30));
}

#[tokio::test]
async fn a_pod_no_kubelet_runs_is_marked_then_deleted() {
    let ts = harness::start().await;
    create(&ts, "free", json!({}), json!({})).await;
    let api: Api<Pod> = ts.api("default");
    let (_, p) = get(&ts, "free").await;
    let rv = p["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let params = WatchParams::default().fields("metadata.name=free");
    let mut events = api.watch(&params, &rv).await.unwrap().boxed();

    let (code, p) = delete(&ts, "free?gracePeriodSeconds=30", Value::Null).await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(grace(&p), Some(0));
    assert_eq!(get(&ts, "free").await.0, 404);

    // Watchers see the mark, then the deletion of the marked pod.
    let next = |e: Option<WatchEvent<Pod>>| match e {
        Some(WatchEvent::Modified(p)) => ("MODIFIED", p),
        Some(WatchEvent::Deleted(p)) => ("DELETED", p),
        other => panic!("{other:?}"),
    };
    let (kind, marked) = next(events.try_next().await.unwrap());
    assert_eq!(kind, "MODIFIED");
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    let (kind, gone) = next(events.try_next().await.unwrap());
    assert_eq!(kind, "DELETED");
    assert_eq!(gone.metadata.deletion_grace_period_seconds, Some(0));
    assert!(gone.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn a_delete_collection_answers_the_pods_as_listed() {
    let ts = harness::start().await;
    for name in ["q1", "q2"] {
        create(
            &ts,
            name,
            json!({"nodeName": "n1"}),
            json!({"labels": {"q": "1"}}),
        )
        .await;
    }
    let (code, list) = ts
        .send_json("DELETE", &format!("{PODS}?labelSelector=q%3D1"), Vec::new())
        .await;
    assert_eq!(code, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    let names: Vec<_> = items.iter().map(|p| &p["metadata"]["name"]).collect();
    assert_eq!(names, ["q1", "q2"]);
    assert!(items.iter().all(|p| grace(p).is_none()), "{list}");
    for name in ["q1", "q2"] {
        let (code, p) = get(&ts, name).await;
        assert_eq!(code, 200);
        assert_eq!(grace(&p), Some(30));
    }
}
