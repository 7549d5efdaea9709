//! The in-memory MVCC index: every retained version of every key, and the event
//! log watches replay from.
//!
//! Invariants:
//! - `versions` of a key are in strictly increasing `mod_revision` order; a
//!   tombstone (`value: None`) ends a generation of the key;
//! - `log` holds exactly the events with revision in `(compacted, revision]`,
//!   in revision order;
//! - nothing at or below `compacted` is readable, except the newest version of
//!   each live key (which is the value as of any later revision).
//!
//! The index is only mutated by the committer thread, after the records are
//! durable in the write-ahead log (`wal.rs`), so a reader never sees a write that
//! a crash could take back.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use bytes::Bytes;

use crate::backend::{
    Event, EventKind, KeyValue, ListOptions, ListPage, Result, Revision, StorageError,
};

#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub mod_revision: Revision,
    pub create_revision: Revision,
    pub version: i64,
    /// `None` marks a delete.
    pub value: Option<Bytes>,
}

/// A write as the write-ahead log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    Put {
        revision: Revision,
        create_revision: Revision,
        version: i64,
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
}

#[derive(Debug, Default)]
pub(crate) struct Index {
    keys: BTreeMap<String, Vec<Version>>,
    log: VecDeque<Event>,
    pub revision: Revision,
    pub compacted: Revision,
}

impl Index {
    /// The newest live version of `key` at `at`.
    fn version_at(&self, key: &str, at: Revision) -> Option<&Version> {
        live_at(self.keys.get(key)?, at)
    }

    fn kv(key: &str, v: &Version) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: v.value.clone().unwrap_or_default(),
            create_revision: v.create_revision,
            mod_revision: v.mod_revision,
            version: v.version,
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

    pub fn get(&self, key: &str, at: Option<Revision>) -> Result<Option<KeyValue>> {
        let at = at.filter(|r| *r > 0).unwrap_or(self.revision);
        self.check_revision(at)?;
        Ok(self.version_at(key, at).map(|v| Self::kv(key, v)))
    }

    pub fn latest(&self, key: &str) -> Option<KeyValue> {
        self.version_at(key, self.revision)
            .map(|v| Self::kv(key, v))
    }

