//! Watch: a stream of ADDED / MODIFIED / DELETED / BOOKMARK / ERROR events after a
//! resource version, following upstream's rules:
//! - no `resourceVersion` or `"0"`: synthetic ADDED events for the current
//!   objects first, then changes after them;
//! - `sendInitialEvents=true` (WatchList): the same, closed by a BOOKMARK carrying
//!   the `k8s.io/initial-events-end` annotation;
//! - `resourceVersion=N`: changes after N; a compacted N yields one ERROR event
//!   with a 410 Expired Status.
//!
//! Selectors apply to the old and the new object, so an object leaving the
//! selection is a DELETED event for this watcher and one entering it is ADDED.
//!
//! A watch is a [`WatchReceiver`]: fed by a task (`Pump`) when the backend
//! serves it, or — served by the watch cache (`watch_cached.rs`) — translating
//! the cache's shared messages as it is polled, with no task or channel of its own.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use kapi_machinery::status::ApiError;
use kapi_storage::{Event, EventKind, StorageError, WatchMessage};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::options::{ListOptions, RvMatch, WatchOptions};
use super::{parse_rv, Store};
use crate::meta;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl WatchEventType {
    pub fn as_str(self) -> &'static str {
        match self {
            WatchEventType::Added => "ADDED",
            WatchEventType::Modified => "MODIFIED",
            WatchEventType::Deleted => "DELETED",
            WatchEventType::Bookmark => "BOOKMARK",
            WatchEventType::Error => "ERROR",
        }
    }
}

#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub kind: WatchEventType,
    pub object: Value,
    /// The finished JSON line (`{"type":…,"object":…}` and a newline), shared
    /// with other watchers; only with `WatchOptions::encoded_json`, and then
    /// `object` is `Null`.
    pub json: Option<bytes::Bytes>,
    /// With `WatchOptions::cached_objects`: the cached object the event shows
    /// (then `object` is `Null`).
    pub cached: Option<CachedSource>,
}

/// The cached object a watch event shows, the revision it is shown at (its
/// `mod_revision`, or a delete's revision), and the cache's event when this
/// watcher sees that event as an unfiltered watcher does (same type, same
/// object), so its encoded frames can be shared.
#[derive(Debug, Clone)]
pub struct CachedSource {
    pub object: std::sync::Arc<crate::cache::CachedObject>,
    pub revision: kapi_storage::Revision,
    pub event: Option<std::sync::Arc<crate::cache::CachedEvent>>,
}

/// The events of one watch, in order, until it ends (after an ERROR event, or
/// when the cache closes a watcher that cannot keep up). Dropping it ends the
/// watch. A [`futures::Stream`] of events; `recv` and `try_recv` as a channel's.
pub struct WatchReceiver(Source);

enum Source {
    /// Sent by a task: the backend path's `Pump`, or a single event.
    Channel(mpsc::Receiver<WatchEvent>),
    /// Translated from the watch cache's messages as they are polled.
    Cached(Box<super::watch_cached::CachedStream>),
}

impl WatchReceiver {
    pub(crate) fn cached(stream: super::watch_cached::CachedStream) -> Self {
        WatchReceiver(Source::Cached(Box::new(stream)))
    }

    /// The next event, `Ready(None)` once the watch has ended.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        match &mut self.0 {
            Source::Channel(rx) => rx.poll_recv(cx),
            Source::Cached(s) => s.poll_next_event(cx),
        }
    }

    /// The next event, `None` once the watch has ended. Cancel-safe.
    pub async fn recv(&mut self) -> Option<WatchEvent> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next event if one is ready now.
    pub fn try_recv(&mut self) -> Result<WatchEvent, mpsc::error::TryRecvError> {
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match self.poll_recv(&mut cx) {
            Poll::Ready(Some(ev)) => Ok(ev),
            Poll::Ready(None) => Err(mpsc::error::TryRecvError::Disconnected),
            Poll::Pending => Err(mpsc::error::TryRecvError::Empty),
        }
    }
}

impl From<mpsc::Receiver<WatchEvent>> for WatchReceiver {
    fn from(rx: mpsc::Receiver<WatchEvent>) -> Self {
        WatchReceiver(Source::Channel(rx))
    }
}

impl futures::Stream for WatchReceiver {
    type Item = WatchEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        self.get_mut().poll_recv(cx)
    }
}

impl std::fmt::Debug for WatchReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.0 {
            Source::Channel(_) => "channel",
            Source::Cached(_) => "cache",
        };
        f.debug_struct("WatchReceiver")
            .field("source", &source)
            .finish()
    }
}

