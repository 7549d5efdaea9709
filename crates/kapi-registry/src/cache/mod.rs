//! The watch cache: LIST, GET and WATCH served from memory, filled by one backend
//! watch (`reflector.rs`) for every resource prefix, as DESIGN point 5 and
//! upstream's cacher. [`CachedBackend`] is a decorator: it implements
//! [`Backend`] (writes and anything outside a cached prefix go straight to the
//! backend below; reads and watches under a cached prefix come from memory), so
//! the storage conformance suite runs against it unchanged. On top of the trait
//! it offers what the trait cannot express and the generic store needs:
//! not-older-than reads ([`ReadAt`]), pages of shared [`CachedObject`]s, and
//! watches that hand out shared events (`prefix.rs`).
//!
//! Freshness: a consistent read asks the backend for its current revision and
//! waits (up to `fresh_timeout`) until the cache has seen it (KEP-2340), else
//! reads the backend. Because one watch covers the whole keyspace, the cache
//! moves with every write anywhere, so this wait is one event delivery long.
//!
//! Prefixes can be added while serving ([`CachedBackend::add_prefix`], for
//! custom resources): the reflector fills a new prefix by a list at the revision
//! it has reached, between two batches of its watch, so the new cache misses
//! nothing.
//!
//! Where to look next: `prefix.rs` (one resource's objects, window, watchers),
//! `index.rs` (field indexes), `object.rs` (what is computed once per object),
//! `event.rs` (an event as the cache keeps it, with its shared watch lines),
//! `encoded.rs` (encodings kept once per object and event, under a budget),
//! `items.rs` (a page's objects, and whole lists kept while nothing changes),
//! `backend.rs` (the trait), `store/` (how the generic store uses this).

mod backend;
mod encoded;
mod event;
mod index;
mod items;
mod object;
mod offered;
mod prefix;
mod range;
mod reflector;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kapi_storage::{Backend, Result, Revision, StorageError};

pub use encoded::{encoded_budget, encoded_bytes, set_encoded_budget, Encoded, Form};
pub use event::{watch_line, CachedEvent};
pub use index::{Indexer, KeyFilter};
pub use items::{CachedPage, Items};
pub use object::{
    attrs_key, prefetch_bytes, write_json_with_rv, Attrs, AttrsKey, CachedObject, Set, TypeMeta,
};
pub use prefix::{CacheMessage, CacheWatch, Miss};
use prefix::{PrefixCache, Window};

/// Tuning of the watch cache.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Events always kept per prefix for watches and reads at recent revisions.
    pub history: usize,
    /// Events younger than this are kept beyond `history` (upstream's
    /// `eventFreshDuration`, 75 s), up to `history_max`.
    pub history_fresh: Duration,
    /// The most events kept per prefix (upstream: 100 × 1024).
    pub history_max: usize,
    /// Messages buffered per watcher before it counts as too slow and is closed.
    pub watcher_buffer: usize,
    /// How long a read waits for the cache to reach a revision.
    pub fresh_timeout: Duration,
    /// The most bytes of other encodings (protobuf) kept beside the cached
    /// objects and events, process-wide (`encoded.rs`).
    pub encoded_budget: usize,
    /// What the cache keeps of each value: with a codec (the default; the
    /// server gives its own, which also upgrades older versions), an object
    /// as JSON at its kind's storage version today, transcoded once as it
    /// enters (`reflector.rs`), so every reader — selectors, the JSON fast
    /// path, the store's decoding — reads JSON whatever the backend holds;
    /// bytes that are no object, and every value without a codec, as stored.
    pub codec: Option<crate::codec::StorageCodec>,
    /// Serve consistent reads (no `resourceVersion`) from memory once the
    /// cache has caught up (the `ConsistentListFromCache` feature gate); when
    /// false they go to the backend.
    pub consistent_reads: bool,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            history: 10_000,
            history_fresh: Duration::from_secs(75),
            history_max: 100 * 1024,
            watcher_buffer: 1_000,
            fresh_timeout: Duration::from_secs(3),
            encoded_budget: 256 << 20,
            codec: Some(crate::codec::StorageCodec::default()),
            consistent_reads: true,
        }
    }
}

