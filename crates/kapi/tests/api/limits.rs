//! `--max-requests-inflight` / `--max-mutating-requests-inflight` (APF off),
//! `--request-timeout` and `?timeout=`. Requests are held by bodies that have
//! not ended, so "in flight" is a state the test controls, not a race.

use std::time::Duration;

use axum::body::{Body, Bytes};
use kapi_server::ChainOptions;

use crate::chain::{self, configmap, held, json, metric, request, text};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn max_inflight(read_only: usize, mutating: usize) -> ChainOptions {
    ChainOptions {
        max_requests_inflight: read_only,
        max_mutating_requests_inflight: mutating,
        enable_priority_and_fairness: false,
        ..ChainOptions::default()
    }
}

#[tokio::test]
async fn mutating_requests_past_the_limit_get_429_with_retry_after() {
    let c = chain::start(max_inflight(1, 1)).await;
    let (tx, body) = held();
    let first = c.spawn(request("alice", "POST", CMS, body));
    c.wait_metric("apiserver_current_inflight_requests{request_kind=\"mutating\"} 1")
        .await;

    let resp = c
        .call(request("bob", "POST", CMS, configmap("second")))
        .await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "1");
    assert_eq!(
        text(resp).await,
        "Too many requests, please try again later.\n"
    );
    // Reads have their own limit; system:masters is never refused.
    assert_eq!(c.send("bob", "GET", CMS, Body::empty()).await.0, 200);
    assert_eq!(
        c.send("admin", "POST", CMS, configmap("by-admin")).await.0,
        201
    );

    tx.send(Ok(Bytes::from(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"first"}}"#,
    )))
    .await
    .unwrap();
    drop(tx);
    assert_eq!(first.await.unwrap().status(), 201);
    // The seat is free again.
    assert_eq!(c.send("bob", "POST", CMS, configmap("third")).await.0, 201);
    let m = c.metrics().await;
    let dropped = "apiserver_dropped_requests_total{request_kind=\"mutating\"}";
    assert_eq!(metric(&m, dropped), 1.0, "{m}");
}

#[tokio::test]
async fn watches_take_no_seat() {
    let c = chain::start(max_inflight(1, 1)).await;
    // Two open watches with a read-only limit of one ...
    let w1 = c
        .call(request(
            "alice",
            "GET",
            &format!("{CMS}?watch=true"),
            Body::empty(),
        ))
        .await;
    let w2 = c
        .call(request(
            "bob",
            "GET",
            &format!("{CMS}?watch=1"),
            Body::empty(),
        ))
        .await;
    assert_eq!((w1.status().as_u16(), w2.status().as_u16()), (200, 200));
    // ... and a read still gets the one seat.
    assert_eq!(c.send("alice", "GET", CMS, Body::empty()).await.0, 200);
    // The one read-only request in flight is the /metrics request itself.
    let m = c.metrics().await;
    let series = "apiserver_current_inflight_requests{request_kind=\"readOnly\"}";
    assert_eq!(metric(&m, series), 1.0, "{m}");
    drop((w1, w2));
}

#[tokio::test]
async fn a_request_past_its_timeout_gets_504() {
    let c = chain::start(ChainOptions::default()).await;
    let (_tx, body) = held();
    let (code, status) = json(
        c.call(request(
            "alice",
            "POST",
            &format!("{CMS}?timeout=100ms"),
            body,
        ))
        .await,
    )
    .await;
    assert_eq!(code, 504, "{status}");
    assert_eq!(status["reason"], "Timeout");
    assert_eq!(
        status["message"],
        "Timeout: request did not complete within requested timeout - context deadline exceeded"
    );
    // Nothing was created, and the server goes on.
    let (code, list) = c.send("alice", "GET", CMS, Body::empty()).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"].as_array().unwrap().len(), 0);
    let m = c.metrics().await;
    let series = "apiserver_request_total{verb=\"POST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"configmaps\",subresource=\"\",scope=\"namespace\",component=\"apiserver\",code=\"504\"}";
    assert_eq!(metric(&m, series), 1.0, "{m}");
}

#[tokio::test]
async fn the_server_request_timeout_applies_without_a_parameter() {
    let c = chain::start(ChainOptions {
        request_timeout: Duration::from_millis(200),
        ..ChainOptions::default()
    })
    .await;
    let (_tx, body) = held();
    let (code, status) = json(c.call(request("alice", "POST", CMS, body)).await).await;
    assert_eq!(code, 504, "{status}");
    // A longer ?timeout= does not extend it.
    let (_tx2, body) = held();
    let uri = format!("{CMS}?timeout=1h");
    assert_eq!(
        json(c.call(request("alice", "POST", &uri, body)).await)
            .await
            .0,
        504
    );
}

#[tokio::test]
async fn a_malformed_timeout_is_a_bad_request() {
    let c = chain::start(ChainOptions::default()).await;
    let (code, status) = c
        .send(
            "alice",
            "GET",
            &format!("{CMS}?timeout=soon"),
            Body::empty(),
        )
        .await;
    assert_eq!(code, 400);
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"soon\""
    );
}
