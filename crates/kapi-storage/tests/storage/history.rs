//! The embedded store under update churn: memory holds the live data and a
//! bounded window of history whatever the number of writes; older history is
//! read back from disk with the same answers (values, previous values, events
//! in order) before and after a restart; a snapshot holds the state at its
//! compaction point, not the history, and frees the WAL before it.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::{Backend, EventKind, ListOptions, StorageError, WatchMessage};

fn value(i: usize) -> Bytes {
    Bytes::from(format!("{i:0>1000}"))
}

fn config(dir: &std::path::Path) -> EmbeddedConfig {
    let mut cfg = EmbeddedConfig::new(dir);
    cfg.memory_history_bytes = 64 << 10;
    cfg.segment_bytes = 256 << 10;
    cfg
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// 8 keys updated 300 times each: revision r of key k holds value r.
async fn churn(store: &EmbeddedBackend) -> Vec<(String, i64)> {
    let mut written = Vec::new();
    let mut cur = Vec::new();
    for k in 0..8 {
        let key = format!("/churn/{k}");
        let kv = store.create(&key, value(0)).await.unwrap();
        written.push((key.clone(), kv.mod_revision));
        cur.push(kv);
    }
    for round in 0..300 {
        for kv in cur.iter_mut() {
            let rev = store.current_revision().await.unwrap() + 1;
            *kv = store
                .update(&kv.key, value(rev as usize), kv.mod_revision)
                .await
                .unwrap();
            assert_eq!(
                kv.mod_revision, rev,
                "round {round}: one writer, revisions in turn"
            );
            written.push((kv.key.clone(), rev));
        }
    }
    written
}

async fn check_history(store: &EmbeddedBackend, written: &[(String, i64)], from: usize) {
    for (key, rev) in written.iter().skip(from).step_by(37) {
        let kv = store.get(key, Some(*rev)).await.unwrap().unwrap();
        assert_eq!(kv.mod_revision, *rev);
        if *rev > 8 {
            assert_eq!(kv.value, value(*rev as usize), "{key} at {rev}");
        }
        let page = store
            .list(
                "/churn/",
                ListOptions {
                    revision: Some(*rev),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        // The 8 keys were created at revisions 1 to 8.
        assert_eq!(page.kvs.len() as i64, (*rev).min(8), "list at {rev}");
        assert!(page.kvs.iter().all(|kv| kv.mod_revision <= *rev));
    }
    // A watch from the oldest retained revision (after the creates) replays
    // every update in order, each with the value it replaced.
    let from = from.max(7);
    let start = written[from].1;
    let mut w = store.watch("/churn/", start).await.unwrap();
    let mut expect = written.iter().skip(from + 1).peekable();
    while expect.peek().is_some() {
        let msg = tokio::time::timeout(Duration::from_secs(20), w.next())
            .await
            .expect("replay in time")
            .unwrap()
            .unwrap();
        let WatchMessage::Events(evs) = msg else {
            continue;
        };
        for e in evs {
            let (key, rev) = expect.next().expect("no more events than writes");
            assert_eq!((&e.kv.key, e.kv.mod_revision), (key, *rev));
            assert_eq!(e.kind, EventKind::Put);
            assert_eq!(e.kv.value, value(*rev as usize));
            let prev = e.prev.expect("an update has a previous value");
            assert_eq!(prev.mod_revision, rev - 8);
            if prev.mod_revision > 8 {
                assert_eq!(prev.value, value(prev.mod_revision as usize));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_outside_the_window_is_read_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedBackend::open(config(dir.path())).unwrap();
    let written = churn(&store).await;
    let stats = store.memory_stats();
    assert!(
        stats.hot_bytes <= 64 << 10,
        "hot window over its bound: {stats:?}"
    );
    assert_eq!(
        stats.versions_in_memory + stats.versions_on_disk,
        written.len()
    );
    assert!(stats.versions_on_disk > 2000, "{stats:?}");
    check_history(&store, &written, 0).await;
    drop(store);
    // Recovery rebuilds the same history with the same bound on memory.
    let store = EmbeddedBackend::open(config(dir.path())).unwrap();
    assert!(store.memory_stats().hot_bytes <= 64 << 10);
    check_history(&store, &written, 0).await;
    // Compaction: before the point is gone, after it still reads back.
    let mid = written[written.len() / 2].1;
    store.compact(mid).await.unwrap();
    let err = store.get("/churn/0", Some(mid - 1)).await.unwrap_err();
    assert!(matches!(err, StorageError::Compacted { .. }), "{err:?}");
    let from = written.len() / 2;
    check_history(&store, &written, from).await;
    drop(store);
    let store = EmbeddedBackend::open(config(dir.path())).unwrap();
    check_history(&store, &written, from).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_hold_the_state_not_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedBackend::open(config(dir.path())).unwrap();
    let written = churn(&store).await;
    let history = dir_bytes(dir.path());
    assert!(history > 2_400_000, "the WAL holds the history: {history}");
    let now = store.current_revision().await.unwrap();
    store.compact(now).await.unwrap();
    // The state is 8 values of 1 KB; one WAL segment may remain.
    let after = dir_bytes(dir.path());
    assert!(after < 300_000, "after compaction: {after} bytes on disk");
    let stats = store.memory_stats();
    assert_eq!(stats.versions_on_disk, 0, "{stats:?}");
    assert_eq!(stats.hot_events, 0, "{stats:?}");
    drop(store);
    let store = EmbeddedBackend::open(config(dir.path())).unwrap();
    for (key, rev) in &written[written.len() - 8..] {
        let kv = store.get(key, None).await.unwrap().unwrap();
        assert_eq!(
            (kv.mod_revision, kv.value.clone()),
            (*rev, value(*rev as usize))
        );
        assert_eq!(kv.version, 301);
    }
    assert_eq!(store.current_revision().await.unwrap(), now);
}

/// etcd gives every key of one transaction the same revision, and a migration
/// into a directory keeps revisions: the snapshot then has keys sharing one.
/// Once those keys are updated, their old values (read back from the
/// snapshot by revision and key) are still each key's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_sharing_a_revision_in_a_snapshot_read_back_as_their_own() {
    use kapi_storage::etcd::EtcdConfig;
    use kapi_storage::migrate::{migrate, Endpoint, MigrateOptions};
    let etcd = tokio::task::spawn_blocking(kapi_testkit::Etcd::start)
        .await
        .unwrap();
    let mut client = etcd_client::Client::connect([etcd.client_url.as_str()], None)
        .await
        .unwrap();
    let puts: Vec<_> = (0..10)
        .map(|i| etcd_client::TxnOp::put(format!("/registry/t/k{i}"), value(i), None))
        .collect();
    let resp = client
        .txn(etcd_client::Txn::new().and_then(puts))
        .await
        .unwrap();
    let shared = resp.header().unwrap().revision();
    let dir = tempfile::tempdir().unwrap();
    let opts = MigrateOptions {
        from: Endpoint::Etcd(EtcdConfig::new(vec![etcd.client_url.clone()])),
        to: Endpoint::Dir(dir.path().join("store")),
        page: 3,
        progress: dir.path().join("progress"),
    };
    migrate(&opts, |_| {}).await.unwrap();
    let mut cfg = EmbeddedConfig::new(dir.path().join("store"));
    cfg.memory_history_bytes = 0;
    let store = EmbeddedBackend::open(cfg).unwrap();
    let start = store.current_revision().await.unwrap();
    for i in 0..10 {
        let key = format!("/t/k{i}");
        let kv = store.get(&key, None).await.unwrap().unwrap();
        assert_eq!(kv.mod_revision, shared);
        store.update(&key, value(100 + i), shared).await.unwrap();
    }
    for i in 0..10 {
        let old = store
            .get(&format!("/t/k{i}"), Some(start))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((old.mod_revision, old.value), (shared, value(i)));
    }
    let mut w = store.watch("/t/", start).await.unwrap();
    let mut seen = 0;
    while seen < 10 {
        let msg = tokio::time::timeout(Duration::from_secs(20), w.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let WatchMessage::Events(evs) = msg {
            for e in evs {
                let i: usize = e.kv.key.trim_start_matches("/t/k").parse().unwrap();
                assert_eq!(e.prev.unwrap().value, value(i));
                seen += 1;
            }
        }
    }
}
