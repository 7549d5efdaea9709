//! Update (PUT and PATCH): a compare-and-swap loop around a function that turns
//! the current object into the desired one (the PUT body, or the patch applied to
//! the current object). The store then carries over what clients may not change,
//! checks optimistic concurrency, defaults, bumps `generation`, validates, and
//! decides: write, delete (a deleting object lost its last finalizer), or nothing
//! (no change) — unless the stored value is stale (`Backend::is_stale`: kept
//! under an encryption key that no longer writes), which is written again even
//! when nothing changed, as upstream's `GuaranteedUpdate` does, so replacing
//! every object completes a key rotation.

use std::sync::atomic::{AtomicBool, Ordering};

use kapi_machinery::status::ApiError;
use kapi_machinery::validation::{
    validate_kube_finalizer_names, validate_object_meta_update, FieldPath,
};
use kapi_storage::{
    guaranteed_update_with_ttl, Decision, KeyValue, Outcome, StorageError, UpdateError,
};
use serde_json::Value;

use super::options::WriteOptions;
use super::Store;
use crate::meta;
use crate::strategy::StatusMetadata;

/// Which part of the object an update may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateTarget {
    /// The main resource: everything but `status` (when there is a status subresource).
    Main,
    /// The `status` subresource: only `status`.
    Status,
    /// The `finalize` subresource (namespaces): like `Main`, but the strategy's
    /// update rules (which keep `spec.finalizers`) do not run.
    Finalize,
    /// The `approval` subresource: metadata and `status.conditions` only.
    Approval,
    /// The `ephemeralcontainers` subresource (pods): `spec.ephemeralContainers` only.
    EphemeralContainers,
    /// A change the server makes on a client's behalf (`pods/binding`): the object
    /// is taken as the caller built it, status included, without a managedFields
    /// entry or a generation bump; the strategy validates it as the `binding`
    /// subresource.
    Binding,
}

impl UpdateTarget {
    /// The subresource name, as managedFields and strategies see it.
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            UpdateTarget::Main => None,
            UpdateTarget::Status => Some("status"),
            UpdateTarget::Finalize => Some("finalize"),
            UpdateTarget::Approval => Some("approval"),
            UpdateTarget::EphemeralContainers => Some("ephemeralcontainers"),
            UpdateTarget::Binding => Some("binding"),
        }
    }
}

/// Rewrites of a stale value tried before giving up (each lost to a concurrent write).
const STALE_REWRITES: usize = 100;

/// What the update produced: the object, and whether it was created.
pub type Updated = (Value, bool);

