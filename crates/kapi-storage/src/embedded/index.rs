//! The in-memory MVCC index: every key's retained versions (`history.rs`), the
//! recent events watches replay from, the expiry index, and where older
//! values are on disk (`disk.rs`).
//!
//! Invariants:
//! - every event with revision in `(log_floor, revision]` is in `log`, in
//!   revision order, and its version (and the one before it) is in memory; the
//!   events in `(compacted, log_floor]` are read back from the WAL;
//! - the hot window: `log` is trimmed from the front once its values pass
//!   `hot.bytes` or its oldest entry is older than `hot.age`, and each trimmed
//!   event's previous version moves to disk, so memory holds the live data
//!   plus a bounded window of history, whatever the write rate;
//! - nothing at or below `compacted` is readable, except the newest version of
//!   each live key (which is the value as of any later revision);
//! - `expiry` holds `(expires, key)` for exactly the keys whose newest version
//!   has an expiry.
//!
//! The index is only mutated by the committer thread, after the records are
//! durable in the write-ahead log (`wal.rs`), so a reader never sees a write that
//! a crash could take back. Readers that need a value on disk get a [`KvRef`]
//! and read it after letting go of the lock (`reads.rs`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::disk::Disk;
use super::history::{KeyHistory, Version};
use crate::backend::{Event, EventKind, KeyValue, Result, Revision, StorageError};

/// A write as the write-ahead log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    Put {
        revision: Revision,
        create_revision: Revision,
        version: i64,
        /// Unix time in milliseconds the key expires at; 0 for never.
        expires: i64,
        key: String,
        value: Bytes,
    },
    Delete {
        revision: Revision,
        key: String,
    },
    /// Written only into snapshots: the compaction point and current revision.
    Meta {
        revision: Revision,
        compacted: Revision,
    },
    /// A compaction, in the WAL (a snapshot need not follow every one).
    Compact {
        revision: Revision,
    },
}

impl Record {
    /// The revision a write record makes; `None` for the others.
    pub fn write_revision(&self) -> Option<Revision> {
        match self {
            Record::Put { revision, .. } | Record::Delete { revision, .. } => Some(*revision),
            Record::Meta { .. } | Record::Compact { .. } => None,
        }
    }
}

/// How much history stays in memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HotWindow {
    pub bytes: usize,
    pub age: Duration,
}

/// What each write costs the hot window besides its value.
const EVENT_OVERHEAD: usize = 96;

struct LogEntry {
    revision: Revision,
    key: Arc<str>,
    /// Seconds since the index was made.
    at: u32,
    bytes: usize,
}

pub(crate) struct Index {
    pub(super) keys: BTreeMap<Arc<str>, KeyHistory>,
    log: VecDeque<LogEntry>,
    pub(super) log_floor: Revision,
    log_bytes: usize,
    expiry: BTreeSet<(i64, Arc<str>)>,
    pub disk: Disk,
    pub revision: Revision,
    pub compacted: Revision,
    hot: HotWindow,
    clock: Instant,
}

impl Index {
    pub fn new(hot: HotWindow) -> Self {
        Index {
            keys: BTreeMap::new(),
            log: VecDeque::new(),
            log_floor: 0,
            log_bytes: 0,
            expiry: BTreeSet::new(),
            disk: Disk::default(),
            revision: 0,
            compacted: 0,
            hot,
            clock: Instant::now(),
        }
    }

    pub fn check_revision(&self, at: Revision) -> Result<()> {
        if at > self.revision {
            return Err(StorageError::FutureRevision {
                requested: at,
                current: self.revision,
            });
        }
        if at < self.compacted {
            return Err(StorageError::Compacted {
                requested: at,
                compacted: self.compacted,
            });
        }
        Ok(())
    }

    /// Whether `key` holds a live value: [`Index::latest`] without the copy.
    pub fn holds(&self, key: &str) -> bool {
        self.keys.get(key).is_some_and(|h| h.latest().is_some())
    }

    /// The newest live value of `key` (always in memory).
    pub fn latest(&self, key: &str) -> Option<KeyValue> {
        let v = self.keys.get(key)?.latest()?;
        Some(kv(key, v))
    }

    /// The newest live value of `key` and when it expires (0: never).
    pub fn latest_with_expiry(&self, key: &str) -> Option<(KeyValue, i64)> {
        let h = self.keys.get(key)?;
        Some((kv(key, h.latest()?), h.expires))
    }

