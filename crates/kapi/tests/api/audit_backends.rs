//! The audit backends through the whole chain: a webhook (written for the
//! tests, `https_fixture.rs`) reached through a kubeconfig file receives
//! `EventList`s in batches, failed sends are retried, and the delivery
//! modes decide what a request waits for — `blocking-strict` fails requests
//! whose RequestReceived event cannot be recorded, `blocking` does not; the
//! log in upstream's legacy one-line format, and truncation.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use kapi_auth::audit::output::Format;
use kapi_auth::audit::policy::Policy;
use kapi_auth::audit::sink::{Delivery, LogOptions, Mode, Truncate, WebhookOptions};
use kapi_auth::audit::AuditConfig;
use kapi_server::ChainOptions;
use serde_json::Value;

use crate::chain::{self, configmap};
use crate::https_fixture::{HttpsServer, Recorded};

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
    - level: RequestResponse\n  resources: [{group: \"\", resources: [\"configmaps\"]}]\n";

fn webhook(kubeconfig: &std::path::Path, delivery: Delivery) -> WebhookOptions {
    WebhookOptions {
        connection: kapi_client::kubeconfig::load(kubeconfig).unwrap(),
        initial_backoff: Duration::from_millis(20),
        delivery,
    }
}

fn options(log: Option<LogOptions>, webhook: Option<WebhookOptions>) -> ChainOptions {
    ChainOptions {
        audit: Some(AuditConfig {
            policy: Policy::parse(POLICY).unwrap(),
            log,
            webhook,
        }),
        ..ChainOptions::default()
    }
}

fn batched(max_size: usize) -> Delivery {
    let mut d = Delivery::webhook_default();
    d.batch.max_size = max_size;
    d.batch.max_wait = Duration::from_millis(300);
    d
}

/// The audit IDs of every event the hook received so far.
fn received(hook: &HttpsServer) -> Vec<Value> {
    hook.calls_to("/audit")
        .iter()
        .flat_map(|c| c.body["items"].as_array().cloned().unwrap_or_default())
        .collect()
}

async fn wait_for(hook: &HttpsServer, n: usize) -> Vec<Value> {
    for _ in 0..300 {
        let got = received(hook);
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the webhook received fewer than {n} events: {:?}",
        received(hook)
    );
}

async fn create(c: &chain::Chain, name: &str) -> u16 {
    let uri = "/api/v1/namespaces/default/configmaps";
    c.send("alice", "POST", uri, configmap(name)).await.0
}

#[tokio::test]
async fn the_webhook_receives_events_in_batches() {
    let hook = HttpsServer::start(Arc::new(|_: &Recorded| (200, "{}".into()))).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = hook.kubeconfig(dir.path(), "audit", "/audit", Some("audit-secret"));
    let c = chain::start(options(None, Some(webhook(&kubeconfig, batched(3))))).await;
    for i in 0..4 {
        assert_eq!(create(&c, &format!("cm{i}")).await, 201);
    }
    // Two stages per create, in batches of at most three.
    let events = wait_for(&hook, 8).await;
    let calls = hook.calls_to("/audit");
    assert!(calls.len() < events.len(), "events are batched");
    for call in &calls {
        assert_eq!(call.method, "POST");
        assert_eq!(call.authorization.as_deref(), Some("Bearer audit-secret"));
        assert_eq!(call.body["kind"], "EventList");
        assert_eq!(call.body["apiVersion"], "audit.k8s.io/v1");
        let n = call.body["items"].as_array().unwrap().len();
        assert!((1..=3).contains(&n), "{n} events in one batch");
    }
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .collect();
    assert_eq!(done.len(), 4);
    assert_eq!(done[0]["kind"], "Event");
    assert_eq!(done[0]["user"]["username"], "alice");
    assert_eq!(done[0]["responseStatus"]["code"], 201);
    assert_eq!(done[0]["responseObject"]["kind"], "ConfigMap");
}

#[tokio::test]
async fn failed_sends_are_retried() {
    let failures = Arc::new(std::sync::atomic::AtomicUsize::new(2));
    let left = failures.clone();
    let hook = HttpsServer::start(Arc::new(move |_: &Recorded| {
        let prior = left.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| n.checked_sub(1),
        );
        match prior {
            Ok(_) => (503, "try later".into()),
            Err(_) => (200, "{}".into()),
        }
    }))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = hook.kubeconfig(dir.path(), "audit", "/audit", None);
    let c = chain::start(options(None, Some(webhook(&kubeconfig, batched(400))))).await;
    assert_eq!(create(&c, "retried").await, 201);
    // The same batch three times: two refusals, then accepted.
    let mut calls = Vec::new();
    for _ in 0..300 {
        calls = hook.calls_to("/audit");
        if calls.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0].body, calls[2].body);
}

