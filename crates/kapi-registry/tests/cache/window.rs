//! The cache's later additions: the history window kept by time as well as by
//! count (and shrinking back when idle), field indexes that narrow a list and follow every change, and
//! prefixes added while the cache serves (custom resources).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kapi_registry::cache::{Attrs, CacheConfig, CacheMessage, Indexer, KeyFilter, ReadAt};
use kapi_storage::KeyValue;

use crate::fixtures;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_younger_than_the_fresh_duration_stay_beyond_the_count() {
    let config = CacheConfig {
        history: 5,
        ..Default::default()
    };
    let f = fixtures::embedded_with(config).await;
    let (first, _) = f.create_keys("/t/f/", 20).await;
    let (mut w, _) = f
        .cache
        .watch_cached("/t/f/", first.mod_revision)
        .expect("75 s of events are kept even beyond `history`");
    match w.recv().await.unwrap() {
        CacheMessage::Events(evs) => assert_eq!(evs.len(), 19),
        other => panic!("expected the replay, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_count_bounds_the_window_whatever_the_age() {
    let config = CacheConfig {
        history: 3,
        history_max: 6,
        ..Default::default()
    };
    let f = fixtures::embedded_with(config).await;
    let (first, last) = f.create_keys("/t/m/", 20).await;
    assert!(f.cache.watch_cached("/t/m/", first.mod_revision).is_err());
    assert!(f.cache.watch_cached("/t/m/", last.mod_revision - 5).is_ok());
}

/// After a burst, an idle cache lets the burst's events go once they are older
/// than the fresh duration (the once-a-second tick trims), down to `history`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_window_shrinks_back_after_a_burst() {
    let config = CacheConfig {
        history: 5,
        history_fresh: Duration::from_millis(500),
        ..Default::default()
    };
    let f = fixtures::embedded_with(config).await;
    let (first, last) = f.create_keys("/t/i/", 20).await;
    assert!(f.cache.watch_cached("/t/i/", first.mod_revision).is_ok());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while f.cache.watch_cached("/t/i/", first.mod_revision).is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the burst is still kept"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(f.cache.watch_cached("/t/i/", last.mod_revision - 5).is_ok());
    assert!(f
        .cache
        .watch_cached("/t/i/", last.mod_revision - 6)
        .is_err());
}

/// Values are `node:<name>`; the "object" is indexed by that name.
fn node_indexer() -> Indexer {
    Indexer {
        fields: vec!["spec.nodeName".into()],
        key: 0,
        attrs: Box::new(|kv: &KeyValue| {
            let node = std::str::from_utf8(&kv.value).ok()?.strip_prefix("node:")?;
            let fields = BTreeMap::from([("spec.nodeName".to_owned(), node.to_owned())]);
            Some(Attrs {
                labels: BTreeMap::new().into(),
                fields: fields.into(),
            })
        }),
    }
}

fn on(node: &str) -> KeyFilter {
    KeyFilter::Field {
        field: "spec.nodeName".into(),
        value: node.into(),
    }
}

async fn keys(f: &fixtures::Fixture, prefix: &str, at: ReadAt, filter: &KeyFilter) -> Vec<String> {
    let page = f
        .cache
        .list_filtered(prefix, at, 0, None, filter)
        .await
        .unwrap()
        .expect("served from the cache");
    page.items.iter().map(|o| o.kv.key.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_index_visits_only_its_value_and_follows_changes() {
    let f = fixtures::embedded().await;
    // Objects written before the indexer is set are indexed too.
    f.backend.create("/t/i/a/p1", b("node:n1")).await.unwrap();
    f.backend.create("/t/i/b/p2", b("node:n2")).await.unwrap();
    let p3 = f.backend.create("/t/i/b/p3", b("node:n1")).await.unwrap();
    assert!(
        f.cache
            .wait_for(p3.mod_revision, Duration::from_secs(10))
            .await
    );
    assert!(f.cache.set_indexer("/t/", node_indexer()));
    assert!(f.cache.has_index("/t/", "spec.nodeName"));
    assert!(!f.cache.has_index("/t/", "spec.other"));

    assert_eq!(
        keys(&f, "/t/i/", ReadAt::Consistent, &on("n1")).await,
        ["/t/i/a/p1", "/t/i/b/p3"]
    );
    assert_eq!(
        keys(&f, "/t/i/b/", ReadAt::Consistent, &on("n1")).await,
        ["/t/i/b/p3"],
        "the key range still applies"
    );
    // Move p3 to n2, delete p1: the index follows.
    let moved = f
        .backend
        .update("/t/i/b/p3", b("node:n2"), p3.mod_revision)
        .await
        .unwrap();
    let gone = f.backend.delete("/t/i/a/p1", None).await.unwrap();
    assert!(
        f.cache
            .wait_for(
                gone.revision.max(moved.mod_revision),
                Duration::from_secs(10)
            )
            .await
    );
    assert!(keys(&f, "/t/i/", ReadAt::Consistent, &on("n1"))
        .await
        .is_empty());
    assert_eq!(
        keys(&f, "/t/i/", ReadAt::Consistent, &on("n2")).await,
        ["/t/i/b/p2", "/t/i/b/p3"]
    );
    // At the earlier revision the changed keys are candidates again, at their
    // old values (the caller's selector decides).
    let old = keys(&f, "/t/i/", ReadAt::Exact(p3.mod_revision), &on("n1")).await;
    assert_eq!(old, ["/t/i/a/p1", "/t/i/b/p3"]);
    // A field without an index: the cache cannot narrow, the caller scans.
    let none = f
        .cache
        .list_filtered(
            "/t/i/",
            ReadAt::Consistent,
            0,
            None,
            &KeyFilter::Field {
                field: "spec.other".into(),
                value: "x".into(),
            },
        )
        .await
        .unwrap();
    assert!(none.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_key_filter_reads_one_key_even_with_longer_neighbours() {
    let f = fixtures::embedded().await;
    f.backend.create("/t/k/ns/web", b("1")).await.unwrap();
    let last = f.backend.create("/t/k/ns/web2", b("2")).await.unwrap();
    assert!(
        f.cache
            .wait_for(last.mod_revision, Duration::from_secs(10))
            .await
    );
    let one = KeyFilter::Key("/t/k/ns/web".into());
    assert_eq!(
        keys(&f, "/t/k/ns/", ReadAt::Consistent, &one).await,
        ["/t/k/ns/web"]
    );
    let missing = KeyFilter::Key("/t/k/ns/we".into());
    assert!(keys(&f, "/t/k/ns/", ReadAt::Consistent, &missing)
        .await
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_filter_reads_that_name_in_every_namespace_at_any_revision() {
    let f = fixtures::embedded().await;
    f.backend.create("/t/n/a/ca", b("1")).await.unwrap();
    f.backend.create("/t/n/a/ca2", b("2")).await.unwrap();
    f.backend.create("/t/n/b/xca", b("3")).await.unwrap();
    let before = f.backend.create("/t/n/c/ca", b("4")).await.unwrap();
    assert!(
        f.cache
            .wait_for(before.mod_revision, Duration::from_secs(10))
            .await
    );
    let ca = KeyFilter::Name("ca".into());
    assert_eq!(
        keys(&f, "/t/n/", ReadAt::Consistent, &ca).await,
        ["/t/n/a/ca", "/t/n/c/ca"],
        "only whole last segments match"
    );
    // A later create and delete: the current list follows them, and a read
    // at the earlier revision still sees what was there then.
    f.backend.create("/t/n/b/ca", b("5")).await.unwrap();
    let gone = f.backend.delete("/t/n/a/ca", None).await.unwrap();
    assert!(
        f.cache
            .wait_for(gone.revision, Duration::from_secs(10))
            .await
    );
    assert_eq!(
        keys(&f, "/t/n/", ReadAt::Consistent, &ca).await,
        ["/t/n/b/ca", "/t/n/c/ca"]
    );
    assert_eq!(
        keys(&f, "/t/n/", ReadAt::Exact(before.mod_revision), &ca).await,
        ["/t/n/a/ca", "/t/n/c/ca"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_added_while_serving_is_filled_and_follows_writes() {
    let f = fixtures::embedded().await;
    let before = f.backend.create("/late/a", b("a")).await.unwrap();
    assert!(
        f.cache
            .wait_for(before.mod_revision, Duration::from_secs(10))
            .await
    );
    assert!(!f.cache.is_ready("/late/"));
    assert!(f.cache.add_prefix("/late/"));
    assert!(f.cache.add_prefix("/late/"), "adding twice is harmless");
    assert!(
        f.cache.add_prefix("/t/sub/"),
        "a prefix under a cached one is cached"
    );
    assert!(
        !f.cache.add_prefix("/"),
        "a prefix containing cached ones is refused"
    );
    for _ in 0..400 {
        if f.cache.is_ready("/late/") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(f.cache.is_ready("/late/"), "filled by the reflector");
    let (mut w, _) = f.cache.watch_cached("/late/", 0).unwrap();
    let after = f.backend.create("/late/b", b("b")).await.unwrap();
    let page = f
        .cache
        .list_cached("/late/", ReadAt::Consistent, 0, None)
        .await
        .unwrap()
        .expect("served from the cache");
    let got: Vec<_> = page.items.iter().map(|o| o.kv.clone()).collect();
    assert_eq!(got, [before, after.clone()]);
    loop {
        match w.recv().await.expect("the watch stays open") {
            CacheMessage::Events(evs) => {
                assert_eq!(evs[0].event.kv, after);
                break;
            }
            CacheMessage::Progress(_) | CacheMessage::Tick(_) => {}
        }
    }
}
