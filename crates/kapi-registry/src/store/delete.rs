//! Delete: preconditions, then either remove the object, or — when finalizers or
//! a graceful termination must run first — mark it with `deletionTimestamp` and
//! leave it for whoever removes the last finalizer (see `update.rs`). The GC
//! finalizers (`orphan`, `foregroundDeletion`) the options ask for are added or
//! removed first (`gc_finalizers.rs`), also on an object already being deleted.

use kapi_machinery::member::Members;
use kapi_machinery::status::ApiError;
use kapi_storage::{guaranteed_update, Decision, KeyValue, Outcome, StorageError, UpdateError};
use serde_json::Value;

use super::admitted::MAX_ATTEMPTS;
use super::options::{DeleteOptions, Preconditions};
use super::{gc_finalizers, Store};
use crate::meta;

/// What a delete did.
#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    /// Gone; the object as it was last.
    Deleted(Value),
    /// Marked for deletion; waiting on finalizers or graceful termination.
    Pending(Value),
}

impl Store {
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.def.key(namespace, name);
        for _ in 0..MAX_ATTEMPTS {
            let mut result: Option<(DeleteOutcome, bool)> = None;
            let decide = |kv: Option<&KeyValue>| -> Result<Decision, ApiError> {
                let Some(kv) = kv else {
                    return Err(self.not_found(name));
                };
                let current = self.decode(kv)?;
                self.check_delete_preconditions(&current, &opts.preconditions)?;
                let plan = self.decide_delete(current, opts)?;
                result = Some((plan.outcome, plan.then_delete));
                Ok(if opts.dry_run {
                    Decision::Unchanged
                } else {
                    plan.decision
                })
            };
            let outcome = guaranteed_update(self.backend.as_ref(), &key, decide).await;
            let (planned, then_delete) = result.expect("decided");
            return match outcome {
                Ok(_) if opts.dry_run => Ok(planned),
                Ok(Outcome::Deleted { prev, .. }) => {
                    let gone = self.decode(&prev)?;
                    self.removed(&gone).await;
                    Ok(DeleteOutcome::Deleted(gone))
                }
                Ok(Outcome::Written(kv)) if then_delete => {
                    match self.delete_written(&key, &kv, name).await? {
                        Some(done) => Ok(done),
                        None => continue,
                    }
                }
                Ok(Outcome::Written(kv)) => Ok(DeleteOutcome::Pending(self.decode(&kv)?)),
                Ok(Outcome::Unchanged(Some(kv))) => Ok(DeleteOutcome::Pending(self.decode(&kv)?)),
                Ok(Outcome::Unchanged(None)) => Err(self.not_found(name)),
                Err(UpdateError::Rejected(e)) => Err(e),
                Err(UpdateError::Storage(e)) => Err(self.storage_error(e, name)),
            };
        }
        Err(ApiError::internal(format!(
            "too many conflicts deleting {key:?}"
        )))
    }

    pub(super) fn check_delete_preconditions(
        &self,
        obj: &Value,
        pre: &Preconditions,
    ) -> Result<(), ApiError> {
        // Upstream's `rest.BeforeDelete` names the kind, not the resource.
        let gr = kapi_machinery::status::GroupResource::new(&self.def.group, &self.def.kind);
        let name = meta::name(obj);
        if let Some(uid) = &pre.uid {
            let actual = meta::uid(obj).unwrap_or("");
            if uid != actual {
                let msg = format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
                );
                return Err(ApiError::conflict(gr, name, msg));
            }
        }
        if let Some(rv) = &pre.resource_version {
            let actual = meta::resource_version(obj).unwrap_or("");
            if rv != actual {
                let msg = format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
                );
                return Err(ApiError::conflict(gr, name, msg));
            }
        }
        Ok(())
    }

    /// What a delete does with `obj` as found (upstream's `rest.BeforeDelete`
    /// and the store's `Delete`). A resource with graceful deletion (pods) is
    /// first marked with the grace period its strategy gives
    /// (`deletionTimestamp` that far ahead); one already marked only takes a
    /// shorter period, and otherwise the delete changes nothing. A grace
    /// period of 0 without finalizers marks the object, then deletes it.
    /// Without graceful deletion the object goes at once unless finalizers
    /// (or the strategy) hold it, then it is marked deleting now.
    pub(super) fn decide_delete(
        &self,
        mut obj: Value,
        opts: &DeleteOptions,
    ) -> Result<Plan, ApiError> {
        let mut grace = opts.grace_period.map(delete_grace);
        let deleting = meta::is_deleting(&obj);
        let mut graceful = false;
        if let Some(period) = self.def.strategy.graceful_delete(&obj, grace) {
            let existing = meta::meta(&obj)
                .and_then(|m| m.member("deletionGracePeriodSeconds"))
                .and_then(Value::as_i64)
                .map(delete_grace);
            match (deleting, existing) {
                (false, _) => {
                    grace = Some(period);
                    mark_deleting(&mut obj, period);
                    bump_generation(&mut obj);
                    graceful = true;
                }
                // Marked without a grace period left: deleted as any other.
                (true, None | Some(0)) => {}
                (true, Some(existing)) => match grace {
                    Some(shorter) if shorter < existing => {
                        let at = meta::meta_str(&obj, "deletionTimestamp")
                            .and_then(|t| meta::rfc3339_shifted(t, shorter - existing))
                            .unwrap_or_else(|| meta::rfc3339_after(shorter));
                        meta::set_str(&mut obj, "deletionTimestamp", &at);
                        meta::meta_mut(&mut obj)
                            .insert("deletionGracePeriodSeconds".into(), shorter.into());
                        graceful = true;
                    }
                    // Graceful deletion is under way: nothing to do.
                    _ => {
                        return Ok(Plan {
                            decision: Decision::Unchanged,
                            outcome: DeleteOutcome::Pending(obj),
                            then_delete: false,
                            pending: true,
                            grace: grace.or(Some(existing)),
                        })
                    }
                },
            }
        }
        let policy = self.def.strategy.gc_policy();
        let gc_change = self
            .garbage_collection
            .then(|| gc_finalizers::for_delete(policy, &meta::finalizers(&obj), opts))
            .flatten();
        if let Some(finalizers) = &gc_change {
            set_finalizers(&mut obj, finalizers);
        }
        let has_finalizers = !meta::finalizers(&obj).is_empty();
        let plan = |decision, outcome| Plan {
            decision,
            outcome,
            then_delete: false,
            pending: false,
            grace,
        };
        if graceful {
            let bytes = self.encode(&obj)?;
            if !has_finalizers && grace == Some(0) {
                return Ok(Plan {
                    then_delete: true,
                    ..plan(Decision::Write(bytes), DeleteOutcome::Deleted(obj))
                });
            }
            return Ok(plan(Decision::Write(bytes), DeleteOutcome::Pending(obj)));
        }
        if deleting {
            // Deletion is under way: only the GC finalizers may still change.
            if !(has_finalizers || self.def.strategy.begin_delete(&mut obj.clone())) {
                return Ok(plan(Decision::Delete, DeleteOutcome::Deleted(obj)));
            }
            if gc_change.is_none() {
                return Ok(plan(Decision::Unchanged, DeleteOutcome::Pending(obj)));
            }
            meta::meta_mut(&mut obj).insert("deletionGracePeriodSeconds".into(), 0.into());
            let bytes = self.encode(&obj)?;
            return Ok(plan(Decision::Write(bytes), DeleteOutcome::Pending(obj)));
        }
        let marked = self.def.strategy.begin_delete(&mut obj);
        if !(has_finalizers || marked) {
            return Ok(plan(Decision::Delete, DeleteOutcome::Deleted(obj)));
        }
        bump_generation(&mut obj);
        mark_deleting(&mut obj, 0);
        let bytes = self.encode(&obj)?;
        Ok(plan(Decision::Write(bytes), DeleteOutcome::Pending(obj)))
    }

    /// The second step of a delete that marked the object with no grace
    /// period left (`written`): remove it, unless it changed since (`None`:
    /// decide again). Gone already, it is reported deleted as written.
    pub(super) async fn delete_written(
        &self,
        key: &str,
        written: &KeyValue,
        name: &str,
    ) -> Result<Option<DeleteOutcome>, ApiError> {
        match self.backend.delete(key, Some(written.mod_revision)).await {
            Ok(d) => {
                let gone = self.decode(&d.prev)?;
                self.removed(&gone).await;
                Ok(Some(DeleteOutcome::Deleted(gone)))
            }
            Err(StorageError::NotFound { .. }) => {
                Ok(Some(DeleteOutcome::Deleted(self.decode(written)?)))
            }
            Err(StorageError::Conflict { .. }) => Ok(None),
            Err(e) => Err(self.storage_error(e, name)),
        }
    }
}

