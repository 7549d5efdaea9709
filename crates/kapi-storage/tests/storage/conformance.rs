//! The conformance suite: the same test functions against every backend.
//! Each property is one function taking a backend; `suite!` instantiates them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    guaranteed_update, Backend, Decision, EventKind, ListOptions, Outcome, StorageError,
    WatchMessage, WatchStream,
};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next_events(w: &mut WatchStream, n: usize) -> Vec<kapi_storage::Event> {
    let mut out = Vec::new();
    while out.len() < n {
        let msg = tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .expect("watch event in time")
            .expect("stream open")
            .expect("no watch error");
        if let WatchMessage::Events(evs) = msg {
            out.extend(evs);
        }
    }
    out
}

pub async fn create_conflicts(s: Arc<dyn Backend>) {
    let kv = s.create("/t/a", b("1")).await.unwrap();
    assert_eq!(kv.version, 1);
    assert_eq!(kv.create_revision, kv.mod_revision);
    let err = s.create("/t/a", b("2")).await.unwrap_err();
    assert!(matches!(err, StorageError::AlreadyExists { .. }), "{err:?}");
    let got = s.get("/t/a", None).await.unwrap().unwrap();
    assert_eq!(got.value, b("1"));
    assert_eq!(got, kv);
}

pub async fn revisions_increase(s: Arc<dyn Backend>) {
    let r0 = s.current_revision().await.unwrap();
    let a = s.create("/t/a", b("1")).await.unwrap();
    let b2 = s.create("/t/b", b("1")).await.unwrap();
    let a2 = s.update("/t/a", b("2"), a.mod_revision).await.unwrap();
    assert!(r0 < a.mod_revision && a.mod_revision < b2.mod_revision);
    assert!(b2.mod_revision < a2.mod_revision);
    assert_eq!(a2.create_revision, a.create_revision);
    assert_eq!(a2.version, 2);
    assert_eq!(s.current_revision().await.unwrap(), a2.mod_revision);
    // A backend that knows its revision without a round trip knows this one.
    if let Some(known) = s.known_revision() {
        assert_eq!(known, a2.mod_revision);
    }
    // A backend that can tell at once whether a key is free tells it right.
    match s.claim("/t/a") {
        kapi_storage::Claim::Unknown | kapi_storage::Claim::Taken => {}
        c => panic!("a key holding a value claimed: {c:?}"),
    }
    match s.claim("/t/absent") {
        kapi_storage::Claim::Unknown | kapi_storage::Claim::Free(_) => {}
        c => panic!("a free key not claimed: {c:?}"),
    }
    // Reads at an old revision see the old value.
    let old = s.get("/t/a", Some(a.mod_revision)).await.unwrap().unwrap();
    assert_eq!(old.value, b("1"));
}

pub async fn cas_conflicts(s: Arc<dyn Backend>) {
    let kv = s.create("/t/a", b("1")).await.unwrap();
    let kv2 = s.update("/t/a", b("2"), kv.mod_revision).await.unwrap();
    let err = s.update("/t/a", b("3"), kv.mod_revision).await.unwrap_err();
    match err {
        StorageError::Conflict { current, .. } => assert_eq!(*current.unwrap(), kv2),
        other => panic!("expected conflict, got {other:?}"),
    }
    let err = s.update("/t/missing", b("3"), 5).await.unwrap_err();
    assert!(matches!(err, StorageError::NotFound { .. }), "{err:?}");
    assert_eq!(s.get("/t/a", None).await.unwrap().unwrap().value, b("2"));
}

pub async fn delete_preconditions(s: Arc<dyn Backend>) {
    let kv = s.create("/t/a", b("1")).await.unwrap();
    let err = s
        .delete("/t/a", Some(kv.mod_revision + 100))
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
    let d = s.delete("/t/a", Some(kv.mod_revision)).await.unwrap();
    assert_eq!(d.prev, kv);
    assert!(d.revision > kv.mod_revision);
    assert!(s.get("/t/a", None).await.unwrap().is_none());
    let err = s.delete("/t/a", None).await.unwrap_err();
    assert!(matches!(err, StorageError::NotFound { .. }), "{err:?}");
    // Re-created keys start a new generation.
    let again = s.create("/t/a", b("x")).await.unwrap();
    assert_eq!(again.version, 1);
    assert!(again.create_revision > kv.create_revision);
    let d2 = s.delete("/t/a", None).await.unwrap();
    assert_eq!(d2.prev.value, b("x"));
}

