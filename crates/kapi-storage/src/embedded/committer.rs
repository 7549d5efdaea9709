//! The committer: the one thread that writes. It drains every write waiting in its
//! queue into one batch (group commit), checks each against the index plus the
//! writes before it in the batch, appends the batch's records to the WAL, fsyncs
//! once, and only then applies them to the index, wakes the watchers and answers
//! the callers. A failed append or fsync fails the whole batch, and the WAL is cut
//! back to where the batch began, so nothing unacknowledged is ever visible.
//!
//! Snapshots: when the WAL outgrows its bound (or a compaction asks), the
//! committer takes the index's records, starts a new WAL at the next revision,
//! and hands the records to a thread of their own that writes the snapshot and
//! then removes the files it makes redundant; writes go on meanwhile (a 300k
//! store's snapshot is about half a gigabyte). At most one snapshot is in
//! flight. Until it is renamed into place, the older snapshot and WALs are all
//! still there, so recovery never depends on a snapshot being written.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::index::Record;
use super::wal;
use super::Shared;
use crate::backend::{Deleted, KeyValue, Result, Revision, StorageError};

/// The most writes one fsync covers.
const MAX_BATCH: usize = 4096;
/// How often an idle committer looks whether a snapshot in flight is done.
const SNAPSHOT_POLL: Duration = Duration::from_millis(50);

pub(crate) enum Op {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
}

pub(crate) enum Written {
    Put(KeyValue),
    Deleted(Deleted),
}

pub(crate) enum Command {
    Write(Op, oneshot::Sender<Result<Written>>),
    Compact(Revision, oneshot::Sender<Result<()>>),
}

pub(crate) struct Committer {
    pub dir: PathBuf,
    pub shared: Arc<Shared>,
    pub wal: File,
    pub wal_len: u64,
    /// Rotate (snapshot + new WAL) when the WAL grows past this.
    pub snapshot_after_bytes: u64,
    pub snapshotting: Option<Snapshotting>,
}

/// A snapshot being written on its own thread.
pub(crate) struct Snapshotting {
    thread: JoinHandle<std::io::Result<()>>,
    /// The compaction that asked for it, answered once it is on disk.
    reply: Option<oneshot::Sender<Result<()>>>,
}

impl Committer {
    pub fn run(mut self, rx: Receiver<Command>) {
        loop {
            let first = if self.snapshotting.is_some() {
                match rx.recv_timeout(SNAPSHOT_POLL) {
                    Ok(cmd) => cmd,
                    Err(RecvTimeoutError::Timeout) => {
                        self.reap(false);
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match rx.recv() {
                    Ok(cmd) => cmd,
                    Err(_) => break,
                }
            };
            let mut writes = Vec::new();
            let mut compactions = Vec::new();
            let mut next = Some(first);
            while let Some(cmd) = next.take() {
                match cmd {
                    Command::Write(op, reply) => writes.push((op, reply)),
                    Command::Compact(rev, reply) => compactions.push((rev, reply)),
                }
                if writes.len() < MAX_BATCH {
                    next = rx.try_recv().ok();
                }
            }
            if !writes.is_empty() {
                self.commit(writes);
            }
            for (rev, reply) in compactions {
                self.compact(rev, reply);
            }
            self.reap(false);
            if self.wal_len > self.snapshot_after_bytes && self.snapshotting.is_none() {
                self.rotate(None);
            }
        }
        // The store is closed: finish the snapshot in flight before the
        // directory's lock is let go (`mod.rs` joins this thread).
        self.reap(true);
    }

    fn commit(&mut self, writes: Vec<(Op, oneshot::Sender<Result<Written>>)>) {
        let (records, results) = self.plan(writes.iter().map(|(op, _)| op));
        let results = match self.append(&records) {
            Ok(()) => results,
            Err(e) => {
                let err = StorageError::Unavailable(format!("write-ahead log: {e}"));
                results
                    .into_iter()
                    .map(|r| r.and(Err(err.clone())))
                    .collect()
            }
        };
        if results.iter().any(|r| r.is_ok()) {
            let events: Vec<_> = {
                let mut index = self.shared.index.write().expect("index lock");
                records.into_iter().filter_map(|r| index.apply(r)).collect()
            };
            let _ = self.shared.events.send(Arc::new(events));
        }
        for ((_, reply), result) in writes.into_iter().zip(results) {
            let _ = reply.send(result);
        }
    }

    /// Decide every write of the batch against the index and the batch so far.
    fn plan<'a>(&self, ops: impl Iterator<Item = &'a Op>) -> (Vec<Record>, Vec<Result<Written>>) {
        let index = self.shared.index.read().expect("index lock");
        if let Some(reason) = self.shared.poisoned() {
            let failed = ops.map(|_| Err(StorageError::Internal(reason.clone())));
            return (Vec::new(), failed.collect());
        }
        let mut overlay: HashMap<&str, Option<KeyValue>> = HashMap::new();
        let mut rev = index.revision;
        let mut records = Vec::new();
        let mut results = Vec::new();
        for op in ops {
            let key = op_key(op);
            let current = match overlay.get(key) {
                Some(kv) => kv.clone(),
                None => index.latest(key),
            };
            let result = decide(op, current, rev + 1);
            if let Ok((record, after, written)) = result {
                rev += 1;
                records.push(record);
                overlay.insert(key, after);
                results.push(Ok(written));
            } else if let Err(e) = result {
                results.push(Err(e));
            }
        }
        (records, results)
    }

    fn append(&mut self, records: &[Record]) -> std::io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::new();
        for r in records {
            wal::encode(r, &mut buf);
        }
        let result = self.wal.write_all(&buf).and_then(|_| self.wal.sync_data());
        match result {
            Ok(()) => {
                self.wal_len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Cut back to the last durable frame; if even that fails the file's
                // state is unknown and no further write may be acknowledged.
                let cut = self
                    .wal
                    .set_len(self.wal_len)
                    .and_then(|_| self.wal.sync_all());
                if let Err(cut_err) = cut {
                    self.shared
                        .poison(format!("write-ahead log unusable: {e}; {cut_err}"));
                }
                Err(e)
            }
        }
    }

