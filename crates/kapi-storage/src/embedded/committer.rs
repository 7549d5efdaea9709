//! The committer: the one thread that writes. It drains every write waiting in its
//! queue into one batch (group commit), checks each against the index plus the
//! writes before it in the batch, appends the batch's records to the WAL, fsyncs
//! once, and only then applies them to the index, wakes the watchers and answers
//! the callers. A failed append or fsync fails the whole batch, and the WAL is cut
//! back to where the batch began, so nothing unacknowledged is ever visible.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::oneshot;

use super::index::Record;
use super::wal;
use super::Shared;
use crate::backend::{Deleted, KeyValue, Result, Revision, StorageError};

/// The most writes one fsync covers.
const MAX_BATCH: usize = 4096;

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
}

impl Committer {
    pub fn run(mut self, rx: Receiver<Command>) {
        while let Ok(first) = rx.recv() {
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
                let _ = reply.send(self.compact(rev));
            }
            if self.wal_len > self.snapshot_after_bytes {
                if let Err(e) = self.rotate() {
                    tracing::warn!(error = %e, "embedded store: snapshot failed");
                }
            }
        }
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

    fn compact(&mut self, rev: Revision) -> Result<()> {
        {
            let mut index = self.shared.index.write().expect("index lock");
            index.check_revision(rev)?;
            index.compact(rev);
        }
        self.rotate()
            .map_err(|e| StorageError::Unavailable(format!("snapshot: {e}")))
    }

    /// Write a snapshot of the index, start a new WAL, drop the old files.
    fn rotate(&mut self) -> std::io::Result<()> {
        let (rev, records) = {
            let index = self.shared.index.read().expect("index lock");
            (index.revision, index.snapshot_records())
        };
        let snap = wal::write_snapshot(&self.dir, rev, &records)?;
        let new_wal = wal::wal_path(&self.dir, rev + 1);
        let file = wal::open_append(&new_wal)?;
        wal::sync_dir(&self.dir)?;
        self.wal = file;
        self.wal_len = self.wal.metadata()?.len();
        for (_, path) in wal::numbered(&self.dir, "wal-", ".log")? {
            if path != new_wal {
                std::fs::remove_file(path)?;
            }
        }
        for (_, path) in wal::numbered(&self.dir, "snapshot-", ".snap")? {
            if path != snap {
                std::fs::remove_file(path)?;
            }
        }
        wal::sync_dir(&self.dir)
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