impl Store {
    /// Start a watch; events arrive on the returned channel until it is dropped.
    pub async fn watch(
        &self,
        namespace: Option<&str>,
        opts: &WatchOptions,
    ) -> Result<WatchReceiver, ApiError> {
        let initial = opts.send_initial_events == Some(true);
        if initial && (!opts.allow_bookmarks || opts.rv_match != RvMatch::NotOlderThan) {
            return Err(ApiError::bad_request(
                "sendInitialEvents requires allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan",
            ));
        }
        if let Some(rx) = self.watch_from_cache(namespace, opts, initial).await? {
            return Ok(rx);
        }
        let list_opts = ListOptions {
            label: opts.label.clone(),
            field: opts.field.clone(),
            ..Default::default()
        };
        let rv = match opts.resource_version.as_deref() {
            None | Some("") | Some("0") => None,
            Some(rv) => Some(parse_rv(rv)?),
        };
        let (start, snapshot) = match (rv, initial || rv.is_none()) {
            (Some(rv), false) => (rv, Vec::new()),
            (rv, _) => {
                if let Some(rv) = rv {
                    self.wait_for_revision(rv).await?;
                }
                let list = self.list(namespace, &list_opts).await?;
                (parse_rv(&list.resource_version)?, list.items)
            }
        };
        let prefix = self.def.list_prefix(namespace);
        let (tx, rx) = mpsc::channel(256);
        let stream = self.backend.watch(&prefix, start).await;
        let pump = Pump {
            store: self.clone(),
            opts: list_opts,
            bookmarks: opts.allow_bookmarks,
            tx,
        };
        tokio::spawn(pump.run(stream, snapshot, initial.then_some(start)));
        Ok(rx.into())
    }

    pub(crate) fn bookmark(&self, rv: i64, initial_end: bool) -> Value {
        let mut m = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            m["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": m})
    }
}

struct Pump {
    store: Store,
    opts: ListOptions,
    bookmarks: bool,
    tx: mpsc::Sender<WatchEvent>,
}

impl Pump {
    async fn send(&self, kind: WatchEventType, object: Value) -> bool {
        self.tx
            .send(WatchEvent {
                kind,
                object,
                json: None,
                cached: None,
            })
            .await
            .is_ok()
    }

    async fn run(
        self,
        stream: Result<kapi_storage::WatchStream, StorageError>,
        snapshot: Vec<Value>,
        initial_end: Option<i64>,
    ) {
        for obj in snapshot {
            if !self.send(WatchEventType::Added, obj).await {
                return;
            }
        }
        if let Some(rv) = initial_end {
            if !self
                .send(WatchEventType::Bookmark, self.store.bookmark(rv, true))
                .await
            {
                return;
            }
        }
        let mut stream = match stream {
            Ok(s) => s,
            Err(e) => return self.fail(e).await,
        };
        loop {
            let msg = tokio::select! {
                m = stream.next() => m,
                _ = self.tx.closed() => return,
            };
            match msg {
                None => return,
                Some(Err(e)) => return self.fail(e).await,
                Some(Ok(WatchMessage::Progress(rev))) => {
                    if self.bookmarks
                        && !self
                            .send(WatchEventType::Bookmark, self.store.bookmark(rev, false))
                            .await
                    {
                        return;
                    }
                }
                Some(Ok(WatchMessage::Events(events))) => {
                    for e in events {
                        match self.translate(&e) {
                            Ok(Some((kind, obj))) => {
                                if !self.send(kind, obj).await {
                                    return;
                                }
                            }
                            Ok(None) => {}
                            // A conversion failed: the watch ends with it.
                            Err(err) => {
                                let _ = self.send(WatchEventType::Error, err.to_status()).await;
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    async fn fail(&self, e: StorageError) {
        let err = match e {
            StorageError::Compacted { requested, .. } => ApiError::resource_expired(format!(
                "too old resource version: {requested} (compacted)"
            )),
            e => self.store.storage_error(e, ""),
        };
        let _ = self.send(WatchEventType::Error, err.to_status()).await;
    }

    fn translate(&self, e: &Event) -> Result<Option<(WatchEventType, Value)>, ApiError> {
        let old = e
            .prev
            .as_ref()
            .map(|kv| self.store.decode(kv))
            .transpose()?;
        let old_match = old
            .as_ref()
            .is_some_and(|o| self.store.matches(o, &self.opts));
        match e.kind {
            EventKind::Delete => {
                let Some(mut obj) = old else {
                    return Ok(None);
                };
                meta::set_str(&mut obj, "resourceVersion", &e.revision().to_string());
                Ok(old_match.then_some((WatchEventType::Deleted, obj)))
            }
            EventKind::Put => {
                let new = self.store.decode(&e.kv)?;
                let new_match = self.store.matches(&new, &self.opts);
                Ok(match (old_match, new_match) {
                    (_, true) if old.is_none() || !old_match => Some((WatchEventType::Added, new)),
                    (true, true) => Some((WatchEventType::Modified, new)),
                    (true, false) => Some((WatchEventType::Deleted, new)),
                    _ => None,
                })
            }
        }
    }
}
