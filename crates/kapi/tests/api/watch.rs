//! WATCH through `Api::watch`: event order, resuming from a resourceVersion,
//! selector transitions, bookmarks, expired revisions, and WatchList.

use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::json;

use crate::harness::{self, configmap};

type Events = BoxStream<'static, Result<WatchEvent<ConfigMap>, kube::Error>>;

async fn open(api: &Api<ConfigMap>, wp: &WatchParams, rv: &str) -> Events {
    api.watch(wp, rv).await.expect("watch").boxed()
}

/// The next event, as `(type, name)`, within `secs` seconds.
async fn next(events: &mut Events, secs: u64) -> (String, String) {
    let ev = tokio::time::timeout(Duration::from_secs(secs), events.try_next())
        .await
        .expect("an event in time")
        .expect("no stream error")
        .expect("stream still open");
    describe(&ev)
}

fn describe(ev: &WatchEvent<ConfigMap>) -> (String, String) {
    let name = |c: &ConfigMap| c.metadata.name.clone().unwrap_or_default();
    match ev {
        WatchEvent::Added(c) => ("ADDED".into(), name(c)),
        WatchEvent::Modified(c) => ("MODIFIED".into(), name(c)),
        WatchEvent::Deleted(c) => ("DELETED".into(), name(c)),
        WatchEvent::Bookmark(b) => ("BOOKMARK".into(), b.metadata.resource_version.clone()),
        WatchEvent::Error(e) => ("ERROR".into(), format!("{} {}", e.code, e.reason)),
    }
}

fn ev(kind: &str, name: &str) -> (String, String) {
    (kind.to_string(), name.to_string())
}

/// Watch parameters without bookmarks (kube asks for them by default).
fn wp() -> WatchParams {
    WatchParams::default().timeout(30).disable_bookmarks()
}

#[tokio::test]
async fn watch_sees_added_modified_deleted_in_order() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut events = open(&api, &wp(), "0").await;
    api.create(&PostParams::default(), &configmap("w", &[]))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();
    assert_eq!(next(&mut events, 5).await, ev("ADDED", "w"));
    assert_eq!(next(&mut events, 5).await, ev("MODIFIED", "w"));
    assert_eq!(next(&mut events, 5).await, ev("DELETED", "w"));
}

#[tokio::test]
async fn watch_from_resource_version_replays_later_changes() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let a = api
        .create(&PostParams::default(), &configmap("a", &[]))
        .await
        .unwrap();
    let from = a.metadata.resource_version.unwrap();
    api.create(&PostParams::default(), &configmap("b", &[]))
        .await
        .unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await
    .unwrap();
    let mut events = open(&api, &wp(), &from).await;
    assert_eq!(next(&mut events, 5).await, ev("ADDED", "b"));
    assert_eq!(next(&mut events, 5).await, ev("MODIFIED", "a"));
}

#[tokio::test]
async fn selected_watch_sees_deleted_when_object_stops_matching() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let mut events = open(&api, &wp().labels("app=x"), "0").await;
    api.create(&PostParams::default(), &configmap("other", &[("app", "y")]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &configmap("sel", &[("app", "x")]))
        .await
        .unwrap();
    api.patch(
        "sel",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "y"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "other",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "x"}}})),
    )
    .await
    .unwrap();
    assert_eq!(next(&mut events, 5).await, ev("ADDED", "sel"));
    assert_eq!(next(&mut events, 5).await, ev("DELETED", "sel"));
    assert_eq!(next(&mut events, 5).await, ev("ADDED", "other"));
}

#[tokio::test]
async fn watch_sends_bookmarks_when_asked() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let created = api
        .create(&PostParams::default(), &configmap("b", &[]))
        .await
        .unwrap();
    let from = created.metadata.resource_version.unwrap();
    // As upstream's cacher: a bookmark 2 s before the deadline (else each minute).
    let mut events = open(&api, &WatchParams::default().timeout(5), &from).await;
    let (kind, rv) = next(&mut events, 12).await;
    assert_eq!(kind, "BOOKMARK");
    assert!(rv.parse::<u64>().unwrap() >= from.parse::<u64>().unwrap());
}

#[tokio::test]
async fn watch_sends_no_bookmarks_unless_asked() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let created = api
        .create(&PostParams::default(), &configmap("nb", &[]))
        .await
        .unwrap();
    let from = created.metadata.resource_version.unwrap();
    let wp = WatchParams::default().timeout(4).disable_bookmarks();
    let mut events = open(&api, &wp, &from).await;
    let mut seen = Vec::new();
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(15), events.try_next())
        .await
        .expect("the watch ends at its timeout")
    {
        seen.push(describe(&ev));
    }
    assert!(seen.is_empty(), "nothing happened, nothing sent: {seen:?}");
}

#[tokio::test]
async fn watch_from_compacted_revision_is_expired() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let first = api
        .create(&PostParams::default(), &configmap("old", &[]))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.unwrap();
    for i in 0..3 {
        api.create(&PostParams::default(), &configmap(&format!("n{i}"), &[]))
            .await
            .unwrap();
    }
    let now = s.backend.current_revision().await.unwrap();
    s.backend.compact(now).await.unwrap();

    let (code, reason) = match api.watch(&wp(), &old_rv).await {
        Err(kube::Error::Api(status)) => (status.code, status.reason),
        Err(other) => panic!("unexpected error {other:?}"),
        Ok(events) => {
            let mut events = events.boxed();
            match tokio::time::timeout(Duration::from_secs(5), events.next()).await {
                Ok(Some(Ok(WatchEvent::Error(e)))) => (e.code, e.reason),
                Ok(Some(Err(kube::Error::Api(status)))) => (status.code, status.reason),
                other => panic!(
                    "expected an expiry, got {:?}",
                    other.map(|o| o.map(|r| r.map(|e| describe(&e))))
                ),
            }
        }
    };
    assert_eq!(code, 410);
    assert_eq!(reason, "Expired");
}

#[tokio::test]
async fn watch_list_ends_initial_events_with_annotated_bookmark() {
    // sendInitialEvents needs the WatchList feature gate, off by default in 1.33.
    let s = harness::start_configured(|o| o.config.watch_list = true).await;
    let api: Api<ConfigMap> = s.api("default");
    for name in ["x", "y"] {
        api.create(&PostParams::default(), &configmap(name, &[]))
            .await
            .unwrap();
    }
    let wp = WatchParams::streaming_lists().timeout(30);
    let mut events = api.watch(&wp, "").await.expect("watch").boxed();
    let mut added = Vec::new();
    let bookmark = loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), events.try_next())
            .await
            .expect("event in time")
            .unwrap()
            .expect("open");
        match ev {
            WatchEvent::Added(c) => added.push(c.metadata.name.unwrap()),
            WatchEvent::Bookmark(b) => break b,
            other => panic!("unexpected {:?}", describe(&other)),
        }
    };
    added.sort();
    assert_eq!(added, vec!["x", "y"]);
    assert_eq!(
        bookmark
            .metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    api.create(&PostParams::default(), &configmap("z", &[]))
        .await
        .unwrap();
    assert_eq!(next(&mut events, 5).await, ev("ADDED", "z"));
}
