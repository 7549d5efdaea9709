//! The committer: the one thread that writes. It drains every write waiting in its
//! queue into one batch (group commit), checks each against the index plus the
//! writes before it in the batch, appends the batch's records to the WAL, fsyncs
//! once, and only then applies them to the index, wakes the watchers and answers
//! the callers. A failed append or fsync fails the whole batch, and the WAL is cut
//! back to where the batch began, so nothing unacknowledged is ever visible.
//!
//! Expiry: keys written with a TTL are deleted here when their time comes, as a
//! batch of deletes like any other (so revisions stay gap-free and in order,
//! and watchers see the deletes with the previous values). The thread sleeps
//! until the earliest expiry at most.
//!
//! Compaction: a Compact record goes into the WAL first, then the index drops
//! the history; when the WAL segments that become redundant outweigh the last
//! snapshot, a new snapshot of the state at the compaction point is written on
//! a thread of its own (`snapshot.rs`) while writes go on, and the segments and
//! older snapshot are deleted once it is on disk. At most one snapshot is in
//! flight. The WAL moves to a new segment once it passes `segment_bytes`.
//!
//! Preallocation: the newest segment's file is extended ahead of its frames
//! ([`PREALLOCATE`] at a time) by writing zeros and syncing them, so most
//! appends overwrite blocks the file already has and their fsync writes
//! neither the file's new size nor its extents. Zeros are written rather than
//! `fallocate`d: an append into `fallocate`d space must also convert the
//! blocks it fills from unwritten to written, and with batches of a few KiB
//! that made each fsync cost ~85 µs of system time against ~58 µs over
//! written zeros (ext4, this project's machines; issue 26). The space after
//! the last frame reads as zeros, which recovery tells from a torn frame
//! (`recovery.rs`); a segment is cut to its frames before the next one
//! starts, so only the newest ever has such a tail.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use super::disk::Base;
use super::index::Record;
use super::ops::{decide, now_ms, op_key, Command, Op, Written};
use super::{snapshot, wal, Shared};
use crate::backend::{KeyValue, Result, Revision, StorageError};

/// The most writes one fsync covers.
const MAX_BATCH: usize = 4096;
/// How often an idle committer looks whether a snapshot in flight is done.
const SNAPSHOT_POLL: Duration = Duration::from_millis(50);
/// How often an idle committer trims the hot window by age.
const IDLE_TICK: Duration = Duration::from_secs(1);
/// How far ahead of its frames the newest WAL segment is allocated.
pub(crate) const PREALLOCATE: u64 = 4 << 20;

type Reply = Option<oneshot::Sender<Result<Written>>>;

pub(crate) struct Committer {
    pub dir: PathBuf,
    pub shared: Arc<Shared>,
    pub wal: File,
    /// Where the frames of the newest segment end (the next append's offset).
    pub wal_len: u64,
    /// The newest segment's size: its frames, then preallocated zeros.
    pub wal_allocated: u64,
    pub segment_bytes: u64,
    pub snapshotting: Option<Snapshotting>,
}

/// A snapshot being written on its own thread.
pub(crate) struct Snapshotting {
    thread: JoinHandle<std::io::Result<Base>>,
    /// The compaction that asked for it, answered once it is on disk.
    reply: oneshot::Sender<Result<()>>,
}

