//! Reads of the index at a revision, and the events watches replay.
//!
//! A value in memory is answered at once; one that moved to disk is answered as
//! a [`KvRef::OnDisk`] (the record's location), read after the caller let go of
//! the index's lock ([`KvRef::resolve`]), so a slow disk never holds up the
//! committer. Events before the in-memory log are read from the WAL in two
//! steps: the records by revision ([`Index::catch_up`]), then under the lock
//! again the previous version of each ([`Index::events_from`]).

use std::ops::Bound;
use std::sync::Arc;

use super::disk::Loc;
use super::history::Found;
use super::index::{kv, Index, Record};
use crate::backend::{Event, EventKind, KeyValue, ListOptions, Result, Revision, StorageError};

/// A key's value at some revision, in memory or still to be read.
#[derive(Debug, Clone)]
pub(crate) enum KvRef {
    Ready(KeyValue),
    OnDisk { key: Arc<str>, loc: Loc },
}

impl KvRef {
    pub fn resolve(self) -> Result<KeyValue> {
        match self {
            KvRef::Ready(kv) => Ok(kv),
            KvRef::OnDisk { key, loc } => match loc.read_key(&key).map_err(disk_error)? {
                Record::Put {
                    revision,
                    create_revision,
                    version,
                    key: k,
                    value,
                    ..
                } if *k == *key => Ok(KeyValue {
                    key: k,
                    value,
                    create_revision,
                    mod_revision: revision,
                    version,
                }),
                other => Err(StorageError::Internal(format!(
                    "history of {key:?}: unexpected record {other:?}"
                ))),
            },
        }
    }
}

pub(crate) fn disk_error(e: std::io::Error) -> StorageError {
    StorageError::Internal(format!("reading history: {e}"))
}

/// A list page whose values may still have to be read.
pub(crate) struct PageRef {
    pub kvs: Vec<KvRef>,
    pub revision: Revision,
    pub more: bool,
    pub remaining: i64,
}

/// Events after a revision: ready, or records still to be read from the WAL.
pub(crate) enum CatchUp {
    Ready(Vec<Event>),
    Records(Vec<Loc>),
}

/// An event read back from the WAL whose previous value may be on disk.
pub(crate) struct EventRef {
    kind: EventKind,
    kv: KeyValue,
    prev: Option<KvRef>,
}

impl EventRef {
    pub fn resolve(self) -> Result<Event> {
        Ok(Event {
            kind: self.kind,
            kv: self.kv,
            prev: self.prev.map(KvRef::resolve).transpose()?,
        })
    }
}

impl Index {
    fn found(&self, key: &Arc<str>, f: Found<'_>) -> Result<KvRef> {
        match f {
            Found::Mem(v) => Ok(KvRef::Ready(kv(key, v))),
            Found::Disk(rev) => {
                let loc = self.disk.locate(rev).ok_or_else(|| {
                    StorageError::Internal(format!("history of {key:?}: revision {rev} is lost"))
                })?;
                Ok(KvRef::OnDisk {
                    key: key.clone(),
                    loc,
                })
            }
        }
    }

    pub fn get(&self, key: &str, at: Option<Revision>) -> Result<Option<KvRef>> {
        let at = at.filter(|r| *r > 0).unwrap_or(self.revision);
        self.check_revision(at)?;
        let Some((k, h)) = self.keys.get_key_value(key) else {
            return Ok(None);
        };
        h.live_at(at).map(|f| self.found(k, f)).transpose()
    }

    pub fn list(&self, prefix: &str, opts: &ListOptions) -> Result<PageRef> {
        let at = opts.revision.filter(|r| *r > 0).unwrap_or(self.revision);
        self.check_revision(at)?;
        let start = match &opts.continue_from {
            Some(k) if k.as_str() > prefix => k.as_str(),
            _ => prefix,
        };
        let live = self
            .keys
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter_map(|(k, h)| h.live_at(at).map(|f| (k, f)));
        let limit = if opts.limit == 0 {
            usize::MAX
        } else {
            opts.limit
        };
        let mut kvs = Vec::new();
        let mut remaining = 0i64;
        for (k, f) in live {
            if kvs.len() < limit {
                kvs.push(self.found(k, f)?);
            } else {
                remaining += 1;
                if opts.skip_count {
                    break;
                }
            }
        }
        Ok(PageRef {
            kvs,
            revision: at,
            more: remaining > 0,
            remaining,
        })
    }

    /// Events with revision greater than `after`, at most `max`: from memory,
    /// or the locations of their records when they are older than the log.
    pub fn catch_up(&self, after: Revision, max: usize) -> Result<CatchUp> {
        self.check_start(after)?;
        if after >= self.log_floor {
            let entries = self.log_after(after, max);
            let events = entries.iter().map(|(r, k)| self.log_event(*r, k));
            return Ok(CatchUp::Ready(events.collect::<Result<_>>()?));
        }
        let last = self.log_floor.min(after + max as i64);
        let locs = (after + 1..=last)
            .map(|rev| {
                self.disk.locate(rev).ok_or_else(|| {
                    StorageError::Internal(format!("history: revision {rev} is lost"))
                })
            })
            .collect::<Result<_>>()?;
        Ok(CatchUp::Records(locs))
    }

    fn check_start(&self, after: Revision) -> Result<()> {
        if after < self.compacted {
            return Err(StorageError::Compacted {
                requested: after + 1,
                compacted: self.compacted,
            });
        }
        Ok(())
    }

    /// The event of a log entry: its version and the one before are in memory.
    fn log_event(&self, rev: Revision, key: &Arc<str>) -> Result<Event> {
        let v = self.keys.get(key).and_then(|h| Some((h, h.mem_at(rev)?)));
        let Some((h, v)) = v else {
            return Err(StorageError::Internal(format!(
                "history of {key:?}: revision {rev} is not in memory"
            )));
        };
        let prev = match h.live_at(rev - 1) {
            Some(Found::Mem(p)) => Some(kv(key, p)),
            _ => None,
        };
        let kind = match v.value {
            Some(_) => EventKind::Put,
            None => EventKind::Delete,
        };
        Ok(Event {
            kind,
            kv: kv(key, v),
            prev,
        })
    }

    /// The events of records read back from the WAL (the first one right after
    /// `after`), each with its previous version located.
    pub fn events_from(&self, after: Revision, records: Vec<Record>) -> Result<Vec<EventRef>> {
        self.check_start(after)?;
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            let (kind, kv) = match r {
                Record::Put {
                    revision,
                    create_revision,
                    version,
                    key,
                    value,
                    ..
                } => (
                    EventKind::Put,
                    KeyValue {
                        key,
                        value,
                        create_revision,
                        mod_revision: revision,
                        version,
                    },
                ),
                Record::Delete { revision, key } => (
                    EventKind::Delete,
                    KeyValue {
                        key,
                        value: Default::default(),
                        create_revision: 0,
                        mod_revision: revision,
                        version: 0,
                    },
                ),
                other => {
                    return Err(StorageError::Internal(format!(
                        "history: unexpected record {other:?}"
                    )))
                }
            };
            let prev = match self.keys.get_key_value(kv.key.as_str()) {
                Some((k, h)) => h
                    .live_at(kv.mod_revision - 1)
                    .map(|f| self.found(k, f))
                    .transpose()?,
                None => None,
            };
            out.push(EventRef { kind, kv, prev });
        }
        Ok(out)
    }
}