impl Store {
    /// Update `name` to what `desired` makes of the current object.
    /// `create_if_missing` lets PUT (or apply) create it.
    pub async fn update_with<F>(
        &self,
        namespace: Option<&str>,
        name: &str,
        target: UpdateTarget,
        opts: &WriteOptions,
        create_if_missing: bool,
        mut desired: F,
    ) -> Result<Updated, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<Value, ApiError> + Send,
    {
        let key = self.def.key(namespace, name);
        let created = AtomicBool::new(false);
        let mut last_new: Option<Value> = None;
        // A stale value (kept under a key that no longer writes) is rewritten
        // even when nothing changes; that write may conflict, then all again.
        for _ in 0..STALE_REWRITES {
            let decide = |kv: Option<&KeyValue>| -> Result<Decision, ApiError> {
                let current = kv.map(|kv| self.decode(kv)).transpose()?;
                let (decision, new) = match current {
                    None if !create_if_missing => return Err(self.not_found(name)),
                    None => {
                        let mut new = desired(None)?;
                        self.prepare_create(&mut new)?;
                        self.validate_create(&new)?;
                        self.set_managed_fields(&mut new, None, opts, None);
                        created.store(true, Ordering::Relaxed);
                        (Decision::Write(self.encode(&new)?), new)
                    }
                    Some(old) => {
                        created.store(false, Ordering::Relaxed);
                        let new = self.prepare_update(desired(Some(&old))?, &old, target)?;
                        self.decide_update(new, &old, opts, target)?
                    }
                };
                last_new = Some(new);
                if opts.dry_run {
                    return Ok(Decision::Unchanged);
                }
                Ok(decision)
            };
            let ttl = self.def.strategy.ttl();
            let outcome =
                guaranteed_update_with_ttl(self.backend.as_ref(), &key, ttl, decide).await;
            let was_created = created.load(Ordering::Relaxed);
            return match outcome {
                Ok(_) if opts.dry_run => Ok((last_new.expect("decided"), was_created)),
                Ok(Outcome::Written(kv)) => Ok((self.decode(&kv)?, was_created)),
                Ok(Outcome::Unchanged(Some(kv))) => {
                    let new = last_new.as_ref().expect("decided");
                    match self.rewrite_if_stale(&key, &kv, new).await {
                        Ok(Some(kv)) => Ok((self.decode(&kv)?, false)),
                        Ok(None) => Ok((self.decode(&kv)?, false)),
                        Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                            continue
                        }
                        Err(e) => Err(self.storage_error(e, name)),
                    }
                }
                Ok(Outcome::Unchanged(None)) => Err(self.not_found(name)),
                Ok(Outcome::Deleted { revision, .. }) => {
                    let mut gone = last_new.expect("decided");
                    self.removed(&gone).await;
                    meta::set_str(&mut gone, "resourceVersion", &revision.to_string());
                    Ok((gone, false))
                }
                Err(UpdateError::Rejected(e)) => Err(e),
                Err(UpdateError::Storage(e)) => Err(self.storage_error(e, name)),
            };
        }
        Err(ApiError::internal(format!(
            "too many conflicts rewriting {key:?}"
        )))
    }

    /// Write `obj` over `kv` when the backend keeps `kv` stale (encrypted
    /// with a key that no longer writes: upstream rewrites such a value on
    /// any update, so replacing every object completes a key rotation);
    /// `None` when it is not stale.
    pub(super) async fn rewrite_if_stale(
        &self,
        key: &str,
        kv: &KeyValue,
        obj: &Value,
    ) -> Result<Option<KeyValue>, StorageError> {
        if !self.backend.is_stale(kv).await? {
            return Ok(None);
        }
        let bytes = self
            .encode(obj)
            .map_err(|e| StorageError::Internal(e.to_string()))?;
        let ttl = self.def.strategy.ttl();
        self.backend
            .update_with_ttl(key, bytes, kv.mod_revision, ttl)
            .await
            .map(Some)
    }

    /// Turn the client's object into the one to store, given the current one.
    pub(super) fn prepare_update(
        &self,
        mut new: Value,
        old: &Value,
        target: UpdateTarget,
    ) -> Result<Value, ApiError> {
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request was not an object",
            ));
        }
        self.check_preconditions(&new, old)?;
        match target {
            // Status and what the strategy keeps of the client's metadata
            // change; managedFields travel along for the field manager (which
            // reads the live ones anyway unless apply set them).
            UpdateTarget::Status => {
                let kept = self.def.strategy.status_metadata();
                new = status_view(keep_only(new.clone(), old, "/status"), &new, old, kept)
            }
            UpdateTarget::EphemeralContainers => {
                new = keep_only(new, old, "/spec/ephemeralContainers")
            }
            _ => {}
        }
        if target == UpdateTarget::Approval {
            new = approval_view(new, old);
        }
        let root = new.as_object_mut().expect("checked");
        root.insert("apiVersion".into(), self.def.api_version().into());
        root.insert("kind".into(), self.def.kind.clone().into());
        if matches!(target, UpdateTarget::Main | UpdateTarget::Finalize) && self.def.has_status() {
            match old.get("status") {
                Some(s) => root.insert("status".into(), s.clone()),
                None => root.remove("status"),
            };
        }
        carry_system_metadata(&mut new, old);
        match target.subresource() {
            None => self.def.strategy.prepare_for_update(&mut new, old),
            Some(sub) => self
                .def
                .strategy
                .prepare_for_subresource_update(sub, &mut new, old),
        }
        self.def.strategy.default(&mut new);
        // Compared with the stored object from here on, as stored (`normalize`).
        let mut new = self.normalize(new)?;
        if self.def.strategy.tracks_generation()
            && !matches!(target, UpdateTarget::Binding | UpdateTarget::Status)
            && self.def.strategy.generation_moves(&new, old)
        {
            let gen = meta::meta(old)
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta::meta_mut(&mut new).insert("generation".into(), (gen + 1).into());
        }
        self.validate_update(&new, old, target)?;
        Ok(new)
    }

    /// Optimistic concurrency and uid checks.
    fn check_preconditions(&self, new: &Value, old: &Value) -> Result<(), ApiError> {
        let name = meta::name(old);
        match meta::resource_version(new) {
            Some(rv) if Some(rv) != meta::resource_version(old) => {
                return Err(ApiError::optimistic_lock_conflict(
                    self.def.group_resource(),
                    name,
                ))
            }
            None if !self.def.strategy.allow_unconditional_update() => {
                let errs = vec![kapi_machinery::validation::FieldError::invalid(
                    &FieldPath::new("metadata").child("resourceVersion"),
                    Value::String(String::new()),
                    "must be specified for an update",
                )];
                return Err(ApiError::invalid(self.def.group_kind(), name, &errs));
            }
            _ => {}
        }
        if let (Some(new_uid), Some(old_uid)) = (meta::uid(new), meta::uid(old)) {
            if new_uid != old_uid {
                let key = self.def.key(meta::namespace(old), name);
                let msg = format!(
                    "StorageError: invalid object, Code: 4, Key: /registry{key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {new_uid}, UID in object meta: {old_uid}"
                );
                return Err(ApiError::conflict(self.def.group_resource(), name, msg));
            }
        }
        Ok(())
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        target: UpdateTarget,
    ) -> Result<(), ApiError> {
        let empty = Value::Object(Default::default());
        let mut errs = validate_object_meta_update(
            new.get("metadata").unwrap_or(&empty),
            old.get("metadata").unwrap_or(&empty),
            &FieldPath::new("metadata"),
        );
        if self.def.core_object_meta() {
            let meta = new.get("metadata").unwrap_or(&empty);
            errs.extend(validate_kube_finalizer_names(
                meta,
                &FieldPath::new("metadata"),
            ));
        }
        errs.extend(match target.subresource() {
            None => self.def.strategy.validate_update(new, old),
            Some(sub) => self.def.strategy.validate_subresource_update(sub, new, old),
        });
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                self.def.group_kind(),
                meta::name(new),
                &errs,
            ))
        }
    }

    /// Write, delete or nothing; the object returned is the one to report.
    pub(super) fn decide_update(
        &self,
        mut new: Value,
        old: &Value,
        opts: &WriteOptions,
        target: UpdateTarget,
    ) -> Result<(Decision, Value), ApiError> {
        // A deleting object without finalizers goes, unless its strategy still
        // holds it (a namespace's spec finalizers: upstream's
        // `ShouldDeleteNamespaceDuringUpdate`).
        if meta::is_deleting(&new)
            && meta::finalizers(&new).is_empty()
            && !self.def.strategy.begin_delete(&mut new.clone())
        {
            return Ok((Decision::Delete, new));
        }
        if target != UpdateTarget::Binding {
            self.set_managed_fields(&mut new, Some(old), opts, target.subresource());
        }
        if same_object(&new, old) {
            return Ok((Decision::Unchanged, new));
        }
        Ok((Decision::Write(self.encode(&new)?), new))
    }
}

