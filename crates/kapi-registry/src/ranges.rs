//! Range allocations kept in storage, as upstream's `allocator/storage`: which
//! offsets of a range (the service IPs of `--service-cluster-ip-range`, the
//! node ports of 30000–32767) are handed out, as a bitmap in one
//! `RangeAllocation` object under one key (`/ranges/serviceips`,
//! `/ranges/servicenodeports`).
//!
//! Invariants: the object changes only by compare-and-swap on its revision,
//! so every server on the same storage sees one allocation and never hands
//! out an offset twice; the bitmap is upstream's (the bytes of a big-endian
//! integer whose bit `i` is offset `i`); an object recorded for another range
//! (the flag changed) counts as empty, and the owner's repair loop rebuilds
//! it from what exists. Dynamic allocation prefers the upper band of the range
//! and leaves the lower one to requested values (upstream's static subrange).
//!
//! Where to look next: `kapi-server`'s `rest_storage.rs` (services allocate
//! on create and update, release on delete, repair at start and periodically).

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use kapi_storage::{guaranteed_update, Backend, Decision, KeyValue, StorageError, UpdateError};
use serde_json::{json, Value};

/// Why an allocation failed.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    #[error("provided value is already allocated")]
    Allocated,
    #[error("range is full")]
    Full,
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<UpdateError<AllocError>> for AllocError {
    fn from(e: UpdateError<AllocError>) -> Self {
        match e {
            UpdateError::Storage(e) => AllocError::Storage(e),
            UpdateError::Rejected(e) => e,
        }
    }
}

/// A set of offsets of a range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap {
    /// Little-endian bytes: bit `i % 8` of byte `i / 8` is offset `i`.
    bytes: Vec<u8>,
}

impl Bitmap {
    pub fn contains(&self, i: u32) -> bool {
        let i = i as usize;
        self.bytes
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }

    pub fn insert(&mut self, i: u32) {
        let i = i as usize;
        if self.bytes.len() <= i / 8 {
            self.bytes.resize(i / 8 + 1, 0);
        }
        self.bytes[i / 8] |= 1 << (i % 8);
    }

    pub fn remove(&mut self, i: u32) {
        let i = i as usize;
        if let Some(b) = self.bytes.get_mut(i / 8) {
            *b &= !(1 << (i % 8));
        }
    }

    /// The offsets in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.bytes.len() as u32 * 8).filter(|i| self.contains(*i))
    }

    /// Upstream's form: a big-endian integer's bytes, without leading zeros.
    fn to_big_endian(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self.bytes.iter().rev().copied().collect();
        let first = out.iter().position(|b| *b != 0).unwrap_or(out.len());
        out.drain(..first);
        out
    }

    fn from_big_endian(bytes: &[u8]) -> Bitmap {
        Bitmap {
            bytes: bytes.iter().rev().copied().collect(),
        }
    }
}

/// One range's allocation in storage.
#[derive(Clone)]
pub struct RangeAllocator {
    backend: Arc<dyn Backend>,
    key: String,
    /// The range as upstream records it (`10.0.0.0/24`, `30000-32767`).
    range: String,
    size: u32,
    /// Offsets below this are handed out dynamically only when the rest is full.
    static_band: u32,
}

impl RangeAllocator {
    /// The allocation of `size` offsets under `key`; `static_band` as
    /// upstream computes it for the kind of range ([`static_band`]).
    pub fn new(
        backend: Arc<dyn Backend>,
        key: &str,
        range: &str,
        size: u32,
        static_band: u32,
    ) -> Self {
        RangeAllocator {
            backend,
            key: key.to_owned(),
            range: range.to_owned(),
            size,
            static_band: static_band.min(size),
        }
    }

    pub fn size(&self) -> u32 {
        self.size
    }

