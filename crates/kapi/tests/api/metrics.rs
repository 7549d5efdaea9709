//! `/metrics`: upstream's series with sensible values after a few requests,
//! and the endpoint behind authorization like any non-resource path.

use axum::body::Body;
use kapi_server::ChainOptions;

use crate::chain::{self, configmap, metric, request};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn labels(verb: &str, resource: &str, scope: &str) -> String {
    format!(
        "verb=\"{verb}\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"{resource}\",subresource=\"\",scope=\"{scope}\",component=\"apiserver\""
    )
}

#[tokio::test]
async fn request_storage_watch_and_flowcontrol_series() {
    let c = chain::start(ChainOptions::default()).await;
    let watch = c
        .call(request(
            "alice",
            "GET",
            &format!("{CMS}?watch=true"),
            Body::empty(),
        ))
        .await;
    for name in ["a", "b", "c"] {
        assert_eq!(c.send("alice", "POST", CMS, configmap(name)).await.0, 201);
    }
    assert_eq!(
        c.send("alice", "GET", &format!("{CMS}/a"), Body::empty())
            .await
            .0,
        200
    );
    assert_eq!(
        c.send("alice", "GET", &format!("{CMS}/zzz"), Body::empty())
            .await
            .0,
        404
    );
    assert_eq!(c.send("alice", "GET", CMS, Body::empty()).await.0, 200);
    // The watch sends one event per create.
    let watch_events =
        "apiserver_watch_events_total{group=\"\",version=\"v1\",resource=\"configmaps\"}";
    let mut body = watch.into_body();
    let mut seen = 0;
    while seen < 3 {
        use http_body_util::BodyExt as _;
        let frame = body.frame().await.expect("watch open").expect("frame");
        seen += usize::from(frame.is_data());
    }
    let m = c.metrics().await;
    let post = format!(
        "apiserver_request_total{{{},code=\"201\"}}",
        labels("POST", "configmaps", "namespace")
    );
    assert_eq!(metric(&m, &post), 3.0, "{m}");
    let get = format!(
        "apiserver_request_total{{{},code=\"200\"}}",
        labels("GET", "configmaps", "resource")
    );
    assert_eq!(metric(&m, &get), 1.0);
    let missing = format!(
        "apiserver_request_total{{{},code=\"404\"}}",
        labels("GET", "configmaps", "resource")
    );
    assert_eq!(metric(&m, &missing), 1.0);
    let list = format!(
        "apiserver_request_total{{{},code=\"200\"}}",
        labels("LIST", "configmaps", "namespace")
    );
    assert_eq!(metric(&m, &list), 1.0);
    let hist = format!(
        "apiserver_request_duration_seconds_count{{{}}}",
        labels("POST", "configmaps", "namespace")
    );
    assert_eq!(metric(&m, &hist), 3.0);
    let inf = format!(
        "apiserver_request_duration_seconds_bucket{{{},le=\"+Inf\"}}",
        labels("POST", "configmaps", "namespace")
    );
    assert_eq!(metric(&m, &inf), 3.0);
    assert!(m.contains("# TYPE apiserver_request_duration_seconds histogram"));
    assert!(m.contains(",le=\"0.005\"}"));
    assert!(metric(&m, watch_events) >= 3.0, "{m}");
    assert_eq!(
        metric(&m, "apiserver_storage_objects{resource=\"configmaps\"}"),
        3.0
    );
    assert!(metric(&m, "apiserver_storage_objects{resource=\"namespaces\"}") >= 4.0);
    assert!(m.contains("# TYPE apiserver_terminated_watchers_total counter"));
    assert!(m.contains("apiserver_terminated_watchers_total "));
    assert!(m.contains("# TYPE kapi_watch_cache_encoded_bytes gauge"));
    assert!(m.contains("kapi_watch_cache_encoded_budget_bytes "));
    assert!(m.contains("apiserver_current_inflight_requests{request_kind=\"mutating\"} 0"));
    let dispatched = "apiserver_flowcontrol_dispatched_requests_total{priority_level=\"global-default\",flow_schema=\"global-default\"}";
    assert!(metric(&m, dispatched) >= 6.0, "{m}");
    let nominal = "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"}";
    // ceil(600 * 20 / 245), as upstream's bootstrap shares give.
    assert_eq!(metric(&m, nominal), 49.0);
    assert!(m.contains("apiserver_flowcontrol_request_wait_duration_seconds_bucket{priority_level=\"global-default\",flow_schema=\"global-default\",execute=\"true\",le=\"0\"}"));
    assert!(m.contains("apiserver_flowcontrol_current_executing_requests{"));
    assert!(m.contains("apiserver_flowcontrol_current_inqueue_requests{"));
}

#[tokio::test]
async fn metrics_goes_through_authorization() {
    let c = chain::start(ChainOptions::default()).await;
    let (code, status) = c.send("anonymous", "GET", "/metrics", Body::empty()).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    let resp = c
        .call(request("admin", "GET", "/metrics", Body::empty()))
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
}
