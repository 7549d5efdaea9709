//! Snapshots: the state at a compaction point, one Put frame per key live at
//! it (with its expiry when the key still has that version), in key order,
//! after a Meta frame (revision = compacted = the point) and before the trailer.
//!
//! A snapshot is written on a thread of its own while the committer goes on:
//! the versions live at the point cannot change any more (later writes add
//! versions above it; the next compaction waits for this snapshot), so the
//! thread reads the index a chunk of keys at a time under its read lock, and
//! reads values that left memory from their records. Memory stays one chunk.
//! Only history newer than the point stays in the WAL; nothing older is ever
//! written again.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::disk::{Base, Loc};
use super::history::Found;
use super::index::{Index, Record};
use super::wal::{self, FrameWriter};
use super::Shared;
use crate::backend::Revision;

const CHUNK: usize = 1024;

/// One key of a snapshot, its value possibly still on disk.
pub(crate) struct Entry {
    pub key: Arc<str>,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    pub version: i64,
    pub expires: i64,
    pub value: Value,
}

pub(crate) enum Value {
    Mem(Bytes),
    Disk(Loc),
}

impl Entry {
    /// The Put record of this entry, reading it from disk when its value is
    /// there (the record has its create revision and version too).
    pub fn record(self) -> std::io::Result<Record> {
        let loc = match self.value {
            Value::Mem(value) => {
                return Ok(Record::Put {
                    revision: self.mod_revision,
                    create_revision: self.create_revision,
                    version: self.version,
                    expires: self.expires,
                    key: self.key.to_string(),
                    value,
                })
            }
            Value::Disk(loc) => loc,
        };
        match loc.read_key(&self.key)? {
            Record::Put {
                revision,
                create_revision,
                version,
                key,
                value,
                ..
            } if *key == *self.key && revision == self.mod_revision => Ok(Record::Put {
                revision,
                create_revision,
                version,
                expires: self.expires,
                key,
                value,
            }),
            other => Err(std::io::Error::other(format!(
                "snapshot of {:?}: unexpected record {other:?}",
                self.key
            ))),
        }
    }
}

impl Index {
    /// The versions live at `at` of up to `max` keys after `after` (from the
    /// first key when `None`); the last key returned continues the walk.
    pub fn snapshot_chunk(
        &self,
        at: Revision,
        after: Option<&str>,
        max: usize,
    ) -> std::io::Result<Vec<Entry>> {
        use std::ops::Bound;
        let start = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut out = Vec::new();
        for (key, h) in self.keys.range::<str, _>((start, Bound::Unbounded)) {
            if out.len() >= max {
                break;
            }
            let entry = match h.live_at(at) {
                None => continue,
                Some(Found::Mem(v)) => Entry {
                    key: key.clone(),
                    create_revision: v.create_revision,
                    mod_revision: v.mod_revision,
                    version: v.version,
                    expires: 0,
                    value: Value::Mem(v.value.clone().unwrap_or_default()),
                },
                Some(Found::Disk(rev)) => Entry {
                    key: key.clone(),
                    create_revision: 0,
                    mod_revision: rev,
                    version: 0,
                    expires: 0,
                    value: Value::Disk(self.disk.locate(rev).ok_or_else(|| {
                        std::io::Error::other(format!("{key:?}: revision {rev} is lost"))
                    })?),
                },
            };
            let newest = h.latest().map(|v| v.mod_revision) == Some(entry.mod_revision);
            let expires = if newest { h.expires } else { 0 };
            out.push(Entry { expires, ..entry });
        }
        Ok(out)
    }
}

/// Write the snapshot of the state at `at` into `dir`, then open it as the new
/// base. The caller installs it (and deletes what it makes redundant).
pub(crate) fn write(dir: &Path, shared: &Shared, at: Revision) -> std::io::Result<Base> {
    let tmp = dir.join("snapshot.tmp");
    let mut w = FrameWriter::create(&tmp)?;
    w.write(&Record::Meta {
        revision: at,
        compacted: at,
    })?;
    let mut revs = Vec::new();
    let mut after: Option<Arc<str>> = None;
    loop {
        let chunk = {
            let index = shared.index.read().expect("index lock");
            index.snapshot_chunk(at, after.as_deref(), CHUNK)?
        };
        let Some(last) = chunk.last().map(|e| e.key.clone()) else {
            break;
        };
        for entry in chunk {
            let rev = entry.mod_revision;
            let offset = w.write(&entry.record()?)?;
            revs.push((rev, offset));
        }
        after = Some(last);
    }
    w.finish()?;
    let path = wal::snapshot_path(dir, at);
    std::fs::rename(&tmp, &path)?;
    wal::sync_dir(dir)?;
    let file = std::fs::File::open(&path)?;
    Ok(Base::new(at, path, file, revs))
}
