//! Secondary indexes of a prefix cache, as upstream's cacher `Indexers` (pods by
//! `spec.nodeName`): for each indexed field, value → keys, so a LIST or a
//! watch's initial list with `field=value` visits only the objects that have
//! it instead of every object of the resource. The namespace needs no index
//! (it is a key range) and `metadata.name` with a known namespace is one key
//! ([`KeyFilter::Key`]).
//!
//! The index describes the cache's *current* objects; a read at an older
//! revision adds the keys changed since (the overlay in `prefix.rs`), and the
//! caller evaluates its whole selector on what it gets, so the index only
//! narrows, never decides.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kapi_storage::KeyValue;

use super::object::{Attrs, CachedObject};

/// How a resource's objects are indexed: the fields, and the function that
/// computes an object's label and field sets (the same one selectors use, so
/// it is computed once per object and shared).
pub struct Indexer {
    pub fields: Vec<String>,
    /// The key of `attrs`' sets in the cached objects.
    pub key: super::object::AttrsKey,
    #[allow(clippy::type_complexity)]
    pub attrs: Box<dyn Fn(&KeyValue) -> Option<Attrs> + Send + Sync>,
}

impl std::fmt::Debug for Indexer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("fields", &self.fields)
            .finish_non_exhaustive()
    }
}

impl Indexer {
    fn values<'a>(&'a self, obj: &CachedObject) -> Vec<(&'a str, String)> {
        obj.with_attrs(
            self.key,
            |kv| (self.attrs)(kv),
            |attrs| {
                self.fields
                    .iter()
                    .filter_map(|f| Some((f.as_str(), attrs?.fields.get(f)?.to_owned())))
                    .collect()
            },
        )
    }
}

/// Which keys a list visits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFilter {
    /// Every key in the range.
    All,
    /// Only this key (`metadata.name=…` where the namespace is known).
    Key(String),
    /// Keys whose last segment is this name (`metadata.name=…` across
    /// namespaces): a walk of the keys, no object decoded.
    Name(String),
    /// Keys whose object has `field` = `value` (needs an index on `field`).
    Field { field: String, value: String },
}

impl KeyFilter {
    /// Whether a key changed since the read revision may belong to the result.
    pub(crate) fn may_contain(&self, key: &str) -> bool {
        match self {
            KeyFilter::Key(k) => k == key,
            KeyFilter::Name(name) => last_segment(key) == name,
            KeyFilter::All | KeyFilter::Field { .. } => true,
        }
    }
}

/// The part of `key` after its last `/`: an object's name.
pub(crate) fn last_segment(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

/// field → value → keys.
#[derive(Debug, Default)]
pub(crate) struct FieldIndex {
    map: HashMap<String, HashMap<String, BTreeSet<String>>>,
}

impl FieldIndex {
    pub(crate) fn insert(&mut self, ix: &Arc<Indexer>, obj: &CachedObject) {
        for (field, value) in ix.values(obj) {
            self.map
                .entry(field.to_owned())
                .or_default()
                .entry(value.to_owned())
                .or_default()
                .insert(obj.kv.key.clone());
        }
    }

    pub(crate) fn remove(&mut self, ix: &Arc<Indexer>, obj: &CachedObject) {
        for (field, value) in ix.values(obj) {
            let Some(values) = self.map.get_mut(field) else {
                continue;
            };
            if let Some(keys) = values.get_mut(&value) {
                keys.remove(&obj.kv.key);
                if keys.is_empty() {
                    values.remove(&value);
                }
            }
        }
    }

    pub(crate) fn keys(&self, field: &str, value: &str) -> Option<&BTreeSet<String>> {
        self.map.get(field)?.get(value)
    }
}