    /// Compact the index, then snapshot it; `reply` is answered once the
    /// snapshot is on disk (so the disk is bounded when compaction returns).
    fn compact(&mut self, rev: Revision, reply: oneshot::Sender<Result<()>>) {
        let compacted = {
            let mut index = self.shared.index.write().expect("index lock");
            index.check_revision(rev).map(|()| index.compact(rev))
        };
        if let Err(e) = compacted {
            let _ = reply.send(Err(e));
            return;
        }
        // Rare: a snapshot still in flight is finished first (one at a time).
        self.reap(true);
        self.rotate(Some(reply));
    }

    /// Start a snapshot of the index at its revision: a new WAL from the next
    /// revision on, the snapshot written (and older files removed) on a thread.
    fn rotate(&mut self, reply: Option<oneshot::Sender<Result<()>>>) {
        let (rev, records) = {
            let index = self.shared.index.read().expect("index lock");
            (index.revision, index.snapshot_records())
        };
        let started = self.start_wal(rev + 1).and_then(|()| {
            let dir = self.dir.clone();
            std::thread::Builder::new()
                .name("kapi-snapshot".into())
                .spawn(move || write_and_prune(&dir, rev, &records))
        });
        match started {
            Ok(thread) => self.snapshotting = Some(Snapshotting { thread, reply }),
            Err(e) => finish(reply, Err(e)),
        }
    }

    /// Append from now on to a new WAL whose first record is `first`.
    fn start_wal(&mut self, first: Revision) -> std::io::Result<()> {
        let file = wal::open_append(&wal::wal_path(&self.dir, first))?;
        wal::sync_dir(&self.dir)?;
        self.wal_len = file.metadata()?.len();
        self.wal = file;
        Ok(())
    }

    /// Collect the snapshot in flight if it is done (or, with `wait`, once it is).
    fn reap(&mut self, wait: bool) {
        let Some(s) = self
            .snapshotting
            .take_if(|s| wait || s.thread.is_finished())
        else {
            return;
        };
        let result = s
            .thread
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("snapshot thread panicked")));
        finish(s.reply, result);
    }
}

/// Write the snapshot at `rev`, then remove what it makes redundant: WALs that
/// start at or before `rev` (every record in them is in the snapshot; the WAL
/// being appended to starts after it) and older snapshots.
fn write_and_prune(
    dir: &std::path::Path,
    rev: Revision,
    records: &[Record],
) -> std::io::Result<()> {
    wal::write_snapshot(dir, rev, records)?;
    for (first, path) in wal::numbered(dir, "wal-", ".log")? {
        if first <= rev {
            std::fs::remove_file(path)?;
        }
    }
    for (at, path) in wal::numbered(dir, "snapshot-", ".snap")? {
        if at < rev {
            std::fs::remove_file(path)?;
        }
    }
    wal::sync_dir(dir)
}

/// A snapshot's outcome: logged when it failed, and told to the compaction
/// waiting on it, if any.
fn finish(reply: Option<oneshot::Sender<Result<()>>>, result: std::io::Result<()>) {
    if let Err(e) = &result {
        tracing::warn!(error = %e, "embedded store: snapshot failed");
    }
    if let Some(reply) = reply {
        let _ = reply.send(result.map_err(|e| StorageError::Unavailable(format!("snapshot: {e}"))));
    }
}

fn op_key(op: &Op) -> &str {
    match op {
        Op::Create { key, .. } | Op::Update { key, .. } | Op::Delete { key, .. } => key,
    }
}

type Decided = (Record, Option<KeyValue>, Written);

/// Check one write against the key's current value and build its record.
fn decide(op: &Op, current: Option<KeyValue>, rev: Revision) -> Result<Decided> {
    let put = |key: &str, value: &Bytes, create_revision, version| {
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision,
            mod_revision: rev,
            version,
        };
        let record = Record::Put {
            revision: rev,
            create_revision,
            version,
            key: key.to_owned(),
            value: value.clone(),
        };
        (record, Some(kv.clone()), Written::Put(kv))
    };
    match (op, current) {
        (Op::Create { key, .. }, Some(_)) => Err(StorageError::AlreadyExists { key: key.clone() }),
        (Op::Create { key, value }, None) => Ok(put(key, value, rev, 1)),
        (Op::Update { key, .. } | Op::Delete { key, .. }, None) => {
            Err(StorageError::NotFound { key: key.clone() })
        }
        (Op::Update { key, expected, .. }, Some(kv)) if kv.mod_revision != *expected => {
            Err(conflict(key, kv))
        }
        (Op::Update { key, value, .. }, Some(kv)) => {
            Ok(put(key, value, kv.create_revision, kv.version + 1))
        }
        (
            Op::Delete {
                key,
                expected: Some(e),
            },
            Some(kv),
        ) if kv.mod_revision != *e => Err(conflict(key, kv)),
        (Op::Delete { key, .. }, Some(kv)) => {
            let record = Record::Delete {
                revision: rev,
                key: key.clone(),
            };
            let deleted = Deleted {
                prev: kv,
                revision: rev,
            };
            Ok((record, None, Written::Deleted(deleted)))
        }
    }
}

fn conflict(key: &str, kv: KeyValue) -> StorageError {
    StorageError::Conflict {
        key: key.to_owned(),
        current: Some(Box::new(kv)),
    }
}
