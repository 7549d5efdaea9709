//! The audit log through the whole chain: what each level records, the policy's
//! rules by user, verb, resource (with resource names and subresources) and
//! namespace, omitted stages, watches' ResponseStarted, and the Audit-ID header.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Body;
use kapi_auth::audit::policy::Policy;
use kapi_auth::audit::sink::LogOptions;
use kapi_auth::audit::AuditConfig;
use kapi_server::ChainOptions;
use serde_json::Value;

use crate::chain::{self, configmap, metric, request};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    users: ["bob"]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"], resourceNames: ["keep"]}]
  - level: Metadata
    resources: [{group: "", resources: ["secrets"]}]
  - level: Request
    verbs: ["create", "update"]
    namespaces: ["team-a"]
    omitStages: ["RequestReceived"]
  - level: Metadata
    resources: [{group: "", resources: ["configmaps", "namespaces"]}]
"#;

async fn start() -> (chain::Chain, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("audit").join("audit.log");
    let opts = ChainOptions {
        audit: Some(AuditConfig {
            policy: Policy::parse(POLICY).expect("policy"),
            log: Some(LogOptions::new(&log)),
            webhook: None,
        }),
        ..ChainOptions::default()
    };
    let c = chain::start_in(dir, opts).await;
    for ns in ["team-a", "team-b"] {
        let body =
            format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{ns}"}}}}"#);
        assert_eq!(
            c.send("admin", "POST", "/api/v1/namespaces", Body::from(body))
                .await
                .0,
            201
        );
    }
    (c, log)
}

/// The events in the log so far. The sink may be writing while this reads, so
/// text after the last newline is a line not yet finished and is left for the
/// next read; every finished line must be one JSON event.
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let finished = text.rfind('\n').map_or("", |end| &text[..end]);
    finished
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect()
}