#[tokio::test]
async fn blocking_strict_fails_requests_it_cannot_record() {
    // A webhook nobody listens on.
    let hook = HttpsServer::start(Arc::new(|_: &Recorded| (200, "{}".into()))).await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = hook.kubeconfig(dir.path(), "audit", "/audit", None);
    drop(hook);
    let mut strict = Delivery::webhook_default();
    strict.mode = Mode::BlockingStrict;
    let c = chain::start(options(None, Some(webhook(&kubeconfig, strict)))).await;
    let uri = "/api/v1/namespaces/default/configmaps";
    let (code, body) = c.send("alice", "POST", uri, configmap("lost")).await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "Internal error occurred: failed to store audit event"
    );
    let (code, _) = c
        .send("alice", "GET", &format!("{uri}/lost"), Body::empty())
        .await;
    assert_eq!(code, 500, "reads are refused too");
    // Not audited by the policy: served.
    assert_eq!(
        c.send("alice", "GET", "/version", Body::empty()).await.0,
        200
    );

    let mut lenient = Delivery::webhook_default();
    lenient.mode = Mode::Blocking;
    let c = chain::start(options(None, Some(webhook(&kubeconfig, lenient)))).await;
    assert_eq!(create(&c, "kept").await, 201);
    let metrics = c.metrics().await;
    assert!(
        metrics.contains("apiserver_audit_error_total{plugin=\"webhook\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn legacy_log_lines_and_truncated_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let mut log = LogOptions::new(&path);
    log.format = Format::Legacy;
    let hook = HttpsServer::start(Arc::new(|_: &Recorded| (200, "{}".into()))).await;
    let kubeconfig = hook.kubeconfig(dir.path(), "audit", "/audit", None);
    let mut small = batched(400);
    small.batch.max_wait = Duration::from_millis(50);
    small.truncate = Some(Truncate {
        max_event: 1500,
        max_batch: 10_000,
    });
    let c = chain::start(options(Some(log), Some(webhook(&kubeconfig, small)))).await;
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "x".repeat(4000)
    );
    let uri = "/api/v1/namespaces/default/configmaps";
    assert_eq!(c.send("alice", "POST", uri, Body::from(big)).await.0, 201);

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "written before the response: {text}");
    assert!(
        lines[1].contains(r#" AUDIT: id=""#)
            && lines[1].contains(r#" stage="ResponseComplete" "#)
            && lines[1].contains(r#" method="create" user="alice" "#)
            && lines[1].contains(
                r#" namespace="default" uri="/api/v1/namespaces/default/configmaps" response="201""#
            ),
        "{}",
        lines[1]
    );
    assert!(
        lines[0].ends_with(r#"response="<deferred>""#),
        "{}",
        lines[0]
    );

    // The webhook's copy lost its objects to truncation and says so.
    let events = wait_for(&hook, 2).await;
    let done = events
        .iter()
        .find(|e| e["stage"] == "ResponseComplete")
        .unwrap();
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
    assert_eq!(done["annotations"]["audit.k8s.io/truncated"], "true");
}