impl Committer {
    pub fn run(mut self, rx: Receiver<Command>) {
        loop {
            let first = match rx.recv_timeout(self.wait_time()) {
                Ok(cmd) => Some(cmd),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            };
            self.expire_due();
            let mut writes = Vec::new();
            let mut compactions = Vec::new();
            let mut next = first;
            let idle = next.is_none();
            while let Some(cmd) = next.take() {
                match cmd {
                    Command::Write(op, reply) => writes.push((op, Some(reply))),
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
            if idle {
                self.shared.index.write().expect("index lock").trim_hot();
            }
            if self.wal_len > self.segment_bytes {
                self.next_segment();
            }
        }
        // The store is closed: finish the snapshot in flight before the
        // directory's lock is let go (`mod.rs` joins this thread).
        self.reap(true);
    }

    /// How long to wait for a command: until the next expiry, the next look
    /// at a snapshot in flight, or the idle tick.
    fn wait_time(&self) -> Duration {
        let mut wait = IDLE_TICK;
        if self.snapshotting.is_some() {
            wait = wait.min(SNAPSHOT_POLL);
        }
        let next = self.shared.index.read().expect("index lock").next_expiry();
        if let Some(at) = next {
            let ms = (at - now_ms()).clamp(0, IDLE_TICK.as_millis() as i64);
            wait = wait.min(Duration::from_millis(ms as u64));
        }
        wait
    }

    /// Delete the keys whose expiry has come, as one batch.
    fn expire_due(&mut self) {
        let due = {
            let index = self.shared.index.read().expect("index lock");
            index.due(now_ms(), MAX_BATCH)
        };
        if due.is_empty() {
            return;
        }
        let ops = due
            .into_iter()
            .map(|(key, deadline)| {
                let op = Op::Expire {
                    key: key.to_string(),
                    deadline,
                };
                (op, None)
            })
            .collect();
        self.commit(ops);
    }

    fn commit(&mut self, writes: Vec<(Op, Reply)>) {
        let (records, results) = self.plan(writes.iter().map(|(op, _)| op));
        let results = match self.append(&records) {
            Ok(offsets) => {
                if let Err(e) = self.publish(records, offsets) {
                    self.shared.poison(format!("applying a batch: {e}"));
                }
                results
            }
            Err(e) => {
                let err = StorageError::Unavailable(format!("write-ahead log: {e}"));
                results
                    .into_iter()
                    .map(|r| r.and(Err(err.clone())))
                    .collect()
            }
        };
        for ((_, reply), result) in writes.into_iter().zip(results) {
            if let Some(reply) = reply {
                let _ = reply.send(result);
            }
        }
    }

    /// Apply durable records to the index and wake the watchers. Every record
    /// is applied even if noting where one is fails (a bug: then reading that
    /// revision back from disk fails, and the store is poisoned).
    fn publish(&self, records: Vec<Record>, offsets: Vec<u64>) -> std::io::Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut noted = Ok(());
        let events: Vec<_> = {
            let mut index = self.shared.index.write().expect("index lock");
            for (r, offset) in records.iter().zip(&offsets) {
                if let Some(rev) = r.write_revision() {
                    noted = noted.and(index.disk.record(rev, *offset));
                }
            }
            records
                .into_iter()
                .filter_map(|r| index.apply(r, true))
                .collect()
        };
        let _ = self.shared.events.send(Arc::new(events));
        noted
    }

    /// Decide every write of the batch against the index and the batch so far.
    fn plan<'a>(&self, ops: impl Iterator<Item = &'a Op>) -> (Vec<Record>, Vec<Result<Written>>) {
        let index = self.shared.index.read().expect("index lock");
        if let Some(reason) = self.shared.poisoned() {
            let failed = ops.map(|_| Err(StorageError::Internal(reason.clone())));
            return (Vec::new(), failed.collect());
        }
        let mut overlay: foldhash::HashMap<&str, Option<KeyValue>> = Default::default();
        let mut rev = index.revision;
        let mut records = Vec::new();
        let mut results = Vec::new();
        let now = now_ms();
        for op in ops {
            let key = op_key(op);
            let current = match (overlay.get(key), op) {
                (Some(_), Op::Expire { .. }) => None,
                (Some(kv), _) => kv.clone(),
                (None, Op::Expire { deadline, .. }) => index
                    .latest_with_expiry(key)
                    .filter(|(_, at)| at == deadline)
                    .map(|(kv, _)| kv),
                (None, _) => index.latest(key),
            };
            match decide(op, current, rev + 1, now) {
                Ok((record, after, written)) => {
                    rev += 1;
                    records.push(record);
                    overlay.insert(key, after);
                    results.push(Ok(written));
                }
                Err(e) => results.push(Err(e)),
            }
        }
        (records, results)
    }