/// The events of one request (by audit ID), waiting for `n` of them.
async fn events_of(log: &Path, id: &str, n: usize) -> Vec<Value> {
    for _ in 0..500 {
        let evs: Vec<Value> = events(log)
            .into_iter()
            .filter(|e| e["auditID"] == id)
            .collect();
        if evs.len() >= n {
            return evs;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("fewer than {n} events for {id}: {:?}", events(log));
}

/// Send a request; its status and Audit-ID.
async fn send(c: &chain::Chain, user: &str, method: &str, uri: &str, body: Body) -> (u16, String) {
    let resp = c.call(request(user, method, uri, body)).await;
    let id = resp.headers()["audit-id"].to_str().unwrap().to_owned();
    let code = resp.status().as_u16();
    let _ = chain::text(resp).await;
    (code, id)
}

fn stages(evs: &[Value]) -> Vec<&str> {
    evs.iter().map(|e| e["stage"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn metadata_level_records_who_what_and_outcome_without_bodies() {
    let (c, log) = start().await;
    let uri = "/api/v1/namespaces/team-b/configmaps";
    let (code, id) = send(&c, "alice", "POST", uri, configmap("plain")).await;
    assert_eq!(code, 201);
    let evs = events_of(&log, &id, 2).await;
    assert_eq!(stages(&evs), ["RequestReceived", "ResponseComplete"]);
    let done = &evs[1];
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["verb"], "create");
    assert_eq!(done["requestURI"], uri);
    assert_eq!(done["user"]["username"], "alice");
    assert_eq!(done["objectRef"]["resource"], "configmaps");
    assert_eq!(done["objectRef"]["namespace"], "team-b");
    assert_eq!(done["objectRef"]["name"], "plain");
    assert_eq!(done["objectRef"]["apiVersion"], "v1");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none());
    assert!(done["requestReceivedTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert!(done["stageTimestamp"].is_string());

    // A failure carries the Status' reason and message.
    let (code, id) = send(&c, "alice", "POST", uri, configmap("plain")).await;
    assert_eq!(code, 409);
    let evs = events_of(&log, &id, 2).await;
    assert_eq!(evs[1]["responseStatus"]["reason"], "AlreadyExists");
    assert_eq!(evs[1]["responseStatus"]["status"], "Failure");
}

#[tokio::test]
async fn request_level_has_the_request_and_omits_stages_by_rule() {
    let (c, log) = start().await;
    let (code, id) = send(
        &c,
        "alice",
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        configmap("a"),
    )
    .await;
    assert_eq!(code, 201);
    let evs = events_of(&log, &id, 1).await;
    // The rule omits RequestReceived.
    assert_eq!(stages(&evs), ["ResponseComplete"]);
    assert_eq!(evs[0]["level"], "Request");
    assert_eq!(evs[0]["requestObject"]["metadata"]["name"], "a");
    assert!(evs[0].get("responseObject").is_none());
}

#[tokio::test]
async fn request_response_level_by_resource_name_has_both_bodies() {
    let (c, log) = start().await;
    let uri = "/api/v1/namespaces/team-b/configmaps";
    assert_eq!(
        send(&c, "alice", "POST", uri, configmap("keep")).await.0,
        201
    );
    let (code, id) = send(&c, "alice", "GET", &format!("{uri}/keep"), Body::empty()).await;
    assert_eq!(code, 200);
    let evs = events_of(&log, &id, 2).await;
    assert_eq!(evs[1]["level"], "RequestResponse");
    assert_eq!(evs[1]["responseObject"]["data"]["k"], "v");
    assert_eq!(evs[1]["objectRef"]["name"], "keep");
}

#[tokio::test]
async fn secrets_data_never_appears_at_metadata_level() {
    let (c, log) = start().await;
    let secret = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"password":"c2VjcmV0LXZhbHVl"},"stringData":{"token":"plain-token-value"}}"#;
    let uri = "/api/v1/namespaces/team-a/secrets";
    let (code, id) = send(&c, "alice", "POST", uri, Body::from(secret)).await;
    assert_eq!(code, 201);
    let (code, get_id) = send(&c, "alice", "GET", &format!("{uri}/s"), Body::empty()).await;
    assert_eq!(code, 200);
    events_of(&log, &id, 2).await;
    events_of(&log, &get_id, 2).await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("c2VjcmV0LXZhbHVl") && !text.contains("plain-token-value"));
    // Secrets match the Metadata rule before the team-a Request rule.
    let evs = events_of(&log, &id, 2).await;
    assert_eq!(evs[1]["level"], "Metadata");
}

#[tokio::test]
async fn users_and_unmatched_requests_at_level_none_are_not_recorded() {
    let (c, log) = start().await;
    let (code, bob) = send(
        &c,
        "bob",
        "POST",
        "/api/v1/namespaces/team-b/configmaps",
        configmap("b"),
    )
    .await;
    assert_eq!(code, 201);
    // Pods match no rule.
    let (_, pods) = send(
        &c,
        "alice",
        "GET",
        "/api/v1/namespaces/team-b/pods",
        Body::empty(),
    )
    .await;
    // A later recorded request shows the log has caught up.
    let (_, later) = send(
        &c,
        "alice",
        "GET",
        "/api/v1/namespaces/team-b/configmaps",
        Body::empty(),
    )
    .await;
    events_of(&log, &later, 2).await;
    let all = events(&log);
    assert!(all
        .iter()
        .all(|e| e["auditID"] != bob && e["auditID"] != pods));
    let m = c.metrics().await;
    assert_eq!(
        metric(&m, "apiserver_audit_event_total"),
        all.len() as f64,
        "{m}"
    );
    assert_eq!(
        metric(&m, "apiserver_audit_error_total{plugin=\"buffered\"}"),
        0.0
    );
}

#[tokio::test]
async fn a_watch_has_response_started_then_complete_when_it_ends() {
    let (c, log) = start().await;
    let resp = c
        .call(request(
            "alice",
            "GET",
            "/api/v1/namespaces/team-b/configmaps?watch=true",
            Body::empty(),
        ))
        .await;
    let id = resp.headers()["audit-id"].to_str().unwrap().to_owned();
    let evs = events_of(&log, &id, 2).await;
    assert_eq!(stages(&evs), ["RequestReceived", "ResponseStarted"]);
    assert_eq!(evs[1]["verb"], "watch");
    drop(resp);
    let evs = events_of(&log, &id, 3).await;
    assert_eq!(evs[2]["stage"], "ResponseComplete");
}

#[tokio::test]
async fn the_client_audit_id_is_kept() {
    let (c, log) = start().await;
    let mut req = request(
        "alice",
        "GET",
        "/api/v1/namespaces/team-b/configmaps",
        Body::empty(),
    );
    req.headers_mut()
        .insert("audit-id", "my-own-id".parse().unwrap());
    let resp = c.call(req).await;
    assert_eq!(resp.headers()["audit-id"], "my-own-id");
    let _ = chain::text(resp).await;
    events_of(&log, "my-own-id", 2).await;
}

#[tokio::test]
async fn a_failed_authentication_is_recorded_without_a_user() {
    let (c, log) = start().await;
    let resp = c
        .call(request(
            "nobody",
            "GET",
            "/api/v1/namespaces/team-b/configmaps",
            Body::empty(),
        ))
        .await;
    assert_eq!(resp.status(), 401);
    let id = resp.headers()["audit-id"].to_str().unwrap().to_owned();
    let evs = events_of(&log, &id, 1).await;
    assert_eq!(stages(&evs), ["ResponseStarted"]);
    assert_eq!(evs[0]["user"], serde_json::json!({}));
    assert_eq!(evs[0]["responseStatus"]["code"], 401);
    assert_eq!(
        evs[0]["responseStatus"]["message"],
        "Authentication failed, attempted: bearer"
    );
}

#[tokio::test]
async fn the_authorization_decision_and_reason_are_annotations() {
    let (c, log) = start().await;
    let uri = "/api/v1/namespaces/team-b/configmaps";
    let (code, id) = send(&c, "alice", "POST", uri, configmap("allowed")).await;
    assert_eq!(code, 201);
    let evs = events_of(&log, &id, 2).await;
    let notes = &evs[1]["annotations"];
    assert_eq!(notes["authorization.k8s.io/decision"], "allow", "{notes}");
    assert_eq!(
        notes["authorization.k8s.io/reason"],
        "RBAC: allowed by ClusterRoleBinding \"test-users\" of ClusterRole \"cluster-admin\" to User \"alice\""
    );

    // Anonymous may not list configmaps: forbid, with RBAC's (empty) reason.
    let (code, id) = send(&c, "anonymous", "GET", uri, Body::empty()).await;
    assert_eq!(code, 403);
    let evs = events_of(&log, &id, 2).await;
    let notes = &evs[1]["annotations"];
    assert_eq!(notes["authorization.k8s.io/decision"], "forbid", "{notes}");
    assert_eq!(notes["authorization.k8s.io/reason"], "");
}
