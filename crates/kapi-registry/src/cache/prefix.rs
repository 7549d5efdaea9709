//! The cache of one resource prefix: the current objects (ordered by key, so a
//! namespace is a key range), a bounded window of recent events, and the watchers.
//!
//! Invariants, all kept under the one lock:
//! - `objects` is the state of the prefix at `revision`, and `index` (when the
//!   resource has indexed fields, `index.rs`) indexes exactly `objects`;
//! - `history` holds every event under the prefix with `oldest < revision <= self.revision`,
//!   in order, so any read or watch at a revision in `[oldest, revision]` can be
//!   answered: a read at an older revision undoes the newer events (`overlay`).
//!   Its length is bounded as upstream's watch cache: at least `min_events`, and
//!   every event younger than `fresh` (75 s) up to `max_events` ([`Window`]),
//!   and nothing at or before a compaction made through the cache, even one the
//!   cache had not reached when it was made (`compacted`);
//! - a watcher registered at revision `r` got every event after `r` up to the
//!   registration as its first message, and every later event by `apply`, because
//!   both happen under the lock. A watcher whose buffer is full is dropped (its
//!   stream ends), never waited for.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use kapi_storage::{Event, EventKind, Revision};
use tokio::sync::mpsc;

use super::event::CachedEvent;
use super::index::{FieldIndex, Indexer, KeyFilter};
use super::items::{CachedPage, Items, Memo, Shared, MEMO_MIN};
use super::object::CachedObject;
use super::range::{merge, prefix_end};

mod visit;

/// Watchers closed because they could not keep up (all caches).
pub(crate) static TERMINATED_WATCHERS: AtomicU64 = AtomicU64::new(0);

/// The source of [`PrefixCache::stamp`]s: unique among every cache of the
/// process, so a stamp names one state of one cache.
static STAMPS: AtomicU64 = AtomicU64::new(1);

fn next_stamp() -> u64 {
    STAMPS.fetch_add(1, Ordering::Relaxed)
}

/// What a cache watcher receives.
#[derive(Debug, Clone)]
pub enum CacheMessage {
    /// Shared by every watcher whose prefix covers the whole batch.
    Events(Arc<[Arc<CachedEvent>]>),
    /// The backend reported progress: nothing more under the prefix up to here.
    Progress(Revision),
    /// The cache's once-a-second clock, with the revision it has reached.
    Tick(Revision),
}

pub type CacheWatch = mpsc::Receiver<CacheMessage>;

/// Why the cache cannot answer a read or a watch itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    NotReady,
    /// The revision lies before the window: `oldest` is the first revision served.
    TooOld {
        oldest: Revision,
    },
    /// The revision lies after what the cache has seen.
    Future {
        current: Revision,
    },
}

struct Watcher {
    prefix: String,
    tx: mpsc::Sender<CacheMessage>,
}

/// How much history a prefix keeps (upstream: 100 to 100 × 1024 events, sized to
/// hold `eventFreshDuration` = 75 s). Events beyond `min_events` are dropped
/// once older than `fresh`, and always beyond `max_events`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub min_events: usize,
    pub fresh: Duration,
    pub max_events: usize,
}

#[derive(Default)]
struct State {
    ready: bool,
    revision: Revision,
    oldest: Revision,
    /// The newest revision the backend compacted at; it may lie ahead of
    /// `revision` (the cache lags), and events up to it are dropped on arrival.
    compacted: Revision,
    /// The revision of the list that filled the cache: it never saw what came before.
    filled: Revision,
    objects: BTreeMap<String, Arc<CachedObject>>,
    index: FieldIndex,
    history: VecDeque<Arc<CachedEvent>>,
    watchers: Vec<Watcher>,
    /// Whole lists of `objects` under a few prefixes (`items.rs`).
    memo: Memo,
}

