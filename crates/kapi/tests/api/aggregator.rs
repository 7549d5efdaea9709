//! API aggregation end to end: a small extension API server started on
//! loopback (HTTPS, its own CA, requiring nothing but accepting the front-proxy
//! client certificate) serves `wardle.example.com/v1` flunders; an APIService,
//! a Service and its Endpoints point kapi at it. Checked: the `Available`
//! condition, proxied get/list/watch with the user in `X-Remote-*` headers and
//! the front-proxy certificate presented, authorization before the proxy,
//! discovery (legacy and aggregated) merged, and — once the server is stopped —
//! `Available=False`, 503 and stale discovery.

use std::time::Duration;

use http_body_util::BodyExt as _;
use kapi_server::tls;
use kube::api::ListParams;
use serde_json::{json, Value};

use crate::extension_server::*;
use crate::harness::{self, api_error};

#[tokio::test]
async fn a_remote_api_service_is_proxied_with_the_user_and_goes_unavailable() {
    let front_proxy = certs(None, "front-proxy-client");
    let s = harness::start_configured(|o| {
        o.aggregator.resync = Duration::from_millis(300);
        o.aggregator.proxy_client = Some((front_proxy.cert.clone(), front_proxy.key.clone()));
    })
    .await;
    let mut ext = start_extension("wardle-api.wardle.svc", &front_proxy.ca).await;
    register(&s, &ext).await;
    let cond = wait_available(&s, &format!("v1.{GROUP}"), "True").await;
    assert_eq!(cond["reason"], "Passed");
    assert_eq!(cond["message"], "all checks passed");

    // get and list go through, as the admin, with the front-proxy certificate.
    let api = flunders_api(&s, "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let seen = ext.seen();
    assert_eq!(seen.client_cn.as_deref(), Some("front-proxy-client"));
    assert_eq!(seen.user.as_deref(), Some(tls::ADMIN_USER));
    assert!(
        seen.groups.contains(&"system:masters".to_owned()),
        "{seen:?}"
    );
    assert!(
        seen.groups.contains(&"system:authenticated".to_owned()),
        "{seen:?}"
    );
    let one = api.get("one").await.unwrap();
    assert_eq!(one.metadata.name.as_deref(), Some("one"));

    // Impersonation happens before the proxy; extra keys are path-escaped.
    let req = http::Request::get(format!("/apis/{GROUP}/v1/namespaces/default/flunders/x"))
        .header("Impersonate-User", "bob")
        .header("Impersonate-Group", "system:masters")
        .header("Impersonate-Extra-acme.com%2fproject", "p1")
        .header("X-Remote-User", "mallory")
        .body(Vec::new())
        .unwrap();
    let (code, body) = s.raw(req).await;
    assert_eq!(code, 200, "{body}");
    let seen = ext.seen();
    assert_eq!(seen.user.as_deref(), Some("bob"));
    assert_eq!(seen.groups, vec!["system:masters", "system:authenticated"]);
    assert_eq!(
        seen.extra,
        // Header names travel lower-cased (HTTP/2 requires it; the
        // escape's hex digits are case-insensitive to the receiver).
        vec![(
            "x-remote-extra-acme.com%2fproject".to_owned(),
            "p1".to_owned()
        )]
    );

    // Authorization runs before the proxy: alice may not list flunders.
    let alice = s.client_with_token("alice-token").await;
    let alice_api = harness::dynamic(&alice, GROUP, "v1", "Flunder", "flunders", Some("default"));
    let err = api_error(alice_api.list(&ListParams::default()).await);
    assert_eq!(err.code, 403);

    // A watch streams: the first event arrives before the second is sent.
    let req = http::Request::get(format!(
        "/apis/{GROUP}/v1/namespaces/default/flunders?watch=true"
    ))
    .body(kube::client::Body::from(Vec::new()))
    .unwrap();
    let resp = s.client.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let first: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(first["object"]["metadata"]["name"], "one");
    ext.go_on.notify_one();
    let rest = body.collect().await.unwrap().to_bytes();
    let second: Value = serde_json::from_slice(rest.trim_ascii()).unwrap();
    assert_eq!(second["object"]["metadata"]["name"], "two");

    // Discovery: legacy group list, the group, aggregated.
    let (code, apis) = s.get_json("/apis").await;
    assert_eq!(code, 200);
    let group = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == GROUP)
        .unwrap_or_else(|| panic!("{GROUP} not in {apis:#}"));
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        format!("{GROUP}/v1")
    );
    let (code, g) = s.get_json(&format!("/apis/{GROUP}")).await;
    assert_eq!((code, g["kind"].as_str()), (200, Some("APIGroup")), "{g}");
    let (code, rl) = s.get_json(&format!("/apis/{GROUP}/v1")).await;
    assert_eq!(code, 200);
    assert_eq!(rl["resources"][0]["name"], "flunders");
    let doc = aggregated(&s).await;
    let item = group_of(&doc, GROUP).unwrap_or_else(|| panic!("{GROUP} not in {doc:#}"));
    assert_eq!(item["versions"][0]["freshness"], "Current");
    assert_eq!(item["versions"][0]["resources"][0]["resource"], "flunders");
    assert_eq!(
        item["versions"][0]["resources"][0]["subresources"][0]["subresource"],
        "status"
    );

    // OpenAPI: v2 merged, v3 listed and served.
    let (code, v2) = s.get_json("/openapi/v2").await;
    assert_eq!(code, 200);
    assert!(
        v2["definitions"].get(FLUNDER_DEF).is_some(),
        "remote definition merged"
    );
    assert!(v2["definitions"].get("io.k8s.api.core.v1.Pod").is_some());
    let (code, index) = s.get_json("/openapi/v3").await;
    assert_eq!(code, 200);
    let url = index["paths"][format!("apis/{GROUP}/v1")]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{GROUP} not in {index:#}"))
        .to_owned();
    let (code, v3) = s.get_json(&url).await;
    assert_eq!(code, 200);
    assert!(v3["components"]["schemas"].get(FLUNDER_DEF).is_some());

    // The server goes away: Available=False, 503, stale discovery.
    ext.stop().await;
    let cond = wait_available(&s, &format!("v1.{GROUP}"), "False").await;
    assert_eq!(cond["reason"], "FailedDiscoveryCheck");
    let msg = cond["message"].as_str().unwrap();
    assert!(
        msg.starts_with("failing or missing response from https://127.0.0.1:"),
        "{msg}"
    );
    let err = api.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 503),
        "{err:?}"
    );
    let (code, text) = s
        .raw_text(
            http::Request::get(format!("/apis/{GROUP}/v1/namespaces/default/flunders"))
                .body(Vec::new())
                .unwrap(),
        )
        .await;
    assert_eq!((code, text.as_str()), (503, "service unavailable\n"));
    let doc = aggregated(&s).await;
    let item = group_of(&doc, GROUP).expect("an unavailable group stays in discovery");
    assert_eq!(item["versions"][0]["freshness"], "Stale");

    // Table output as kubectl asks for it.
    let req = http::Request::get(format!(
        "/apis/apiregistration.k8s.io/v1/apiservices/v1.{GROUP}"
    ))
    .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    .body(Vec::new())
    .unwrap();
    let (code, table) = s.raw(req).await;
    assert_eq!(code, 200, "{table}");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Service", "Available", "Age"]);
    assert_eq!(table["rows"][0]["cells"][1], "wardle/wardle-api");
    assert_eq!(table["rows"][0]["cells"][2], "False (FailedDiscoveryCheck)");
}

