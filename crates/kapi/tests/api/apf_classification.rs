//! API Priority and Fairness through the whole filter chain: classification
//! (response headers carry the matched objects' UIDs), FlowSchemas created at
//! run time taking effect, `Dangling` conditions kept current, and a noisy flow
//! that fills its queue while another flow of the same level is still served.

use std::time::Duration;

use axum::body::{Body, Bytes};
use kapi_server::ChainOptions;
use serde_json::{json, Value};

use crate::chain::{self, held, json, metric, request};

const FC: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";
const FS_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
const PL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

async fn uid(c: &chain::Chain, kind: &str, name: &str) -> String {
    let (code, obj) = c
        .send(
            "admin",
            "GET",
            &format!("{FC}/{kind}/{name}"),
            Body::empty(),
        )
        .await;
    assert_eq!(code, 200, "{obj}");
    obj["metadata"]["uid"].as_str().expect("uid").to_owned()
}

/// The (flow schema, priority level) UIDs a request was classified to.
async fn classified(c: &chain::Chain, user: &str, uri: &str) -> (String, String) {
    let resp = c.call(request(user, "GET", uri, Body::empty())).await;
    let h = |n: &str| {
        resp.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    (h(FS_HEADER), h(PL_HEADER))
}

#[tokio::test]
async fn requests_carry_the_uids_of_their_flow_schema_and_priority_level() {
    let c = chain::start(ChainOptions::default()).await;
    let exempt = (
        uid(&c, "flowschemas", "exempt").await,
        uid(&c, "prioritylevelconfigurations", "exempt").await,
    );
    let global = (
        uid(&c, "flowschemas", "global-default").await,
        uid(&c, "prioritylevelconfigurations", "global-default").await,
    );
    let probes = uid(&c, "flowschemas", "probes").await;
    // The controller has read the stored objects once their UIDs show up.
    for _ in 0..500 {
        if classified(&c, "alice", "/api/v1/namespaces/default/configmaps").await == global {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(classified(&c, "alice", cms).await, global);
    assert_eq!(classified(&c, "admin", cms).await, exempt);
    assert_eq!(classified(&c, "anonymous", "/healthz").await.0, probes);
}

async fn create(c: &chain::Chain, kind: &str, obj: Value) {
    let (code, body) = c
        .send(
            "admin",
            "POST",
            &format!("{FC}/{kind}"),
            Body::from(obj.to_string()),
        )
        .await;
    assert_eq!(code, 201, "{body}");
}

fn level(name: &str, queues: u64, hand: u64, length: u64) -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length}}}}})
}

fn schema(name: &str, level: &str, users: &[&str]) -> Value {
    let subjects: Vec<Value> = users
        .iter()
        .map(|u| json!({"kind": "User", "user": {"name": u}}))
        .collect();
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": subjects,
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                    "namespaces": ["*"], "clusterScope": true}]}]}})
}