pub struct PrefixCache {
    pub prefix: String,
    window: Window,
    /// Set once, by the first store that declares indexed fields for the prefix.
    indexer: OnceLock<Arc<Indexer>>,
    state: RwLock<State>,
    /// Names the objects the cache holds: a new stamp whenever they change
    /// (events applied, a refill), written under the state's write lock.
    stamp: AtomicU64,
    /// The revision every cache sharing this floor has applied all events up
    /// to (the reflector's last batch or progress notification, stored after
    /// the batch is applied everywhere). A ready cache is at the later of its
    /// own revision and the floor: a batch that holds nothing under this
    /// prefix moves it without taking its lock.
    floor: Arc<AtomicI64>,
}

impl PrefixCache {
    /// A cache with a floor of its own that stays at 0: its revision moves by
    /// [`PrefixCache::apply`] and [`PrefixCache::progress`] alone.
    #[cfg(test)]
    pub fn new(prefix: String, window: Window) -> Self {
        Self::with_floor(prefix, window, Arc::default())
    }

    /// A cache whose revision also follows `floor` while it is ready (see the field).
    pub fn with_floor(prefix: String, window: Window, floor: Arc<AtomicI64>) -> Self {
        let min_events = window.min_events.max(1);
        PrefixCache {
            prefix,
            window: Window {
                min_events,
                fresh: window.fresh,
                max_events: window.max_events.max(min_events),
            },
            indexer: OnceLock::new(),
            state: RwLock::new(State::default()),
            stamp: AtomicU64::new(next_stamp()),
            floor,
        }
    }

    fn floor(&self) -> Revision {
        self.floor.load(Ordering::Acquire)
    }

    /// Bring a ready cache's own revision up to the floor (under the write lock).
    fn catch_up(&self, st: &mut State) {
        if st.ready {
            st.revision = st.revision.max(self.floor());
        }
    }

    /// The stamp of the objects held now (`None` while not filled): equal
    /// stamps read at two times mean nothing under the prefix changed between
    /// them, so whatever a reader derived from a list at the first it may keep
    /// for the second.
    pub fn stamp(&self) -> Option<u64> {
        let st = self.state.read().expect("cache lock");
        st.ready.then(|| self.stamp.load(Ordering::Acquire))
    }

    /// Index the prefix's objects by `indexer`'s fields from now on; false when
    /// an indexer was set already (the first one stays).
    pub fn set_indexer(&self, indexer: Arc<Indexer>) -> bool {
        let mut st = self.state.write().expect("cache lock");
        if self.indexer.set(indexer).is_err() {
            return false;
        }
        st.index = self.build_index(&st.objects);
        true
    }

    /// Whether objects are indexed by `field`.
    pub fn indexes(&self, field: &str) -> bool {
        self.indexer
            .get()
            .is_some_and(|ix| ix.fields.iter().any(|f| f == field))
    }

    fn build_index(&self, objects: &BTreeMap<String, Arc<CachedObject>>) -> FieldIndex {
        let mut index = FieldIndex::default();
        if let Some(ix) = self.indexer.get() {
            for obj in objects.values() {
                index.insert(ix, obj);
            }
        }
        index
    }

    /// Replace everything with a fresh list at `revision`; current watchers are
    /// closed, as they may have missed events.
    pub fn reset(&self, objects: BTreeMap<String, Arc<CachedObject>>, revision: Revision) {
        let index = self.build_index(&objects);
        let mut st = self.state.write().expect("cache lock");
        self.stamp.store(next_stamp(), Ordering::Release);
        *st = State {
            ready: true,
            revision,
            oldest: revision,
            compacted: st.compacted,
            filled: revision,
            objects,
            index,
            history: VecDeque::new(),
            watchers: Vec::new(),
            memo: Memo::default(),
        };
    }

    /// Stop serving (the backend watch broke); watchers are closed.
    pub fn invalidate(&self) {
        let mut st = self.state.write().expect("cache lock");
        st.ready = false;
        st.watchers.clear();
        self.stamp.store(next_stamp(), Ordering::Release);
    }