    /// Append and fsync the records; returns each one's offset in the segment.
    fn append(&mut self, records: &[Record]) -> std::io::Result<Vec<u64>> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut buf = Vec::new();
        let mut offsets = Vec::with_capacity(records.len());
        for r in records {
            offsets.push(self.wal_len + buf.len() as u64);
            wal::encode(r, &mut buf);
        }
        self.reserve(buf.len() as u64);
        let result = self
            .wal
            .write_all_at(&buf, self.wal_len)
            .and_then(|_| self.wal.sync_data());
        match result {
            Ok(()) => {
                self.wal_len += buf.len() as u64;
                self.wal_allocated = self.wal_allocated.max(self.wal_len);
                self.note_spare();
                Ok(offsets)
            }
            Err(e) => {
                // Cut back to the last durable frame; if even that fails the file's
                // state is unknown and no further write may be acknowledged.
                self.wal_allocated = self.wal_len;
                self.note_spare();
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

    /// Tell the store how much of the newest segment is allocated ahead.
    fn note_spare(&self) {
        let spare = self.wal_allocated.saturating_sub(self.wal_len);
        self.shared
            .wal_spare
            .store(spare, std::sync::atomic::Ordering::Relaxed);
    }

    /// Make room for `more` bytes after the frames: extend the file with
    /// zeros by [`PREALLOCATE`] (or what `more` needs; at most to
    /// `segment_bytes`, where the segment ends) when they would pass its end,
    /// and sync them. On a full disk the append goes ahead without (it fails
    /// if it does not fit) and the extension is tried again next time.
    fn reserve(&mut self, more: u64) {
        let end = self.wal_len + more;
        if end <= self.wal_allocated {
            return;
        }
        // Not past where the segment ends (it moves on once it passes
        // `segment_bytes`) unless this batch itself goes further.
        let ahead = (self.wal_len + PREALLOCATE).min(self.segment_bytes);
        let to = end.max(ahead);
        match write_zeros(&self.wal, self.wal_allocated, to).and_then(|_| self.wal.sync_data()) {
            Ok(()) => self.wal_allocated = to,
            Err(e) => tracing::debug!(error = %e, "embedded store: preallocating the WAL failed"),
        }
    }

    /// Record the compaction in the WAL, drop the history from the index, and
    /// write a snapshot at `rev` when that frees more WAL than the last one
    /// takes; `reply` is answered once the snapshot (if any) is on disk.
    fn compact(&mut self, rev: Revision, reply: oneshot::Sender<Result<()>>) {
        // A snapshot in flight reads versions this compaction may drop: it is
        // finished first (one at a time).
        self.reap(true);
        let checked = self
            .shared
            .index
            .read()
            .expect("index lock")
            .check_revision(rev);
        if let Err(e) = checked {
            let _ = reply.send(Err(e));
            return;
        }
        let marker = Record::Compact { revision: rev };
        if let Err(e) = self.append(std::slice::from_ref(&marker)) {
            let _ = reply.send(Err(StorageError::Unavailable(format!(
                "write-ahead log: {e}"
            ))));
            return;
        }
        let worth = {
            let mut index = self.shared.index.write().expect("index lock");
            index.apply(marker, false);
            index.disk.freeable(rev) > index.disk.base_bytes()
        };
        if !worth {
            let _ = reply.send(Ok(()));
            return;
        }
        let (dir, shared) = (self.dir.clone(), self.shared.clone());
        let started = std::thread::Builder::new()
            .name("kapi-snapshot".into())
            .spawn(move || snapshot::write(&dir, &shared, rev));
        match started {
            Ok(thread) => self.snapshotting = Some(Snapshotting { thread, reply }),
            Err(e) => finish(Some(reply), Err(e)),
        }
    }

    /// Append from now on to a new segment starting at the next revision.
    fn next_segment(&mut self) {
        // The segment ends at its last frame before the next one starts:
        // only the newest may have a preallocated tail.
        let cut = self
            .wal
            .set_len(self.wal_len)
            .and_then(|_| self.wal.sync_all());
        if let Err(e) = cut {
            tracing::warn!(error = %e, "embedded store: cutting a WAL segment to its frames failed");
            return;
        }
        self.wal_allocated = self.wal_len;
        self.note_spare();
        let first = self.shared.revision() + 1;
        let path = wal::wal_path(&self.dir, first);
        let opened = wal::open_segment(&path).and_then(|file| {
            wal::sync_dir(&self.dir)?;
            let mut index = self.shared.index.write().expect("index lock");
            index.disk.add_segment(first, path.clone())?;
            Ok(file)
        });
        match opened {
            Ok(file) => {
                self.wal = file;
                self.wal_len = 0;
                self.wal_allocated = 0;
                self.note_spare();
            }
            Err(e) => tracing::warn!(error = %e, "embedded store: starting a WAL segment failed"),
        }
    }

    /// Collect the snapshot in flight if it is done (or, with `wait`, once it
    /// is): make it the base and delete the files it makes redundant.
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
            .unwrap_or_else(|_| Err(std::io::Error::other("snapshot thread panicked")))
            .and_then(|base| self.install(base));
        finish(Some(s.reply), result);
    }

    fn install(&self, base: Base) -> std::io::Result<()> {
        let at = base.revision;
        let gone = {
            let mut index = self.shared.index.write().expect("index lock");
            index.disk.install_base(base)
        };
        for path in gone {
            remove(&path)?;
        }
        for (rev, path) in wal::numbered(&self.dir, "snapshot-", ".snap")? {
            if rev < at {
                remove(&path)?;
            }
        }
        wal::sync_dir(&self.dir)
    }
}

/// Remove a file that may be gone already.
fn remove(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
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

/// Write zeros into `file` from `from` up to `to` (never over a frame: the
/// caller passes the end of what is allocated, which is past the frames).
fn write_zeros(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    const CHUNK: u64 = 1 << 20;
    let zeros = vec![0u8; CHUNK.min(to.saturating_sub(from)) as usize];
    let mut at = from;
    while at < to {
        let n = (to - at).min(CHUNK) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}