/// How fresh a read from the cache must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAt {
    /// Whatever the cache holds (`resourceVersion=0`).
    Any,
    /// At least this revision (`NotOlderThan`); waits, then fails with `FutureRevision`.
    AtLeast(Revision),
    /// Exactly this revision, if it lies in the window.
    Exact(Revision),
    /// The backend's current revision (no `resourceVersion`).
    Consistent,
}

/// The total number of watchers closed for being too slow (upstream:
/// `apiserver_terminated_watchers_total`).
pub fn terminated_watchers_total() -> u64 {
    prefix::TERMINATED_WATCHERS.load(Ordering::Relaxed)
}

pub(crate) struct Inner {
    backend: Arc<dyn Backend>,
    /// Everything the reflector watches; every cached prefix lies under it.
    root: String,
    /// Only ever grows; sorted by prefix, and no prefix lies under another
    /// (`holding` relies on both).
    caches: RwLock<Caches>,
    config: CacheConfig,
    revision: tokio::sync::watch::Sender<Revision>,
    /// The revision every ready cache has applied all events up to, shared by
    /// the caches (`PrefixCache::with_floor`); moved by the reflector alone,
    /// after each batch, so a batch touches only the caches it has events for.
    floor: Arc<AtomicI64>,
    stop: tokio::sync::watch::Sender<bool>,
    /// Wakes the reflector to fill prefixes added while it follows its watch.
    added: tokio::sync::Notify,
    /// JSON a writer made of the value it is writing, by key (`offer_json`).
    offered: std::sync::Mutex<offered::Offered>,
}

/// The caches, sorted by prefix, and each one's place by its prefix.
#[derive(Default)]
struct Caches {
    sorted: Vec<Arc<PrefixCache>>,
    by_prefix: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl Caches {
    fn new(sorted: Vec<Arc<PrefixCache>>) -> Caches {
        let by_prefix = sorted
            .iter()
            .enumerate()
            .map(|(i, c)| (c.prefix.clone(), i))
            .collect();
        Caches { sorted, by_prefix }
    }

    /// The cache whose prefix `key` lies under, by index, as [`holding`]
    /// finds it. Every prefix ends in `/`, so it is `key` up to one of its
    /// slashes: a few lookups of the key's own leading bytes, where the
    /// binary search compared the key with prefixes spread over the heap
    /// (one a cache miss each, on every read of every request). Prefixes
    /// never nest, so at most one matches; the longest are tried first, as
    /// the keys asked for are a resource's prefix itself (one lookup) or an
    /// object's key one or two segments below it.
    fn holding(&self, key: &str) -> Option<usize> {
        if self.by_prefix.is_empty() {
            return None;
        }
        key.bytes()
            .enumerate()
            .rev()
            .filter(|(_, b)| *b == b'/')
            .find_map(|(i, _)| self.by_prefix.get(&key[..=i]).copied())
    }
}

impl Inner {
    fn caches(&self) -> Vec<Arc<PrefixCache>> {
        self.caches.read().expect("caches lock").sorted.clone()
    }

    fn window(&self) -> Window {
        Window {
            min_events: self.config.history,
            fresh: self.config.history_fresh,
            max_events: self.config.history_max,
        }
    }

    /// `kv` as the cache keeps it (see [`CacheConfig::codec`]); bytes that are
    /// no object in any encoding are kept as they are.
    fn ingest(&self, mut kv: kapi_storage::KeyValue) -> kapi_storage::KeyValue {
        if let Some(json) = self.take_offered(&kv) {
            kv.value = json;
            return kv;
        }
        if let Some(json) = self
            .config
            .codec
            .as_ref()
            .and_then(|c| c.to_json(&kv.value))
        {
            kv.value = json;
        }
        kv
    }