    pub fn ready_revision(&self) -> Option<Revision> {
        let st = self.state.read().expect("cache lock");
        st.ready.then(|| st.revision.max(self.floor()))
    }

    pub fn object_count(&self) -> usize {
        self.state.read().expect("cache lock").objects.len()
    }

    /// Apply changes under this prefix and move to `revision`.
    pub fn apply(&self, events: Vec<Event>, revision: Revision) {
        let mut st = self.state.write().expect("cache lock");
        if !st.ready {
            return;
        }
        if !events.is_empty() {
            self.stamp.store(next_stamp(), Ordering::Release);
        }
        st.memo.clear();
        let mut cached = Vec::with_capacity(events.len());
        let now = Instant::now();
        let indexer = self.indexer.get();
        for mut event in events {
            let key = event.kv.key.clone();
            // The backend's previous value as the cache holds it (transcoded),
            // the bytes watchers of the decorator see.
            if let (Some(p), Some(prev_kv)) = (st.objects.get(&key), event.prev.as_mut()) {
                if p.kv.mod_revision == prev_kv.mod_revision {
                    prev_kv.value = p.kv.value.clone();
                }
            }
            let (object, prev) = match event.kind {
                EventKind::Put => {
                    let obj = CachedObject::new(event.kv.clone());
                    let prev = st.objects.insert(key, obj.clone());
                    (Some(obj), prev)
                }
                EventKind::Delete => (None, st.objects.remove(&key)),
            };
            if let Some(ix) = indexer {
                if let Some(p) = &prev {
                    st.index.remove(ix, p);
                }
                if let Some(o) = &object {
                    st.index.insert(ix, o);
                }
            }
            let ev = Arc::new(CachedEvent::new(event, object, prev, now));
            st.history.push_back(ev.clone());
            cached.push(ev);
        }
        st.trim(self.window, now);
        st.revision = st.revision.max(revision);
        st.forget_compacted();
        if !cached.is_empty() {
            st.dispatch(&cached);
        }
    }

    /// Nothing changed under the prefix up to `revision`.
    pub fn progress(&self, revision: Revision, notify: bool) {
        let mut st = self.state.write().expect("cache lock");
        self.catch_up(&mut st);
        if !st.ready || revision < st.revision {
            return;
        }
        st.revision = revision;
        if notify {
            st.notify(CacheMessage::Progress(revision));
        }
    }

    /// Tell every watcher the revision the cache has reached (the watch decides
    /// whether that becomes a bookmark for its client), and let go of events
    /// that aged out of the window while no new ones came (after a burst, the
    /// window shrinks back to `min_events` instead of holding the burst).
    pub fn tick(&self) {
        let mut st = self.state.write().expect("cache lock");
        self.catch_up(&mut st);
        if st.ready {
            st.trim(self.window, Instant::now());
            let revision = st.revision;
            st.notify(CacheMessage::Tick(revision));
        }
    }

    /// History at and before `revision` is no longer needed (the backend compacted it).
    /// The cache may not have seen that revision yet: the events up to it are
    /// then dropped when they arrive.
    pub fn forget_before(&self, revision: Revision) {
        let mut st = self.state.write().expect("cache lock");
        self.catch_up(&mut st);
        st.compacted = st.compacted.max(revision);
        st.forget_compacted();
    }