/// `--aggregator-reject-forwarding-redirect` (on by default): an extension
/// server's redirect becomes a 502; turned off, it reaches the client.
#[tokio::test]
async fn redirects_from_extension_servers_are_refused_unless_allowed() {
    for reject in [true, false] {
        let front_proxy = certs(None, "front-proxy-client");
        let s = harness::start_configured(|o| {
            o.aggregator.resync = Duration::from_millis(300);
            o.aggregator.proxy_client = Some((front_proxy.cert.clone(), front_proxy.key.clone()));
            o.aggregator.reject_forwarding_redirect = reject;
        })
        .await;
        let ext = start_extension("wardle-api.wardle.svc", &front_proxy.ca).await;
        register(&s, &ext).await;
        wait_available(&s, &format!("v1.{GROUP}"), "True").await;
        let req = http::Request::get(format!(
            "/apis/{GROUP}/v1/namespaces/default/flunders/moved"
        ))
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
        let resp = s.client.send(req).await.unwrap();
        let code = resp.status().as_u16();
        let location = resp.headers().get("location").cloned();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        if reject {
            assert_eq!(code, 502);
            assert_eq!(
                &body[..],
                b"the backend attempted to redirect this request, which is not permitted"
            );
            assert!(location.is_none());
        } else {
            assert_eq!(code, 302);
            assert_eq!(location.unwrap(), "https://elsewhere.example/");
        }
    }
}

