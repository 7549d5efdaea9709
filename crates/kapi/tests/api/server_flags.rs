//! The generic server flags, each as kube-apiserver documents it:
//! `--cors-allowed-origins`, `--strict-transport-security-directives`,
//! `--service-node-port-range`, `--external-hostname`,
//! `--min-request-timeout`, `--etcd-healthcheck-timeout`, and the shutdown
//! states (`--shutdown-delay-duration` and `--shutdown-send-retry-after` seen
//! from a client: `/readyz` failing first, watches ending, requests refused).
//! The signal-driven sequence is tested on the real binary (`tests/cmdline`).

use std::time::Duration;

use futures::StreamExt;
use http_body_util::BodyExt as _;
use serde_json::json;

use crate::harness;

/// A request with an `Origin` header; the response's status and headers.
async fn with_origin(
    s: &harness::TestServer,
    method: &str,
    origin: &str,
) -> (u16, http::HeaderMap) {
    let req = http::Request::builder()
        .method(method)
        .uri("/api/v1/namespaces/default")
        .header("origin", origin)
        .header("access-control-request-method", "GET")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    (resp.status().as_u16(), resp.headers().clone())
}

#[tokio::test]
async fn cors_allowed_origins_answer_preflights_and_tag_responses() {
    let s = harness::start_configured(|o| {
        let origins = ["^https://good\\.example(:|$)".to_string()];
        o.chain.cors = kapi_http::cors::Cors::new(&origins).unwrap();
    })
    .await;
    let (code, h) = with_origin(&s, "GET", "https://good.example").await;
    assert_eq!(code, 200);
    assert_eq!(h["access-control-allow-origin"], "https://good.example");
    assert_eq!(h["access-control-allow-credentials"], "true");
    assert_eq!(
        h["access-control-allow-methods"],
        "POST, GET, OPTIONS, PUT, DELETE, PATCH"
    );
    assert_eq!(h["access-control-expose-headers"], "Date");
    // A preflight is answered before authentication: 204, no body.
    let (code, h) = with_origin(&s, "OPTIONS", "https://good.example:8443").await;
    assert_eq!(code, 204);
    assert_eq!(
        h["access-control-allow-origin"],
        "https://good.example:8443"
    );
    // Other origins get no CORS headers.
    for origin in ["https://evil.example", "https://good.example.evil.org"] {
        let (_, h) = with_origin(&s, "GET", origin).await;
        assert!(h.get("access-control-allow-origin").is_none(), "{origin}");
    }
    // Without the flag, no server answers CORS.
    let plain = harness::start().await;
    let (_, h) = with_origin(&plain, "GET", "https://good.example").await;
    assert!(h.get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn strict_transport_security_directives_go_on_every_response() {
    let directives: Vec<String> = ["max-age=31536000", "includeSubDomains", "preload"]
        .map(String::from)
        .to_vec();
    let value = kapi_server::filters::hsts_value(&directives).unwrap();
    let s = harness::start_configured(move |o| o.chain.hsts = value).await;
    for (method, origin) in [("GET", "https://any.example"), ("OPTIONS", "x")] {
        let (_, h) = with_origin(&s, method, origin).await;
        assert_eq!(
            h["strict-transport-security"],
            "max-age=31536000; includeSubDomains; preload"
        );
    }
    // Errors carry it too.
    let req = http::Request::get("/api/v1/namespaces/default/configmaps/none")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    assert_eq!(resp.status(), 404);
    assert!(resp.headers().contains_key("strict-transport-security"));
    let plain = harness::start().await;
    let (_, h) = with_origin(&plain, "GET", "https://any.example").await;
    assert!(h.get("strict-transport-security").is_none());
    // Upstream's validation.
    for bad in [&["max-age"][..], &["includeSubdomains"], &[""]] {
        let bad: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
        assert!(kapi_server::filters::hsts_value(&bad).is_err(), "{bad:?}");
    }
}

fn node_port_service(name: &str, node_port: Option<u16>) -> Vec<u8> {
    let mut port = json!({"port": 80, "targetPort": 8080});
    if let Some(n) = node_port {
        port["nodePort"] = json!(n);
    }
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [port]}
    }))
    .unwrap()
}

