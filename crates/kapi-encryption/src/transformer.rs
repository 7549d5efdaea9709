//! The value transformer (upstream's `storage/value.Transformer`): stored bytes
//! to plaintext and back, given the value's storage key as authenticated data
//! (AES-GCM binds a ciphertext to its key, so a value copied to another key
//! does not decrypt).
//!
//! [`PrefixList`] is what one resource's provider list becomes: each provider
//! (and each key of a keyed provider) under its prefix, in configuration order.
//! Writes use the first and put its prefix in front; reads try every entry
//! whose prefix the value starts with, in order, and a value read through any
//! but the first is *stale* — an update that changes nothing still rewrites it,
//! which is how a rotation moves data to the new key. The identity entry has
//! the empty prefix and refuses values starting with `k8s:enc:`, so a list may
//! put `identity` first to decrypt everything as it is rewritten.

use std::sync::Arc;

use async_trait::async_trait;

/// Why a value could not be transformed; the message reaches the client inside
/// an internal error, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TransformError(pub String);

impl TransformError {
    pub fn new(msg: impl Into<String>) -> Self {
        TransformError(msg.into())
    }
}

/// A value read from storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub data: Vec<u8>,
    /// Written by another transformer than the one writing now.
    pub stale: bool,
}

impl Read {
    pub fn fresh(data: Vec<u8>) -> Self {
        Read { data, stale: false }
    }
}

/// One way values are kept at rest.
#[async_trait]
pub trait Transformer: Send + Sync + 'static {
    /// `data` as stored (its prefix already stripped) to plaintext.
    async fn transform_from_storage(&self, data: &[u8], key: &[u8])
        -> Result<Read, TransformError>;

    /// Plaintext to the stored form (without the prefix).
    async fn transform_to_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, TransformError>;
}

/// The prefix every encrypted value starts with.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// `identity`: plaintext, refusing to read encrypted values.
pub struct Identity;

#[async_trait]
impl Transformer for Identity {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Read, TransformError> {
        if data.starts_with(ENCRYPTED_PREFIX) {
            return Err(TransformError::new(
                "identity transformer tried to read encrypted data",
            ));
        }
        Ok(Read::fresh(data.to_vec()))
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        _key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        Ok(data.to_vec())
    }
}

/// One entry of a [`PrefixList`].
#[derive(Clone)]
pub struct Prefixed {
    pub prefix: Vec<u8>,
    pub transformer: Arc<dyn Transformer>,
}

/// A resource's transformers in configuration order (see the module docs).
#[derive(Clone)]
pub struct PrefixList {
    entries: Vec<Prefixed>,
}

impl PrefixList {
    /// `entries` must not be empty (validation requires a provider).
    pub fn new(entries: Vec<Prefixed>) -> Self {
        assert!(!entries.is_empty(), "a transformer list needs an entry");
        PrefixList { entries }
    }
}

#[async_trait]
impl Transformer for PrefixList {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Read, TransformError> {
        let mut errors = Vec::new();
        for (i, entry) in self.entries.iter().enumerate() {
            let Some(rest) = data.strip_prefix(entry.prefix.as_slice()) else {
                continue;
            };
            match entry.transformer.transform_from_storage(rest, key).await {
                Ok(read) => {
                    return Ok(Read {
                        data: read.data,
                        stale: read.stale || i != 0,
                    })
                }
                // Identity refusing an encrypted value is no error: a later
                // entry decrypts it.
                Err(_) if entry.prefix.is_empty() => continue,
                // Same-prefix entries (two aescbc providers) may follow.
                Err(e) => errors.push(e.0),
            }
        }
        Err(match errors.len() {
            0 => TransformError::new("no matching prefix found"),
            1 => TransformError(errors.remove(0)),
            _ => TransformError(format!("[{}]", errors.join(", "))),
        })
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let first = &self.entries[0];
        let body = first.transformer.transform_to_storage(data, key).await?;
        let mut out = Vec::with_capacity(first.prefix.len() + body.len());
        out.extend_from_slice(&first.prefix);
        out.extend_from_slice(&body);
        Ok(out)
    }
}

/// Random bytes from the operating system.
pub(crate) fn random(buf: &mut [u8]) -> Result<(), TransformError> {
    use ring::rand::SecureRandom;
    ring::rand::SystemRandom::new()
        .fill(buf)
        .map_err(|_| TransformError::new("unable to read sufficient random bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prepends a tag and refuses values without it.
    struct Tagged(&'static [u8]);

    #[async_trait]
    impl Transformer for Tagged {
        async fn transform_from_storage(
            &self,
            data: &[u8],
            _: &[u8],
        ) -> Result<Read, TransformError> {
            data.strip_prefix(self.0)
                .map(|d| Read::fresh(d.to_vec()))
                .ok_or_else(|| TransformError::new(format!("not {:?}", self.0)))
        }
        async fn transform_to_storage(
            &self,
            data: &[u8],
            _: &[u8],
        ) -> Result<Vec<u8>, TransformError> {
            Ok([self.0, data].concat())
        }
    }

    fn entry(prefix: &str, t: impl Transformer) -> Prefixed {
        Prefixed {
            prefix: prefix.as_bytes().to_vec(),
            transformer: Arc::new(t),
        }
    }

    async fn read(list: &PrefixList, data: &[u8]) -> Result<Read, TransformError> {
        list.transform_from_storage(data, b"/k").await
    }

    #[tokio::test]
    async fn first_entry_writes_every_entry_reads_later_ones_stale() {
        let list = PrefixList::new(vec![
            entry("k8s:enc:x:v1:a:", Tagged(b"A")),
            entry("k8s:enc:x:v1:b:", Tagged(b"B")),
            entry("", Identity),
        ]);
        let stored = list.transform_to_storage(b"v", b"/k").await.unwrap();
        assert_eq!(stored, b"k8s:enc:x:v1:a:Av");
        assert_eq!(
            read(&list, &stored).await.unwrap(),
            Read::fresh(b"v".to_vec())
        );
        let old = read(&list, b"k8s:enc:x:v1:b:Bv").await.unwrap();
        assert_eq!((old.data.as_slice(), old.stale), (&b"v"[..], true));
        let plain = read(&list, b"{}").await.unwrap();
        assert!(
            plain.stale,
            "plaintext read through identity, not the writer"
        );
    }

    #[tokio::test]
    async fn identity_first_skips_encrypted_values_and_errors_are_kept() {
        let list = PrefixList::new(vec![
            entry("", Identity),
            entry("k8s:enc:x:v1:", Tagged(b"A")),
            entry("k8s:enc:x:v1:", Tagged(b"B")),
        ]);
        assert!(read(&list, b"k8s:enc:x:v1:Bv").await.unwrap().stale);
        let err = read(&list, b"k8s:enc:x:v1:Cv").await.unwrap_err();
        assert_eq!(err.0, r#"[not [65], not [66]]"#);
        let unknown = PrefixList::new(vec![entry("k8s:enc:x:v1:", Tagged(b"A"))]);
        assert_eq!(
            read(&unknown, b"{}").await.unwrap_err().0,
            "no matching prefix found"
        );
        let identity = PrefixList::new(vec![entry("", Identity)]);
        assert_eq!(
            read(&identity, b"k8s:enc:aescbc:v1:k:xx")
                .await
                .unwrap_err()
                .0,
            "no matching prefix found"
        );
    }
}