    fn publish(&self, revision: Revision) {
        self.revision.send_if_modified(|r| {
            let newer = revision > *r;
            *r = (*r).max(revision);
            newer
        });
    }

    fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    async fn cancelled(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}

struct Handle {
    inner: Arc<Inner>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.inner.stop.send_replace(true);
    }
}

/// The watch cache in front of a backend. Cheap to clone; the reflector stops
/// when the last clone is dropped.
#[derive(Clone)]
pub struct CachedBackend {
    handle: Arc<Handle>,
}

/// The cache whose prefix `key` lies under, by index. `caches` is sorted by
/// prefix and no prefix lies under another, so the only candidate is the last
/// prefix not after `key`: any string between a prefix of `key` and `key`
/// itself begins with that prefix.
fn holding(caches: &[Arc<PrefixCache>], key: &str) -> Option<usize> {
    let after = caches.partition_point(|c| c.prefix.as_str() <= key);
    let at = after.checked_sub(1)?;
    key.starts_with(caches[at].prefix.as_str()).then_some(at)
}

impl CachedBackend {
    /// Cache `prefixes` (each ending in `/`) of `backend`; a prefix lying under
    /// another is covered by that one. Spawns the reflector on the current runtime.
    pub fn new(
        backend: Arc<dyn Backend>,
        prefixes: impl IntoIterator<Item = String>,
        config: CacheConfig,
    ) -> Self {
        let mut prefixes: Vec<String> = prefixes.into_iter().collect();
        prefixes.sort();
        prefixes.dedup();
        let mut kept: Vec<String> = Vec::new();
        for p in prefixes {
            if !kept.iter().any(|k| p.starts_with(k.as_str())) {
                kept.push(p);
            }
        }
        encoded::set_encoded_budget(config.encoded_budget);
        let inner = Arc::new(Inner {
            backend,
            root: "/".into(),
            caches: RwLock::new(Caches::default()),
            config,
            revision: tokio::sync::watch::channel(0).0,
            floor: Arc::default(),
            stop: tokio::sync::watch::channel(false).0,
            added: tokio::sync::Notify::new(),
            offered: Default::default(),
        });
        let window = inner.window();
        *inner.caches.write().expect("caches lock") = Caches::new(
            kept.into_iter()
                .map(|p| Arc::new(PrefixCache::with_floor(p, window, inner.floor.clone())))
                .collect(),
        );
        tokio::spawn(reflector::run(inner.clone()));
        CachedBackend {
            handle: Arc::new(Handle { inner }),
        }
    }

    fn inner(&self) -> &Inner {
        &self.handle.inner
    }

    /// The backend below.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.inner().backend
    }

    fn cache(&self, prefix: &str) -> Option<Arc<PrefixCache>> {
        let caches = self.inner().caches.read().expect("caches lock");
        caches.holding(prefix).map(|i| caches.sorted[i].clone())
    }

    /// Cache `prefix` (ending in `/`) too, from now on; the reflector fills it
    /// at its next step (until then reads of it go to the backend). True when
    /// the prefix is cached afterwards (added now, or lying under a cached one);
    /// false when it would contain a cached prefix, which is not supported.
    pub fn add_prefix(&self, prefix: &str) -> bool {
        let inner = self.inner();
        {
            let mut caches = inner.caches.write().expect("caches lock");
            let sorted = &caches.sorted;
            if sorted.iter().any(|c| prefix.starts_with(&c.prefix)) {
                return true;
            }
            if sorted.iter().any(|c| c.prefix.starts_with(prefix)) {
                return false;
            }
            let at = sorted.partition_point(|c| c.prefix.as_str() < prefix);
            let mut sorted = std::mem::take(&mut caches.sorted);
            sorted.insert(
                at,
                Arc::new(PrefixCache::with_floor(
                    prefix.to_owned(),
                    inner.window(),
                    inner.floor.clone(),
                )),
            );
            *caches = Caches::new(sorted);
        }
        inner.added.notify_one();
        true
    }