/// `--kubernetes-service-node-port`: the `kubernetes` Service is a NodePort
/// Service on that port, which no other Service may then take.
#[tokio::test]
async fn kubernetes_service_node_port_makes_it_a_node_port_service() {
    let s = harness::start_configured(|o| o.config.kubernetes_service_node_port = 30443).await;
    let (code, svc) = s
        .get_json("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(code, 200, "{svc}");
    assert_eq!(svc["spec"]["type"], "NodePort");
    assert_eq!(svc["spec"]["ports"][0]["nodePort"], 30443);
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    let path = "/api/v1/namespaces/default/services";
    let (code, out) = s
        .send_json("POST", path, node_port_service("clash", Some(30443)))
        .await;
    assert_eq!(code, 422, "{out}");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .contains("provided port is already allocated"),
        "{out}"
    );
    // Without the flag: ClusterIP, no node port.
    let plain = harness::start().await;
    let (_, svc) = plain
        .get_json("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert!(svc["spec"]["ports"][0].get("nodePort").is_none());
}

#[tokio::test]
async fn service_node_port_range_bounds_allocation_and_requests() {
    let s = harness::start_configured(|o| o.config.node_ports = (40000, 40001)).await;
    let path = "/api/v1/namespaces/default/services";
    let (code, first) = s
        .send_json("POST", path, node_port_service("a", None))
        .await;
    assert_eq!(code, 201, "{first}");
    let port = first["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
    assert!((40000..=40001).contains(&port), "{first}");
    let (code, out) = s
        .send_json("POST", path, node_port_service("b", Some(30080)))
        .await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        out["details"]["causes"][0]["message"],
        "Invalid value: 30080: provided port is not in the valid range. The range of valid ports is 40000-40001"
    );
    assert_eq!(
        out["details"]["causes"][0]["field"],
        "spec.ports[0].nodePort"
    );
    let (code, out) = s
        .send_json("POST", path, node_port_service("c", Some(port as u16)))
        .await;
    assert_eq!(code, 422, "{out}");
    assert!(out["message"]
        .as_str()
        .unwrap()
        .contains("provided port is already allocated"));
    // The one port left goes to the next service; then the range is full.
    let (code, out) = s
        .send_json("POST", path, node_port_service("d", None))
        .await;
    assert_eq!(code, 201, "{out}");
    assert_ne!(out["spec"]["ports"][0]["nodePort"].as_u64(), Some(port));
    let (code, _) = s
        .send_json("POST", path, node_port_service("e", None))
        .await;
    assert_eq!(code, 500);
}

#[tokio::test]
async fn external_hostname_names_the_issuer_key_set() {
    let s = harness::start_configured(|o| {
        o.config.external_address = Some("api.example.com:6443".into());
    })
    .await;
    let (code, doc) = s.get_json("/.well-known/openid-configuration").await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(
        doc["jwks_uri"],
        "https://api.example.com:6443/openid/v1/jwks"
    );
}

#[tokio::test]
async fn min_request_timeout_ends_watches_without_timeout_seconds() {
    let s =
        harness::start_configured(|o| o.config.min_request_timeout = Duration::from_secs(1)).await;
    let req = http::Request::get("/api/v1/namespaces/default/configmaps?watch=true")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("watch");
    assert_eq!(resp.status(), 200);
    // Between one and two seconds; the bound only keeps a broken test short.
    let body = tokio::time::timeout(Duration::from_secs(60), resp.into_body().collect())
        .await
        .expect("the watch ends by itself");
    body.expect("and ends cleanly");
}

#[tokio::test]
async fn shutdown_states_fail_readyz_end_watches_and_refuse_requests() {
    let lc = kapi_http::lifecycle::Lifecycle::new(false);
    let handle = lc.clone();
    let s = harness::start_configured(move |o| o.chain.lifecycle = Some(handle)).await;
    let (code, text) = s
        .raw_text(http::Request::get("/readyz?verbose").body(vec![]).unwrap())
        .await;
    assert_eq!(code, 200, "{text}");
    assert!(text.contains("[+]shutdown ok"), "{text}");
    assert!(text.contains("[+]etcd-readiness ok"), "{text}");

    let req = http::Request::get("/api/v1/namespaces/default/configmaps?watch=true")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let watch = s.client.send(req).await.expect("watch");
    let mut frames = watch.into_body().into_data_stream();

    lc.initiate();
    let (code, text) = s
        .raw_text(http::Request::get("/readyz?verbose").body(vec![]).unwrap())
        .await;
    assert_eq!(code, 500, "{text}");
    assert!(
        text.contains("[-]shutdown failed: reason withheld"),
        "{text}"
    );
    let (code, _) = s
        .raw_text(http::Request::get("/livez").body(vec![]).unwrap())
        .await;
    assert_eq!(code, 200, "/livez stays healthy while shutting down");
    // Still serving during the delay, watches included.
    let cm = serde_json::to_vec(&harness::configmap("during-delay", &[])).unwrap();
    let (code, _) = s
        .send_json("POST", "/api/v1/namespaces/default/configmaps", cm)
        .await;
    assert_eq!(code, 201);
    let event = frames.next().await.expect("an event").expect("bytes");
    assert!(String::from_utf8_lossy(&event).contains("during-delay"));

    lc.stop_accepting();
    // The open watch ends as a finished response, not a reset.
    let rest = tokio::time::timeout(Duration::from_secs(60), async {
        let mut out = Vec::new();
        while let Some(f) = frames.next().await {
            out.push(f);
        }
        out
    })
    .await
    .expect("the watch ends");
    assert!(rest.iter().all(Result::is_ok), "{rest:?}");
    let (code, text) = s
        .raw_text(
            http::Request::get("/api/v1/namespaces")
                .body(vec![])
                .unwrap(),
        )
        .await;
    assert_eq!(code, 503, "{text}");
    assert_eq!(text, "apiserver is shutting down.\n");
    let (code, _) = s
        .raw_text(http::Request::get("/healthz").body(vec![]).unwrap())
        .await;
    assert_eq!(code, 200, "health probes are never refused");
}

#[tokio::test]
async fn shutdown_send_retry_after_answers_429() {
    let lc = kapi_http::lifecycle::Lifecycle::new(true);
    let handle = lc.clone();
    let s = harness::start_configured(move |o| o.chain.lifecycle = Some(handle)).await;
    lc.stop_accepting();
    let req = http::Request::get("/api/v1/namespaces")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.expect("transport");
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "5");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        &body[..],
        b"The apiserver is shutting down, please try again later.\n"
    );
}