/// Wait until `user`'s requests go to the schema and level named.
async fn wait_classified(c: &chain::Chain, user: &str, fs: &str, pl: &str) {
    let want = (
        uid(c, "flowschemas", fs).await,
        uid(c, "prioritylevelconfigurations", pl).await,
    );
    for _ in 0..500 {
        if classified(c, user, "/api/v1/namespaces/default/configmaps").await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{user} never classified to {fs}/{pl}");
}

async fn dangling(c: &chain::Chain, fs: &str) -> Option<String> {
    let (_, obj) = c
        .send(
            "admin",
            "GET",
            &format!("{FC}/flowschemas/{fs}"),
            Body::empty(),
        )
        .await;
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Dangling")
        .and_then(|c| c["status"].as_str().map(str::to_owned))
}

#[tokio::test]
async fn a_flow_schema_is_dangling_until_its_level_exists_and_then_matches() {
    let c = chain::start(ChainOptions::default()).await;
    create(&c, "flowschemas", schema("for-bob", "bobs-level", &["bob"])).await;
    let mut seen = None;
    for _ in 0..500 {
        seen = dangling(&c, "for-bob").await;
        if seen.as_deref() == Some("True") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.as_deref(), Some("True"));
    // A dangling schema matches nothing: bob is still in global-default.
    let global = uid(&c, "flowschemas", "global-default").await;
    assert_eq!(
        classified(&c, "bob", "/api/v1/namespaces/default/pods")
            .await
            .0,
        global
    );

    create(
        &c,
        "prioritylevelconfigurations",
        level("bobs-level", 8, 2, 10),
    )
    .await;
    wait_classified(&c, "bob", "for-bob", "bobs-level").await;
    for _ in 0..500 {
        seen = dangling(&c, "for-bob").await;
        if seen.as_deref() == Some("False") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(seen.as_deref(), Some("False"));
    // alice matches no rule of the new schema.
    assert_eq!(
        classified(&c, "alice", "/api/v1/namespaces/default/pods")
            .await
            .0,
        global
    );
}

#[tokio::test]
async fn a_noisy_flow_fills_its_queue_while_a_quiet_flow_is_served() {
    // A total concurrency of 1: every limited level gets one nominal seat, and
    // `shared` neither lends (lendablePercent 0) nor borrows (borrowing limit
    // 0 %), so it has exactly one.
    let c = chain::start(ChainOptions {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 0,
        ..ChainOptions::default()
    })
    .await;
    create(&c, "prioritylevelconfigurations", level("shared", 64, 1, 2)).await;
    create(
        &c,
        "flowschemas",
        schema("shared", "shared", &["noisy", "quiet"]),
    )
    .await;
    wait_classified(&c, "noisy", "shared", "shared").await;
    wait_classified(&c, "quiet", "shared", "shared").await;
    let series = |m: &str| format!("{m}{{priority_level=\"shared\",flow_schema=\"shared\"}}");
    let cms = "/api/v1/namespaces/default/configmaps";

    // noisy takes the level's one seat and keeps it (its body never ends) ...
    let (first_body, body) = held();
    let first = c.spawn(request("noisy", "POST", cms, body));
    c.wait_metric(&format!(
        "{} 1",
        series("apiserver_flowcontrol_current_executing_requests")
    ))
    .await;
    // ... then fills its queue ...
    let mut queued = Vec::new();
    for _ in 0..2 {
        let (tx, body) = held();
        queued.push((tx, c.spawn(request("noisy", "POST", cms, body))));
    }
    c.wait_metric(&format!(
        "{} 2",
        series("apiserver_flowcontrol_current_inqueue_requests")
    ))
    .await;
    // ... and whatever more it sends is refused at once.
    let over = c.call(request("noisy", "GET", cms, Body::empty())).await;
    assert_eq!(over.status(), 429);
    assert_eq!(over.headers()["retry-after"], "1");
    assert!(over.headers().contains_key(FS_HEADER));

    // quiet, in the same level, still gets a place in a queue of its own ...
    let quiet = c.spawn(request("quiet", "GET", cms, Body::empty()));
    c.wait_metric(&format!(
        "{} 3",
        series("apiserver_flowcontrol_current_inqueue_requests")
    ))
    .await;
    // ... and is served first when the seat frees, ahead of noisy's backlog.
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"first"}}"#;
    first_body.send(Ok(Bytes::from(cm))).await.unwrap();
    drop(first_body);
    assert_eq!(first.await.unwrap().status(), 201);
    let (code, list) = json(quiet.await.unwrap()).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ConfigMapList");

    let text = c.metrics().await;
    let rejected = "apiserver_flowcontrol_rejected_requests_total{priority_level=\"shared\",flow_schema=\"shared\",reason=\"queue-full\"}";
    assert_eq!(metric(&text, rejected), 1.0, "{text}");
    assert!(
        metric(
            &text,
            &series("apiserver_flowcontrol_dispatched_requests_total")
        ) >= 2.0
    );
    // noisy's backlog is served in turn once the seat is free again.
    for (i, (tx, handle)) in queued.into_iter().enumerate() {
        let name = format!("backlog-{i}");
        let body =
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#);
        tx.send(Ok(Bytes::from(body))).await.unwrap();
        drop(tx);
        assert_eq!(handle.await.unwrap().status(), 201);
    }
}