    /// Index the objects under `prefix`'s cache by `indexer` (the first indexer
    /// set for a prefix stays); false when the prefix is not cached.
    pub fn set_indexer(&self, prefix: &str, indexer: Indexer) -> bool {
        match self.cache(prefix) {
            Some(c) => {
                c.set_indexer(Arc::new(indexer));
                true
            }
            None => false,
        }
    }

    /// Whether `prefix` is cached at all (ready or still filling).
    pub fn caches(&self, prefix: &str) -> bool {
        self.cache(prefix).is_some()
    }

    /// Whether every cached prefix is filled (upstream's watch caches'
    /// readiness, which its `storage-readiness` start-up hook waits for).
    pub fn all_ready(&self) -> bool {
        self.inner()
            .caches
            .read()
            .expect("caches lock")
            .sorted
            .iter()
            .all(|c| c.ready_revision().is_some())
    }

    /// Whether `prefix` is cached and the cache is filled.
    pub fn is_ready(&self, prefix: &str) -> bool {
        self.cache(prefix)
            .is_some_and(|c| c.ready_revision().is_some())
    }

    /// The revision `prefix`'s cache has reached, once filled.
    pub fn revision(&self, prefix: &str) -> Option<Revision> {
        self.cache(prefix).and_then(|c| c.ready_revision())
    }

