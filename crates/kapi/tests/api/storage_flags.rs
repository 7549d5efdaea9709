//! The API and storage flags, each as kube-apiserver documents it:
//! `--runtime-config` (discovery and routes follow), `--watch-cache` and
//! `--watch-cache-sizes`, `--etcd-servers-overrides` (events in a store of
//! their own), `--delete-collection-workers`, `--enable-garbage-collector`,
//! and the feature gates kapi acts on (`AggregatedDiscoveryRemoveBetaType`,
//! `WatchList`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{self, TestServer};
use crate::webhook_server;

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn code(s: &TestServer, path: &str) -> u16 {
    s.get_json(path).await.0
}

#[tokio::test]
async fn runtime_config_removes_groups_versions_and_resources() {
    let off = kapi::runtime_config_off(&pairs(&[
        ("batch/v1", "false"),
        ("apps/v1/daemonsets", "false"),
    ]))
    .unwrap();
    let s = harness::start_configured(move |o| o.storage.hidden = off).await;
    let (_, apis) = s.get_json("/apis").await;
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(!groups.contains(&"batch"), "{groups:?}");
    assert!(groups.contains(&"apps"));
    assert_eq!(code(&s, "/apis/batch").await, 404);
    assert_eq!(code(&s, "/apis/batch/v1").await, 404);
    assert_eq!(
        code(&s, "/apis/batch/v1/namespaces/default/jobs").await,
        404
    );
    let (_, apps) = s.get_json("/apis/apps/v1").await;
    let resources: Vec<&str> = apps["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(!resources.contains(&"daemonsets"), "{resources:?}");
    assert!(resources.contains(&"deployments"));
    assert_eq!(
        code(&s, "/apis/apps/v1/namespaces/default/daemonsets").await,
        404
    );
    assert_eq!(
        code(&s, "/apis/apps/v1/namespaces/default/deployments").await,
        200
    );
    // Aggregated discovery and OpenAPI agree.
    let req = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(vec![])
        .unwrap();
    let (_, agg) = s.raw(req).await;
    assert!(!agg.to_string().contains("\"batch\""), "{agg}");
    let (_, v3) = s.get_json("/openapi/v3").await;
    assert!(v3["paths"].get("apis/batch/v1").is_none());
    assert!(v3["paths"].get("apis/apps/v1").is_some());
}

#[tokio::test]
async fn runtime_config_api_all_false_keeps_only_what_is_turned_back_on() {
    let off = kapi::runtime_config_off(&pairs(&[("api/all", "false"), ("v1", "true")])).unwrap();
    let s = harness::start_configured(move |o| o.storage.hidden = off).await;
    let (_, apis) = s.get_json("/apis").await;
    assert_eq!(apis["groups"], json!([]), "{apis}");
    assert_eq!(code(&s, "/api/v1/namespaces").await, 200);
    assert_eq!(code(&s, "/apis/apps/v1/deployments").await, 404);
}

/// A ConfigMap written then listed and watched; the watch sees the next write.
async fn lists_and_watches_work(s: &TestServer) {
    let base = "/api/v1/namespaces/default/configmaps";
    let cm = |n: &str| serde_json::to_vec(&harness::configmap(n, &[])).unwrap();
    assert_eq!(s.send_json("POST", base, cm("one")).await.0, 201);
    let (code, list) = s.get_json(base).await;
    assert_eq!(code, 200);
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let req = http::Request::get(format!("{base}?watch=1&resourceVersion={rv}"))
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = s.client.send(req).await.unwrap();
    assert_eq!(s.send_json("POST", base, cm("two")).await.0, 201);
    use futures::StreamExt;
    use http_body_util::BodyExt as _;
    let mut body = resp.into_body().into_data_stream();
    let ev = tokio::time::timeout(Duration::from_secs(30), body.next())
        .await
        .expect("an event")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&ev).contains("\"two\""));
}

#[tokio::test]
async fn watch_cache_off_serves_from_storage() {
    let s = harness::start_configured(|o| o.storage.watch_cache = false).await;
    assert!(s.server.apis.cache().is_none());
    let cms = s.server.apis.lookup("", "v1", "configmaps").unwrap();
    assert!(cms.store.cache().is_none());
    lists_and_watches_work(&s).await;
}

#[tokio::test]
async fn watch_cache_sizes_zero_turns_one_resource_off() {
    let s = harness::start_configured(|o| {
        o.storage.uncached = vec![("".into(), "configmaps".into())];
    })
    .await;
    let apis = &s.server.apis;
    assert!(apis
        .lookup("", "v1", "configmaps")
        .unwrap()
        .store
        .cache()
        .is_none());
    assert!(apis
        .lookup("", "v1", "secrets")
        .unwrap()
        .store
        .cache()
        .is_some());
    lists_and_watches_work(&s).await;
}

