//! Where a migration reads from: an embedded store (opened, so no server may
//! run on it meanwhile: the lock says so) or etcd, a page of keys at a time at
//! one revision, each key with its value, revisions and expiry.

use std::collections::HashMap;
use std::time::Duration;

use etcd_client::GetOptions;

use super::{Endpoint, Item};
use crate::embedded::{EmbeddedBackend, EmbeddedConfig};
use crate::etcd::{map_err, prefix_end, EtcdBackend};
use crate::{Backend, ListOptions, Result, Revision, StorageError};

pub(crate) enum Source {
    Dir(EmbeddedBackend),
    Etcd {
        backend: Box<EtcdBackend>,
        /// Remaining lifetime of each lease seen, as an expiry time.
        leases: HashMap<i64, i64>,
    },
}

impl Source {
    pub async fn open(endpoint: &Endpoint) -> Result<Source> {
        Ok(match endpoint {
            Endpoint::Dir(dir) => Source::Dir(EmbeddedBackend::open(EmbeddedConfig::new(dir))?),
            Endpoint::Etcd(cfg) => Source::Etcd {
                backend: Box::new(EtcdBackend::connect(cfg).await?),
                leases: HashMap::new(),
            },
        })
    }

    pub async fn revision(&self) -> Result<Revision> {
        match self {
            Source::Dir(b) => b.current_revision().await,
            Source::Etcd { backend, .. } => backend.current_revision().await,
        }
    }

    /// Up to `limit` keys after `after` (from the first without), at `rev`;
    /// and whether more follow.
    pub async fn page(
        &mut self,
        rev: Revision,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Item>, bool)> {
        match self {
            Source::Dir(b) => dir_page(b, rev, after, limit).await,
            Source::Etcd { backend, leases } => etcd_page(backend, leases, rev, after, limit).await,
        }
    }
}

async fn dir_page(
    b: &EmbeddedBackend,
    rev: Revision,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Item>, bool)> {
    let opts = ListOptions {
        revision: Some(rev),
        limit,
        continue_from: after.map(|k| format!("{k}\0")),
        skip_count: true,
    };
    let page = b.list("", opts).await?;
    let items = page
        .kvs
        .into_iter()
        .map(|kv| {
            let expires = b.expiry(&kv.key).unwrap_or(0);
            Item {
                key: kv.key,
                value: kv.value,
                create_revision: kv.create_revision,
                mod_revision: kv.mod_revision,
                version: kv.version,
                expires,
            }
        })
        .collect();
    Ok((items, page.more))
}

async fn etcd_page(
    backend: &EtcdBackend,
    leases: &mut HashMap<i64, i64>,
    rev: Revision,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Item>, bool)> {
    let root = backend.full("/");
    let start = match after {
        Some(k) => format!("{}\0", backend.full(k)),
        None => root.clone(),
    };
    let opts = GetOptions::new()
        .with_range(prefix_end(&root))
        .with_revision(rev)
        .with_limit(limit as i64);
    let resp = backend.kv().get(start, Some(opts)).await.map_err(map_err)?;
    let mut items = Vec::with_capacity(resp.kvs().len());
    for raw in resp.kvs() {
        let kv = backend.convert(raw);
        let expires = match raw.lease() {
            0 => 0,
            id => lease_expiry(backend, leases, id).await?,
        };
        items.push(Item {
            key: kv.key,
            value: kv.value,
            create_revision: kv.create_revision,
            mod_revision: kv.mod_revision,
            version: kv.version,
            expires,
        });
    }
    Ok((items, resp.more()))
}

/// When lease `id` ends (Unix ms), asked once per lease.
async fn lease_expiry(
    backend: &EtcdBackend,
    leases: &mut HashMap<i64, i64>,
    id: i64,
) -> Result<i64> {
    if let Some(at) = leases.get(&id) {
        return Ok(*at);
    }
    let resp = backend
        .client()
        .lease_client()
        .time_to_live(id, None)
        .await
        .map_err(|e| StorageError::Unavailable(format!("etcd: lease {id}: {e}")))?;
    // A lease already gone (-1) leaves its keys about to be deleted.
    let left = Duration::from_secs(resp.ttl().max(0) as u64);
    let at = crate::embedded::unix_ms() + left.as_millis() as i64;
    leases.insert(id, at.max(1));
    Ok(at.max(1))
}