/// What [`Store::decide_delete`] decided.
pub(super) struct Plan {
    pub decision: Decision,
    /// What the request answers when the decision is carried out.
    pub outcome: DeleteOutcome,
    /// The write marks the object with no grace period left and no
    /// finalizers: it is deleted right after.
    pub then_delete: bool,
    /// A graceful deletion under way that the request does not shorten:
    /// nothing changes and admission is not asked (as upstream).
    pub pending: bool,
    /// The options' grace period as the strategy settled it (what admission
    /// sees of a delete by name).
    pub grace: Option<i64>,
}

/// A grace period as the delete path takes it: a negative one is 1 s.
fn delete_grace(seconds: i64) -> i64 {
    if seconds < 0 {
        1
    } else {
        seconds
    }
}

/// `deletionTimestamp` `seconds` from now, and `deletionGracePeriodSeconds`.
fn mark_deleting(obj: &mut Value, seconds: i64) {
    meta::set_str(obj, "deletionTimestamp", &meta::rfc3339_after(seconds));
    meta::meta_mut(obj).insert("deletionGracePeriodSeconds".into(), seconds.into());
}

fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let m = meta::meta_mut(obj);
    if finalizers.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), finalizers.into());
    }
}

/// Upstream's `markAsDeleting`: a resource without graceful deletion counts the
/// start of its deletion as a change of `generation` (when it tracks one).
fn bump_generation(obj: &mut Value) {
    let m = meta::meta_mut(obj);
    if let Some(g) = m
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g > 0)
    {
        m.insert("generation".into(), (g + 1).into());
    }
}