pub async fn paged_list_is_consistent(s: Arc<dyn Backend>) {
    for i in 0..50 {
        s.create(&format!("/t/items/{i:03}"), b("v0"))
            .await
            .unwrap();
    }
    s.create("/t/itemsz", b("outside")).await.unwrap();
    let first = s
        .list(
            "/t/items/",
            ListOptions {
                limit: 20,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(first.kvs.len(), 20);
    assert!(first.more);
    assert_eq!(first.remaining, 30);
    // Writes go on between pages; later pages still show the list at its revision.
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..50 {
                let key = format!("/t/items/{i:03}");
                let cur = s.get(&key, None).await.unwrap().unwrap();
                s.update(&key, b("v1"), cur.mod_revision).await.unwrap();
            }
            s.delete("/t/items/049", None).await.unwrap();
            s.create("/t/items/100", b("new")).await.unwrap();
        })
    };
    let mut all = first.kvs.clone();
    let mut more = first.more;
    while more {
        let next_key = format!("{}\0", all.last().unwrap().key);
        let page = s
            .list(
                "/t/items/",
                ListOptions {
                    revision: Some(first.revision),
                    limit: 20,
                    continue_from: Some(next_key),
                    // Later pages need only `more` (a backend may stop counting).
                    skip_count: true,
                },
            )
            .await
            .unwrap();
        assert_eq!(page.revision, first.revision);
        assert_eq!(page.more, page.remaining > 0, "more agrees with remaining");
        more = page.more;
        all.extend(page.kvs);
    }
    writer.await.unwrap();
    assert_eq!(all.len(), 50);
    assert!(all.iter().all(|kv| kv.value == b("v0")));
    let keys: Vec<_> = all.iter().map(|kv| kv.key.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let now = s.list("/t/items/", ListOptions::default()).await.unwrap();
    assert_eq!(now.kvs.len(), 50);
    assert!(!now.more);
    assert!(now
        .kvs
        .iter()
        .filter(|kv| kv.key != "/t/items/100")
        .all(|kv| kv.value == b("v1")));
    assert_eq!(s.count("/t/items/").await.unwrap(), 50);
}

pub async fn watch_orders_every_change(s: Arc<dyn Backend>) {
    // Revision 0 means "from now"; make sure the start is a real revision.
    s.create("/t/first", b("0")).await.unwrap();
    let start = s.current_revision().await.unwrap();
    let mut w = s.watch("/t/w/", start).await.unwrap();
    let keys = 20;
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let s = s.clone();
            tokio::spawn(async move {
                for k in 0..keys {
                    let key = format!("/t/w/{t}-{k}");
                    let kv = s.create(&key, b("c")).await.unwrap();
                    s.update(&key, b("u"), kv.mod_revision).await.unwrap();
                    s.delete(&key, None).await.unwrap();
                }
            })
        })
        .collect();
    s.create("/t/other", b("not watched")).await.unwrap();
    for wr in writers {
        wr.await.unwrap();
    }
    let events = next_events(&mut w, 4 * keys * 3).await;
    let mut last = start;
    let mut per_key: BTreeMap<String, Vec<EventKind>> = BTreeMap::new();
    for e in &events {
        assert!(e.revision() > last, "revisions strictly increase");
        last = e.revision();
        assert!(e.kv.key.starts_with("/t/w/"));
        per_key.entry(e.kv.key.clone()).or_default().push(e.kind);
        match e.kind {
            EventKind::Put if e.is_create() => assert!(e.prev.is_none()),
            EventKind::Put => assert_eq!(e.prev.as_ref().unwrap().value, b("c")),
            EventKind::Delete => assert_eq!(e.prev.as_ref().unwrap().value, b("u")),
        }
    }
    assert_eq!(per_key.len(), 4 * keys);
    for kinds in per_key.values() {
        assert_eq!(kinds, &[EventKind::Put, EventKind::Put, EventKind::Delete]);
    }
    // No gaps: a watch from the start replays exactly what the log holds.
    let mut replay = s.watch("/t/w/", start).await.unwrap();
    let again = next_events(&mut replay, events.len()).await;
    assert_eq!(again, events);
}

pub async fn watch_reports_progress(s: Arc<dyn Backend>) {
    s.create("/t/elsewhere", b("1")).await.unwrap();
    let rev = s.current_revision().await.unwrap();
    let mut w = s.watch("/t/quiet/", rev).await.unwrap();
    s.create("/t/elsewhere2", b("1")).await.unwrap();
    let rev2 = s.current_revision().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let msg = tokio::time::timeout_at(deadline, w.next())
            .await
            .expect("progress notification in time")
            .unwrap()
            .unwrap();
        match msg {
            WatchMessage::Progress(r) if r >= rev2 => break,
            WatchMessage::Progress(_) => continue,
            WatchMessage::Events(e) => panic!("unexpected events {e:?}"),
        }
    }
}

