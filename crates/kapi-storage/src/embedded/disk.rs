//! History on disk: where the record of any retained revision is, so a value
//! that left memory can be read back.
//!
//! Every write has one frame in a WAL segment; a segment's table holds the
//! offset of each revision's frame (4 bytes per revision, dense from the
//! segment's first recorded revision). The newest snapshot (the base) holds
//! the versions live at its compaction point; its table maps their revisions
//! to offsets. A revision at or below the base's is looked up in the base,
//! any later one in the segments.
//!
//! A [`Loc`] holds its file open, so a file deleted after a newer snapshot
//! (`install_base`) stays readable by whoever located a record in it before.
//!
//! In the WAL a revision is one write. In a snapshot several keys may share a
//! revision (a store migrated from etcd keeps etcd's revisions, and etcd gives
//! every key of one transaction the same one): a lookup there names the key,
//! and the frames of that revision are tried in turn.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::index::Record;
use super::wal;
use crate::backend::Revision;

/// Where one record is: the frame at the first offset, or (in a snapshot
/// whose keys share the revision) the one of these frames that holds the key.
#[derive(Debug, Clone)]
pub(crate) struct Loc {
    file: Arc<File>,
    offsets: Vec<u64>,
}

impl Loc {
    fn one(file: &Arc<File>, offset: u64) -> Self {
        Loc {
            file: file.clone(),
            offsets: vec![offset],
        }
    }

    /// The record (of a WAL segment, where a revision is one write).
    pub fn read(&self) -> io::Result<Record> {
        wal::read_frame_at(&self.file, self.offsets[0])
    }

    /// The record of `key`.
    pub fn read_key(&self, key: &str) -> io::Result<Record> {
        for offset in &self.offsets {
            let r = wal::read_frame_at(&self.file, *offset)?;
            if matches!(&r, Record::Put { key: k, .. } if k == key) {
                return Ok(r);
            }
        }
        Err(io::Error::other(format!(
            "no record of {key:?} where it was expected"
        )))
    }
}

struct Segment {
    /// The revision of `offsets[0]`.
    first: Revision,
    path: PathBuf,
    file: Arc<File>,
    offsets: Vec<u32>,
}

impl Segment {
    fn last(&self) -> Revision {
        self.first + self.offsets.len() as i64 - 1
    }
}

/// The newest snapshot, as a source of values.
pub(crate) struct Base {
    pub revision: Revision,
    pub path: PathBuf,
    /// The snapshot's size, to weigh writing a new one against the WAL it frees.
    pub bytes: u64,
    file: Arc<File>,
    /// Revision to offset, by revision.
    revs: Vec<(Revision, u64)>,
}

impl Base {
    pub fn new(
        revision: Revision,
        path: PathBuf,
        file: File,
        mut revs: Vec<(Revision, u64)>,
    ) -> Self {
        revs.sort_unstable();
        revs.shrink_to_fit();
        let bytes = file.metadata().map_or(0, |m| m.len());
        Base {
            revision,
            path,
            bytes,
            file: Arc::new(file),
            revs,
        }
    }
}

#[derive(Default)]
pub(crate) struct Disk {
    base: Option<Base>,
    segments: Vec<Segment>,
}

impl Disk {
    /// The record of `rev`, when it is retained (read it with `read_key`:
    /// in a snapshot the revision may be several keys').
    pub fn locate(&self, rev: Revision) -> Option<Loc> {
        if let Some(base) = self.base.as_ref().filter(|b| rev <= b.revision) {
            let lo = base.revs.partition_point(|(r, _)| *r < rev);
            let hi = base.revs.partition_point(|(r, _)| *r <= rev);
            let offsets: Vec<u64> = base.revs[lo..hi].iter().map(|(_, o)| *o).collect();
            return (!offsets.is_empty()).then(|| Loc {
                file: base.file.clone(),
                offsets,
            });
        }
        let s = self.segments.partition_point(|s| s.first <= rev);
        let seg = &self.segments[s.checked_sub(1)?];
        let offset = *seg.offsets.get((rev - seg.first) as usize)?;
        Some(Loc::one(&seg.file, u64::from(offset)))
    }

    /// Records from now on go to the segment at `path`, starting at `first`.
    pub fn add_segment(&mut self, first: Revision, path: PathBuf) -> io::Result<()> {
        let file = Arc::new(File::open(&path)?);
        self.segments.push(Segment {
            first,
            path,
            file,
            offsets: Vec::new(),
        });
        Ok(())
    }

    /// The frame of `rev` is at `offset` of the newest segment.
    pub fn record(&mut self, rev: Revision, offset: u64) -> io::Result<()> {
        let seg = self
            .segments
            .last_mut()
            .ok_or_else(|| io::Error::other("no WAL segment"))?;
        if seg.offsets.is_empty() {
            seg.first = rev;
        }
        let offset =
            u32::try_from(offset).map_err(|_| io::Error::other("WAL segment too large"))?;
        if rev != seg.first + seg.offsets.len() as i64 {
            return Err(io::Error::other(format!(
                "revision {rev} out of order in {}",
                seg.path.display()
            )));
        }
        seg.offsets.push(offset);
        Ok(())
    }

    /// The base's size, or 0 without one.
    pub fn base_bytes(&self) -> u64 {
        self.base.as_ref().map_or(0, |b| b.bytes)
    }

    /// The bytes a snapshot at `at` would free: segments (but the newest)
    /// whose every record is at or below `at`.
    pub fn freeable(&self, at: Revision) -> u64 {
        let n = self.segments.len().saturating_sub(1);
        self.segments[..n]
            .iter()
            .filter(|s| s.last() <= at)
            .map(|s| s.file.metadata().map_or(0, |m| m.len()))
            .sum()
    }

    /// Make `base` the source of revisions up to its own, and return the files
    /// that are redundant now: the older base and the segments (but the newest)
    /// whose every record is at or below it.
    pub fn install_base(&mut self, base: Base) -> Vec<PathBuf> {
        let at = base.revision;
        let mut gone: Vec<PathBuf> = self.base.take().map(|b| b.path).into_iter().collect();
        let newest = self.segments.len().saturating_sub(1);
        let mut i = 0;
        self.segments.retain(|s| {
            let keep = i == newest || s.last() > at;
            i += 1;
            if !keep {
                gone.push(s.path.clone());
            }
            keep
        });
        self.base = Some(base);
        gone
    }
}
