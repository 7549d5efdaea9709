//! Whole lists an in-process reader asks for on every request, kept while
//! nothing under the resource changes: admission reads the webhook
//! configurations, the admission policies and a namespace's quotas for every
//! write (upstream reads them from informers). Each read stays consistent, as
//! a list without `resourceVersion`: it waits until the watch cache caught up
//! with storage, and takes the kept list only when the cache's stamp
//! ([`crate::cache::CachedBackend::consistent_stamp`]) is the one the list was
//! read under, so the list is the one a read now would return.
//!
//! Without a cache that can answer (no watch cache, consistent reads from it
//! off), every read lists afresh.

use std::sync::{Arc, Mutex};

use kapi_machinery::status::ApiError;
use serde_json::Value;

use super::options::ListOptions;
use super::Store;

/// Namespaces (or the whole resource, `None`) with a list kept at once.
const KEPT_LISTS: usize = 16;

/// One reader's kept lists of one resource, by namespace.
#[derive(Debug, Default)]
pub struct KeptList {
    lists: Mutex<Vec<Kept>>,
}

#[derive(Debug)]
struct Kept {
    namespace: Option<String>,
    stamp: u64,
    items: Arc<[Value]>,
}

impl KeptList {
    fn get(&self, namespace: Option<&str>, stamp: u64) -> Option<Arc<[Value]>> {
        let lists = self.lists.lock().expect("kept lists lock");
        lists
            .iter()
            .find(|k| k.namespace.as_deref() == namespace)
            .filter(|k| k.stamp == stamp)
            .map(|k| k.items.clone())
    }

    fn put(&self, namespace: Option<&str>, stamp: u64, items: Arc<[Value]>) {
        let mut lists = self.lists.lock().expect("kept lists lock");
        lists.retain(|k| k.namespace.as_deref() != namespace);
        if lists.len() == KEPT_LISTS {
            lists.remove(0);
        }
        lists.push(Kept {
            namespace: namespace.map(str::to_owned),
            stamp,
            items,
        });
    }
}

impl Store {
    /// Every object of the resource (in `namespace`), as a consistent
    /// [`Store::list`] returns them, shared with earlier readers of `kept`
    /// while nothing changed under the resource.
    pub async fn list_kept(
        &self,
        namespace: Option<&str>,
        kept: &KeptList,
    ) -> Result<Arc<[Value]>, ApiError> {
        let stamp = match &self.cache {
            Some(cache) => cache
                .consistent_stamp(&self.all_prefix)
                .await
                .map_err(|e| self.storage_error(e, ""))?,
            None => None,
        };
        if let Some(items) = stamp.and_then(|s| kept.get(namespace, s)) {
            return Ok(items);
        }
        let items: Arc<[Value]> = self
            .list(namespace, &ListOptions::default())
            .await?
            .items
            .into();
        if let Some(stamp) = stamp {
            kept.put(namespace, stamp, items.clone());
        }
        Ok(items)
    }
}