pub async fn too_old_after_compaction(s: Arc<dyn Backend>) {
    s.create("/t/first", b("0")).await.unwrap();
    let a = s.create("/t/c", b("1")).await.unwrap();
    let a2 = s.update("/t/c", b("2"), a.mod_revision).await.unwrap();
    let a3 = s.update("/t/c", b("3"), a2.mod_revision).await.unwrap();
    s.compact(a2.mod_revision).await.unwrap();
    let err = match s.watch("/t/", a.mod_revision - 1).await {
        Ok(mut w) => w.next().await.unwrap().unwrap_err(),
        Err(e) => e,
    };
    assert!(matches!(err, StorageError::Compacted { .. }), "{err:?}");
    let err = s.get("/t/c", Some(a.mod_revision)).await.unwrap_err();
    assert!(matches!(err, StorageError::Compacted { .. }), "{err:?}");
    // The newest value survives; a watch after the compaction point still works.
    assert_eq!(s.get("/t/c", None).await.unwrap().unwrap(), a3);
    let mut w = s.watch("/t/", a2.mod_revision).await.unwrap();
    let evs = next_events(&mut w, 1).await;
    assert_eq!(evs[0].kv, a3);
}

pub async fn guaranteed_update_loses_nothing(s: Arc<dyn Backend>) {
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move {
                for _ in 0..10 {
                    let out = guaranteed_update(s.as_ref(), "/t/counter", |cur| {
                        let n: u64 = cur
                            .map(|kv| std::str::from_utf8(&kv.value).unwrap().parse().unwrap())
                            .unwrap_or(0);
                        Ok::<_, ()>(Decision::Write(b(&(n + 1).to_string())))
                    })
                    .await
                    .unwrap();
                    assert!(matches!(out, Outcome::Written(_)));
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let kv = s.get("/t/counter", None).await.unwrap().unwrap();
    assert_eq!(kv.value, b("160"));
    assert_eq!(kv.version, 160);
    // Unchanged and Delete decisions.
    let out = guaranteed_update(s.as_ref(), "/t/counter", |_| {
        Ok::<_, ()>(Decision::Unchanged)
    })
    .await
    .unwrap();
    assert_eq!(out, Outcome::Unchanged(Some(kv.clone())));
    let out = guaranteed_update(s.as_ref(), "/t/counter", |_| Ok::<_, ()>(Decision::Delete))
        .await
        .unwrap();
    assert!(matches!(out, Outcome::Deleted { .. }));
    let rejected = guaranteed_update(s.as_ref(), "/t/x", |_| Err::<Decision, _>("no")).await;
    assert!(matches!(
        rejected,
        Err(kapi_storage::UpdateError::Rejected("no"))
    ));
}

macro_rules! suite {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let f = crate::fixtures::embedded().await;
                    super::$name(f.backend.clone()).await;
                }
            )*
        }
        mod embedded_cold {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let f = crate::fixtures::embedded_cold().await;
                    super::$name(f.backend.clone()).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let f = crate::fixtures::etcd().await;
                    super::$name(f.backend.clone()).await;
                }
            )*
        }
    };
}

suite!(
    create_conflicts,
    revisions_increase,
    cas_conflicts,
    delete_preconditions,
    paged_list_is_consistent,
    watch_orders_every_change,
    watch_reports_progress,
    too_old_after_compaction,
    guaranteed_update_loses_nothing,
    many_watchers_see_everything,
    db_sizes_grow_with_what_is_stored,
);

/// Every member reports its database size, and storing a good deal more
/// makes it no smaller (etcd's file grows in pages, the WAL in records).
pub async fn db_sizes_grow_with_what_is_stored(s: Arc<dyn Backend>) {
    let before = s.db_sizes().await.unwrap();
    assert_eq!(before.len(), 1, "{before:?}");
    let first = before[0].bytes.expect("the member answers");
    // A fresh embedded store has written nothing yet; etcd's file never starts empty.
    assert!(first >= 0, "{before:?}");
    let big = Bytes::from(vec![b'x'; 64 * 1024]);
    for i in 0..32 {
        s.create(&format!("/t/big-{i}"), big.clone()).await.unwrap();
    }
    // etcd commits to its file in batches (every 100 ms by default).
    let mut grown = first;
    for _ in 0..50 {
        let after = s.db_sizes().await.unwrap();
        assert_eq!(after[0].endpoint, before[0].endpoint);
        grown = after[0].bytes.expect("the member answers");
        if grown >= first + 1024 * 1024 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{first} -> {grown}");
}

pub async fn many_watchers_see_everything(s: Arc<dyn Backend>) {
    s.create("/t/first", b("0")).await.unwrap();
    let rev = s.current_revision().await.unwrap();
    let mut streams = Vec::new();
    for _ in 0..50 {
        streams.push(s.watch("/fan/", rev).await.unwrap());
    }
    let writes = 400;
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut w| tokio::spawn(async move { next_events(&mut w, writes).await.len() }))
        .collect();
    let writers: Vec<_> = (0..16)
        .map(|t| {
            let s = s.clone();
            tokio::spawn(async move {
                for i in 0..writes / 16 {
                    s.create(&format!("/fan/{t}/{i}"), b("v")).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    for r in readers {
        assert_eq!(r.await.unwrap(), writes);
    }
}
