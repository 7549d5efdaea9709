//! WATCH through the watch cache: the same rules as `watch.rs` (initial ADDED
//! events, the WatchList end bookmark, selectors applied to the old and the new
//! object), but fed by a cache watcher, so any number of watches share one
//! backend watch. With `encoded_json` each event travels as its finished JSON
//! line, built once per event and shared by every watcher that sees it unchanged;
//! with `cached_objects` each event carries the cached object (and the cache's
//! event when this watcher sees it unchanged), so the server encodes it once
//! per object and event for every watcher (protobuf, `handlers/pb_fast.rs`).
//!
//! Bookmarks (only with `allowWatchBookmarks`) follow upstream's cacher: about
//! once a minute, and 2 s before the watch's deadline, at the revision the
//! cache has reached (its once-a-second tick or the backend's progress).
//!
//! The watch is pulled, not pushed: a [`CachedStream`] holds what a watcher
//! task would, and translates one event each time it is polled — the initial
//! objects (lazily, from the snapshot page's shared objects), the end bookmark,
//! then the cache's batches, kept whole and walked by an index. So an event
//! costs each watcher one wake-up (the cache's channel to the connection's
//! task), and its only buffer is the cache's per-watcher channel: a watcher
//! whose client stops reading fills it and is closed by the cache (counted), and
//! one whose client goes away is dropped with the response, so the cache's next
//! message finds it closed.
//!
//! A watch from a revision before the cache's window gets one ERROR event
//! (410 Expired, "too old resource version"); one from a revision the cache has
//! not reached waits for it, then fails with 504 as upstream. When the stream
//! from the cache ends (the watcher was too slow, or the cache re-listed), the
//! response ends and the client watches again from its last revision. A
//! conversion or decoding failure ends the watch with one ERROR event.

use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use kapi_machinery::status::ApiError;
use kapi_storage::{EventKind, Revision};
use serde_json::Value;
use tokio::sync::mpsc;

use super::options::{ListOptions, WatchOptions};
use super::watch::{CachedSource, WatchEvent, WatchEventType, WatchReceiver};
use super::{parse_rv, Store};
use crate::cache::{
    watch_line, CacheMessage, CacheWatch, CachedEvent, CachedObject, Items, Miss, ReadAt,
};

impl Store {
    /// A watch served by the cache, or `None` when the backend path must serve it.
    pub(crate) async fn watch_from_cache(
        &self,
        namespace: Option<&str>,
        opts: &WatchOptions,
        initial: bool,
    ) -> Result<Option<WatchReceiver>, ApiError> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        let prefix = self.def.list_prefix(namespace);
        if !cache.is_ready(&prefix) {
            return Ok(None);
        }
        let sel = ListOptions {
            label: opts.label.clone(),
            field: opts.field.clone(),
            ..Default::default()
        };
        let rv = match opts.resource_version.as_deref() {
            None | Some("") => None,
            Some(rv) => Some(parse_rv(rv)?),
        };
        let (start, snapshot) = match rv {
            Some(rv) if rv > 0 && !initial => (rv, Items::default()),
            rv => {
                let at = match rv {
                    None => ReadAt::Consistent,
                    Some(0) => ReadAt::Any,
                    Some(n) => ReadAt::AtLeast(n),
                };
                let page = cache
                    .list_cached(&prefix, at, 0, None)
                    .await
                    .map_err(|e| self.storage_error(e, ""))?;
                let Some(page) = page else {
                    return Ok(None);
                };
                // Filtered as the events go out.
                (page.revision, page.items)
            }
        };
        let watch = match cache.watch_cached(&prefix, start) {
            Err(Miss::Future { .. }) => {
                let timeout = std::time::Duration::from_secs(3);
                if !cache.wait_for(start, timeout).await {
                    return Err(ApiError::timeout(
                        format!(
                            "Too large resource version: {start}, current: {}",
                            cache.revision(&prefix).unwrap_or(0)
                        ),
                        1,
                    ));
                }
                cache.watch_cached(&prefix, start)
            }
            other => other,
        };
        let watch = match watch {
            Ok((w, _)) => w,
            Err(Miss::TooOld { oldest }) if snapshot.is_empty() => {
                let err = ApiError::resource_expired(format!(
                    "too old resource version: {start} ({oldest})"
                ));
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(error_event(err));
                return Ok(Some(rx.into()));
            }
            Err(_) => return Ok(None),
        };
        let stream = CachedStream {
            store: self.clone(),
            sel,
            bookmarks: opts.allow_bookmarks,
            deadline: opts.timeout.map(|t| Instant::now() + t),
            // Shared lines carry the stored bytes: only when no conversion is needed.
            encoded: opts.encoded_json && self.def.conversion.is_none(),
            objects: opts.cached_objects && self.def.conversion.is_none(),
            snapshot,
            snapshot_at: 0,
            initial_end: initial.then_some(start),
            live: false,
            next_bookmark: None,
            watch,
            batch: None,
            at: 0,
            done: false,
        };
        Ok(Some(WatchReceiver::cached(stream)))
    }
}