    /// Wait until the cache has reached `revision`; false on time-out.
    pub async fn wait_for(&self, revision: Revision, timeout: Duration) -> bool {
        let mut rx = self.inner().revision.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|r| *r >= revision))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The revision a read at `at` is answered at: `Ok(None)` when the cache
    /// cannot answer it (not ready, outside the window, consistent read timed out).
    async fn resolve(&self, cache: &PrefixCache, at: ReadAt) -> Result<Option<Option<Revision>>> {
        let Some(current) = cache.ready_revision() else {
            return Ok(None);
        };
        let timeout = self.inner().config.fresh_timeout;
        match at {
            ReadAt::Any => Ok(Some(None)),
            ReadAt::Exact(r) => Ok(Some(Some(r))),
            ReadAt::AtLeast(r) if r <= current => Ok(Some(None)),
            ReadAt::AtLeast(r) => {
                if self.wait_for(r, timeout).await {
                    Ok(Some(None))
                } else {
                    let current = cache.ready_revision().unwrap_or(current);
                    Err(StorageError::FutureRevision {
                        requested: r,
                        current,
                    })
                }
            }
            ReadAt::Consistent if !self.inner().config.consistent_reads => Ok(None),
            ReadAt::Consistent => {
                let backend = &self.inner().backend;
                let target = match backend.known_revision() {
                    Some(r) => r,
                    None => backend.current_revision().await?,
                };
                if *self.inner().revision.borrow() >= target {
                    return Ok(Some(None));
                }
                Ok(self.wait_for(target, timeout).await.then_some(None))
            }
        }
    }

    /// The stamp ([`PrefixCache::stamp`]) of `prefix`'s cache once it caught
    /// up with the backend, as for a consistent read; `Ok(None)` when the cache
    /// cannot answer one (not cached or filled, consistent reads from the cache
    /// off, the wait timed out).
    pub async fn consistent_stamp(&self, prefix: &str) -> Result<Option<u64>> {
        let Some(cache) = self.cache(prefix) else {
            return Ok(None);
        };
        Ok(match self.resolve(&cache, ReadAt::Consistent).await? {
            Some(None) => cache.stamp(),
            _ => None,
        })
    }

    /// A page under `prefix` from memory; `Ok(None)` when the backend must answer.
    pub async fn list_cached(
        &self,
        prefix: &str,
        at: ReadAt,
        limit: usize,
        start: Option<&str>,
    ) -> Result<Option<CachedPage>> {
        self.list_filtered(prefix, at, limit, start, &KeyFilter::All)
            .await
    }

    /// A page of the keys `filter` lets through (a superset of the matches:
    /// the caller still evaluates its selector); `Ok(None)` when the cache cannot
    /// answer (including a field without an index).
    pub async fn list_filtered(
        &self,
        prefix: &str,
        at: ReadAt,
        limit: usize,
        start: Option<&str>,
        filter: &KeyFilter,
    ) -> Result<Option<CachedPage>> {
        let Some(cache) = self.cache(prefix) else {
            return Ok(None);
        };
        let Some(rev) = self.resolve(&cache, at).await? else {
            return Ok(None);
        };
        Ok(cache.list(prefix, rev, limit, start, filter).ok().flatten())
    }

    /// Whether `prefix`'s cache has an index on `field`.
    pub fn has_index(&self, prefix: &str, field: &str) -> bool {
        self.cache(prefix).is_some_and(|c| c.indexes(field))
    }

    /// One key from memory with the revision it was read at; `Ok(None)` when the
    /// backend must answer.
    #[allow(clippy::type_complexity)]
    pub async fn get_cached(
        &self,
        key: &str,
        at: ReadAt,
    ) -> Result<Option<(Option<Arc<CachedObject>>, Revision)>> {
        let Some(cache) = self.cache(key) else {
            return Ok(None);
        };
        let Some(rev) = self.resolve(&cache, at).await? else {
            return Ok(None);
        };
        Ok(cache.get(key, rev).ok())
    }

    /// Watch `prefix` from memory after `after` (0: from now). The error says
    /// why the cache cannot serve it (not cached counts as not ready).
    pub fn watch_cached(
        &self,
        prefix: &str,
        after: Revision,
    ) -> std::result::Result<(CacheWatch, Revision), Miss> {
        let cache = self.cache(prefix).ok_or(Miss::NotReady)?;
        cache.watch(prefix, after, self.inner().config.watcher_buffer)
    }

    /// Objects cached under `prefix`'s cache.
    pub fn cached_objects(&self, prefix: &str) -> usize {
        self.cache(prefix).map_or(0, |c| c.object_count())
    }

    /// Watchers attached to `prefix`'s cache.
    pub fn watcher_count(&self, prefix: &str) -> usize {
        self.cache(prefix).map_or(0, |c| c.watcher_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holding_agrees_with_a_scan() {
        let window = Window {
            min_events: 1,
            fresh: Duration::from_secs(1),
            max_events: 1,
        };
        let prefixes = [
            "/registry/apps/deployments/",
            "/registry/configmaps/",
            "/registry/config/",
            "/registry/events/",
            "/registry/example.com/widgets/",
            "/registry/pods/",
            "/registry/podtemplates/",
        ];
        let mut caches: Vec<Arc<PrefixCache>> = prefixes
            .iter()
            .map(|p| Arc::new(PrefixCache::new((*p).into(), window)))
            .collect();
        caches.sort_by(|a, b| a.prefix.cmp(&b.prefix));
        let keys = [
            "",
            "/",
            "/registry/",
            "/registry/apps/",
            "/registry/apps/deployments/",
            "/registry/apps/deployments/ns/a",
            "/registry/configmaps",
            "/registry/configmaps/",
            "/registry/configmaps/default/x",
            "/registry/config/x",
            "/registry/configz/",
            "/registry/events/ns/e",
            "/registry/example.com/widgets/a/b",
            "/registry/example.com/widgetsx/a",
            "/registry/pods/ns/p",
            "/registry/podsx/",
            "/registry/podtemplates/ns/t",
            "/registry/q",
            "/z",
            "\u{10FFFF}",
        ];
        let mapped = Caches::new(caches.clone());
        for key in keys {
            let scan = caches.iter().position(|c| key.starts_with(&c.prefix));
            assert_eq!(holding(&caches, key), scan, "{key:?}");
            assert_eq!(mapped.holding(key), scan, "{key:?}");
        }
        assert_eq!(Caches::default().holding("/registry/pods/ns/p"), None);
    }
}
