//! The backend slot: where the storage client lives once it exists.
//!
//! As in the seed, the client is created by a background task that retries once a
//! second until it succeeds, then publishes it by swapping it into a shared slot.
//! Everything above reads the slot: until it is filled, calls fail fast with
//! `Unavailable`, and the health check (named `etcd`, as upstream, whatever the
//! backend) reports the last connection error. [`BackendSlot`] itself implements
//! [`Backend`], so the layers above hold one handle from the first moment.

use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::backend::{
    Backend, Deleted, KeyValue, ListOptions, ListPage, Result, Revision, StorageError, WatchStream,
};

struct Inner {
    current: RwLock<Option<Arc<dyn Backend>>>,
    last_error: Mutex<String>,
    ready: tokio::sync::watch::Sender<bool>,
    /// What we connect to, for messages (`etcd https://…`, `embedded ./kapi-data`).
    target: String,
}

#[derive(Clone)]
pub struct BackendSlot {
    inner: Arc<Inner>,
}

impl BackendSlot {
    fn empty(target: String) -> Self {
        let (ready, _) = tokio::sync::watch::channel(false);
        BackendSlot {
            inner: Arc::new(Inner {
                current: RwLock::new(None),
                last_error: Mutex::new("not connected yet".into()),
                ready,
                target,
            }),
        }
    }

    /// A slot already holding `backend`.
    pub fn ready(target: String, backend: Arc<dyn Backend>) -> Self {
        let slot = Self::empty(target);
        slot.publish(backend);
        slot
    }

    /// A slot filled by a task that calls `connect` once a second until it succeeds.
    pub fn connect_in_background<F, Fut>(target: String, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = Result<Arc<dyn Backend>>> + Send,
    {
        let slot = Self::empty(target);
        let task_slot = slot.clone();
        tokio::spawn(async move {
            loop {
                match connect().await {
                    Ok(backend) => return task_slot.publish(backend),
                    Err(e) => {
                        tracing::info!(target_store = %task_slot.inner.target, error = %e, "storage not reachable yet; retrying");
                        *task_slot.inner.last_error.lock().expect("lock") = e.to_string();
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        slot
    }

    /// A slot holding `layer` of this slot's backend (a decorator such as
    /// encryption at rest): at once when this one is connected, else as soon
    /// as it connects; until then its errors and health report this one's.
    pub fn layered<F>(&self, layer: F) -> Self
    where
        F: FnOnce(Arc<dyn Backend>) -> Arc<dyn Backend> + Send + 'static,
    {
        let outer = Self::empty(self.inner.target.clone());
        if let Some(backend) = self.current() {
            outer.publish(layer(backend));
            return outer;
        }
        let (below, above) = (self.clone(), outer.clone());
        tokio::spawn(async move {
            let mut ready = below.inner.ready.subscribe();
            loop {
                if let Some(backend) = below.current() {
                    return above.publish(layer(backend));
                }
                let last = below.inner.last_error.lock().expect("lock").clone();
                *above.inner.last_error.lock().expect("lock") = last;
                let _ = tokio::time::timeout(Duration::from_secs(1), ready.changed()).await;
            }
        });
        outer
    }

    fn publish(&self, backend: Arc<dyn Backend>) {
        *self.inner.current.write().expect("slot lock") = Some(backend);
        self.inner.ready.send_replace(true);
    }

    /// The backend, once connected.
    pub fn current(&self) -> Option<Arc<dyn Backend>> {
        self.inner.current.read().expect("slot lock").clone()
    }

    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// Wait until the backend is connected; on time-out, the message names the
    /// target and the last error.
    pub async fn wait_ready(&self, timeout: Duration) -> std::result::Result<(), String> {
        let mut ready = self.inner.ready.subscribe();
        let connected =
            tokio::time::timeout(timeout, async move { ready.wait_for(|r| *r).await.is_ok() });
        match connected.await {
            Ok(true) => Ok(()),
            _ => Err(format!(
                "storage {} not reachable within {}s: {}",
                self.inner.target,
                timeout.as_secs(),
                self.inner.last_error.lock().expect("lock")
            )),
        }
    }

    /// The named health check: connected, and answering within `timeout`.
    pub async fn check(&self, timeout: Duration) -> std::result::Result<(), String> {
        let Some(backend) = self.current() else {
            let err = self.inner.last_error.lock().expect("lock").clone();
            return Err(format!("not connected to {}: {err}", self.inner.target));
        };
        match tokio::time::timeout(timeout, backend.health()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!(
                "{} did not answer within {timeout:?}",
                self.inner.target
            )),
        }
    }

    fn backend(&self) -> Result<Arc<dyn Backend>> {
        self.current().ok_or_else(|| {
            StorageError::Unavailable(format!("not connected to {}", self.inner.target))
        })
    }
}

#[async_trait]
impl Backend for BackendSlot {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        self.backend()?.get(key, revision).await
    }
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        self.backend()?.list(prefix, opts).await
    }
    async fn count(&self, prefix: &str) -> Result<i64> {
        self.backend()?.count(prefix).await
    }
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.backend()?.create_with_ttl(key, value, ttl).await
    }
    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.backend()?
            .update_with_ttl(key, value, expected, ttl)
            .await
    }
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        self.backend()?.delete(key, expected).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        self.backend()?.watch(prefix, after).await
    }
    async fn compact(&self, revision: Revision) -> Result<()> {
        self.backend()?.compact(revision).await
    }
    async fn current_revision(&self) -> Result<Revision> {
        self.backend()?.current_revision().await
    }
    fn known_revision(&self) -> Option<Revision> {
        self.current()?.known_revision()
    }
    fn claim(&self, key: &str) -> crate::Claim {
        match self.current() {
            Some(b) => b.claim(key),
            None => crate::Claim::Unknown,
        }
    }
    async fn health(&self) -> Result<()> {
        self.backend()?.health().await
    }
    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        self.backend()?.is_stale(kv).await
    }
    async fn db_sizes(&self) -> Result<Vec<crate::DbSize>> {
        self.backend()?.db_sizes().await
    }
    fn name(&self) -> &'static str {
        self.current().map_or("unconnected", |b| b.name())
    }
}