    /// Keys under `prefix` (which lies under this cache's prefix) at `at`
    /// (`None`: the cache's current revision), from `start` (inclusive). With a
    /// `filter` other than [`KeyFilter::All`] only candidate keys are visited (an
    /// index, one key): a superset of the matches, which the caller still filters.
    /// `Ok(None)` when the filter names a field without an index.
    pub fn list(
        &self,
        prefix: &str,
        at: Option<Revision>,
        limit: usize,
        start: Option<&str>,
        filter: &KeyFilter,
    ) -> Result<Option<CachedPage>, Miss> {
        let st = self.state.read().expect("cache lock");
        let at = st.check(at, self.floor())?;
        let from = start.filter(|s| *s > prefix).unwrap_or(prefix);
        let changed = st.overlay(at, from, prefix);
        let unchanged_all = matches!(filter, KeyFilter::All) && changed.is_empty();
        // A whole unchanged prefix: the list kept from the last one (`items.rs`).
        let whole = unchanged_all && from == prefix && limit == 0;
        if let Some(list) = whole.then(|| st.memo.get(prefix)).flatten() {
            return Ok(Some(CachedPage::whole(Items::Shared(list), at)));
        }
        let end = prefix_end(prefix);
        let end = end.as_deref();
        let Some(candidates) = st.candidates(filter, from, prefix, end, self.indexer.get()) else {
            return Ok(None);
        };
        let overlay = changed
            .iter()
            .filter(|(k, _)| filter.may_contain(k))
            .map(|(k, v)| (*k, v.as_ref()));
        let mut merged = merge(candidates, overlay);
        let limit = if limit == 0 { usize::MAX } else { limit };
        // Room for every object up front: a list of the whole resource fills it,
        // and untouched capacity costs address space, not memory.
        let mut items = Vec::with_capacity(limit.min(st.objects.len() + changed.len()));
        for obj in merged.by_ref() {
            items.push(obj.clone());
            if items.len() == limit {
                break;
            }
        }
        // What follows a full page. With no filter and nothing changed under the
        // prefix since `at`, that is the map's keys after the page's last one:
        // found by a binary search of the prefix's whole list kept in the memo
        // (made by the first page when there is none), else counted by a plain
        // walk of the map, not of the merge. Counting cost a page of 500 out of
        // 300,000 objects 12 ms, and a paged LIST of them 9 s.
        let remaining = match (items.last(), end) {
            (Some(last), Some(end)) if unchanged_all && items.len() == limit => {
                let last = last.kv.key.as_str();
                let memo = st.memo.get(prefix).or_else(|| {
                    (from == prefix)
                        .then(|| st.whole_list(prefix, end))
                        .flatten()
                });
                match memo {
                    Some(list) => list.len() - list.partition_point(|o| *o.kv.key <= *last),
                    None => st
                        .objects
                        .range::<str, _>((Bound::Excluded(last), Bound::Excluded(end)))
                        .count(),
                }
            }
            _ => merged.count(),
        } as i64;
        if whole && items.len() >= MEMO_MIN {
            let list: Shared = items.into();
            st.memo.put(prefix, list.clone());
            return Ok(Some(CachedPage::whole(Items::Shared(list), at)));
        }
        Ok(Some(CachedPage {
            items: items.into(),
            revision: at,
            more: remaining > 0,
            remaining,
        }))
    }

    /// One key at `at` (`None`: the current revision).
    pub fn get(
        &self,
        key: &str,
        at: Option<Revision>,
    ) -> Result<(Option<Arc<CachedObject>>, Revision), Miss> {
        let st = self.state.read().expect("cache lock");
        let at = st.check(at, self.floor())?;
        let overlay = st.overlay(at, key, key);
        let found = match overlay.get(key) {
            Some(v) => v.clone(),
            None => st.objects.get(key).cloned(),
        };
        Ok((found.filter(|o| o.kv.key == key), at))
    }

