//! The embedded backend: an in-memory MVCC index made durable by a write-ahead log
//! with group commit, and snapshots at compaction points that bound the log.
//!
//! Memory holds the live data and a bounded window of recent history
//! (`index.rs`); older history since the last compaction is read back from the
//! WAL by revision (`disk.rs`), after the index's lock is let go (`reads.rs`).
//! Reads of current values never touch the disk. Writes go to the committer
//! thread (`committer.rs`), which answers only after fsync and also deletes
//! keys whose TTL ran out. Watches (`watch.rs`) replay history, then follow the
//! live broadcast. On-disk format and recovery: `wal.rs`, `recovery.rs`,
//! `snapshot.rs` and `docs/storage.md`.

mod backup;
mod committer;
mod disk;
mod history;
mod index;
mod offline;
mod ops;
mod reads;
mod recovery;
mod sched;
mod snapshot;
mod wal;
mod watch;

use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{broadcast, oneshot};

use crate::backend::{
    Backend, Deleted, Event, KeyValue, ListOptions, ListPage, Result, Revision, StorageError,
    WatchStream,
};
use committer::Committer;
use index::{HotWindow, Index};
use ops::{Command, Op, Written};
use reads::KvRef;

pub use backup::{restore_snapshot, save_snapshot, verify_snapshot, BackupReport};
pub use offline::{read_state, OfflineState};

/// The record format, for writers of store files outside the store (the
/// migration's directory target).
pub(crate) mod frames {
    pub(crate) use super::index::Record;
    pub(crate) use super::wal::{encode, sync_dir, SNAPSHOT_TRAILER};
}

/// The wall clock as expiry times are kept: Unix time in milliseconds.
pub fn unix_ms() -> i64 {
    ops::now_ms()
}

/// Settings of the embedded backend.
#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    pub dir: PathBuf,
    /// How often an idle watch reports progress.
    pub progress_interval: Duration,
    /// Start a new WAL segment once the current one is this large.
    pub segment_bytes: u64,
    /// History kept in memory: values of at most this many bytes...
    pub memory_history_bytes: usize,
    /// ...written at most this long ago. Older history is read from disk.
    pub memory_history_age: Duration,
}

impl EmbeddedConfig {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        EmbeddedConfig {
            dir: dir.into(),
            progress_interval: Duration::from_secs(5),
            segment_bytes: 64 << 20,
            memory_history_bytes: 32 << 20,
            memory_history_age: Duration::from_secs(75),
        }
    }
}

/// State shared by the handle, the committer and the watchers.
pub(crate) struct Shared {
    pub index: RwLock<Index>,
    pub events: broadcast::Sender<Arc<Vec<Event>>>,
    failed: Mutex<Option<String>>,
    progress_interval: Duration,
    /// The data directory (its files' sizes are the store's size).
    dir: std::path::PathBuf,
    /// The bytes allocated ahead of the newest WAL segment's frames
    /// (`committer.rs`), which hold nothing yet and are not counted as stored.
    pub wal_spare: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The revision of the last applied write.
    pub fn revision(&self) -> Revision {
        self.index.read().expect("index lock").revision
    }

    pub fn poisoned(&self) -> Option<String> {
        self.failed.lock().expect("poison lock").clone()
    }

    pub fn poison(&self, reason: String) {
        tracing::error!(%reason, "embedded store failed; restart required");
        *self.failed.lock().expect("poison lock") = Some(reason);
    }
}

/// A cheap handle to an open embedded store.
#[derive(Clone)]
pub struct EmbeddedBackend {
    shared: Arc<Shared>,
    /// Declared before `_closer`, so the last handle closes the committer's
    /// queue before it waits for the committer.
    commands: mpsc::Sender<Command>,
    /// Keys claimed for creates being prepared ([`Backend::claim`]).
    claims: Arc<crate::Claims>,
    _closer: Arc<Closer>,
}

/// The store's lifetime, shared by its handles. The last one to go waits for
/// the committer to finish (its queue is closed by then), including a snapshot
/// in flight, and only then lets go of the directory's lock: a store opened on
/// the same directory afterwards never races the old one's files.
struct Closer {
    committer: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Held for the life of the store: one process per data directory.
    _lock: File,
}

impl Drop for Closer {
    fn drop(&mut self) {
        let committer = self.committer.get_mut().map(Option::take);
        if let Ok(Some(thread)) = committer {
            let _ = thread.join();
        }
    }
}

