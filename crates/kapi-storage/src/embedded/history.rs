//! One key's versions, split between memory and disk.
//!
//! Invariants:
//! - `disk` and then `mem` list the key's retained versions in strictly
//!   increasing mod revision: every revision in `disk` is below every one in
//!   `mem`; a tombstone ends a generation of the key;
//! - the newest version is always in `mem` (a live key's value is read from
//!   memory); older ones stay there only while the index's hot window holds
//!   them (`index.rs`), then only their revision is kept and the value is read
//!   back from the record of that revision (`disk.rs`);
//! - `expires` belongs to the newest version: the Unix time in milliseconds at
//!   which the key is deleted, 0 for never.

use bytes::Bytes;

use crate::backend::Revision;

#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub mod_revision: Revision,
    pub create_revision: Revision,
    pub version: i64,
    /// `None` marks a delete.
    pub value: Option<Bytes>,
}

/// Where the version of a key at some revision is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Found<'a> {
    Mem(&'a Version),
    /// Its value is in the record of this revision.
    Disk(Revision),
}

#[derive(Debug, Default)]
pub(crate) struct KeyHistory {
    /// Versions whose value is on disk, oldest first: the mod revision,
    /// negated for a tombstone (8 bytes per version instead of the value).
    pub disk: Vec<Revision>,
    pub mem: Vec<Version>,
    pub expires: i64,
}

impl KeyHistory {
    /// The newest version with mod revision at or below `at`, if it is live.
    pub fn live_at(&self, at: Revision) -> Option<Found<'_>> {
        let m = self.mem.partition_point(|v| v.mod_revision <= at);
        if m > 0 {
            let v = &self.mem[m - 1];
            return v.value.is_some().then_some(Found::Mem(v));
        }
        let d = self.disk.partition_point(|r| r.abs() <= at);
        match d.checked_sub(1).map(|i| self.disk[i]) {
            Some(r) if r > 0 => Some(Found::Disk(r)),
            _ => None,
        }
    }

    /// The newest version, if live.
    pub fn latest(&self) -> Option<&Version> {
        self.mem.last().filter(|v| v.value.is_some())
    }

    /// The version written at exactly `rev`, when it is in memory.
    pub fn mem_at(&self, rev: Revision) -> Option<&Version> {
        let i = self.mem.partition_point(|v| v.mod_revision < rev);
        self.mem.get(i).filter(|v| v.mod_revision == rev)
    }

    pub fn push(&mut self, v: Version) {
        self.mem.push(v);
    }

    /// Move the values of versions older than `rev` out of memory (never the
    /// newest); returns the bytes let go.
    pub fn demote_before(&mut self, rev: Revision) -> usize {
        let n = self
            .mem
            .partition_point(|v| v.mod_revision < rev)
            .min(self.mem.len().saturating_sub(1));
        let mut freed = 0;
        for v in self.mem.drain(..n) {
            match v.value {
                Some(b) => {
                    freed += b.len();
                    self.disk.push(v.mod_revision);
                }
                None => self.disk.push(-v.mod_revision),
            }
        }
        shrink(&mut self.mem);
        freed
    }

    /// Drop the versions at or before `at` except the newest live one; false
    /// when nothing of the key remains.
    pub fn compact(&mut self, at: Revision) -> bool {
        let m = self.mem.partition_point(|v| v.mod_revision <= at);
        if m > 0 {
            let keep = if self.mem[m - 1].value.is_some() {
                m - 1
            } else {
                m
            };
            self.mem.drain(..keep);
            self.disk.clear();
        } else {
            let d = self.disk.partition_point(|r| r.abs() <= at);
            let keep = match d.checked_sub(1) {
                Some(i) if self.disk[i] > 0 => i,
                _ => d,
            };
            self.disk.drain(..keep);
        }
        shrink(&mut self.mem);
        shrink(&mut self.disk);
        !(self.mem.is_empty() && self.disk.is_empty())
    }
}

/// Give back a vector's room once it is mostly empty (after a burst of
/// history was compacted away), so memory follows what is kept.
fn shrink<T>(v: &mut Vec<T>) {
    if v.capacity() > 16 && v.len() < v.capacity() / 4 {
        v.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(rev: Revision) -> Version {
        Version {
            mod_revision: rev,
            create_revision: 1,
            version: rev,
            value: Some(Bytes::from(vec![b'x'; 10])),
        }
    }

    fn tomb(rev: Revision) -> Version {
        Version {
            mod_revision: rev,
            create_revision: 0,
            version: 0,
            value: None,
        }
    }

    #[test]
    fn reads_find_versions_in_memory_and_on_disk() {
        let mut h = KeyHistory::default();
        for v in [put(2), put(4), tomb(6), put(8)] {
            h.push(v);
        }
        assert_eq!(h.demote_before(8), 20);
        assert_eq!(h.disk, vec![2, 4, -6]);
        assert!(h.live_at(1).is_none());
        assert!(matches!(h.live_at(3), Some(Found::Disk(2))));
        assert!(matches!(h.live_at(5), Some(Found::Disk(4))));
        assert!(h.live_at(7).is_none());
        assert!(matches!(h.live_at(9), Some(Found::Mem(v)) if v.mod_revision == 8));
        // The newest version never leaves memory.
        assert_eq!(h.demote_before(100), 0);
        assert_eq!(h.mem.len(), 1);
    }

    #[test]
    fn compaction_keeps_the_newest_live_version_wherever_it_is() {
        let mut h = KeyHistory::default();
        for v in [put(2), put(4), put(8)] {
            h.push(v);
        }
        h.demote_before(8);
        assert!(h.compact(5));
        assert_eq!(h.disk, vec![4]);
        assert!(matches!(h.live_at(5), Some(Found::Disk(4))));
        assert!(h.compact(8));
        assert!(h.disk.is_empty());
        assert_eq!(h.mem.len(), 1);
        let mut gone = KeyHistory::default();
        gone.push(put(2));
        gone.push(tomb(3));
        assert!(!gone.compact(3));
    }
}
