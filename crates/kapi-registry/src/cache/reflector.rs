//! The reflector: the one backend watch that fills every cache. It lists the whole
//! keyspace at one revision (in pages), hands each prefix its objects, then follows
//! a watch from that revision, routing each event to the cache of its prefix and
//! moving every cache to the revision of each batch — so a cache knows it is
//! current even when only other resources change, and a consistent read never
//! waits for a progress notification.
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
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kapi_storage::{Event, ListOptions, Result, StorageError, WatchMessage};

use super::object::CachedObject;
use super::Inner;

const PAGE: usize = 10_000;
/// How often every cache reports its revision to its watchers.
const NOTIFY_EVERY: Duration = Duration::from_secs(5);

pub(super) async fn run(inner: Arc<Inner>) {
    loop {
        let result = follow(&inner).await;
        for c in &inner.caches {
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
    let mut maps: Vec<BTreeMap<String, Arc<CachedObject>>> =
        vec![BTreeMap::new(); inner.caches.len()];
    let mut start = None;
    loop {
        let page = inner
            .backend
            .list(
                &inner.root,
                ListOptions {
                    revision: Some(revision),
                    limit: PAGE,
                    continue_from: start.take(),
                },
            )
            .await?;
        let last = page.kvs.last().map(|kv| format!("{}\0", kv.key));
        for kv in page.kvs {
            if let Some(i) = inner.route(&kv.key) {
                maps[i].insert(kv.key.clone(), CachedObject::new(kv));
            }
        }
        match last {
            Some(next) if page.more => start = Some(next),
            _ => break,
        }
    }
    let mut stream = inner.backend.watch(&inner.root, revision).await?;
    for (cache, objects) in inner.caches.iter().zip(maps) {
        cache.reset(objects, revision);
    }
    inner.publish(revision);
    tracing::debug!(revision, "watch cache filled");
    let mut at = revision;
    // Every cache tells its watchers where it stands at least this often, even
    // while other prefixes keep the backend watch busy (then the backend sends
    // no progress notifications), so watches can send bookmarks.
    let mut tick = tokio::time::interval(NOTIFY_EVERY);
    tick.tick().await;
    loop {
        let msg = tokio::select! {
            m = stream.next() => m,
            _ = tick.tick() => {
                for c in &inner.caches {
                    c.progress(at, true);
                }
                continue;
            }
            _ = inner.cancelled() => return Ok(()),
        };
        match msg {
            None | Some(Err(StorageError::Unavailable(_))) => {
                let Some(resumed) = resume(inner, at).await? else {
                    return Ok(());
                };
                stream = resumed;
            }
            Some(Err(e)) => return Err(e),
            Some(Ok(WatchMessage::Progress(rev))) => {
                at = rev;
                for c in &inner.caches {
                    c.progress(rev, true);
                }
                inner.publish(rev);
            }
            Some(Ok(WatchMessage::Events(events))) => {
                let Some(rev) = events.last().map(Event::revision) else {
                    continue;
                };
                at = rev;
                let mut routed: Vec<Vec<Event>> = vec![Vec::new(); inner.caches.len()];
                for e in events {
                    if let Some(i) = inner.route(&e.kv.key) {
                        routed[i].push(e);
                    }
                }
                for (cache, evs) in inner.caches.iter().zip(routed) {
                    if evs.is_empty() {
                        cache.progress(rev, false);
                    } else {
                        cache.apply(evs, rev);
                    }
                }
                inner.publish(rev);
            }
        }
    }
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
