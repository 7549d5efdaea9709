//! Delete: preconditions, then either remove the object, or — when finalizers or
//! a graceful termination must run first — mark it with `deletionTimestamp` and
//! leave it for whoever removes the last finalizer (see `update.rs`). The GC
//! finalizers (`orphan`, `foregroundDeletion`) the options ask for are added or
//! removed first (`gc_finalizers.rs`), also on an object already being deleted.

use kapi_machinery::status::ApiError;
use kapi_storage::{guaranteed_update, Decision, KeyValue, Outcome, UpdateError};
use serde_json::Value;

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
        let mut result: Option<DeleteOutcome> = None;
        let decide = |kv: Option<&KeyValue>| -> Result<Decision, ApiError> {
            let Some(kv) = kv else {
                return Err(self.not_found(name));
            };
            let current = self.decode(kv)?;
            self.check_delete_preconditions(&current, &opts.preconditions)?;
            let (decision, outcome) = self.decide_delete(current, opts)?;
            result = Some(outcome);
            Ok(if opts.dry_run {
                Decision::Unchanged
            } else {
                decision
            })
        };
        let outcome = guaranteed_update(self.backend.as_ref(), &key, decide).await;
        let planned = result;
        match outcome {
            Ok(_) if opts.dry_run => Ok(planned.expect("decided")),
            Ok(Outcome::Deleted { prev, .. }) => {
                let gone = self.decode(&prev)?;
                self.removed(&gone).await;
                Ok(DeleteOutcome::Deleted(gone))
            }
            Ok(Outcome::Written(kv)) => Ok(DeleteOutcome::Pending(self.decode(&kv)?)),
            Ok(Outcome::Unchanged(Some(kv))) => Ok(DeleteOutcome::Pending(self.decode(&kv)?)),
            Ok(Outcome::Unchanged(None)) => Err(self.not_found(name)),
            Err(UpdateError::Rejected(e)) => Err(e),
            Err(UpdateError::Storage(e)) => Err(self.storage_error(e, name)),
        }
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

    pub(super) fn decide_delete(
        &self,
        mut obj: Value,
        opts: &DeleteOptions,
    ) -> Result<(Decision, DeleteOutcome), ApiError> {
        let policy = self.def.strategy.gc_policy();
        let gc_change = self
            .garbage_collection
            .then(|| gc_finalizers::for_delete(policy, &meta::finalizers(&obj), opts))
            .flatten();
        if let Some(finalizers) = &gc_change {
            set_finalizers(&mut obj, finalizers);
        }
        let has_finalizers = !meta::finalizers(&obj).is_empty();
        if meta::is_deleting(&obj) {
            // Deletion is under way: only the GC finalizers may still change.
            if !(has_finalizers || self.def.strategy.begin_delete(&mut obj.clone())) {
                return Ok((Decision::Delete, DeleteOutcome::Deleted(obj)));
            }
            if gc_change.is_none() {
                return Ok((Decision::Unchanged, DeleteOutcome::Pending(obj)));
            }
            meta::meta_mut(&mut obj).insert("deletionGracePeriodSeconds".into(), 0.into());
            return Ok((
                Decision::Write(self.encode(&obj)?),
                DeleteOutcome::Pending(obj),
            ));
        }
        let grace = opts.grace_period.unwrap_or(0).max(0);
        let graceful = grace > 0 && !self.def.strategy.delete_immediately(&obj);
        let marked = self.def.strategy.begin_delete(&mut obj);
        if !(has_finalizers || graceful || marked) {
            return Ok((Decision::Delete, DeleteOutcome::Deleted(obj)));
        }
        let wait = if graceful { grace } else { 0 };
        if !graceful {
            bump_generation(&mut obj);
        }
        meta::set_str(&mut obj, "deletionTimestamp", &meta::rfc3339_after(wait));
        meta::meta_mut(&mut obj).insert("deletionGracePeriodSeconds".into(), wait.into());
        Ok((
            Decision::Write(self.encode(&obj)?),
            DeleteOutcome::Pending(obj),
        ))
    }
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