/// Upstream's `defaultBookmarkFrequency`.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// One watch served by the cache, translated as it is polled (module docs).
pub(crate) struct CachedStream {
    store: Store,
    sel: ListOptions,
    bookmarks: bool,
    deadline: Option<Instant>,
    encoded: bool,
    /// Send the cached objects themselves (`WatchEvent::cached`).
    objects: bool,
    /// The initial objects not yet looked at (the selector applies as they go).
    snapshot: Items,
    snapshot_at: usize,
    /// The WatchList end bookmark's revision, until it is sent.
    initial_end: Option<Revision>,
    /// The initial events are out; `next_bookmark` counts from then.
    live: bool,
    next_bookmark: Option<Instant>,
    watch: CacheWatch,
    /// The cache's batch being translated, and the next event in it.
    batch: Option<Arc<[Arc<CachedEvent>]>>,
    at: usize,
    /// An ERROR event ended the watch.
    done: bool,
}

impl CachedStream {
    pub(crate) fn poll_next_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        if self.done {
            return Poll::Ready(None);
        }
        // Events from the snapshot or a batch already received take no channel
        // receive: count them against the task's budget so it still yields.
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
        let polled = self.poll_inner(cx);
        if let Poll::Ready(Some(_)) = polled {
            coop.made_progress();
        }
        polled
    }

    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        while let Some(obj) = self.snapshot.get(self.snapshot_at).cloned() {
            self.snapshot_at += 1;
            if self.snapshot_at == self.snapshot.len() {
                // Done with it: a shared list would keep every object alive.
                self.snapshot = Items::default();
                self.snapshot_at = 0;
            }
            if self.matches(&obj) {
                let rv = obj.kv.mod_revision;
                let ev = self.object_event(WatchEventType::Added, &obj, rv, None);
                return Poll::Ready(Some(self.or_fail(ev)));
            }
        }
        if let Some(rv) = self.initial_end.take() {
            return Poll::Ready(Some(self.bookmark(rv, true)));
        }
        if !self.live {
            self.live = true;
            self.next_bookmark = self.bookmark_after(Instant::now());
        }
        loop {
            if let Some(batch) = &self.batch {
                while let Some(e) = batch.get(self.at) {
                    self.at += 1;
                    if let Some((kind, obj)) = self.translate(e) {
                        let ev = self.object_event(kind, obj, e.revision(), Some(e));
                        return Poll::Ready(Some(self.or_fail(ev)));
                    }
                }
                self.batch = None;
            }
            match ready!(self.watch.poll_recv(cx)) {
                None => return Poll::Ready(None),
                Some(CacheMessage::Progress(rev) | CacheMessage::Tick(rev)) => {
                    let now = Instant::now();
                    if !self.bookmarks || self.next_bookmark.is_none_or(|at| now < at) {
                        continue;
                    }
                    self.next_bookmark = self.bookmark_after(now);
                    return Poll::Ready(Some(self.bookmark(rev, false)));
                }
                Some(CacheMessage::Events(events)) => {
                    self.batch = Some(events);
                    self.at = 0;
                }
            }
        }
    }

    /// When the next periodic bookmark is due: a minute from `now`, or 2 s before
    /// the deadline if that comes first; none once that moment has passed.
    fn bookmark_after(&self, now: Instant) -> Option<Instant> {
        let heartbeat = now + BOOKMARK_EVERY;
        let Some(deadline) = self.deadline else {
            return Some(heartbeat);
        };
        let at = heartbeat.min(deadline.checked_sub(Duration::from_secs(2))?);
        (at >= now).then_some(at)
    }

    fn matches(&self, obj: &CachedObject) -> bool {
        self.store.cached_matches(obj, &self.sel)
    }

    /// What this watcher sees of `e`, as `watch.rs` decides it.
    fn translate<'a>(&self, e: &'a CachedEvent) -> Option<(WatchEventType, &'a Arc<CachedObject>)> {
        let old = e.prev.as_ref();
        let old_match = old.is_some_and(|o| self.matches(o));
        match e.event.kind {
            EventKind::Delete => old_match.then_some((WatchEventType::Deleted, old?)),
            EventKind::Put => {
                let new = e.object.as_ref()?;
                match (old_match, self.matches(new)) {
                    (_, true) if old.is_none() || !old_match => Some((WatchEventType::Added, new)),
                    (true, true) => Some((WatchEventType::Modified, new)),
                    (true, false) => Some((WatchEventType::Deleted, new)),
                    _ => None,
                }
            }
        }
    }

    /// The event showing `obj` at `rv` as `kind`, in the form this watch wants.
    fn object_event(
        &self,
        kind: WatchEventType,
        obj: &Arc<CachedObject>,
        rv: Revision,
        shared: Option<&Arc<CachedEvent>>,
    ) -> Result<WatchEvent, ApiError> {
        let natural = shared.filter(|e| {
            e.natural_type() == kind.as_str() && e.shown().is_some_and(|s| Arc::ptr_eq(s, obj))
        });
        if self.encoded {
            let line = match natural {
                Some(e) => e.json_line(),
                None => watch_line(kind.as_str(), obj, rv),
            };
            let line =
                line.ok_or_else(|| ApiError::internal(format!("decoding {}", obj.kv.key)))?;
            return Ok(WatchEvent {
                kind,
                object: Value::Null,
                json: Some(line),
                cached: None,
            });
        }
        if self.objects {
            return Ok(WatchEvent {
                kind,
                object: Value::Null,
                json: None,
                cached: Some(CachedSource {
                    object: obj.clone(),
                    revision: rv,
                    event: natural.cloned(),
                }),
            });
        }
        let mut v = self.store.decode(&obj.kv)?;
        crate::meta::set_str(&mut v, "resourceVersion", &rv.to_string());
        Ok(WatchEvent {
            kind,
            object: v,
            json: None,
            cached: None,
        })
    }

    /// The event, or the ERROR event that ends the watch (a conversion that
    /// failed, bytes that do not decode); the cache's watcher goes with it.
    fn or_fail(&mut self, ev: Result<WatchEvent, ApiError>) -> WatchEvent {
        ev.unwrap_or_else(|err| {
            self.done = true;
            self.watch.close();
            self.batch = None;
            error_event(err)
        })
    }

    fn bookmark(&self, rv: Revision, initial_end: bool) -> WatchEvent {
        WatchEvent {
            kind: WatchEventType::Bookmark,
            object: self.store.bookmark(rv, initial_end),
            json: None,
            cached: None,
        }
    }
}

fn error_event(err: ApiError) -> WatchEvent {
    WatchEvent {
        kind: WatchEventType::Error,
        object: err.to_status(),
        json: None,
        cached: None,
    }
}
