//! JSON a writer hands the cache for the value it is about to write: a create
//! decodes what it writes anyway (to answer with it), so the JSON the cache
//! would make of those bytes is made from that one decode and offered here,
//! keyed by the storage key. The reflector takes it when an event carries
//! exactly those bytes (compared), and transcodes as usual otherwise, so an
//! offer can only save work, never change what the cache holds.

use bytes::Bytes;

use super::{CachedBackend, Inner};

/// Per key, the stored bytes about to be written and their JSON.
pub(super) type Offered = foldhash::HashMap<String, (Bytes, Bytes)>;

/// The most values offered and not yet seen by the reflector (a write that
/// failed and was not withdrawn, a reflector that restarted): past it the
/// offers are dropped, which costs only the transcoding they would have saved.
const OFFERED_MAX: usize = 1024;

impl Inner {
    /// The JSON offered for `kv`'s key, when offered for exactly its bytes.
    pub(super) fn take_offered(&self, kv: &kapi_storage::KeyValue) -> Option<Bytes> {
        let mut offered = self.offered.lock().expect("offered lock");
        match offered.get(&kv.key) {
            Some((stored, _)) if *stored == kv.value => offered.remove(&kv.key).map(|(_, j)| j),
            _ => None,
        }
    }
}

impl CachedBackend {
    /// Whether the cache transcodes values with `codec` (so JSON made with it
    /// may be offered, [`CachedBackend::offer_json`]).
    pub fn transcodes_like(&self, codec: &crate::codec::StorageCodec) -> bool {
        self.inner()
            .config
            .codec
            .as_ref()
            .is_some_and(|c| c.reads_as(codec))
    }

    /// Before writing `stored` under `key`: `json` is what the cache's codec
    /// makes of it ([`crate::codec::StorageCodec::decode_with_json`]), so the
    /// reflector takes it instead of decoding the same bytes again. Only for
    /// keys the cache holds; a failed write takes it back ([`Self::withdraw_json`]).
    pub fn offer_json(&self, key: &str, stored: &Bytes, json: Bytes) {
        if self.cache(key).is_none() {
            return;
        }
        let mut offered = self.inner().offered.lock().expect("offered lock");
        if offered.len() >= OFFERED_MAX {
            offered.clear();
        }
        offered.insert(key.to_owned(), (stored.clone(), json));
    }

    /// The write of `stored` under `key` failed: its offer is dropped.
    pub fn withdraw_json(&self, key: &str, stored: &Bytes) {
        let mut offered = self.inner().offered.lock().expect("offered lock");
        if offered.get(key).is_some_and(|(s, _)| s == stored) {
            offered.remove(key);
        }
    }
}