    /// Watch `prefix` after `after` (0: from the current revision). The first
    /// message replays the window; the buffer holds `buffer` messages.
    pub fn watch(
        &self,
        prefix: &str,
        after: Revision,
        buffer: usize,
    ) -> Result<(CacheWatch, Revision), Miss> {
        let mut st = self.state.write().expect("cache lock");
        let after = if after <= 0 {
            st.check(None, self.floor())?
        } else {
            st.check(Some(after), self.floor())?
        };
        let backlog: Vec<_> = st
            .history
            .iter()
            .filter(|e| e.revision() > after && e.key().starts_with(prefix))
            .cloned()
            .collect();
        let (tx, rx) = mpsc::channel(buffer.max(2));
        if !backlog.is_empty() {
            tx.try_send(CacheMessage::Events(backlog.into()))
                .expect("a new channel has room");
        }
        st.watchers.push(Watcher {
            prefix: prefix.to_owned(),
            tx,
        });
        Ok((rx, after))
    }

    pub fn watcher_count(&self) -> usize {
        self.state.read().expect("cache lock").watchers.len()
    }
}

impl State {
    /// Drop the events at and before the backend's compaction point.
    fn forget_compacted(&mut self) {
        while self
            .history
            .front()
            .is_some_and(|e| e.revision() <= self.compacted)
        {
            self.history.pop_front();
        }
        self.oldest = self.oldest.max(self.compacted.min(self.revision));
    }

    /// Drop events beyond the window: over `max_events`, or older than
    /// `fresh`, never below `min_events`.
    fn trim(&mut self, w: Window, now: Instant) {
        while self.history.len() > w.min_events
            && (self.history.len() > w.max_events
                || self
                    .history
                    .front()
                    .is_some_and(|e| now.duration_since(e.recorded()) > w.fresh))
        {
            let gone = self.history.pop_front().expect("non-empty");
            self.oldest = gone.revision();
        }
        if self.history.capacity() > 4096 && self.history.len() < self.history.capacity() / 4 {
            self.history.shrink_to_fit();
        }
    }

    /// Send `msg` to every watcher that has room (it carries no event, so a
    /// full buffer just skips it).
    fn notify(&mut self, msg: CacheMessage) {
        self.watchers.retain(|w| {
            !matches!(
                w.tx.try_send(msg.clone()),
                Err(mpsc::error::TrySendError::Closed(_))
            )
        });
    }

    /// The revision a read at `at` is answered at, if the cache can answer it
    /// (its own revision brought up to `floor`, the shared one).
    fn check(&self, at: Option<Revision>, floor: Revision) -> Result<Revision, Miss> {
        if !self.ready {
            return Err(Miss::NotReady);
        }
        let current = self.revision.max(floor);
        match at {
            None => Ok(current),
            Some(r) if r > current => Err(Miss::Future { current }),
            // History from before the fill was never here, not dropped: the
            // backend still has it unless compacted (and answers 410 then).
            Some(r) if r < self.filled && self.oldest == self.filled => Err(Miss::NotReady),
            // `compacted` lies ahead of `oldest` while the cache lags behind it.
            Some(r) if r < self.oldest.max(self.compacted) => Err(Miss::TooOld {
                oldest: self.oldest.max(self.compacted),
            }),
            Some(r) => Ok(r),
        }
    }

    fn dispatch(&mut self, events: &[Arc<CachedEvent>]) {
        // One batch for every watcher of the whole prefix (the common case: a
        // thousand watchers of one resource share one allocation per batch).
        let all: Arc<[Arc<CachedEvent>]> = events.into();
        self.watchers.retain(|w| {
            let mine = if events.iter().all(|e| e.key().starts_with(&w.prefix)) {
                all.clone()
            } else {
                let some: Vec<_> = events
                    .iter()
                    .filter(|e| e.key().starts_with(&w.prefix))
                    .cloned()
                    .collect();
                if some.is_empty() {
                    return !w.tx.is_closed();
                }
                some.into()
            };
            match w.tx.try_send(CacheMessage::Events(mine)) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Closed(_)) => false,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    TERMINATED_WATCHERS.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(prefix = %w.prefix, "closing a watcher that cannot keep up");
                    false
                }
            }
        });
    }
}

#[cfg(test)]
#[path = "prefix_tests.rs"]
mod tests;
