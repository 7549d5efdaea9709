//! The proxy subresources end to end (`connect_env.rs`): pods, services
//! (ready EndpointSlice endpoints, named and numbered ports) and nodes (the
//! kubelet over its TLS, other node ports over HTTP), upstream's forwarding
//! headers, the refusal of redirects and of loopback destinations (which
//! does not apply to kubelet log connections), the Node authorizer on
//! `nodes/proxy`, and upgrade headers on paths that do not upgrade.

use serde_json::json;

use crate::connect_env::{self, pod, NODE_IP, POD_IP};
use crate::harness::TestServer;

async fn text(s: &TestServer, method: &str, path: &str) -> (u16, String) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .body(Vec::new())
        .unwrap();
    s.raw_text(req).await
}

#[tokio::test]
async fn pod_and_node_proxies_rewrite_paths_and_headers() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let prefix = "/api/v1/namespaces/default/pods/web/proxy";
    let (code, body) = text(&env.s, "GET", &format!("{prefix}/a/b/?x=1")).await;
    assert_eq!(code, 200, "{body}");
    assert!(body.starts_with("pod: GET /a/b/?x=1\n"), "{body}");
    assert!(
        body.contains(&format!("x-forwarded-uri: {prefix}/a/b/\n")),
        "{body}"
    );
    assert!(!body.contains("authorization"), "{body}");
    assert!(body.contains(&format!("host: {POD_IP}:8080")), "{body}");
    let (code, body) = text(
        &env.s,
        "POST",
        "/api/v1/namespaces/default/pods/http:web:80/proxy/p",
    )
    .await;
    assert_eq!((code, body.lines().next()), (200, Some("pod: POST /p")));
    let (code, _) = text(&env.s, "GET", prefix).await;
    assert_eq!(code, 301);
    let (code, body) = text(&env.s, "GET", &format!("{prefix}/redirect")).await;
    assert_eq!(
        (code, body.as_str()),
        (
            502,
            "the backend attempted to redirect this request, which is not permitted"
        )
    );
    let (code, body) = text(&env.s, "GET", "/api/v1/nodes/n1/proxy/healthz").await;
    assert_eq!((code, body.as_str()), (200, "ok"));
    let (code, body) = text(&env.s, "GET", "/api/v1/nodes/n1:4194/proxy/metrics").await;
    assert_eq!(
        (code, body.lines().next()),
        (200, Some("pod: GET /metrics"))
    );
    let (code, body) = text(&env.s, "GET", "/api/v1/nodes/n1:9999/proxy/x").await;
    assert_eq!(code, 503, "{body}");
    assert!(
        body.contains(&format!(
            "error trying to reach service: dial tcp {NODE_IP}:9999"
        )),
        "{body}"
    );
}

#[tokio::test]
async fn service_proxy_picks_a_ready_endpoint_of_the_port() {
    let env = connect_env::start(|_| {}).await;
    pod(&env.s, "backend", &["app"], Some("n1")).await;
    let svc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}})
    };
    let slice = |name: &str, ready: bool| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": name}}, "addressType": "IPv4",
        "endpoints": [{"addresses": [POD_IP], "conditions": {"ready": ready},
            "targetRef": {"kind": "Pod", "namespace": "default", "name": "backend"}}], "ports": [{"name": "http", "port": 8080}]})
    };
    for (name, ready) in [("web", true), ("cold", false)] {
        let (c, v) = env
            .s
            .send_json(
                "POST",
                "/api/v1/namespaces/default/services",
                svc(name).to_string().into_bytes(),
            )
            .await;
        assert_eq!(c, 201, "{v}");
        let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
        assert_eq!(
            env.s
                .send_json("POST", path, slice(name, ready).to_string().into_bytes())
                .await
                .0,
            201
        );
    }
    for id in ["web:http", "web:80", "http:web:http"] {
        let (code, body) = text(
            &env.s,
            "GET",
            &format!("/api/v1/namespaces/default/services/{id}/proxy/hi"),
        )
        .await;
        assert_eq!(
            (code, body.lines().next()),
            (200, Some("pod: GET /hi")),
            "{id}"
        );
    }
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/services/cold/proxy/hi")
        .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (503, Some("no endpoints available for service \"cold\""))
    );
    // Named ports must be named: the unnamed default matches no endpoint port.
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/services/web/proxy/hi")
        .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (503, Some("no endpoints available for service \"web\""))
    );
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/services/web:81/proxy/hi")
        .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (503, Some("no service port 81 found for service \"web\""))
    );
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/services/ftp:web:80/proxy/hi")
        .await;
    assert_eq!(
        (code, v["message"].as_str()),
        (400, Some("invalid service request \"ftp:web:80\""))
    );
}

#[tokio::test]
async fn loopback_destinations_are_refused_but_not_for_kubelet_logs() {
    let env = connect_env::start(|_| {}).await;
    connect_env::node(&env.s, "lo", "127.0.0.1").await;
    let (code, v) = env.s.get_json("/api/v1/nodes/lo/proxy/healthz").await;
    assert_eq!(
        (code, v["message"].as_str()),
        (400, Some("address not allowed"))
    );
    connect_env::node(&env.s, "ll", "169.254.1.1").await;
    assert_eq!(env.s.get_json("/api/v1/nodes/ll/proxy/").await.0, 400);
    pod(&env.s, "onlo", &["app"], Some("lo")).await;
    let (code, v) = env
        .s
        .get_json("/api/v1/namespaces/default/pods/onlo/log")
        .await;
    // Not refused: the connection is tried (and refused by the network).
    assert_eq!(code, 500, "{v}");
    let msg = v["message"].as_str().unwrap();
    assert!(msg.starts_with("Get \"https://127.0.0.1:10250/containerLogs/default/onlo/app\": dial tcp 127.0.0.1:10250"), "{msg}");
}

#[tokio::test]
async fn the_node_authorizer_keeps_nodes_off_nodes_proxy() {
    let env = connect_env::start(|o| {
        o.authorization_modes = vec![kapi_auth::authz::Mode::Node, kapi_auth::authz::Mode::Rbac];
    })
    .await;
    let req = http::Request::get("/api/v1/nodes/n1/proxy/healthz")
        .header("impersonate-user", "system:node:n1")
        .header("impersonate-group", "system:nodes")
        .body(Vec::new())
        .unwrap();
    let (code, v) = env.s.raw(req).await;
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "nodes \"n1\" is forbidden: User \"system:node:n1\" cannot get resource \"nodes/proxy\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn upgrade_headers_on_a_plain_path_are_a_plain_request() {
    let env = connect_env::start(|_| {}).await;
    let req = http::Request::get("/api/v1/namespaces/default/pods")
        .header("connection", "Upgrade")
        .header("upgrade", "SPDY/3.1")
        .body(Vec::new())
        .unwrap();
    let (code, v) = env.s.raw(req).await;
    assert_eq!((code, v["kind"].as_str()), (200, Some("PodList")));
    let (code, _) = env
        .s
        .get_json("/api/v1/namespaces/default/pods/web/status/extra")
        .await;
    assert_eq!(code, 404);
}
