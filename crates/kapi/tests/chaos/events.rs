//! `--event-ttl`: events written through the API (core/v1 and events.k8s.io,
//! created or updated) go away by themselves, as DELETED events a watcher
//! sees, while other objects stay; so an event flood does not pile up.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

use crate::proc::Kapi;
use crate::util::{configmap, namespace};

fn event(name: &str, ns: &str) -> Event {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {"kind": "ConfigMap", "namespace": ns, "name": "keep"},
        "reason": "Flood", "message": "m", "type": "Normal"
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_after_event_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let kapi = Kapi::start(dir.path(), &["--event-ttl=2s"]).await;
    let ns = namespace(&kapi.client, "flood").await;
    let cms: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), &ns);
    cms.create(&PostParams::default(), &configmap("keep"))
        .await
        .unwrap();
    let events: Api<Event> = Api::namespaced(kapi.client.clone(), &ns);
    let start = events.list(&ListParams::default()).await.unwrap();
    let rv = start.metadata.resource_version.unwrap();
    let mut watch = events
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let n = 30;
    for i in 0..n {
        let created = events
            .create(&PostParams::default(), &event(&format!("e{i}"), &ns))
            .await
            .unwrap();
        if i % 3 == 0 {
            // An update writes the TTL again; the event still goes.
            let mut again = created.clone();
            again.message = Some("updated".into());
            let name = created.metadata.name.clone().unwrap();
            events
                .replace(&name, &PostParams::default(), &again)
                .await
                .unwrap();
        }
    }
    let mut deleted = 0;
    while deleted < n {
        let ev = tokio::time::timeout(Duration::from_secs(60), watch.try_next())
            .await
            .expect("events expire in time")
            .unwrap()
            .expect("watch open");
        if let WatchEvent::Deleted(_) = ev {
            deleted += 1;
        }
    }
    assert!(events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
    assert!(cms.get("keep").await.is_ok(), "other objects stay");
}
