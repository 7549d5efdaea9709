//! [`EncryptedBackend`]: a [`Backend`] over another that encrypts values on
//! the way down and decrypts them on the way up, with the transformer of the
//! resource each key belongs to ([`KeyMap`]); keys of no resource pass as they
//! are. Every path a value takes is covered: gets, list pages, created and
//! updated values, a delete's previous value, the current value a conflict
//! carries, and both values of every watch event — so the watch cache above
//! holds plaintext and nothing above ever sees ciphertext.
//!
//! The authenticated data of a value is its key as etcd stores it
//! (`--etcd-prefix`, then the key), as upstream binds
//! `/registry/secrets/ns/name` — on the embedded store too, so values keep
//! decrypting when a store moves to etcd.
//!
//! A value that does not decrypt is an internal error naming the key (a
//! watch yields it as an error, which makes the watch cache list again); a
//! value that cannot be encrypted fails the write, so nothing configured for
//! encryption is written in plaintext.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    Backend, Deleted, Event, KeyValue, ListOptions, ListPage, Result, Revision, StorageError,
    WatchMessage, WatchStream,
};

use crate::keys::KeyMap;
use crate::loaded::Encryption;
use crate::transformer::{Read, Transformer, ENCRYPTED_PREFIX};

#[derive(Clone)]
pub struct EncryptedBackend {
    inner: Arc<dyn Backend>,
    encryption: Arc<Encryption>,
    keys: Arc<KeyMap>,
    aad_prefix: String,
}

impl EncryptedBackend {
    /// `inner` with `encryption` applied to the keys `keys` knows.
    pub fn new(inner: Arc<dyn Backend>, encryption: Arc<Encryption>, keys: KeyMap) -> Self {
        let aad_prefix = encryption.settings().key_prefix.clone();
        EncryptedBackend {
            inner,
            encryption,
            keys: Arc::new(keys),
            aad_prefix: aad_prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The backend below (ciphertext).
    pub fn inner(&self) -> &Arc<dyn Backend> {
        &self.inner
    }

    /// The transformer of `key`'s resource; `None` for plaintext.
    fn transformer(&self, key: &str) -> Option<Arc<dyn Transformer>> {
        self.encryption.transformer_for(&self.keys.lookup(key)?)
    }

    fn aad(&self, key: &str) -> String {
        format!("{}{key}", self.aad_prefix)
    }

    async fn transform_from_storage(&self, key: &str, value: &[u8]) -> Result<Option<Read>> {
        let Some(t) = self.transformer(key) else {
            // Identity, without copying; a resource's encrypted value is refused.
            if value.starts_with(ENCRYPTED_PREFIX) && self.keys.lookup(key).is_some() {
                let msg = "identity transformer tried to read encrypted data";
                let aad = self.aad(key);
                return Err(StorageError::Internal(format!(
                    "unable to transform key {aad:?}: {msg}"
                )));
            }
            return Ok(None);
        };
        let aad = self.aad(key);
        t.transform_from_storage(value, aad.as_bytes())
            .await
            .map(Some)
            .map_err(|e| StorageError::Internal(format!("unable to transform key {aad:?}: {e}")))
    }

    /// `kv` with its value decrypted.
    async fn open(&self, mut kv: KeyValue) -> Result<KeyValue> {
        if kv.value.is_empty() {
            return Ok(kv);
        }
        if let Some(read) = self.transform_from_storage(&kv.key, &kv.value).await? {
            kv.value = Bytes::from(read.data);
        }
        Ok(kv)
    }

    async fn seal(&self, key: &str, value: &Bytes) -> Result<Bytes> {
        let Some(t) = self.transformer(key) else {
            return Ok(value.clone());
        };
        let aad = self.aad(key);
        t.transform_to_storage(value, aad.as_bytes())
            .await
            .map(Bytes::from)
            .map_err(|e| StorageError::Internal(format!("unable to encrypt key {aad:?}: {e}")))
    }

    /// A written value as the layers above see it: the plaintext.
    fn written(mut kv: KeyValue, plain: Bytes) -> KeyValue {
        kv.value = plain;
        kv
    }

    /// Decrypt what a failed write carries back.
    async fn open_error(&self, e: StorageError) -> StorageError {
        match e {
            StorageError::Conflict {
                key,
                current: Some(kv),
            } => match self.open(*kv).await {
                Ok(kv) => StorageError::Conflict {
                    key,
                    current: Some(Box::new(kv)),
                },
                Err(e) => e,
            },
            e => e,
        }
    }

    async fn open_event(&self, mut e: Event) -> Result<Event> {
        e.kv = self.open(e.kv).await?;
        if let Some(prev) = e.prev.take() {
            e.prev = Some(self.open(prev).await?);
        }
        Ok(e)
    }
}

#[async_trait]
impl Backend for EncryptedBackend {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        match self.inner.get(key, revision).await? {
            Some(kv) => Ok(Some(self.open(kv).await?)),
            None => Ok(None),
        }
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        let mut page = self.inner.list(prefix, opts).await?;
        let mut kvs = Vec::with_capacity(page.kvs.len());
        for kv in std::mem::take(&mut page.kvs) {
            kvs.push(self.open(kv).await?);
        }
        page.kvs = kvs;
        Ok(page)
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        self.inner.count(prefix).await
    }

    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let sealed = self.seal(key, &value).await?;
        match self.inner.create_with_ttl(key, sealed, ttl).await {
            Ok(kv) => Ok(Self::written(kv, value)),
            Err(e) => Err(self.open_error(e).await),
        }
    }

    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let sealed = self.seal(key, &value).await?;
        match self.inner.update_with_ttl(key, sealed, expected, ttl).await {
            Ok(kv) => Ok(Self::written(kv, value)),
            Err(e) => Err(self.open_error(e).await),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        match self.inner.delete(key, expected).await {
            Ok(mut d) => {
                d.prev = self.open(d.prev).await?;
                Ok(d)
            }
            Err(e) => Err(self.open_error(e).await),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let below = self.inner.watch(prefix, after).await?;
        let this = self.clone();
        let stream = below.then(move |msg| {
            let this = this.clone();
            async move {
                let events = match msg? {
                    WatchMessage::Events(events) => events,
                    progress => return Ok(progress),
                };
                let mut open = Vec::with_capacity(events.len());
                for e in events {
                    open.push(this.open_event(e).await?);
                }
                Ok(WatchMessage::Events(open))
            }
        });
        Ok(Box::pin(stream))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.inner.compact(revision).await
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.inner.current_revision().await
    }

    fn known_revision(&self) -> Option<Revision> {
        self.inner.known_revision()
    }

    fn claim(&self, key: &str) -> kapi_storage::Claim {
        self.inner.claim(key)
    }

    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }

    /// Read the stored bytes again: stale when they decrypt through another
    /// transformer than the writing one, or changed since `kv` was read (the
    /// caller's compare-and-swap then fails and it reads anew).
    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        if self.transformer(&kv.key).is_none() {
            // Plaintext resources have nothing stale; an encrypted value of
            // one (encryption removed from the file) fails its read instead.
            return Ok(false);
        }
        match self.inner.get(&kv.key, None).await? {
            Some(raw) if raw.mod_revision == kv.mod_revision => Ok(self
                .transform_from_storage(&raw.key, &raw.value)
                .await?
                .is_some_and(|r| r.stale)),
            _ => Ok(true),
        }
    }

    async fn db_sizes(&self) -> Result<Vec<kapi_storage::DbSize>> {
        self.inner.db_sizes().await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}
