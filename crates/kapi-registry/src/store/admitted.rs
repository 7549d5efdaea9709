//! Update with admission: the compare-and-swap loop of `update.rs`, written
//! out here because the request's admission (`crate::admission`) is async and
//! runs inside the loop, as upstream's `GuaranteedUpdate` runs the admission
//! functions: defaulting and `managedFields` on the object the update or
//! patch produced, then mutating admission, then the strategy, then
//! validating admission on the finished object, again on every retry after a
//! conflicting write ([`Store::before_admission`] is that first step, which
//! creates take in the handler). Deletes likewise: the delete's admission runs on the
//! object as stored in each attempt, before the delete is decided.

use kapi_machinery::status::ApiError;
use kapi_storage::{Decision, StorageError};
use serde_json::Value;

use super::delete::DeleteOutcome;
use super::options::{DeleteOptions, WriteOptions};
use super::update::{UpdateTarget, Updated};
use super::Store;
use crate::admission::WriteAdmission;
use crate::meta;

/// Retries after conflicting writes before giving up (as `guaranteed_update`).
pub(super) const MAX_ATTEMPTS: usize = 1000;

impl Store {
    /// What upstream does to a write's object between decoding it and the
    /// mutating admission: default it (upstream's decoder does), then record
    /// the write in `managedFields` — so the writer owns what it sent and the
    /// defaults, never what admission adds afterwards. `old` is the current
    /// object (`None`: a create). Returns the options the rest of the write
    /// goes on with: managedFields are then kept as recorded.
    pub fn before_admission(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        target: UpdateTarget,
    ) -> WriteOptions {
        self.def.strategy.default(obj);
        if target != UpdateTarget::Binding && obj.is_object() {
            self.set_managed_fields(obj, old, opts, target.subresource());
        }
        WriteOptions {
            managed_fields_set: true,
            ..opts.clone()
        }
    }

