//! The reflector: the one backend watch that fills every cache. It lists the whole
//! keyspace at one revision (in pages), hands each prefix its objects, then follows
//! a watch from that revision, routing each event to the cache of its prefix and
//! moving every cache to the revision of each batch (a floor all caches share,
//! stored once the batch is applied) — so a cache knows it is current even when
//! only other resources change, and a consistent read never waits for a
//! progress notification.
//!
//! Every value enters transcoded (`Inner::ingest`: JSON at today's storage
//! version, whatever the backend holds), before any cache's lock is taken.
//!
//! A prefix added while the watch runs is filled between two batches by a list
//! of that prefix at the revision the reflector has reached, so it misses
//! nothing. Once a second every cache tells its watchers its revision (the
//! watch turns that into bookmarks when its client wants them).
//!
//! When the backend watch breaks (an etcd member or the whole cluster gone) the
//! reflector resumes it from the last revision it applied, once a second, while
//! the caches keep serving what they hold and their watchers stay open — as
//! upstream's cacher, whose etcd watch retries underneath it: a storage outage
//! leaves `resourceVersion=0` reads and open watches working, and no event is
//! lost or repeated when the watch resumes. Only when that fails for good (the
//! revision was compacted meanwhile) or the list fails does every cache stop
//! serving and close its watchers, and the reflector lists again after a second.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kapi_storage::{Event, EventKind, ListOptions, Result, StorageError, WatchMessage};

use super::object::CachedObject;
use super::prefix::PrefixCache;
use super::{holding, Inner};

const PAGE: usize = 10_000;

pub(super) async fn run(inner: Arc<Inner>) {
    loop {
        let result = follow(&inner).await;
        for c in inner.caches() {
            c.invalidate();
        }
        match result {
            Err(StorageError::Unavailable(e)) => {
                tracing::debug!(error = %e, "watch cache: backend not ready")
            }
            Err(e) => {
                tracing::warn!(error = %e, "watch cache: backend watch failed; listing again")
            }
            Ok(()) => {}
        }
        if inner.stopped() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// List, fill, watch; returns when the watch breaks.
async fn follow(inner: &Inner) -> Result<()> {
    let revision = loop {
        let rev = inner.backend.current_revision().await?;
        // Revision 0 is an empty store where "watch after 0" means "from now";
        // wait for the first write so the watch starts at a real revision.
        if rev > 0 {
            break rev;
        }
        if inner.stopped() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Prefixes added from here on are filled by `fill_added` below.
    let caches = inner.caches();
    let maps = list_into(inner, &inner.root, revision, &caches).await?;
    let mut stream = inner.backend.watch(&inner.root, revision).await?;
    // Every cache is unready here, so the floor may move back (a backend
    // restored to an older revision) before any of them reads it.
    inner.floor.store(revision, Ordering::Release);
    for (cache, objects) in caches.iter().zip(maps) {
        cache.reset(objects, revision);
    }
    inner.publish(revision);
    tracing::debug!(revision, "watch cache filled");
    let mut reached = revision;
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let msg = tokio::select! {
            m = stream.next() => m,
            _ = inner.added.notified() => {
                fill_added(inner, reached).await?;
                continue;
            }
            _ = ticker.tick() => {
                for c in inner.caches() {
                    c.tick();
                }
                continue;
            }
            _ = inner.cancelled() => return Ok(()),
        };
        match msg {
            None | Some(Err(StorageError::Unavailable(_))) => {
                let Some(resumed) = resume(inner, reached).await? else {
                    return Ok(());
                };
                stream = resumed;
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(WatchMessage::Progress(rev))) => {
                for c in &inner.caches.read().expect("caches lock").sorted {
                    c.progress(rev, true);
                }
                reached = reached.max(rev);
                inner.floor.store(reached, Ordering::Release);
                inner.publish(rev);
            }
            Some(Ok(WatchMessage::Events(events))) => {
                let Some(rev) = events.last().map(Event::revision) else {
                    continue;
                };
                // Read in place: no await until the events are applied.
                let caches = inner.caches.read().expect("caches lock");
                // By cache, in the order the caches first appear: a batch
                // mostly holds one resource's events. The caches it holds
                // none for reach `rev` by the floor, stored once every cache
                // has applied its events.
                let mut routed: Vec<(usize, Vec<Event>)> = Vec::new();
                for mut e in events {
                    if let Some(i) = caches.holding(&e.kv.key) {
                        if e.kind == EventKind::Put {
                            e.kv = inner.ingest(e.kv);
                        }
                        match routed.iter_mut().find(|(at, _)| *at == i) {
                            Some((_, evs)) => evs.push(e),
                            None => routed.push((i, vec![e])),
                        }
                    }
                }
                for (i, evs) in routed {
                    caches.sorted[i].apply(evs, rev);
                }
                reached = reached.max(rev);
                inner.floor.store(reached, Ordering::Release);
                inner.publish(rev);
            }
        }
    }
}

/// Everything under `root` at `revision`, split by the cache each key belongs to.
async fn list_into(
    inner: &Inner,
    root: &str,
    revision: kapi_storage::Revision,
    caches: &[Arc<PrefixCache>],
) -> Result<Vec<BTreeMap<String, Arc<CachedObject>>>> {
    let mut maps: Vec<BTreeMap<String, Arc<CachedObject>>> = vec![BTreeMap::new(); caches.len()];
    let mut start = None;
    loop {
        let page = inner
            .backend
            .list(
                root,
                ListOptions {
                    revision: Some(revision),
                    limit: PAGE,
                    continue_from: start.take(),
                    skip_count: true,
                },
            )
            .await?;
        let last = page.kvs.last().map(|kv| format!("{}\0", kv.key));
        for kv in page.kvs {
            if let Some(i) = holding(caches, &kv.key) {
                maps[i].insert(kv.key.clone(), CachedObject::new(inner.ingest(kv)));
            }
        }
        match last {
            Some(next) if page.more => start = Some(next),
            _ => break,
        }
    }
    Ok(maps)
}

/// Fill the caches added since the watch started, at `reached`: every event
/// up to it has been routed already (to nothing, for these), every later one
/// comes from the watch.
async fn fill_added(inner: &Inner, reached: kapi_storage::Revision) -> Result<()> {
    for cache in inner.caches() {
        if cache.ready_revision().is_some() {
            continue;
        }
        let maps = list_into(inner, &cache.prefix, reached, std::slice::from_ref(&cache)).await?;
        let objects = maps.into_iter().next().unwrap_or_default();
        tracing::debug!(prefix = %cache.prefix, objects = objects.len(), "watch cache: prefix added");
        cache.reset(objects, reached);
    }
    Ok(())
}

/// Open the backend watch again after `at`, retrying once a second while the
/// backend is unavailable; `None` when the reflector is stopped meanwhile.
async fn resume(
    inner: &Inner,
    at: kapi_storage::Revision,
) -> Result<Option<kapi_storage::WatchStream>> {
    tracing::warn!(
        revision = at,
        "watch cache: backend watch broke; resuming it"
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = inner.cancelled() => return Ok(None),
        }
        match inner.backend.watch(&inner.root, at).await {
            Ok(stream) => {
                tracing::info!(revision = at, "watch cache: backend watch resumed");
                return Ok(Some(stream));
            }
            Err(StorageError::Unavailable(e)) => {
                tracing::debug!(error = %e, "watch cache: backend still unavailable")
            }
            Err(e) => return Err(e),
        }
    }
}
