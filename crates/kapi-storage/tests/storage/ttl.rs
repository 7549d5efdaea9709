//! TTLs with etcd's lease semantics, against both backends: a key written with
//! a TTL goes away as a delete at a new revision that watchers see with the
//! previous value; a write with a TTL sets the expiry anew; a write without one
//! detaches the key (it no longer expires). The embedded store also keeps
//! expiries across a restart (`expiry_survives_restart`) and in snapshots.
//!
//! No test sleeps for a fixed time and then asserts: each waits, with a
//! generous bound, for an event that must come — a witness key written after
//! the key under test with the same short TTL, whose delete shows the key's own
//! time has passed.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::{Backend, Event, EventKind, Revision, WatchMessage, WatchStream};

const SHORT: Duration = Duration::from_secs(2);
const LONG: Duration = Duration::from_secs(3600);

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A watch whose events are taken one key at a time, keeping the others.
struct Events {
    w: WatchStream,
    pending: std::collections::VecDeque<Event>,
}

/// The next event on `key` (passing over others, which stay for later calls),
/// within a bound far above any TTL here.
async fn next_on(e: &mut Events, key: &str) -> Event {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(i) = e.pending.iter().position(|ev| ev.kv.key == key) {
            return e.pending.remove(i).expect("present");
        }
        let msg = tokio::time::timeout_at(deadline, e.w.next())
            .await
            .unwrap_or_else(|_| panic!("no event on {key} in time"))
            .expect("stream open")
            .expect("no watch error");
        if let WatchMessage::Events(evs) = msg {
            e.pending.extend(evs);
        }
    }
}

async fn watch_from(s: &Arc<dyn Backend>, rev: Revision) -> Events {
    Events {
        w: s.watch("/ttl/", rev).await.unwrap(),
        pending: Default::default(),
    }
}

pub async fn expiry_is_a_watched_delete(s: Arc<dyn Backend>) {
    s.create("/other/first", b("0")).await.unwrap();
    let start = s.current_revision().await.unwrap();
    let mut w = watch_from(&s, start).await;
    let kept = s.create("/ttl/kept", b("stays")).await.unwrap();
    let kv = s
        .create_with_ttl("/ttl/a", b("short-lived"), Some(SHORT))
        .await
        .unwrap();
    assert_eq!(next_on(&mut w, "/ttl/kept").await.kv, kept);
    assert_eq!(next_on(&mut w, "/ttl/a").await.kind, EventKind::Put);
    let gone = next_on(&mut w, "/ttl/a").await;
    assert_eq!(gone.kind, EventKind::Delete);
    assert!(gone.revision() > kv.mod_revision);
    assert_eq!(gone.prev.as_ref().expect("previous value"), &kv);
    assert_eq!(s.get("/ttl/a", None).await.unwrap(), None);
    assert!(s.current_revision().await.unwrap() >= gone.revision());
    assert_eq!(s.get("/ttl/kept", None).await.unwrap(), Some(kept));
    // The expired key can be created again, as a new generation.
    let again = s.create("/ttl/a", b("new")).await.unwrap();
    assert_eq!(again.version, 1);
}

pub async fn write_with_ttl_refreshes_and_without_detaches(s: Arc<dyn Backend>) {
    s.create("/other/first", b("0")).await.unwrap();
    let start = s.current_revision().await.unwrap();
    let mut w = watch_from(&s, start).await;
    let r = s
        .create_with_ttl("/ttl/refreshed", b("1"), Some(SHORT))
        .await
        .unwrap();
    let d = s
        .create_with_ttl("/ttl/detached", b("1"), Some(SHORT))
        .await
        .unwrap();
    let r2 = s
        .update_with_ttl("/ttl/refreshed", b("2"), r.mod_revision, Some(LONG))
        .await
        .unwrap();
    let d2 = s
        .update("/ttl/detached", b("2"), d.mod_revision)
        .await
        .unwrap();
    // Written last with the short TTL: once it is gone, so is the others' first expiry.
    s.create_with_ttl("/ttl/witness", b("w"), Some(SHORT))
        .await
        .unwrap();
    loop {
        let e = next_on(&mut w, "/ttl/witness").await;
        if e.kind == EventKind::Delete {
            break;
        }
    }
    assert_eq!(
        s.get("/ttl/refreshed", None).await.unwrap(),
        Some(r2.clone())
    );
    assert_eq!(s.get("/ttl/detached", None).await.unwrap(), Some(d2));
    // A refreshed key still expires: written again with the short TTL, it goes.
    let r3 = s
        .update_with_ttl("/ttl/refreshed", b("3"), r2.mod_revision, Some(SHORT))
        .await
        .unwrap();
    loop {
        let e = next_on(&mut w, "/ttl/refreshed").await;
        if e.kind == EventKind::Delete {
            assert_eq!(e.prev, Some(r3));
            break;
        }
    }
}