impl EmbeddedBackend {
    /// Open (or create) the store in `config.dir`, recovering from the snapshot and WAL.
    pub fn open(config: EmbeddedConfig) -> Result<Self> {
        let io = |what: &str, e: std::io::Error| {
            StorageError::Internal(format!("{what} {}: {e}", config.dir.display()))
        };
        std::fs::create_dir_all(&config.dir).map_err(|e| io("creating", e))?;
        let lock = File::create(config.dir.join("LOCK")).map_err(|e| io("locking", e))?;
        lock.try_lock().map_err(|_| {
            StorageError::Internal(format!(
                "data directory {} is in use by another process",
                config.dir.display()
            ))
        })?;
        let hot = HotWindow {
            bytes: config.memory_history_bytes,
            age: config.memory_history_age,
        };
        let (index, wal_path) =
            recovery::recover(&config.dir, hot).map_err(|e| io("recovering", e))?;
        let wal = wal::open_segment(&wal_path).map_err(|e| io("opening WAL in", e))?;
        let wal_len = wal.metadata().map_err(|e| io("reading", e))?.len();
        wal::sync_dir(&config.dir).map_err(|e| io("syncing", e))?;
        let (events, _) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            index: RwLock::new(index),
            events,
            failed: Mutex::new(None),
            progress_interval: config.progress_interval,
            dir: config.dir.clone(),
            wal_spare: Default::default(),
        });
        let committer = Committer {
            dir: config.dir.clone(),
            shared: shared.clone(),
            wal,
            wal_len,
            wal_allocated: wal_len,
            segment_bytes: config.segment_bytes,
            snapshotting: None,
        };
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("kapi-committer".into())
            .spawn(move || {
                if !sched::batch_current_thread() {
                    tracing::debug!("the committer keeps the normal scheduling policy");
                }
                committer.run(rx)
            })
            .map_err(|e| StorageError::Internal(format!("starting committer: {e}")))?;
        Ok(EmbeddedBackend {
            shared,
            commands: tx,
            claims: Arc::default(),
            _closer: Arc::new(Closer {
                committer: Mutex::new(Some(thread)),
                _lock: lock,
            }),
        })
    }

    async fn write(&self, op: Op) -> Result<Written> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Write(op, tx))
            .map_err(|_| StorageError::Unavailable("committer stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Unavailable("committer stopped".into()))?
    }

    /// How many keys (live or with retained history) the index holds.
    pub fn key_count(&self) -> usize {
        self.shared.index.read().expect("index lock").key_count()
    }

    /// When `key` expires (Unix ms), if it is live and has an expiry.
    pub fn expiry(&self, key: &str) -> Option<i64> {
        let index = self.shared.index.read().expect("index lock");
        index
            .latest_with_expiry(key)
            .map(|(_, at)| at)
            .filter(|at| *at != 0)
    }

    /// What the index holds in memory and what it reads from disk.
    pub fn memory_stats(&self) -> MemoryStats {
        self.shared.index.read().expect("index lock").memory_stats()
    }
}

/// The index's holdings, for tests and benchmarks ([`EmbeddedBackend::memory_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStats {
    /// Keys live or with retained history.
    pub keys: usize,
    /// Versions whose value is in memory: the newest of each key, and the
    /// history in the hot window.
    pub versions_in_memory: usize,
    /// Versions whose value is read from disk when asked for.
    pub versions_on_disk: usize,
    /// Writes in the hot window, and what they weigh (values plus a fixed
    /// overhead per write).
    pub hot_events: usize,
    pub hot_bytes: usize,
}

/// Values that moved to disk, read once the index's lock is let go.
fn resolve(refs: Vec<KvRef>) -> Result<Vec<KeyValue>> {
    refs.into_iter().map(KvRef::resolve).collect()
}

#[async_trait]
impl Backend for EmbeddedBackend {
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>> {
        let found = self
            .shared
            .index
            .read()
            .expect("index lock")
            .get(key, revision)?;
        found.map(KvRef::resolve).transpose()
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage> {
        let page = self
            .shared
            .index
            .read()
            .expect("index lock")
            .list(prefix, &opts)?;
        Ok(ListPage {
            kvs: resolve(page.kvs)?,
            revision: page.revision,
            more: page.more,
            remaining: page.remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<i64> {
        Ok(self.shared.index.read().expect("index lock").count(prefix))
    }

    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let op = Op::Create {
            key: key.to_owned(),
            value,
            ttl,
        };
        match self.write(op).await? {
            Written::Put(kv) => Ok(kv),
            Written::Deleted(_) => Err(StorageError::Internal("create deleted".into())),
        }
    }

    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        let op = Op::Update {
            key: key.to_owned(),
            value,
            expected,
            ttl,
        };
        match self.write(op).await? {
            Written::Put(kv) => Ok(kv),
            Written::Deleted(_) => Err(StorageError::Internal("update deleted".into())),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        let op = Op::Delete {
            key: key.to_owned(),
            expected,
        };
        match self.write(op).await? {
            Written::Deleted(d) => Ok(d),
            Written::Put(_) => Err(StorageError::Internal("delete wrote".into())),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream> {
        watch::start(self.shared.clone(), prefix.to_owned(), after)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(Command::Compact(revision, tx))
            .map_err(|_| StorageError::Unavailable("committer stopped".into()))?;
        rx.await
            .map_err(|_| StorageError::Unavailable("committer stopped".into()))?
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.shared.revision())
    }

    fn known_revision(&self) -> Option<Revision> {
        Some(self.shared.revision())
    }

    fn claim(&self, key: &str) -> crate::Claim {
        self.claims.claim(key, || {
            self.shared.index.read().expect("index lock").holds(key)
        })
    }

    async fn health(&self) -> Result<()> {
        match self.shared.poisoned() {
            Some(reason) => Err(StorageError::Internal(reason)),
            None => Ok(()),
        }
    }

    /// The bytes the data directory's files take (WAL segments, snapshots;
    /// not the space allocated ahead of the WAL's frames), as one member named
    /// by the directory.
    async fn db_sizes(&self) -> Result<Vec<crate::DbSize>> {
        let dir = self.shared.dir.clone();
        let spare = self
            .shared
            .wal_spare
            .load(std::sync::atomic::Ordering::Relaxed);
        let spare = i64::try_from(spare).unwrap_or(0);
        let bytes = tokio::task::spawn_blocking(move || dir_bytes(&dir))
            .await
            .ok()
            .and_then(|r| r.ok())
            .map(|b| (b - spare).max(0));
        Ok(vec![crate::DbSize {
            endpoint: self.shared.dir.display().to_string(),
            bytes,
        }])
    }

    fn name(&self) -> &'static str {
        "embedded"
    }
}

/// The bytes allocated to the files under `dir` (recursively).
fn dir_bytes(dir: &std::path::Path) -> std::io::Result<i64> {
    let mut total = 0i64;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += dir_bytes(&entry.path())?;
        } else {
            total += i64::try_from(meta.len()).unwrap_or(i64::MAX);
        }
    }
    Ok(total)
}