/// What an approval update may change: the client's metadata and
/// `status.conditions`; everything else stays as stored.
fn approval_view(client: Value, old: &Value) -> Value {
    let mut out = old.clone();
    let root = out.as_object_mut().expect("stored objects are objects");
    if let Some(m) = client.get("metadata") {
        root.insert("metadata".into(), m.clone());
    }
    let conditions = client.pointer("/status/conditions").cloned();
    let status = root
        .entry("status")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(status) = status.as_object_mut() {
        match conditions {
            Some(c) => status.insert("conditions".into(), c),
            None => status.remove("conditions"),
        };
    }
    out
}

/// A status write's object: `only_status` (the stored object with the client's
/// status) with the client's metadata as `kept` allows.
fn status_view(mut only_status: Value, client: &Value, old: &Value, kept: StatusMetadata) -> Value {
    let StatusMetadata::ClientExcept(stored) = kept else {
        return only_status;
    };
    let mut m = client
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let old_meta = meta::meta(old);
    for f in stored {
        match old_meta.and_then(|o| o.get(*f)) {
            Some(v) => m.insert((*f).into(), v.clone()),
            None => m.remove(*f),
        };
    }
    only_status
        .as_object_mut()
        .expect("stored objects are objects")
        .insert("metadata".into(), Value::Object(m));
    only_status
}

/// Fields of `metadata` only the server sets.
fn carry_system_metadata(new: &mut Value, old: &Value) {
    let Some(old_meta) = meta::meta(old) else {
        return;
    };
    let fields = [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
        "name",
    ];
    let old_meta = old_meta.clone();
    let m = meta::meta_mut(new);
    for f in fields {
        match old_meta.get(f) {
            Some(v) => m.insert(f.into(), v.clone()),
            None => m.remove(f),
        };
    }
}

/// Equal but for `resourceVersion`.
fn same_object(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        meta::remove(&mut v, "resourceVersion");
        v
    };
    strip(a) == strip(b)
}

/// `old` with only the value at `pointer` (a field of the root or of one of its
/// objects) and `managedFields` taken from `new`.
fn keep_only(new: Value, old: &Value, pointer: &str) -> Value {
    let (parent, field) = pointer.rsplit_once('/').expect("a pointer");
    let value = new.pointer(pointer).cloned();
    let managed = meta::meta(&new).and_then(|m| m.get("managedFields").cloned());
    let mut out = old.clone();
    let holder = if parent.is_empty() {
        out.as_object_mut()
    } else {
        if out.pointer(parent).is_none() && value.is_some() {
            let root = out.as_object_mut().expect("stored objects are objects");
            root.insert(
                parent.trim_start_matches('/').into(),
                Value::Object(Default::default()),
            );
        }
        out.pointer_mut(parent).and_then(Value::as_object_mut)
    };
    if let Some(holder) = holder {
        match value {
            Some(v) => holder.insert(field.into(), v),
            None => holder.remove(field),
        };
    }
    match managed {
        Some(mf) => meta::meta_mut(&mut out).insert("managedFields".into(), mf),
        None => meta::remove(&mut out, "managedFields"),
    };
    out
}
