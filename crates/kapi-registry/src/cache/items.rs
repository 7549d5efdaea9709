//! The objects of a page ([`Items`]), and the last whole lists of a prefix kept
//! for the next reader ([`Memo`]).
//!
//! A LIST of a whole prefix holds one reference to each cached object (an
//! `Arc` clone: for 300,000 objects, 300,000 increments each on a cache line
//! of its own, about 40 ms under the cache's read lock, and as many decrements
//! when the response is done). When nothing under the prefix changed since the
//! last such list, the next one takes that list as it is: one reference to one
//! shared slice. Any change under the cache's prefix drops every memo (under
//! the write lock), so a memo never holds an object the cache let go of, and
//! holds nothing the map does not hold too.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use kapi_storage::Revision;

use super::object::CachedObject;

/// A page read from the cache.
#[derive(Debug, Clone)]
pub struct CachedPage {
    pub items: Items,
    pub revision: Revision,
    pub more: bool,
    pub remaining: i64,
}

impl CachedPage {
    /// Every object under a prefix, at `revision`.
    pub fn whole(items: Items, revision: Revision) -> Self {
        CachedPage {
            items,
            revision,
            more: false,
            remaining: 0,
        }
    }
}

/// A page's objects: its own, or a whole list shared with other readers.
#[derive(Debug, Clone)]
pub enum Items {
    Own(Vec<Arc<CachedObject>>),
    Shared(Shared),
}

/// A whole list shared by its readers.
pub type Shared = Arc<[Arc<CachedObject>]>;

impl Default for Items {
    fn default() -> Self {
        Items::Own(Vec::new())
    }
}

impl Deref for Items {
    type Target = [Arc<CachedObject>];

    fn deref(&self) -> &Self::Target {
        match self {
            Items::Own(v) => v,
            Items::Shared(s) => s,
        }
    }
}

impl From<Vec<Arc<CachedObject>>> for Items {
    fn from(v: Vec<Arc<CachedObject>>) -> Self {
        Items::Own(v)
    }
}

impl Items {
    /// The objects to change (a shared list is copied first).
    pub fn to_mut(&mut self) -> &mut Vec<Arc<CachedObject>> {
        if let Items::Shared(s) = self {
            *self = Items::Own(s.to_vec());
        }
        match self {
            Items::Own(v) => v,
            Items::Shared(_) => unreachable!("made own above"),
        }
    }

    /// Add `other`'s objects after these: moved when `other` owns them, shared
    /// ones referenced again.
    pub fn append(&mut self, other: Items) {
        match other {
            Items::Own(mut v) => self.to_mut().append(&mut v),
            Items::Shared(s) => self.to_mut().extend_from_slice(&s),
        }
    }

    /// Whether this is a memo's list, shared with other readers.
    pub fn is_shared(&self) -> bool {
        matches!(self, Items::Shared(_))
    }

    /// Only the objects `keep` accepts: from a shared list, just those are
    /// referenced again (a selector matching few of 300,000 objects costs no
    /// copy of the whole list).
    pub fn retain(&mut self, mut keep: impl FnMut(&Arc<CachedObject>) -> bool) {
        match self {
            Items::Own(v) => v.retain(keep),
            Items::Shared(s) => *self = Items::Own(s.iter().filter(|o| keep(o)).cloned().collect()),
        }
    }
}

/// Whole lists smaller than this are not kept: rebuilding them costs little.
pub const MEMO_MIN: usize = 256;
/// Prefixes (the whole resource, a namespace) with a list kept at once.
const MEMO_PREFIXES: usize = 4;

/// The last whole lists of a few prefixes, valid while nothing changes.
#[derive(Debug, Default)]
pub struct Memo(Mutex<Vec<(String, Shared)>>);

impl Memo {
    pub fn get(&self, prefix: &str) -> Option<Shared> {
        let memo = self.0.lock().expect("memo lock");
        memo.iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, l)| l.clone())
    }

    /// Keep `list` as `prefix`'s whole list, in place of the oldest one kept.
    pub fn put(&self, prefix: &str, list: Shared) {
        let mut memo = self.0.lock().expect("memo lock");
        memo.retain(|(p, _)| p != prefix);
        if memo.len() == MEMO_PREFIXES {
            memo.remove(0);
        }
        memo.push((prefix.to_owned(), list));
    }

    /// Something changed: no list kept is current any more.
    pub fn clear(&self) {
        self.0.lock().expect("memo lock").clear();
    }
}
