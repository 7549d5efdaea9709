//! `guaranteed_update`: read, decide, compare-and-swap, retry on conflict.
//!
//! The decision function sees the current value (or `None`) and returns a
//! [`Decision`]: write new bytes, delete, or leave the key alone. On a conflict the
//! loop retries with the value the backend reported, so a lost update is impossible:
//! every write is conditional on the revision the decision was made from.
//! [`guaranteed_update_with_ttl`] writes with a TTL (creates and updates alike,
//! as upstream's TTL function for events), refreshing the key's expiry.

use std::time::Duration;

use bytes::Bytes;

use crate::backend::{Backend, KeyValue, Revision, StorageError};

/// What the decision function wants done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Write(Bytes),
    Delete,
    Unchanged,
}

/// What `guaranteed_update` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Written(KeyValue),
    Deleted { prev: KeyValue, revision: Revision },
    Unchanged(Option<KeyValue>),
}

/// Why `guaranteed_update` failed: the storage, or the decision function.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError<E> {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("update rejected")]
    Rejected(E),
}

/// Conflicts beyond this many retries mean something is badly wrong (or hot).
const MAX_ATTEMPTS: usize = 1000;

/// Apply `decide` to `key` until a conditional write succeeds.
pub async fn guaranteed_update<E>(
    backend: &dyn Backend,
    key: &str,
    decide: impl FnMut(Option<&KeyValue>) -> Result<Decision, E> + Send,
) -> Result<Outcome, UpdateError<E>> {
    guaranteed_update_with_ttl(backend, key, None, decide).await
}

/// [`guaranteed_update`], every write expiring `ttl` after it when given.
pub async fn guaranteed_update_with_ttl<E>(
    backend: &dyn Backend,
    key: &str,
    ttl: Option<Duration>,
    mut decide: impl FnMut(Option<&KeyValue>) -> Result<Decision, E> + Send,
) -> Result<Outcome, UpdateError<E>> {
    let mut current = backend.get(key, None).await?;
    for _ in 0..MAX_ATTEMPTS {
        let decision = decide(current.as_ref()).map_err(UpdateError::Rejected)?;
        let attempt =
            match (decision, &current) {
                (Decision::Unchanged, _) => return Ok(Outcome::Unchanged(current)),
                (Decision::Write(v), None) => backend
                    .create_with_ttl(key, v, ttl)
                    .await
                    .map(Outcome::Written),
                (Decision::Write(v), Some(kv)) => backend
                    .update_with_ttl(key, v, kv.mod_revision, ttl)
                    .await
                    .map(Outcome::Written),
                (Decision::Delete, None) => return Ok(Outcome::Unchanged(None)),
                (Decision::Delete, Some(kv)) => backend
                    .delete(key, Some(kv.mod_revision))
                    .await
                    .map(|d| Outcome::Deleted {
                        prev: d.prev,
                        revision: d.revision,
                    }),
            };
        current = match attempt {
            Ok(outcome) => return Ok(outcome),
            Err(StorageError::Conflict { current, .. }) => current.map(|b| *b),
            Err(StorageError::NotFound { .. }) => None,
            Err(StorageError::AlreadyExists { .. }) => backend.get(key, None).await?,
            Err(e) => return Err(e.into()),
        };
    }
    Err(StorageError::Internal(format!("too many conflicts updating {key:?}")).into())
}
