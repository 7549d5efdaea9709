//! Encodings of a cached object or event, computed at most once and shared by
//! every reader that sends them (LIST, GET, each watcher): the server encodes
//! an object as protobuf once per object version, and a watch event's frame
//! once per event, instead of once per response or per watcher.
//!
//! Invariants: a slot is written at most once and never changes (the object or
//! event it belongs to never changes, and its `resourceVersion` is its fixed mod
//! revision); nothing is allocated for an object nobody asked to encode (one
//! empty `OnceLock` pointer per object); all kept bytes together stay under a
//! process-wide budget ([`set_encoded_budget`]) — past it, encodings are computed
//! and handed out but not kept, so memory never grows beyond the budget for
//! objects asked in another encoding. Bytes are released when the cached object
//! (or event) is dropped.
//!
//! The cache does not know the encodings themselves: [`Form`] only names the
//! slots, the caller supplies the bytes (`kapi-server`'s `handlers/pb_fast.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;

/// Which encoding a slot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The object's protobuf message (no envelope); for an event, its whole
    /// protobuf watch frame.
    Protobuf = 0,
    /// The same for the object's `PartialObjectMetadata`.
    MetadataProtobuf = 1,
}

const FORMS: usize = 2;

/// Bytes kept in all slots (all caches of the process).
static USED: AtomicUsize = AtomicUsize::new(0);
/// The most bytes kept; the default is replaced by the cache's configuration.
static BUDGET: AtomicUsize = AtomicUsize::new(256 << 20);

/// Keep at most `bytes` of encodings in memory (process-wide).
pub fn set_encoded_budget(bytes: usize) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// The most bytes of encodings kept (process-wide).
pub fn encoded_budget() -> usize {
    BUDGET.load(Ordering::Relaxed)
}

/// Bytes of encodings kept in memory now (process-wide).
pub fn encoded_bytes() -> usize {
    USED.load(Ordering::Relaxed)
}

fn reserve(len: usize) -> bool {
    let budget = BUDGET.load(Ordering::Relaxed);
    USED.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        (used + len <= budget).then_some(used + len)
    })
    .is_ok()
}

fn release(len: usize) {
    USED.fetch_sub(len, Ordering::Relaxed);
}

type Slots = [OnceLock<Bytes>; FORMS];

/// The encoding slots of one cached object or event.
#[derive(Debug, Default)]
pub struct Encoded(OnceLock<Box<Slots>>);

impl Encoded {
    /// The bytes of `form`: kept ones, or `compute`d now (and kept while the
    /// budget allows). `None` when `compute` fails (nothing is kept then).
    pub fn get_or_compute(
        &self,
        form: Form,
        compute: impl FnOnce() -> Option<Bytes>,
    ) -> Option<Bytes> {
        if let Some(b) = self.get(form) {
            return Some(b);
        }
        let bytes = compute()?;
        if reserve(bytes.len()) {
            let slots = self.0.get_or_init(Default::default);
            // Another reader may have kept the same bytes meanwhile.
            if slots[form as usize].set(bytes.clone()).is_err() {
                release(bytes.len());
            }
        }
        Some(bytes)
    }

    /// The kept bytes of `form`, if any.
    pub fn get(&self, form: Form) -> Option<Bytes> {
        self.0.get()?[form as usize].get().cloned()
    }
}

impl Drop for Encoded {
    fn drop(&mut self) {
        if let Some(slots) = self.0.get() {
            let kept: usize = slots.iter().filter_map(|s| s.get()).map(Bytes::len).sum();
            release(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computed_once_and_released_on_drop() {
        let before = encoded_bytes();
        let e = Encoded::default();
        let mut calls = 0;
        for _ in 0..3 {
            let b = e.get_or_compute(Form::Protobuf, || {
                calls += 1;
                Some(Bytes::from_static(b"abcd"))
            });
            assert_eq!(b.as_deref(), Some(&b"abcd"[..]));
        }
        assert_eq!(calls, 1);
        assert!(e.get(Form::MetadataProtobuf).is_none());
        assert!(e.get_or_compute(Form::MetadataProtobuf, || None).is_none());
        assert!(encoded_bytes() >= before + 4);
        drop(e);
        assert_eq!(encoded_bytes(), before, "released on drop");
        // Past the budget: handed out, not kept, computed again next time.
        set_encoded_budget(encoded_bytes());
        let e = Encoded::default();
        let mut calls = 0;
        for _ in 0..2 {
            let b = e.get_or_compute(Form::Protobuf, || {
                calls += 1;
                Some(Bytes::from_static(b"abcd"))
            });
            assert!(b.is_some());
        }
        set_encoded_budget(256 << 20);
        assert_eq!(calls, 2);
        assert!(e.get(Form::Protobuf).is_none());
    }
}