#[tokio::test]
async fn etcd_servers_overrides_put_events_in_their_own_store() {
    let dir = tempfile::tempdir().unwrap();
    let config = kapi_storage::embedded::EmbeddedConfig::new(dir.path().join("events"));
    let slot = kapi_storage::factory::open(kapi_storage::factory::StorageConfig::Embedded(config))
        .unwrap();
    slot.wait_ready(Duration::from_secs(10)).await.unwrap();
    let events: Arc<dyn kapi_storage::Backend> = Arc::new(slot.clone());
    let other = events.clone();
    let s = harness::start_configured(move |o| {
        o.storage.overrides = vec![(("".into(), "events".into()), other)];
    })
    .await;
    let ev = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Tested", "message": "in its own store", "type": "Normal"});
    let (code, out) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/default/events",
            ev.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    let key = "/events/default/e1";
    assert!(
        events.get(key, None).await.unwrap().is_some(),
        "in the override"
    );
    let main = s.slot.current().unwrap();
    assert!(
        main.get(key, None).await.unwrap().is_none(),
        "not in the main store"
    );
    // Both versions of events read the override; watches see it too.
    let (code, got) = s
        .get_json("/apis/events.k8s.io/v1/namespaces/default/events/e1")
        .await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["note"], "in its own store");
    let (code, list) = s.get_json("/api/v1/namespaces/default/events").await;
    assert_eq!(code, 200);
    assert_eq!(list["items"][0]["metadata"]["name"], "e1");
}

async fn delete_collection_concurrency(workers: usize) -> usize {
    let s = harness::start_configured(move |o| o.config.delete_collection_workers = workers).await;
    let hook = webhook_server::start().await;
    let spec = json!({"name": "gather.example.com",
        "clientConfig": {"url": hook.url("/gather"), "caBundle": hook.ca_bundle},
        "rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    crate::webhooks::configure(&s, false, "gather", spec).await;
    s.namespace("many").await;
    let base = "/api/v1/namespaces/many/configmaps";
    for i in 0..4 {
        let cm = serde_json::to_vec(&harness::configmap(&format!("c{i}"), &[("x", "y")])).unwrap();
        assert_eq!(s.send_json("POST", base, cm).await.0, 201);
    }
    let (code, out) = s
        .send_json("DELETE", &format!("{base}?labelSelector=x%3Dy"), Vec::new())
        .await;
    assert_eq!(code, 200, "{out}");
    assert_eq!(out["items"].as_array().map(Vec::len), Some(4));
    hook.max_concurrent()
}

#[tokio::test]
async fn delete_collection_workers_delete_at_once() {
    assert!(delete_collection_concurrency(4).await >= 2);
    assert_eq!(delete_collection_concurrency(1).await, 1);
}

async fn foreground_delete(s: &TestServer) -> (u16, Value) {
    let base = "/api/v1/namespaces/default/configmaps";
    let cm = serde_json::to_vec(&harness::configmap("owner", &[])).unwrap();
    assert_eq!(s.send_json("POST", base, cm).await.0, 201);
    let opts =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"});
    s.send_json(
        "DELETE",
        &format!("{base}/owner"),
        opts.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn enable_garbage_collector_false_ignores_propagation() {
    let on = harness::start().await;
    let (code, out) = foreground_delete(&on).await;
    assert_eq!(code, 200);
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["foregroundDeletion"]),
        "{out}"
    );
    let off = harness::start_configured(|o| o.storage.garbage_collection = false).await;
    let (code, out) = foreground_delete(&off).await;
    assert_eq!(code, 200);
    assert!(out["metadata"].get("finalizers").is_none(), "{out}");
    let (code, _) = off
        .get_json("/api/v1/namespaces/default/configmaps/owner")
        .await;
    assert_eq!(code, 404, "deleted at once");
}

async fn v2beta1_discovery(s: &TestServer) -> Value {
    let req = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
        )
        .body(vec![])
        .unwrap();
    s.raw(req).await.1
}

#[tokio::test]
async fn aggregated_discovery_v2beta1_follows_its_gate() {
    // 1.33's default (AggregatedDiscoveryRemoveBetaType on): the legacy list.
    let s = harness::start().await;
    assert_eq!(v2beta1_discovery(&s).await["kind"], "APIGroupList");
    let beta = harness::start_configured(|o| o.config.discovery_v2beta1 = true).await;
    let doc = v2beta1_discovery(&beta).await;
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2beta1");
}

#[tokio::test]
async fn watch_list_gate_decides_send_initial_events() {
    let path = "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true\
                &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let s = harness::start().await;
    let (code, out) = s.get_json(path).await;
    assert_eq!(code, 422, "{out}");
    assert_eq!(
        out["details"]["causes"][0]["message"],
        "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    let on = harness::start_configured(|o| o.config.watch_list = true).await;
    let req = http::Request::get(path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = on.client.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
}