#[tokio::test]
async fn missing_services_and_endpoints_are_reported() {
    let s = harness::start().await;
    let name = format!("v1.{GROUP}");
    let (code, body) = s
        .send_json(
            "POST",
            "/apis/apiregistration.k8s.io/v1/apiservices",
            serde_json::to_vec(&json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name},
                "spec": {"group": GROUP, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                         "insecureSkipTLSVerify": true,
                         "service": {"namespace": "default", "name": "nothing", "port": 443}}}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let cond = wait_available(&s, &name, "False").await;
    assert_eq!(cond["reason"], "ServiceNotFound");
    assert_eq!(
        cond["message"],
        "service/nothing in \"default\" is not present"
    );
    let (code, _) = s.get_json(&format!("/apis/{GROUP}/v1")).await;
    assert_eq!(code, 503);
    let (code, body) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/services",
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "nothing"},
                "spec": {"ports": [{"port": 443}]}}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let mut reason = Value::Null;
    for _ in 0..300 {
        let (_, obj) = s
            .get_json(&format!(
                "/apis/apiregistration.k8s.io/v1/apiservices/{name}"
            ))
            .await;
        reason = obj["status"]["conditions"][0]["reason"].clone();
        if reason == "EndpointsNotFound" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(reason, "EndpointsNotFound");
}

#[tokio::test]
async fn invalid_api_services_are_rejected() {
    let s = harness::start().await;
    let (code, body) = s
        .send_json(
            "POST",
            "/apis/apiregistration.k8s.io/v1/apiservices",
            serde_json::to_vec(&json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": "v1.wrong.example.com"},
                "spec": {"group": GROUP, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15}}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1.wardle.example.com\""
    );
}

#[tokio::test]
async fn local_api_services_follow_built_ins_and_definitions() {
    let s = harness::start().await;
    let apps = wait_available(&s, "v1.apps", "True").await;
    assert_eq!(apps["reason"], "Local");
    assert_eq!(apps["message"], "Local APIServices are always available");
    let (_, obj) = s
        .get_json("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")
        .await;
    assert_eq!(
        obj["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    assert_eq!(obj["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(obj["spec"]["versionPriority"], 15);
    assert!(obj["spec"].get("service").is_none_or(Value::is_null));
    wait_available(&s, "v1.", "True").await;
    wait_available(&s, "v1.apiextensions.k8s.io", "True").await;

    crate::crd::establish(&s, crate::crd::crontab_crd()).await;
    wait_available(&s, "v1.stable.example.com", "True").await;
    let (_, obj) = s
        .get_json("/apis/apiregistration.k8s.io/v1/apiservices/v1.stable.example.com")
        .await;
    assert_eq!(
        obj["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(obj["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(obj["spec"]["versionPriority"], 100);

    let crds = crate::crd::crd_api(&s);
    crds.delete("crontabs.stable.example.com", &Default::default())
        .await
        .unwrap();
    let mut code = 0;
    for _ in 0..300 {
        code = s
            .get_json("/apis/apiregistration.k8s.io/v1/apiservices/v1.stable.example.com")
            .await
            .0;
        if code == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(code, 404, "the APIService of a deleted definition goes");
}

/// Without `--enable-aggregator-routing` (upstream's default), an
/// APIService's service is dialled at its cluster IP, which kube-proxy would
/// route; here nothing does, so the discovery check names the cluster IP and
/// fails, though the endpoint behind it serves.
#[tokio::test]
async fn cluster_ip_routing_dials_the_services_cluster_ip() {
    let front_proxy = certs(None, "front-proxy-client");
    let s = harness::start_configured(|o| {
        o.aggregator.resync = Duration::from_millis(300);
        o.aggregator.proxy_client = Some((front_proxy.cert.clone(), front_proxy.key.clone()));
        o.aggregator.routing = kapi_client::service_resolver::Routing::ClusterIp;
    })
    .await;
    let ext = start_extension("wardle-api.wardle.svc", &front_proxy.ca).await;
    register(&s, &ext).await;
    let (_, svc) = s
        .get_json("/api/v1/namespaces/wardle/services/wardle-api")
        .await;
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_owned();
    assert!(!ip.starts_with("127."), "{ip}");
    let cond = wait_available(&s, &format!("v1.{GROUP}"), "False").await;
    assert_eq!(cond["reason"], "FailedDiscoveryCheck");
    let msg = cond["message"].as_str().unwrap();
    let url = format!("failing or missing response from https://{ip}:443/apis/{GROUP}/v1");
    assert!(msg.starts_with(&url), "{msg}");
}
