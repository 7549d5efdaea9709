//! Properties of the cache itself, checked against the backend below it:
//! consistent reads see every acknowledged write, pages at a fixed revision stay
//! at that revision from memory, the history window ends in "too old", a watcher
//! that does not read is closed rather than buffered without bound.

use std::time::Duration;

use bytes::Bytes;
use kapi_registry::cache::{self, CacheConfig, CacheMessage, Miss, ReadAt};
use kapi_storage::ListOptions;

use crate::fixtures;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_read_sees_every_acknowledged_write() {
    let f = fixtures::embedded().await;
    for i in 0..50 {
        let kv = f
            .backend
            .create(&format!("/t/c/{i:02}"), b("v"))
            .await
            .unwrap();
        let page = f
            .cache
            .list_cached("/t/c/", ReadAt::Consistent, 0, None)
            .await
            .unwrap()
            .expect("served from the cache");
        assert!(page.revision >= kv.mod_revision);
        assert_eq!(page.items.len(), i + 1);
        assert_eq!(page.items.last().unwrap().kv, kv);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_older_than_waits_then_fails_for_future_revisions() {
    let f = fixtures::embedded().await;
    let kv = f.backend.create("/t/x", b("v")).await.unwrap();
    let got = f
        .cache
        .get_cached("/t/x", ReadAt::AtLeast(kv.mod_revision))
        .await
        .unwrap()
        .expect("served");
    assert_eq!(got.0.unwrap().kv, kv);
    let err = f
        .cache
        .get_cached("/t/x", ReadAt::AtLeast(kv.mod_revision + 1000))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kapi_storage::StorageError::FutureRevision { .. }),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_at_a_fixed_revision_come_from_memory() {
    let f = fixtures::embedded().await;
    for i in 0..30 {
        f.backend
            .create(&format!("/t/p/{i:02}"), b("v0"))
            .await
            .unwrap();
    }
    // Neighbours on both sides of the prefix, one exactly at its end key: not
    // counted in what remains after a page.
    for key in ["/t/o/x", "/t/p", "/t/p0", "/t/p0/x", "/t/q/x"] {
        f.backend.create(key, b("n")).await.unwrap();
    }
    let first = f
        .cache
        .list_cached("/t/p/", ReadAt::Consistent, 10, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (first.items.len(), first.more, first.remaining),
        (10, true, 20)
    );
    // Change the rest: updates, deletes and a create, after the first page.
    for i in 10..30 {
        let key = format!("/t/p/{i:02}");
        let cur = f.backend.get(&key, None).await.unwrap().unwrap();
        if i % 3 == 0 {
            f.backend.delete(&key, None).await.unwrap();
        } else {
            f.backend
                .update(&key, b("v1"), cur.mod_revision)
                .await
                .unwrap();
        }
    }
    let last = f.backend.create("/t/p/15a", b("new")).await.unwrap();
    assert!(
        f.cache
            .wait_for(last.mod_revision, Duration::from_secs(10))
            .await
    );
    let mut all = first.items.to_vec();
    let mut start = format!("{}\0", first.items.last().unwrap().kv.key);
    loop {
        let page = f
            .cache
            .list_cached("/t/p/", ReadAt::Exact(first.revision), 10, Some(&start))
            .await
            .unwrap()
            .expect("inside the window");
        assert_eq!(page.revision, first.revision);
        all.extend(page.items.iter().cloned());
        if !page.more {
            break;
        }
        start = format!("{}\0", page.items.last().unwrap().kv.key);
    }
    let expected = f
        .cache
        .backend()
        .list(
            "/t/p/",
            ListOptions {
                revision: Some(first.revision),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let got: Vec<_> = all.iter().map(|o| o.kv.clone()).collect();
    assert_eq!(got, expected.kvs);
    assert!(got.iter().all(|kv| kv.value == b("v0")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_before_the_window_are_too_old() {
    let config = CacheConfig {
        history: 5,
        history_fresh: Duration::ZERO,
        ..Default::default()
    };
    let f = fixtures::embedded_with(config).await;
    let (first, last) = f.create_keys("/t/h/", 20).await;
    let err = f.cache.watch_cached("/t/", first.mod_revision).unwrap_err();
    assert!(matches!(err, Miss::TooOld { .. }), "{err:?}");
    let (mut w, _) = f.cache.watch_cached("/t/", last.mod_revision - 3).unwrap();
    match w.recv().await.unwrap() {
        CacheMessage::Events(evs) => assert_eq!(evs.len(), 3),
        other => panic!("expected the replay, got {other:?}"),
    }
    // The decorator still honours the Backend contract: the backend below has it.
    let mut replay = f.backend.watch("/t/h/", first.mod_revision).await.unwrap();
    let msg = futures::StreamExt::next(&mut replay)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(msg, kapi_storage::WatchMessage::Events(_)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_does_not_read_is_closed() {
    let config = CacheConfig {
        watcher_buffer: 2,
        ..Default::default()
    };
    let f = fixtures::embedded_with(config).await;
    let before = cache::terminated_watchers_total();
    let (mut slow, _) = f.cache.watch_cached("/t/s/", 0).unwrap();
    let (mut other, _) = f.cache.watch_cached("/t/o/", 0).unwrap();
    let mut last = 0;
    for i in 0..10 {
        last = f
            .backend
            .create(&format!("/t/s/{i}"), b("v"))
            .await
            .unwrap()
            .mod_revision;
        // One event per message: wait until the cache has dispatched it.
        assert!(f.cache.wait_for(last, Duration::from_secs(10)).await);
    }
    let mut received = 0;
    while let Some(msg) = slow.recv().await {
        if let CacheMessage::Events(evs) = msg {
            received += evs.len();
        }
    }
    assert!(received < 10, "the slow watcher was closed, got {received}");
    assert!(cache::terminated_watchers_total() > before);
    assert_eq!(f.cache.watcher_count("/t/"), 1, "the other watcher stays");
    while let Ok(msg) = other.try_recv() {
        assert!(
            matches!(msg, CacheMessage::Progress(_) | CacheMessage::Tick(_)),
            "nothing for the other prefix"
        );
    }
    assert!(last > 0);
}

/// JSON offered for the bytes about to be written is what the cache keeps
/// when an event carries exactly those bytes; other bytes under the same key
/// are transcoded as usual, and a withdrawn offer is never used.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offered_json_is_kept_only_for_the_bytes_it_was_offered_for() {
    let f = fixtures::embedded().await;
    let cached = |key: &'static str| {
        let cache = f.cache.clone();
        async move {
            let page = cache
                .list_cached(key, ReadAt::Consistent, 0, None)
                .await
                .unwrap()
                .expect("served by the cache");
            page.items.first().map(|o| o.kv.value.clone())
        }
    };
    let stored = b(r#"{"metadata":{"name":"a"}}"#);
    let offered = b(r#"{"metadata":{"name":"a"},"offered":true}"#);
    f.cache.offer_json("/t/o/a", &stored, offered.clone());
    f.backend.create("/t/o/a", stored).await.unwrap();
    assert_eq!(cached("/t/o/a").await, Some(offered));

    let other = b(r#"{"metadata":{"name":"b"}}"#);
    f.cache
        .offer_json("/t/o/b", &b(r#"{"metadata":{"name":"not b"}}"#), b("{}"));
    f.backend.create("/t/o/b", other.clone()).await.unwrap();
    assert_eq!(cached("/t/o/b").await, Some(other));

    let withdrawn = b(r#"{"metadata":{"name":"c"}}"#);
    f.cache.offer_json("/t/o/c", &withdrawn, b("{}"));
    f.cache.withdraw_json("/t/o/c", &withdrawn);
    f.backend.create("/t/o/c", withdrawn.clone()).await.unwrap();
    assert_eq!(cached("/t/o/c").await, Some(withdrawn));
}

/// A batch of writes under one prefix moves every other cache to its
/// revision too (the floor they share), without an event for them: reads of
/// the quiet prefix at that revision are served from memory, a watch of it
/// from that revision starts there, and its next write still reaches the
/// watcher.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_under_one_prefix_moves_every_cache_to_its_revision() {
    let f = fixtures::embedded().await;
    let quiet = f.backend.create("/fan/q", b("v")).await.unwrap();
    assert!(
        f.cache
            .wait_for(quiet.mod_revision, Duration::from_secs(10))
            .await
    );
    let mut last = quiet.mod_revision;
    for i in 0..3 {
        last = f
            .backend
            .create(&format!("/t/floor/{i}"), b("v"))
            .await
            .unwrap()
            .mod_revision;
    }
    assert!(f.cache.wait_for(last, Duration::from_secs(10)).await);
    assert_eq!(f.cache.revision("/fan/"), Some(last));
    assert_eq!(f.cache.revision("/t/"), Some(last));
    for at in [
        ReadAt::Exact(last),
        ReadAt::AtLeast(last),
        ReadAt::Consistent,
    ] {
        let page = f
            .cache
            .list_cached("/fan/", at, 0, None)
            .await
            .unwrap()
            .expect("served by the cache");
        assert_eq!(page.revision, last, "{at:?}");
        assert_eq!(page.items.len(), 1);
    }
    let (found, at) = f
        .cache
        .get_cached("/fan/q", ReadAt::Exact(last))
        .await
        .unwrap()
        .expect("served by the cache");
    assert_eq!(at, last);
    assert_eq!(found.unwrap().kv.mod_revision, quiet.mod_revision);
    // One revision after: the cache has not seen it, the backend must answer.
    assert!(f
        .cache
        .watch_cached("/fan/", last + 1)
        .is_err_and(|m| matches!(m, Miss::Future { current } if current == last)));
    let (mut rx, from) = f.cache.watch_cached("/fan/", 0).unwrap();
    assert_eq!(from, last);
    let next = f.backend.create("/fan/r", b("v")).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await.expect("watch open") {
                CacheMessage::Events(evs) => break evs[0].revision(),
                _ => continue,
            }
        }
    })
    .await
    .expect("the write reaches the watcher");
    assert_eq!(got, next.mod_revision);
}
