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
//! A watch from a revision before the cache's window gets one ERROR event
//! (410 Expired, "too old resource version"); one from a revision the cache has
//! not reached waits for it, then fails with 504 as upstream. When the stream
//! from the cache ends (the watcher was too slow, or the cache re-listed), the
//! response ends and the client watches again from its last revision.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kapi_machinery::status::ApiError;
use kapi_storage::{EventKind, Revision};
use serde_json::Value;
use tokio::sync::mpsc;

use super::options::{ListOptions, WatchOptions};
use super::watch::{CachedSource, WatchEvent, WatchEventType, WatchReceiver};
use super::{parse_rv, Store};
use crate::cache::{watch_line, CacheMessage, CacheWatch, CachedEvent, CachedObject, Miss, ReadAt};

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
            Some(rv) if rv > 0 && !initial => (rv, Vec::new()),
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
                let items: Vec<_> = page
                    .items
                    .into_iter()
                    .filter(|o| self.cached_matches(o, &sel))
                    .collect();
                (page.revision, items)
            }
        };
        let (tx, rx) = mpsc::channel(256);
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
                let _ = tx.try_send(WatchEvent {
                    kind: WatchEventType::Error,
                    object: err.to_status(),
                    json: None,
                    cached: None,
                });
                return Ok(Some(rx));
            }
            Err(_) => return Ok(None),
        };
        let pump = CachePump {
            store: self.clone(),
            sel,
            bookmarks: opts.allow_bookmarks,
            deadline: opts.timeout.map(|t| Instant::now() + t),
            // Shared lines carry the stored bytes: only when no conversion is needed.
            encoded: opts.encoded_json && self.def.conversion.is_none(),
            objects: opts.cached_objects && self.def.conversion.is_none(),
            tx,
        };
        tokio::spawn(pump.run(watch, snapshot, start, initial));
        Ok(Some(rx))
    }
}

/// Upstream's `defaultBookmarkFrequency`.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

struct CachePump {
    store: Store,
    sel: ListOptions,
    bookmarks: bool,
    deadline: Option<Instant>,
    encoded: bool,
    /// Send the cached objects themselves (`WatchEvent::cached`).
    objects: bool,
    tx: mpsc::Sender<WatchEvent>,
}

impl CachePump {
    async fn run(
        self,
        mut watch: CacheWatch,
        snapshot: Vec<Arc<CachedObject>>,
        start: Revision,
        initial: bool,
    ) {
        for obj in &snapshot {
            let rv = obj.kv.mod_revision;
            if !self.send_object(WatchEventType::Added, obj, rv, None).await {
                return;
            }
        }
        if initial && !self.send_bookmark(start, true).await {
            return;
        }
        let mut next_bookmark = self.next_bookmark(Instant::now());
        loop {
            let msg = tokio::select! {
                m = watch.recv() => m,
                _ = self.tx.closed() => return,
            };
            match msg {
                None => return,
                Some(CacheMessage::Progress(rev) | CacheMessage::Tick(rev)) => {
                    let now = Instant::now();
                    if !self.bookmarks || next_bookmark.is_none_or(|at| now < at) {
                        continue;
                    }
                    next_bookmark = self.next_bookmark(now);
                    if !self.send_bookmark(rev, false).await {
                        return;
                    }
                }
                Some(CacheMessage::Events(events)) => {
                    for e in events.iter() {
                        let Some((kind, obj)) = self.translate(e) else {
                            continue;
                        };
                        if !self.send_object(kind, obj, e.revision(), Some(e)).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// When the next periodic bookmark is due: a minute from `now`, or 2 s before
    /// the deadline if that comes first; none once that moment has passed.
    fn next_bookmark(&self, now: Instant) -> Option<Instant> {
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

    async fn send_object(
        &self,
        kind: WatchEventType,
        obj: &Arc<CachedObject>,
        rv: Revision,
        shared: Option<&Arc<CachedEvent>>,
    ) -> bool {
        let natural = shared.filter(|e| {
            e.natural_type() == kind.as_str() && e.shown().is_some_and(|s| Arc::ptr_eq(s, obj))
        });
        let event = if self.encoded {
            let line = match natural {
                Some(e) => e.json_line(),
                None => watch_line(kind.as_str(), obj, rv),
            };
            match line {
                Some(line) => WatchEvent {
                    kind,
                    object: Value::Null,
                    json: Some(line),
                    cached: None,
                },
                None => return self.fail_decode(obj).await,
            }
        } else if self.objects {
            WatchEvent {
                kind,
                object: Value::Null,
                json: None,
                cached: Some(CachedSource {
                    object: obj.clone(),
                    revision: rv,
                    event: natural.cloned(),
                }),
            }
        } else {
            match self.store.decode(&obj.kv) {
                Ok(mut v) => {
                    crate::meta::set_str(&mut v, "resourceVersion", &rv.to_string());
                    WatchEvent {
                        kind,
                        object: v,
                        json: None,
                        cached: None,
                    }
                }
                Err(e) => return self.fail(e).await,
            }
        };
        self.tx.send(event).await.is_ok()
    }

    async fn fail_decode(&self, obj: &CachedObject) -> bool {
        self.fail(ApiError::internal(format!("decoding {}", obj.kv.key)))
            .await
    }

    /// The watch ends with `err` (a conversion that failed, bytes that do not decode).
    async fn fail(&self, err: ApiError) -> bool {
        let ev = WatchEvent {
            kind: WatchEventType::Error,
            object: err.to_status(),
            json: None,
            cached: None,
        };
        let _ = self.tx.send(ev).await;
        false
    }

    async fn send_bookmark(&self, rv: Revision, initial_end: bool) -> bool {
        let ev = WatchEvent {
            kind: WatchEventType::Bookmark,
            object: self.store.bookmark(rv, initial_end),
            json: None,
            cached: None,
        };
        self.tx.send(ev).await.is_ok()
    }
}
