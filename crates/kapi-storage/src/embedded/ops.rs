//! The writes the committer takes, and how one is checked against the key's
//! current value and turned into its record (`decide`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::sync::oneshot;

use super::index::Record;
use crate::backend::{Deleted, KeyValue, Result, Revision, StorageError};

pub(crate) enum Op {
    Create {
        key: String,
        value: Bytes,
        ttl: Option<Duration>,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    /// The committer's own: delete `key` if it still expires at `deadline`.
    Expire { key: String, deadline: i64 },
}

pub(crate) enum Written {
    Put(KeyValue),
    Deleted(Deleted),
}

pub(crate) enum Command {
    Write(Op, oneshot::Sender<Result<Written>>),
    Compact(Revision, oneshot::Sender<Result<()>>),
}

pub(crate) fn op_key(op: &Op) -> &str {
    match op {
        Op::Create { key, .. }
        | Op::Update { key, .. }
        | Op::Delete { key, .. }
        | Op::Expire { key, .. } => key,
    }
}

/// The wall clock in Unix milliseconds: expiry deadlines are wall-clock times,
/// so they mean the same after a restart.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// When a write made at `now` with `ttl` expires (0: never).
fn deadline(now: i64, ttl: Option<Duration>) -> i64 {
    match ttl {
        Some(t) => now
            .saturating_add(t.as_millis().min(i64::MAX as u128) as i64)
            .max(1),
        None => 0,
    }
}

pub(crate) type Decided = (Record, Option<KeyValue>, Written);

/// Check one write against the key's current value and build its record.
/// For `Expire`, `current` is the value only if it still has that deadline.
pub(crate) fn decide(
    op: &Op,
    current: Option<KeyValue>,
    rev: Revision,
    now: i64,
) -> Result<Decided> {
    let put = |key: &str, value: &Bytes, create_revision, version, ttl| {
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
            expires: deadline(now, ttl),
            key: key.to_owned(),
            value: value.clone(),
        };
        (record, Some(kv.clone()), Written::Put(kv))
    };
    match (op, current) {
        (Op::Create { key, .. }, Some(_)) => Err(StorageError::AlreadyExists { key: key.clone() }),
        (Op::Create { key, value, ttl }, None) => Ok(put(key, value, rev, 1, *ttl)),
        (Op::Update { key, .. } | Op::Delete { key, .. } | Op::Expire { key, .. }, None) => {
            Err(StorageError::NotFound { key: key.clone() })
        }
        (Op::Update { key, expected, .. }, Some(kv)) if kv.mod_revision != *expected => {
            Err(conflict(key, kv))
        }
        (
            Op::Update {
                key, value, ttl, ..
            },
            Some(kv),
        ) => Ok(put(key, value, kv.create_revision, kv.version + 1, *ttl)),
        (
            Op::Delete {
                key,
                expected: Some(e),
            },
            Some(kv),
        ) if kv.mod_revision != *e => Err(conflict(key, kv)),
        (Op::Delete { key, .. } | Op::Expire { key, .. }, Some(kv)) => {
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
