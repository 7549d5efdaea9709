//! One change as the watch cache keeps it ([`CachedEvent`]): the backend's
//! event with the cached objects before and after it, and the event's watch
//! encodings, each built by the first watcher that sends it and shared by the
//! rest (`encoded.rs` keeps the non-JSON ones under the process budget).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use kapi_storage::{Event, EventKind, Revision};

use super::encoded::{Encoded, Form};
use super::object::CachedObject;

/// One change as the cache keeps it: the backend's event plus the cached objects
/// before and after it (shared with the object map, so derived data is computed once).
#[derive(Debug)]
pub struct CachedEvent {
    pub event: Event,
    /// The object after a put.
    pub object: Option<Arc<CachedObject>>,
    /// The object before the change, if it existed.
    pub prev: Option<Arc<CachedObject>>,
    /// The event's JSON watch line, built by the first watcher that sends it.
    line: OnceLock<Option<Bytes>>,
    /// Its frames in other encodings, built by the first watcher that sends them.
    encoded: Encoded,
    /// When the cache received it (the history window keeps `fresh` of them).
    recorded: Instant,
}

impl CachedEvent {
    pub(super) fn new(
        event: Event,
        object: Option<Arc<CachedObject>>,
        prev: Option<Arc<CachedObject>>,
        recorded: Instant,
    ) -> Self {
        CachedEvent {
            event,
            object,
            prev,
            line: OnceLock::new(),
            encoded: Encoded::default(),
            recorded,
        }
    }

    /// When the cache received it.
    pub(super) fn recorded(&self) -> Instant {
        self.recorded
    }

    pub fn revision(&self) -> Revision {
        self.event.revision()
    }
    pub fn key(&self) -> &str {
        &self.event.kv.key
    }

    /// `ADDED`, `MODIFIED` or `DELETED`, as the event is seen by an unfiltered watcher.
    pub fn natural_type(&self) -> &'static str {
        match self.event.kind {
            EventKind::Delete => "DELETED",
            EventKind::Put if self.event.is_create() => "ADDED",
            EventKind::Put => "MODIFIED",
        }
    }

    /// The object an unfiltered watcher receives: the new one, or for a delete the
    /// old one (at the delete's revision).
    pub fn shown(&self) -> Option<&Arc<CachedObject>> {
        match self.event.kind {
            EventKind::Put => self.object.as_ref(),
            EventKind::Delete => self.prev.as_ref(),
        }
    }

    /// `{"type":…,"object":…}\n` for an unfiltered watcher, built once and shared.
    pub fn json_line(&self) -> Option<Bytes> {
        self.line
            .get_or_init(|| {
                let obj = self.shown()?;
                watch_line(self.natural_type(), obj, self.revision())
            })
            .clone()
    }
}

impl CachedEvent {
    /// The event's frame in encoding `form` for an unfiltered watcher, built by
    /// `compute` once and shared by every watcher that sends it.
    pub fn frame(&self, form: Form, compute: impl FnOnce() -> Option<Bytes>) -> Option<Bytes> {
        self.encoded.get_or_compute(form, compute)
    }
}

/// One JSON watch event line for `obj` at `rv`.
pub fn watch_line(kind: &str, obj: &CachedObject, rv: Revision) -> Option<Bytes> {
    let mut out = Vec::with_capacity(obj.kv.value.len() + 64);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    if !obj.write_json(rv, super::TypeMeta::Keep, &mut out) {
        return None;
    }
    out.extend_from_slice(b"}\n");
    Some(Bytes::from(out))
}
