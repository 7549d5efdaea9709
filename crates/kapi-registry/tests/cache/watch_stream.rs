//! Watches served by the cache are pulled by their reader: the initial events
//! come out whole and in order however many there are, the only buffer is the
//! cache's per-watcher channel (a reader that stops is closed and counted), and
//! dropping the receiver detaches the watcher from the cache.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;

use kapi_machinery::labels;
use kapi_registry::cache::{self, CacheConfig};
use kapi_registry::store::options::{RvMatch, WatchOptions, WriteOptions};
use kapi_registry::store::WatchEventType;
use kapi_registry::Store;
use serde_json::{json, Value};

use crate::fixtures::{self, Fixture};
use crate::store::def;

fn cached(f: &Fixture) -> Store {
    Store::new(def(), f.cache.backend().clone()).with_cache(f.cache.clone())
}

/// Create `n` objects in namespace `ns`, every other one labelled `app=x`
/// (the rest `app=y`); the revision of the last.
async fn create_many(s: &Store, ns: &str, n: usize) -> i64 {
    let mut last = 0;
    let opts = WriteOptions::default();
    for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
        let writes = chunk.iter().map(|i| {
            let app = if i % 2 == 0 { "x" } else { "y" };
            let obj = json!({"metadata": {"name": format!("o{i:05}"), "namespace": ns,
                                          "labels": {"app": app}},
                             "data": {"k": "v"}});
            s.create(obj, &opts)
        });
        for made in futures::future::join_all(writes).await {
            last = last.max(rv_of(&made.unwrap()));
        }
    }
    last
}

fn rv_of(v: &Value) -> i64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

/// Create object `name` in namespace `ns` and wait until the cache has
/// dispatched its event; the object as created.
async fn create_dispatched(f: &Fixture, s: &Store, ns: &str, name: &str) -> Value {
    let obj = json!({"metadata": {"name": name, "namespace": ns}});
    let made = s.create(obj, &WriteOptions::default()).await.unwrap();
    assert!(
        f.cache
            .wait_for(rv_of(&made), Duration::from_secs(10))
            .await
    );
    made
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_sends_every_initial_object_then_the_end_bookmark() {
    let f = fixtures::embedded().await;
    let s = cached(&f);
    let n = 3000;
    let last = create_many(&s, "a", n).await;
    assert!(f.cache.wait_for(last, Duration::from_secs(10)).await);
    let opts = WatchOptions {
        label: labels::parse("app=x").unwrap(),
        rv_match: RvMatch::NotOlderThan,
        allow_bookmarks: true,
        send_initial_events: Some(true),
        ..Default::default()
    };
    let mut rx = s.watch(Some("a"), &opts).await.unwrap();
    let mut names = Vec::new();
    let end = loop {
        let ev = rx.recv().await.expect("the watch goes on");
        match ev.kind {
            WatchEventType::Added => {
                assert_eq!(ev.object["metadata"]["labels"]["app"], "x", "{ev:?}");
                names.push(ev.object["metadata"]["name"].as_str().unwrap().to_owned());
            }
            WatchEventType::Bookmark => break ev,
            _ => panic!("unexpected {ev:?}"),
        }
    };
    let expected: Vec<String> = (0..n)
        .filter(|i| i % 2 == 0)
        .map(|i| format!("o{i:05}"))
        .collect();
    assert_eq!(names, expected, "every matching object once, in key order");
    assert_eq!(
        end.object["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(rv_of(&end.object) >= last);
    // Then the changes after the snapshot, through the same receiver.
    let obj = json!({"metadata": {"name": "later", "namespace": "a", "labels": {"app": "x"}}});
    let made = s.create(obj, &WriteOptions::default()).await.unwrap();
    let ev = rx.recv().await.unwrap();
    assert_eq!(ev.kind, WatchEventType::Added);
    assert_eq!(ev.object, made);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_whose_reader_stops_is_closed_and_counted() {
    let f = fixtures::embedded_with(CacheConfig {
        watcher_buffer: 2,
        ..Default::default()
    })
    .await;
    let s = cached(&f);
    let before = cache::terminated_watchers_total();
    let opts = WatchOptions {
        encoded_json: true,
        ..Default::default()
    };
    let mut slow = s.watch(Some("s"), &opts).await.unwrap();
    let watchers = f.cache.watcher_count("/t/");
    assert!(watchers >= 1);
    let n = 10;
    for i in 0..n {
        // One event per message: each is dispatched before the next write.
        create_dispatched(&f, &s, "s", &format!("o{i}")).await;
    }
    // No second buffer behind the cache's: the watcher was closed while
    // unread, and its stream ends after what the cache had buffered.
    let mut received = 0;
    while let Some(ev) = slow.recv().await {
        assert_eq!(ev.kind, WatchEventType::Added, "{ev:?}");
        received += 1;
    }
    assert!(received < n, "the slow watcher was closed, got {received}");
    assert!(cache::terminated_watchers_total() > before);
    assert_eq!(f.cache.watcher_count("/t/"), watchers - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_receiver_detaches_the_cache_watcher() {
    let f = fixtures::embedded().await;
    let s = cached(&f);
    let base = f.cache.watcher_count("/t/");
    let opts = WatchOptions {
        encoded_json: true,
        ..Default::default()
    };
    let mut kept = s.watch(Some("d"), &opts).await.unwrap();
    let gone = s.watch(Some("d"), &opts).await.unwrap();
    assert_eq!(f.cache.watcher_count("/t/"), base + 2);
    drop(gone);
    create_dispatched(&f, &s, "d", "one").await;
    // The dispatch of that write found the dropped receiver closed.
    assert_eq!(f.cache.watcher_count("/t/"), base + 1);
    let ev = kept.recv().await.unwrap();
    assert_eq!(ev.kind, WatchEventType::Added);
    drop(kept);
    create_dispatched(&f, &s, "d", "two").await;
    assert_eq!(f.cache.watcher_count("/t/"), base);
}

/// The receiver is a stream too, and events it yields keep their order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receiver_is_a_stream() {
    let f = fixtures::embedded().await;
    let s = cached(&f);
    let last = create_many(&s, "st", 20).await;
    assert!(f.cache.wait_for(last, Duration::from_secs(10)).await);
    let rx = s.watch(Some("st"), &WatchOptions::default()).await.unwrap();
    let evs: Vec<_> = rx.take(20).collect().await;
    let names: BTreeSet<_> = evs
        .iter()
        .map(|e| e.object["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 20);
    assert!(evs.iter().all(|e| e.kind == WatchEventType::Added));
}