pub async fn many_keys_expire_in_order(s: Arc<dyn Backend>) {
    s.create("/other/first", b("0")).await.unwrap();
    let start = s.current_revision().await.unwrap();
    let mut w = watch_from(&s, start).await;
    let n = 40;
    for i in 0..n {
        s.create_with_ttl(&format!("/ttl/many/{i:02}"), b("v"), Some(SHORT))
            .await
            .unwrap();
    }
    let mut deleted = std::collections::BTreeSet::new();
    let mut last = start;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while deleted.len() < n {
        let msg = tokio::time::timeout_at(deadline, w.w.next())
            .await
            .expect("all expire in time")
            .unwrap()
            .unwrap();
        let WatchMessage::Events(evs) = msg else {
            continue;
        };
        for e in evs {
            assert!(e.revision() > last, "revisions strictly increase");
            last = e.revision();
            if e.kind == EventKind::Delete {
                assert!(e.prev.is_some());
                deleted.insert(e.kv.key.clone());
            }
        }
    }
    assert_eq!(s.count("/ttl/many/").await.unwrap(), 0);
}

macro_rules! ttl_suite {
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

ttl_suite!(
    expiry_is_a_watched_delete,
    write_with_ttl_refreshes_and_without_detaches,
    many_keys_expire_in_order,
);

fn small_segments(dir: &std::path::Path) -> EmbeddedConfig {
    let mut cfg = EmbeddedConfig::new(dir);
    cfg.segment_bytes = 4 << 10;
    cfg
}

/// The embedded store's expiry index is durable: in the WAL and in snapshots.
/// A key whose time passed while the store was closed goes at the next open;
/// one still to expire goes later, as it would have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (early, late) = {
        let store = EmbeddedBackend::open(small_segments(dir.path())).unwrap();
        let late = store
            .create_with_ttl("/ttl/late", b("l"), Some(Duration::from_secs(10)))
            .await
            .unwrap();
        // Enough WAL that compaction writes a snapshot (holding /ttl/late)
        // and deletes the segment /ttl/late was written to.
        let mut cur = store.create("/fill", b("0")).await.unwrap();
        for i in 0..100 {
            let v = Bytes::from(format!("{i:0>200}"));
            cur = store.update("/fill", v, cur.mod_revision).await.unwrap();
        }
        store.compact(cur.mod_revision).await.unwrap();
        let snaps = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "snap")
            })
            .count();
        assert_eq!(snaps, 1, "compaction wrote a snapshot");
        let early = store
            .create_with_ttl("/ttl/early", b("e"), Some(Duration::from_secs(1)))
            .await
            .unwrap();
        (early, late)
    };
    // Closed while /ttl/early's time passes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let store: Arc<dyn Backend> =
        Arc::new(EmbeddedBackend::open(small_segments(dir.path())).unwrap());
    let mut w = watch_from(&store, early.mod_revision).await;
    let e = next_on(&mut w, "/ttl/early").await;
    assert_eq!((e.kind, e.prev.clone()), (EventKind::Delete, Some(early)));
    let l = next_on(&mut w, "/ttl/late").await;
    assert_eq!((l.kind, l.prev.clone()), (EventKind::Delete, Some(late)));
    assert!(l.revision() > e.revision());
    drop(w);
    drop(store);
    // The deletes are as durable as any write.
    let store = EmbeddedBackend::open(small_segments(dir.path())).unwrap();
    assert_eq!(store.count("/ttl/").await.unwrap(), 0);
    assert_eq!(
        store.get("/fill", None).await.unwrap().unwrap().version,
        101
    );
}
