//! Where a migration writes to.
//!
//! - A data directory: the keys are written as a snapshot file in the making
//!   (`migrate.partial` in the new store directory), frames appended a page at
//!   a time and fsynced; the finished file becomes the store's snapshot at the
//!   source revision. So every key keeps its revisions and version, and the
//!   store goes on numbering after the source's revision: resourceVersions do
//!   not change. After a kill the file is cut back to the last page recorded.
//! - etcd: plain puts under the prefix, up to 128 in one transaction (etcd's
//!   default `--max-txn-ops`), keys with an expiry attached to a lease for the
//!   time they have left; etcd numbers the writes with its own revisions.
//!   After a kill the page in flight is simply written again.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use etcd_client::{PutOptions, Txn, TxnOp};

use super::{Endpoint, Item};
use crate::embedded::frames::{encode, sync_dir, Record, SNAPSHOT_TRAILER};
use crate::etcd::{map_err, EtcdBackend};
use crate::{Backend, Result, Revision, StorageError};

/// etcd's default limit of operations in one transaction.
const TXN_OPS: usize = 128;

pub(crate) enum Target {
    Dir {
        store: PathBuf,
        partial: File,
        len: u64,
    },
    Etcd(Box<EtcdBackend>),
}

fn io_err(what: &str, e: io::Error) -> StorageError {
    StorageError::Internal(format!("{what}: {e}"))
}

pub(crate) fn partial_path(store: &Path) -> PathBuf {
    store.join("migrate.partial")
}

/// Whether a directory target's snapshot was placed already (a kill between
/// placing it and recording that leaves the progress file behind).
pub(crate) fn dir_finished(to: &Endpoint, revision: Revision) -> bool {
    let Endpoint::Dir(store) = to else {
        return false;
    };
    !partial_path(store).exists() && snapshot_path(store, revision).exists()
}

fn snapshot_path(store: &Path, revision: Revision) -> PathBuf {
    store.join(format!("snapshot-{revision:020}.snap"))
}

impl Target {
    /// Open the target. `resume_len` is the length of a partial snapshot to
    /// continue (the progress file's); `None` starts one, which needs an empty
    /// target.
    pub async fn open(endpoint: &Endpoint, resume_len: Option<u64>) -> Result<Target> {
        match endpoint {
            Endpoint::Dir(store) => open_dir(store, resume_len),
            Endpoint::Etcd(cfg) => {
                let backend = EtcdBackend::connect(cfg).await?;
                if resume_len.is_none() && backend.count("/").await? > 0 {
                    return Err(StorageError::Internal(format!(
                        "etcd {} already holds keys under {:?}: migrate into an empty prefix",
                        cfg.endpoints.join(","),
                        cfg.prefix
                    )));
                }
                Ok(Target::Etcd(Box::new(backend)))
            }
        }
    }

    /// The length of the partial snapshot (0 for etcd), for the progress file.
    pub fn len(&self) -> u64 {
        match self {
            Target::Dir { len, .. } => *len,
            Target::Etcd(_) => 0,
        }
    }

    /// Start a snapshot at `revision` (a directory target; nothing for etcd).
    pub fn begin(&mut self, revision: Revision) -> Result<()> {
        self.append(&[Record::Meta {
            revision,
            compacted: revision,
        }])
    }

    fn append(&mut self, records: &[Record]) -> Result<()> {
        let Target::Dir { partial, len, .. } = self else {
            return Ok(());
        };
        let mut buf = Vec::new();
        for r in records {
            encode(r, &mut buf);
        }
        partial
            .write_all(&buf)
            .and_then(|_| partial.sync_data())
            .map_err(|e| io_err("writing the partial snapshot", e))?;
        *len += buf.len() as u64;
        Ok(())
    }

    /// Write one page; durable when this returns.
    pub async fn write(&mut self, items: &[Item]) -> Result<()> {
        match self {
            Target::Dir { .. } => {
                let records: Vec<_> = items.iter().map(Item::record).collect();
                self.append(&records)
            }
            Target::Etcd(backend) => {
                for chunk in items.chunks(TXN_OPS) {
                    put_all(backend, chunk).await?;
                }
                Ok(())
            }
        }
    }

    /// Finish: the partial snapshot gets its trailer and becomes the store's.
    pub fn finish(self, revision: Revision) -> Result<()> {
        let Target::Dir {
            store, mut partial, ..
        } = self
        else {
            return Ok(());
        };
        partial
            .write_all(SNAPSHOT_TRAILER)
            .and_then(|_| partial.sync_all())
            .map_err(|e| io_err("finishing the snapshot", e))?;
        let done = snapshot_path(&store, revision);
        std::fs::rename(partial_path(&store), done)
            .and_then(|_| sync_dir(&store))
            .map_err(|e| io_err("placing the snapshot", e))
    }
}

fn open_dir(store: &Path, resume_len: Option<u64>) -> Result<Target> {
    std::fs::create_dir_all(store).map_err(|e| io_err("creating the target", e))?;
    let path = partial_path(store);
    let partial = match resume_len {
        Some(len) => {
            let f = OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(|e| io_err("reopening the partial snapshot", e))?;
            f.set_len(len).map_err(|e| io_err("cutting back", e))?;
            f
        }
        None => {
            let busy = std::fs::read_dir(store)
                .map_err(|e| io_err("reading the target", e))?
                .flatten()
                .any(|e| e.file_name() != "migrate.progress");
            if busy {
                return Err(StorageError::Internal(format!(
                    "{} is not empty: migrate into a new data directory",
                    store.display()
                )));
            }
            let f = File::create(&path).map_err(|e| io_err("creating the partial snapshot", e))?;
            sync_dir(store).map_err(|e| io_err("syncing the target", e))?;
            f
        }
    };
    Ok(Target::Dir {
        store: store.to_owned(),
        partial,
        len: resume_len.unwrap_or(0),
    })
}

/// Put every item in one transaction, each with a lease for the time it has
/// left when it expires (one already past its time is left out: it is gone).
async fn put_all(backend: &EtcdBackend, items: &[Item]) -> Result<()> {
    let now = crate::embedded::unix_ms();
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let opts = match item.expires {
            0 => None,
            at if at <= now => continue,
            at => {
                let left = Duration::from_millis((at - now) as u64);
                let id = backend.leases().lease(backend.client(), left).await?;
                Some(PutOptions::new().with_lease(id))
            }
        };
        ops.push(TxnOp::put(
            backend.full(&item.key),
            item.value.to_vec(),
            opts,
        ));
    }
    if ops.is_empty() {
        return Ok(());
    }
    backend
        .kv()
        .txn(Txn::new().and_then(ops))
        .await
        .map_err(map_err)?;
    Ok(())
}