    pub fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListPage> {
        let at = opts.revision.filter(|r| *r > 0).unwrap_or(self.revision);
        self.check_revision(at)?;
        let start = match &opts.continue_from {
            Some(k) if k.as_str() > prefix => k.clone(),
            _ => prefix.to_owned(),
        };
        let live = self
            .keys
            .range::<String, _>((Bound::Included(start), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter_map(|(k, vs)| live_at(vs, at).map(|v| (k, v)));
        let limit = if opts.limit == 0 {
            usize::MAX
        } else {
            opts.limit
        };
        let mut kvs = Vec::new();
        let mut remaining = 0i64;
        for (k, v) in live {
            if kvs.len() < limit {
                kvs.push(Self::kv(k, v));
            } else {
                remaining += 1;
                if opts.skip_count {
                    break;
                }
            }
        }
        Ok(ListPage {
            kvs,
            revision: at,
            more: remaining > 0,
            remaining,
        })
    }

    pub fn count(&self, prefix: &str) -> i64 {
        self.keys
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(_, vs)| live_at(vs, self.revision).is_some())
            .count() as i64
    }

    /// Events with revision greater than `after`, at most `max`.
    pub fn events_after(&self, after: Revision, max: usize) -> Result<Vec<Event>> {
        if after < self.compacted {
            return Err(StorageError::Compacted {
                requested: after + 1,
                compacted: self.compacted,
            });
        }
        let first = self.log.front().map_or(self.revision + 1, |e| e.revision());
        let skip = (after + 1 - first).max(0) as usize;
        Ok(self.log.iter().skip(skip).take(max).cloned().collect())
    }

    /// Apply one durable record, returning the event it produced. Replaying a
    /// snapshot goes through here too, so a delete of an unknown key is tolerated.
    pub fn apply(&mut self, record: Record) -> Option<Event> {
        let event = self.record(record)?;
        if event.revision() > self.compacted {
            self.log.push_back(event.clone());
        }
        Some(event)
    }

    /// [`Index::apply`] for recovery, where nobody takes the event: it is moved
    /// into the log, not copied.
    pub fn replay(&mut self, record: Record) {
        if let Some(event) = self.record(record) {
            if event.revision() > self.compacted {
                self.log.push_back(event);
            }
        }
    }

    /// Add the record's version to its key (one tree lookup) and build its event.
    fn record(&mut self, record: Record) -> Option<Event> {
        let current = self.revision;
        let (event, revision) = match record {
            Record::Meta {
                revision,
                compacted,
            } => {
                self.revision = self.revision.max(revision);
                self.compacted = self.compacted.max(compacted);
                return None;
            }
            Record::Put {
                revision,
                create_revision,
                version,
                key,
                value,
            } => {
                let v = Version {
                    mod_revision: revision,
                    create_revision,
                    version,
                    value: Some(value),
                };
                let kv = Self::kv(&key, &v);
                let versions = self.keys.entry(key).or_default();
                let prev = live_at(versions, current).map(|p| Self::kv(&kv.key, p));
                versions.push(v);
                (
                    Event {
                        kind: EventKind::Put,
                        kv,
                        prev,
                    },
                    revision,
                )
            }
            Record::Delete { revision, key } => {
                let versions = self.keys.entry(key.clone()).or_default();
                let prev = live_at(versions, current).map(|p| Self::kv(&key, p));
                versions.push(Version {
                    mod_revision: revision,
                    create_revision: 0,
                    version: 0,
                    value: None,
                });
                let kv = KeyValue {
                    key,
                    value: Bytes::new(),
                    create_revision: 0,
                    mod_revision: revision,
                    version: 0,
                };
                (
                    Event {
                        kind: EventKind::Delete,
                        kv,
                        prev,
                    },
                    revision,
                )
            }
        };
        self.revision = self.revision.max(revision);
        Some(event)
    }

    /// Drop history at and before `at`, keeping each live key's newest version.
    pub fn compact(&mut self, at: Revision) {
        let at = at.min(self.revision);
        if at <= self.compacted {
            return;
        }
        self.keys.retain(|_, versions| {
            let idx = versions.partition_point(|v| v.mod_revision <= at);
            let keep_from = match versions[..idx].last() {
                Some(v) if v.value.is_some() => idx - 1,
                _ => idx,
            };
            versions.drain(..keep_from);
            !versions.is_empty()
        });
        while self.log.front().is_some_and(|e| e.revision() <= at) {
            self.log.pop_front();
        }
        self.compacted = at;
    }

    /// Every retained version as records in revision order, led by a `Meta`
    /// record: replaying them into an empty index rebuilds this one.
    pub fn snapshot_records(&self) -> Vec<Record> {
        let mut all: Vec<(&String, &Version)> = self
            .keys
            .iter()
            .flat_map(|(k, vs)| vs.iter().map(move |v| (k, v)))
            .collect();
        all.sort_by_key(|(_, v)| v.mod_revision);
        let meta = Record::Meta {
            revision: self.revision,
            compacted: self.compacted,
        };
        std::iter::once(meta)
            .chain(all.into_iter().map(|(k, v)| match &v.value {
                Some(value) => Record::Put {
                    revision: v.mod_revision,
                    create_revision: v.create_revision,
                    version: v.version,
                    key: k.clone(),
                    value: value.clone(),
                },
                None => Record::Delete {
                    revision: v.mod_revision,
                    key: k.clone(),
                },
            }))
            .collect()
    }

    pub fn key_count(&self) -> usize {
        self.keys.len()
    }
}

/// The newest live version among `versions` (one key's, in order) at `at`.
fn live_at(versions: &[Version], at: Revision) -> Option<&Version> {
    let idx = versions.partition_point(|v| v.mod_revision <= at);
    let v = versions[..idx].last()?;
    v.value.as_ref().map(|_| v)
}