/// `WatchCacheInitializationPostStartHook` with `--storage-initialization-timeout`:
/// the `poststarthook/storage-readiness` check is on `/healthz`, `/livez` and
/// `/readyz` (passed once the started server's caches are filled), and only
/// with the gate.
#[tokio::test]
async fn storage_readiness_hook_is_a_check_of_every_health_endpoint() {
    let s =
        harness::start_configured(|o| o.storage_readiness = Some(Duration::from_secs(60))).await;
    for ep in ["/healthz", "/livez", "/readyz"] {
        let mut text = String::new();
        for _ in 0..100 {
            let (code, t) = s
                .raw_text(
                    http::Request::get(format!("{ep}?verbose"))
                        .body(vec![])
                        .unwrap(),
                )
                .await;
            text = t;
            if code == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            text.contains("[+]poststarthook/storage-readiness ok"),
            "{ep}: {text}"
        );
        let (code, _) = s
            .raw_text(
                http::Request::get(format!("{ep}/poststarthook/storage-readiness"))
                    .body(vec![])
                    .unwrap(),
            )
            .await;
        assert_eq!(code, 200, "{ep}");
    }
    let plain = harness::start().await;
    let (_, text) = plain
        .raw_text(http::Request::get("/readyz?verbose").body(vec![]).unwrap())
        .await;
    assert!(!text.contains("storage-readiness"), "{text}");
}

/// Every answer says `Cache-Control: no-cache, private` unless it sets its own
/// (upstream's `WithCacheControl`): objects, lists, errors, `/version`,
/// `/healthz`, discovery, a watch, a request without credentials. The OpenAPI
/// v3 document under its hash keeps `public, immutable`.
#[tokio::test]
async fn responses_say_not_to_cache_them_unless_they_set_their_own() {
    let s = harness::start().await;
    let get = |path: &str| {
        http::Request::get(path.to_owned())
            .body(Vec::new())
            .unwrap()
    };
    for (path, code) in [
        ("/api/v1/namespaces/default", 200),
        ("/api/v1/namespaces/default/configmaps", 200),
        ("/api/v1/namespaces/default/configmaps/none", 404),
        ("/version", 200),
        ("/healthz", 200),
        ("/apis", 200),
        ("/api/v1/namespaces?watch=1&timeoutSeconds=1", 200),
    ] {
        let r = s.exchange(get(path)).await;
        assert_eq!(r.code, code, "{path}");
        assert_eq!(r.headers["cache-control"], "no-cache, private", "{path}");
    }
    // Refused before authorization (no credentials, not allowed).
    let anonymous = s.anonymous_client().await;
    let resp = anonymous
        .send(
            http::Request::get("/api/v1/namespaces/default/secrets")
                .body(kube::client::Body::from(Vec::new()))
                .unwrap(),
        )
        .await
        .expect("transport");
    assert!(resp.status().is_client_error(), "{}", resp.status());
    assert_eq!(resp.headers()["cache-control"], "no-cache, private");
    // A document under its hash may be cached by anyone.
    let (_, index) = s.get_json("/openapi/v3").await;
    let hashed = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("a hashed URL")
        .to_owned();
    let r = s.exchange(get(&hashed)).await;
    assert_eq!(r.code, 200, "{hashed}");
    assert_eq!(r.headers["cache-control"], "public, immutable");
}