    /// The bitmap recorded in `kv`, empty when there is none or it is of
    /// another range.
    fn read(&self, kv: Option<&KeyValue>) -> Bitmap {
        let Some(kv) = kv else {
            return Bitmap::default();
        };
        let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) else {
            tracing::error!(key = %self.key, "unreadable range allocation; starting empty");
            return Bitmap::default();
        };
        if obj.get("range").and_then(Value::as_str) != Some(self.range.as_str()) {
            return Bitmap::default();
        }
        let data = obj.get("data").and_then(Value::as_str).unwrap_or("");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap_or_default();
        Bitmap::from_big_endian(&bytes)
    }

    fn encode(&self, bitmap: &Bitmap) -> Bytes {
        let data = base64::engine::general_purpose::STANDARD.encode(bitmap.to_big_endian());
        let obj = json!({"apiVersion": "v1", "kind": "RangeAllocation",
                         "metadata": {}, "range": self.range, "data": data});
        Bytes::from(serde_json::to_vec(&obj).expect("JSON values serialize"))
    }

    /// Change the bitmap with `f` (compare-and-swap, retried on conflicts).
    async fn change<T>(
        &self,
        mut f: impl FnMut(&mut Bitmap) -> Result<T, AllocError> + Send,
    ) -> Result<T, AllocError>
    where
        T: Send,
    {
        let mut out = None;
        guaranteed_update(self.backend.as_ref(), &self.key, |kv| {
            let mut bitmap = self.read(kv);
            let before = bitmap.clone();
            out = Some(f(&mut bitmap)?);
            if bitmap == before && kv.is_some() {
                return Ok(Decision::Unchanged);
            }
            Ok(Decision::Write(self.encode(&bitmap)))
        })
        .await?;
        Ok(out.expect("decided"))
    }

    /// The offsets handed out now.
    pub async fn allocated(&self) -> Result<Bitmap, StorageError> {
        Ok(self.read(self.backend.get(&self.key, None).await?.as_ref()))
    }

    /// Take `offset`, which must be free.
    pub async fn allocate(&self, offset: u32) -> Result<(), AllocError> {
        self.change(|b| {
            if b.contains(offset) {
                return Err(AllocError::Allocated);
            }
            b.insert(offset);
            Ok(())
        })
        .await
    }

    /// Take a free offset: one of the upper band, from a random start, else
    /// one of the lower band.
    pub async fn allocate_next(&self) -> Result<u32, AllocError> {
        let (band, size) = (self.static_band, self.size);
        let start = random_below(size.saturating_sub(band).max(1));
        self.change(|b| {
            let upper = (0..size - band).map(|i| band + (start + i) % (size - band));
            let lower = 0..band;
            let free = upper.chain(lower).find(|i| !b.contains(*i));
            let i = free.ok_or(AllocError::Full)?;
            b.insert(i);
            Ok(i)
        })
        .await
    }

    /// Give `offsets` back (those not handed out are ignored).
    pub async fn release(&self, offsets: &[u32]) -> Result<(), StorageError> {
        if offsets.is_empty() {
            return Ok(());
        }
        let r = self
            .change(|b| {
                offsets.iter().for_each(|o| b.remove(*o));
                Ok(())
            })
            .await;
        match r {
            Ok(()) => Ok(()),
            Err(AllocError::Storage(e)) => Err(e),
            Err(e) => Err(StorageError::Internal(e.to_string())),
        }
    }

    /// Make the recorded allocation `want(current)` (the repair loop).
    pub async fn replace(
        &self,
        mut want: impl FnMut(&Bitmap) -> Bitmap + Send,
    ) -> Result<(), StorageError> {
        let r = self
            .change(|b| {
                *b = want(b);
                Ok(())
            })
            .await;
        match r {
            Ok(()) => Ok(()),
            Err(AllocError::Storage(e)) => Err(e),
            Err(e) => Err(StorageError::Internal(e.to_string())),
        }
    }
}

/// Upstream's lower band for values clients ask for: `size / step`, at least
/// `min`, at most `max` (service IPs: 16, 16, 256; node ports: 16, 32, 128).
pub fn static_band(size: u32, min: u32, step: u32, max: u32) -> u32 {
    (size / step).max(min).min(max)
}

fn random_below(n: u32) -> u32 {
    use rand::Rng as _;
    rand::rng().random_range(0..n.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmaps_are_upstreams_big_endian_integers() {
        let mut b = Bitmap::default();
        b.insert(0);
        b.insert(143);
        let be = b.to_big_endian();
        assert_eq!(be.len(), 18);
        assert_eq!(be[0], 0x80);
        assert_eq!(be[17], 0x01);
        assert_eq!(
            Bitmap::from_big_endian(&be).iter().collect::<Vec<_>>(),
            vec![0, 143]
        );
        b.remove(143);
        assert_eq!(b.to_big_endian(), vec![1]);
        assert_eq!(Bitmap::default().to_big_endian(), Vec::<u8>::new());
    }

    #[test]
    fn the_static_band_is_upstreams() {
        assert_eq!(static_band(254, 16, 16, 256), 16);
        assert_eq!(static_band(2768, 16, 32, 128), 86);
        assert_eq!(static_band(65534, 16, 16, 256), 256);
    }
}