    pub fn count(&self, prefix: &str) -> i64 {
        self.keys
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, h)| h.latest().is_some())
            .count() as i64
    }

    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    pub fn memory_stats(&self) -> super::MemoryStats {
        let (mut in_memory, mut on_disk) = (0, 0);
        for h in self.keys.values() {
            in_memory += h.mem.len();
            on_disk += h.disk.len();
        }
        super::MemoryStats {
            keys: self.keys.len(),
            versions_in_memory: in_memory,
            versions_on_disk: on_disk,
            hot_events: self.log.len(),
            hot_bytes: self.log_bytes,
        }
    }

    /// Apply one durable record; with `want_event`, return the event it made
    /// (the committer broadcasts it; recovery does not need it).
    pub fn apply(&mut self, record: Record, want_event: bool) -> Option<Event> {
        match record {
            Record::Meta {
                revision,
                compacted,
            } => {
                self.revision = self.revision.max(revision);
                self.compacted = self.compacted.max(compacted);
                self.log_floor = self.log_floor.max(self.compacted);
                None
            }
            Record::Compact { revision } => {
                self.compact(revision);
                None
            }
            Record::Put {
                revision,
                create_revision,
                version,
                expires,
                key,
                value,
            } => {
                let v = Version {
                    mod_revision: revision,
                    create_revision,
                    version,
                    value: Some(value),
                };
                self.add(key, v, expires, want_event)
            }
            Record::Delete { revision, key } => {
                let v = Version {
                    mod_revision: revision,
                    create_revision: 0,
                    version: 0,
                    value: None,
                };
                self.add(key, v, 0, want_event)
            }
        }
    }

    fn add(&mut self, key: String, v: Version, expires: i64, want_event: bool) -> Option<Event> {
        let revision = v.mod_revision;
        let (key, h) = match self.keys.get_key_value(key.as_str()) {
            Some((k, _)) => {
                let k = k.clone();
                let h = self.keys.get_mut(&*k).expect("present");
                (k, h)
            }
            None => {
                let k: Arc<str> = key.into();
                (k.clone(), self.keys.entry(k).or_default())
            }
        };
        let event = want_event.then(|| {
            let prev = h.latest().map(|p| kv(&key, p));
            let kind = match v.value {
                Some(_) => EventKind::Put,
                None => EventKind::Delete,
            };
            Event {
                kind,
                kv: kv(&key, &v),
                prev,
            }
        });
        let bytes = v.value.as_ref().map_or(0, Bytes::len) + EVENT_OVERHEAD;
        h.push(v);
        if h.expires != 0 {
            self.expiry.remove(&(h.expires, key.clone()));
        }
        h.expires = expires;
        if expires != 0 {
            self.expiry.insert((expires, key.clone()));
        }
        self.revision = self.revision.max(revision);
        if revision > self.log_floor {
            self.log.push_back(LogEntry {
                revision,
                key,
                at: self.clock.elapsed().as_secs() as u32,
                bytes,
            });
            self.log_bytes += bytes;
            self.trim_hot();
        }
        event
    }

    /// Move history out of memory until the hot window is within its bounds.
    pub fn trim_hot(&mut self) {
        let now = self.clock.elapsed().as_secs() as u32;
        let age = self.hot.age.as_secs().min(u64::from(u32::MAX)) as u32;
        while let Some(front) = self.log.front() {
            let old = now.saturating_sub(front.at) > age;
            if self.log_bytes <= self.hot.bytes && !old {
                break;
            }
            let e = self.log.pop_front().expect("front");
            self.log_bytes -= e.bytes;
            self.log_floor = e.revision;
            if let Some(h) = self.keys.get_mut(&*e.key) {
                h.demote_before(e.revision);
            }
        }
        if self.log.capacity() > 1024 && self.log.len() < self.log.capacity() / 4 {
            self.log.shrink_to_fit();
        }
    }

    /// Keys whose expiry is at or before `now_ms`, earliest first, at most `max`.
    pub fn due(&self, now_ms: i64, max: usize) -> Vec<(Arc<str>, i64)> {
        self.expiry
            .iter()
            .take_while(|(at, _)| *at <= now_ms)
            .take(max)
            .map(|(at, k)| (k.clone(), *at))
            .collect()
    }

    /// The earliest expiry (Unix ms), if any key has one.
    pub fn next_expiry(&self) -> Option<i64> {
        self.expiry.first().map(|(at, _)| *at)
    }

    /// Drop history at and before `at`, keeping each live key's newest version.
    pub fn compact(&mut self, at: Revision) {
        let at = at.min(self.revision);
        if at <= self.compacted {
            return;
        }
        self.keys.retain(|_, h| h.compact(at));
        while self.log.front().is_some_and(|e| e.revision <= at) {
            let e = self.log.pop_front().expect("front");
            self.log_bytes -= e.bytes;
        }
        self.log_floor = self.log_floor.max(at);
        self.compacted = at;
    }

    /// The log entries after `after`, at most `max`: (revision, key).
    pub(super) fn log_after(&self, after: Revision, max: usize) -> Vec<(Revision, Arc<str>)> {
        let first = self.log.front().map_or(self.revision + 1, |e| e.revision);
        let skip = (after + 1 - first).max(0) as usize;
        self.log
            .iter()
            .skip(skip)
            .take(max)
            .map(|e| (e.revision, e.key.clone()))
            .collect()
    }
}

pub(crate) fn kv(key: &str, v: &Version) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: v.value.clone().unwrap_or_default(),
        create_revision: v.create_revision,
        mod_revision: v.mod_revision,
        version: v.version,
    }
}
