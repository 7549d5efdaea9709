//! [`Backend`] for [`CachedBackend`]: the decorator face of the cache. Writes,
//! counts and health go to the backend below; a list at the current revision is
//! a consistent read from memory, a list or get at a revision inside the window
//! is answered from memory, and a watch under a cached prefix attaches to the
//! cache. Whatever the cache cannot answer (not filled yet, a revision outside
//! the window) goes to the backend, so the trait's contract holds either way.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use kapi_storage::{
    Backend, Deleted, KeyValue, ListOptions, ListPage, Result, Revision, WatchMessage, WatchStream,
};
use tokio_stream::wrappers::ReceiverStream;

use super::{CacheMessage, CachedBackend, Miss, ReadAt};

#[async_trait]
impl Backend for CachedBackend {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        if let Some(r) = revision {
            if let Some((obj, _)) = self.get_cached(key, ReadAt::Exact(r)).await? {
                return Ok(obj.map(|o| o.kv.clone()));
            }
        }
        self.backend().get(key, revision).await
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        let at = opts.revision.map_or(ReadAt::Consistent, ReadAt::Exact);
        let cached = self
            .list_cached(prefix, at, opts.limit, opts.continue_from.as_deref())
            .await?;
        match cached {
            Some(page) => Ok(ListPage {
                kvs: page.items.iter().map(|o| o.kv.clone()).collect(),
                revision: page.revision,
                more: page.more,
                remaining: page.remaining,
            }),
            None => self.backend().list(prefix, opts).await,
        }
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        self.backend().count(prefix).await
    }

    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.backend().create_with_ttl(key, value, ttl).await
    }

    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        self.backend()
            .update_with_ttl(key, value, expected, ttl)
            .await
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        self.backend().delete(key, expected).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        let mut attached = self.watch_cached(prefix, after);
        if let Err(Miss::Future { .. }) = attached {
            if self
                .wait_for(after, self.inner().config.fresh_timeout)
                .await
            {
                attached = self.watch_cached(prefix, after);
            }
        }
        let Ok((rx, _)) = attached else {
            return self.backend().watch(prefix, after).await;
        };
        // Ticks are the cache's clock for bookmarks, not backend progress.
        let stream = ReceiverStream::new(rx).filter_map(|msg| {
            futures::future::ready(match msg {
                CacheMessage::Events(evs) => Some(Ok(WatchMessage::Events(
                    evs.iter().map(|e| e.event.clone()).collect(),
                ))),
                CacheMessage::Progress(r) => Some(Ok(WatchMessage::Progress(r))),
                CacheMessage::Tick(_) => None,
            })
        });
        Ok(Box::pin(stream))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.backend().compact(revision).await?;
        for c in self.inner().caches() {
            c.forget_before(revision);
        }
        Ok(())
    }

    async fn current_revision(&self) -> Result<Revision> {
        self.backend().current_revision().await
    }

    fn known_revision(&self) -> Option<Revision> {
        self.backend().known_revision()
    }

    fn claim(&self, key: &str) -> kapi_storage::Claim {
        self.backend().claim(key)
    }

    async fn health(&self) -> Result<()> {
        self.backend().health().await
    }

    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        self.backend().is_stale(kv).await
    }

    async fn db_sizes(&self) -> Result<Vec<kapi_storage::DbSize>> {
        self.backend().db_sizes().await
    }

    fn name(&self) -> &'static str {
        self.backend().name()
    }
}
