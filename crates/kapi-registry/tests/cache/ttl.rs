//! A resource whose strategy gives its objects a TTL (as events have
//! `--event-ttl`): the store writes creates and updates with it, so an object
//! goes away by itself — a DELETED event through the cache — and an update
//! writes the TTL again rather than leaving the object without one.

use std::sync::Arc;
use std::time::Duration;

use kapi_registry::store::options::{WatchOptions, WriteOptions};
use kapi_registry::store::{UpdateTarget, WatchEventType};
use kapi_registry::{ResourceDef, Store, Strategy};
use serde_json::json;

use crate::fixtures;

struct Expiring;

impl Strategy for Expiring {
    fn ttl(&self) -> Option<Duration> {
        Some(Duration::from_secs(2))
    }
}

fn def() -> Arc<ResourceDef> {
    let mut def = Arc::unwrap_or_clone(crate::store::def());
    def.strategy = Arc::new(Expiring);
    Arc::new(def)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_with_a_ttl_expire_after_create_and_after_update() {
    let f = fixtures::embedded().await;
    let store = Store::new(def(), f.cache.backend().clone()).with_cache(f.cache.clone());
    let w = WriteOptions::default();
    let a = json!({"metadata": {"name": "a", "namespace": "n"}, "data": {"k": "1"}});
    let created = store.create(a, &w).await.unwrap();
    let b = json!({"metadata": {"name": "b", "namespace": "n"}, "data": {"k": "1"}});
    store.create(b, &w).await.unwrap();
    let (updated, _) = store
        .update_with(Some("n"), "b", UpdateTarget::Main, &w, false, |cur| {
            let mut obj = cur.cloned().expect("b exists");
            obj["data"]["k"] = json!("2");
            Ok(obj)
        })
        .await
        .unwrap();
    let opts = WatchOptions {
        resource_version: created["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        ..Default::default()
    };
    let mut rx = store.watch(Some("n"), &opts).await.unwrap();
    let mut deleted = Vec::new();
    while deleted.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("both objects expire in time")
            .expect("watch open");
        if ev.kind == WatchEventType::Deleted {
            deleted.push(ev.object["metadata"]["name"].as_str().unwrap().to_owned());
            if ev.object["metadata"]["name"] == "b" {
                assert_eq!(ev.object["data"]["k"], updated["data"]["k"]);
            }
        }
    }
    deleted.sort();
    assert_eq!(deleted, ["a", "b"]);
}