    /// [`Store::update_with`] with the request's admission: `desired` makes the
    /// object from the current one (synchronously), then `admission` mutates it
    /// and, once the strategy prepared and validated it, validates it.
    /// (`update_with`'s arguments plus the admission.)
    #[allow(clippy::too_many_arguments)]
    pub async fn update_admitted<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        target: UpdateTarget,
        opts: &WriteOptions,
        create_if_missing: bool,
        desired: F,
        admission: &dyn WriteAdmission,
    ) -> Result<Updated, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<Value, ApiError> + Send,
    {
        let out = self
            .update_checked(
                namespace,
                name,
                target,
                opts,
                create_if_missing,
                desired,
                admission,
            )
            .await;
        let stored = out.as_ref().ok().filter(|_| !opts.dry_run);
        admission.finished(stored.map(|(v, _)| v)).await;
        out
    }

    #[allow(clippy::too_many_arguments)]
    async fn update_checked<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        target: UpdateTarget,
        opts: &WriteOptions,
        create_if_missing: bool,
        mut desired: F,
        admission: &dyn WriteAdmission,
    ) -> Result<Updated, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<Value, ApiError> + Send,
    {
        let key = self.def.key(namespace, name);
        let storage = |e| self.storage_error(e, name);
        let mut current = self.backend.get(&key, None).await.map_err(storage)?;
        for _ in 0..MAX_ATTEMPTS {
            let attempt = match &current {
                None if !create_if_missing => return Err(self.not_found(name)),
                None => {
                    let mut new = desired(None)?;
                    let opts = self.before_admission(&mut new, None, opts, UpdateTarget::Main);
                    admission.mutate(&mut new, None).await?;
                    self.prepare_create(&mut new)?;
                    self.validate_create(&new)?;
                    self.set_managed_fields(&mut new, None, &opts, None);
                    self.warn(admission, &new, None);
                    admission.validate(&mut new, None).await?;
                    if opts.dry_run {
                        return Ok((new, true));
                    }
                    let ttl = self.def.strategy.ttl();
                    match self
                        .backend
                        .create_with_ttl(&key, self.encode(&new)?, ttl)
                        .await
                    {
                        Ok(kv) => return Ok((self.decode(&kv)?, true)),
                        Err(e) => e,
                    }
                }
                Some(kv) => {
                    let mut old = self.decode(kv)?;
                    let mut new = desired(Some(&old))?;
                    let opts = self.before_admission(&mut new, Some(&old), opts, target);
                    admission.mutate(&mut new, Some(&old)).await?;
                    let mut new = self.prepare_update(new, &old, target)?;
                    if target == UpdateTarget::Main {
                        self.warn(admission, &new, Some(&old));
                    }
                    admission.validate(&mut new, Some(&mut old)).await?;
                    let (decision, mut new) = self.decide_update(new, &old, &opts, target)?;
                    if opts.dry_run {
                        return Ok((new, false));
                    }
                    let result = match decision {
                        Decision::Unchanged => match self.rewrite_if_stale(&key, kv, &new).await {
                            Ok(None) => return Ok((old, false)),
                            Ok(Some(kv)) => Ok(kv),
                            Err(e) => Err(e),
                        },
                        Decision::Write(v) => {
                            let ttl = self.def.strategy.ttl();
                            let rev = kv.mod_revision;
                            self.backend.update_with_ttl(&key, v, rev, ttl).await
                        }
                        Decision::Delete => {
                            match self.backend.delete(&key, Some(kv.mod_revision)).await {
                                Ok(d) => {
                                    self.removed(&new).await;
                                    let rv = d.revision.to_string();
                                    meta::set_str(&mut new, "resourceVersion", &rv);
                                    return Ok((new, false));
                                }
                                Err(e) => Err(e),
                            }
                        }
                    };
                    match result {
                        Ok(kv) => return Ok((self.decode(&kv)?, false)),
                        Err(e) => e,
                    }
                }
            };
            current = match attempt {
                StorageError::Conflict { current, .. } => current.map(|b| *b),
                StorageError::NotFound { .. } => None,
                StorageError::AlreadyExists { .. } => {
                    self.backend.get(&key, None).await.map_err(storage)?
                }
                e => return Err(storage(e)),
            };
        }
        Err(ApiError::internal(format!(
            "too many conflicts updating {key:?}"
        )))
    }

    /// [`Store::delete`] with the request's admission run on the current
    /// object in every attempt of the compare-and-swap loop.
    pub async fn delete_admitted(
        &self,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
        admission: &dyn WriteAdmission,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = self.def.key(namespace, name);
        let storage = |e| self.storage_error(e, name);
        let mut current = self.backend.get(&key, None).await.map_err(storage)?;
        for _ in 0..MAX_ATTEMPTS {
            let Some(kv) = &current else {
                return Err(self.not_found(name));
            };
            let obj = self.decode(kv)?;
            self.check_delete_preconditions(&obj, &opts.preconditions)?;
            let plan = self.decide_delete(obj.clone(), opts)?;
            if !plan.pending {
                admission.admit_delete(&obj, plan.grace).await?;
            }
            if opts.dry_run {
                return Ok(plan.outcome);
            }
            let attempt = match plan.decision {
                Decision::Unchanged => return Ok(plan.outcome),
                Decision::Write(v) => match self.backend.update(&key, v, kv.mod_revision).await {
                    Ok(kv) if plan.then_delete => {
                        // The delete that follows is admitted again, on the
                        // object as marked (upstream's storage delete runs
                        // the validation too).
                        admission
                            .admit_delete(&self.decode(&kv)?, plan.grace)
                            .await?;
                        match self.delete_written(&key, &kv, name).await? {
                            Some(done) => return Ok(done),
                            None => {
                                current = self.backend.get(&key, None).await.map_err(storage)?;
                                continue;
                            }
                        }
                    }
                    Ok(kv) => return Ok(DeleteOutcome::Pending(self.decode(&kv)?)),
                    Err(e) => e,
                },
                Decision::Delete => match self.backend.delete(&key, Some(kv.mod_revision)).await {
                    Ok(d) => {
                        let gone = self.decode(&d.prev)?;
                        self.removed(&gone).await;
                        return Ok(DeleteOutcome::Deleted(gone));
                    }
                    Err(e) => e,
                },
            };
            current = match attempt {
                StorageError::Conflict { current, .. } => current.map(|b| *b),
                StorageError::NotFound { .. } => None,
                e => return Err(storage(e)),
            };
        }
        Err(ApiError::internal(format!(
            "too many conflicts deleting {key:?}"
        )))
    }
}
