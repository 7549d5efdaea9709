//! Create: fill system metadata, let the strategy reset, default and validate,
//! then write with "must not exist". A `generateName` collision is retried with a
//! fresh name, as upstream does, up to eight tries. A backend in this process
//! tells at once whether a generated name is taken ([`Backend::claim`]): a taken
//! one is passed over before anything is prepared, a free one is claimed
//! against concurrent creates and tried last, so the input is not copied for a
//! try that cannot follow. Only a create naming that very key itself can still
//! take it first; the claimant then answers the generate-name conflict (409,
//! retry after a second) that upstream gives once its tries run out.
//!
//! [`Backend::claim`]: kapi_storage::Backend::claim

use kapi_machinery::member::{self, Members};
use kapi_machinery::status::ApiError;
use kapi_machinery::validation::{validate_kube_finalizer_names, validate_object_meta, FieldPath};
use kapi_storage::{Claim, StorageError};
use serde_json::Value;

use super::options::WriteOptions;
use super::{Store, Written};
use crate::admission::WriteAdmission;
use crate::meta;

const GENERATE_NAME_ATTEMPTS: usize = 8;

/// The object an attempt starts from: a copy of the input when another
/// attempt may follow (only a generated name is tried again), else the input
/// itself, taken.
fn attempt_input(input: &mut Option<Value>, another_may_follow: bool) -> Value {
    if another_may_follow {
        input.clone().expect("kept until the last attempt")
    } else {
        input.take().expect("taken by the last attempt")
    }
}

impl Store {
    /// Create `obj` (already checked against the URL by the handler).
    ///
    /// The name is generated before the strategy runs, as upstream, so a strategy
    /// may derive values from it (a Job's `job-name` label).
    pub async fn create(&self, input: Value, opts: &WriteOptions) -> Result<Value, ApiError> {
        self.create_admitted(input, opts, None).await
    }

    /// [`Store::create`] with the request's validating admission run on the
    /// finished object just before the write (`crate::admission`).
    pub async fn create_admitted(
        &self,
        input: Value,
        opts: &WriteOptions,
        admission: Option<&dyn WriteAdmission>,
    ) -> Result<Value, ApiError> {
        let written = self.create_written(input, opts, admission).await?;
        self.written_object(written)
    }

    /// [`Store::create_admitted`], with the created object's JSON when the
    /// store has it (see [`Written`]), for a handler answering in JSON.
    pub async fn create_written(
        &self,
        input: Value,
        opts: &WriteOptions,
        admission: Option<&dyn WriteAdmission>,
    ) -> Result<Written, ApiError> {
        let mut out = self.create_checked(input, opts, admission).await;
        if let Some(a) = admission {
            if let Ok(w) = out.as_mut() {
                if !opts.dry_run && a.wants_written() {
                    if let Err(e) = self.decode_written(w) {
                        out = Err(e);
                    }
                }
            }
            let stored = out.as_ref().ok().filter(|_| !opts.dry_run);
            a.finished(stored.and_then(Written::decoded)).await;
        }
        out
    }

    async fn create_checked(
        &self,
        input: Value,
        opts: &WriteOptions,
        admission: Option<&dyn WriteAdmission>,
    ) -> Result<Written, ApiError> {
        // Upstream's storage refuses a create that names a revision (after
        // validation and admission, before the write; a dry run never gets
        // there); one that does not parse, or 0, is dropped.
        let names_revision = opts.refuse_named_revision
            && meta::meta_str(&input, "resourceVersion")
                .and_then(|rv| rv.parse::<u64>().ok())
                .is_some_and(|rv| rv != 0);
        // A name is generated only from a `generateName`; neither is invalid.
        let generated = input.is_object()
            && meta::meta_str(&input, "name").is_none_or(str::is_empty)
            && meta::meta_str(&input, "generateName").is_some_and(|g| !g.is_empty());
        let mut last_name = String::new();
        let mut input = Some(input);
        for attempt in 1..=GENERATE_NAME_ATTEMPTS {
            // A generated name the backend can tell is free now is claimed
            // (no concurrent create generates it too) and tried last: the
            // input needs no copy. One it can tell is taken counts as an
            // attempt that failed, and nothing is prepared for it.
            let mut name = None;
            let mut claim = Claim::Unknown;
            if generated {
                let input = input.as_ref().expect("kept until the last attempt");
                let prefix = meta::meta_str(input, "generateName").unwrap_or("");
                let n = meta::generate_name(prefix);
                claim = self
                    .backend
                    .claim(&self.def.key(meta::namespace(input), &n));
                if matches!(claim, Claim::Taken) {
                    last_name = n;
                    continue;
                }
                name = Some(n);
            }
            let last =
                !generated || attempt == GENERATE_NAME_ATTEMPTS || matches!(claim, Claim::Free(_));
            let mut obj = attempt_input(&mut input, !last);
            if let Some(name) = &name {
                meta::set_str(&mut obj, "name", name);
            }
            self.prepare_create(&mut obj)?;
            self.validate_create(&obj)?;
            self.set_managed_fields(&mut obj, None, opts, None);
            if let Some(a) = admission {
                self.warn(a, &obj, None);
                a.validate(&mut obj, None).await?;
            }
            if opts.dry_run {
                return Ok(Written::served(obj));
            }
            if names_revision {
                return Err(ApiError::new(
                    500,
                    kapi_machinery::status::Reason::Unknown,
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            let key = self.def.key(meta::namespace(&obj), meta::name(&obj));
            let ttl = self.def.strategy.ttl();
            let stored = self.encode(&obj)?;
            let decoded =
                self.decode_ahead(&key, &stored, opts.answer_json || opts.answer_protobuf);
            let result = self
                .backend
                .create_with_ttl(&key, stored.clone(), ttl)
                .await;
            drop(claim);
            match result {
                Ok(kv) => return self.answer(decoded, kv),
                Err(e) => {
                    self.withdraw_ahead(&key, &stored, decoded.is_some());
                    match e {
                        // A claimed name taken all the same (by a create that
                        // named it) ends the tries: the input is spent.
                        StorageError::AlreadyExists { .. } if generated => {
                            last_name = meta::name(&obj).to_owned();
                            if last {
                                break;
                            }
                        }
                        e => return Err(self.storage_error(e, meta::name(&obj))),
                    }
                }
            }
        }
        Err(ApiError::generate_name_conflict(
            self.def.group_resource(),
            &last_name,
            1,
        ))
    }

    /// Record this write in `metadata.managedFields` (nothing without a
    /// manager; nothing when an apply already did).
    pub(crate) fn set_managed_fields(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        subresource: Option<&str>,
    ) {
        if opts.managed_fields_set {
            return;
        }
        let Some(manager) = opts.field_manager.as_deref() else {
            let kept = old.and_then(|o| meta::meta(o)?.get("managedFields").cloned());
            match kept {
                Some(mf) => meta::meta_mut(obj).insert("managedFields".into(), mf),
                None => meta::remove(obj, "managedFields"),
            };
            return;
        };
        let api_version = self.def.api_version();
        let fm = self.field_manager(&api_version, subresource);
        fm.update(old, obj, manager, &meta::now_rfc3339());
    }

    /// The generic create-time reset plus the strategy's.
    pub(crate) fn prepare_create(&self, obj: &mut Value) -> Result<(), ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request was not an object",
            ));
        }
        let root = obj.as_object_mut().expect("checked");
        member::set(root, "apiVersion", self.def.api_version().into());
        member::set(root, "kind", self.def.kind.as_str().into());
        if !self.def.namespaced {
            meta::remove(obj, "namespace");
        }
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            meta::remove(obj, field);
        }
        meta::set_str(obj, "uid", &meta::new_uid());
        meta::set_str(obj, "creationTimestamp", &meta::now_rfc3339());
        if self.def.strategy.tracks_generation() {
            meta::meta_mut(obj).insert("generation".into(), 1.into());
        } else {
            meta::remove(obj, "generation");
        }
        if self.def.has_status() {
            obj.as_object_mut().expect("checked").remove("status");
        }
        self.def.strategy.prepare_for_create(obj);
        self.def.strategy.default(obj);
        Ok(())
    }

    /// The strategy's warnings on a create (`old` is `None`) or an update of
    /// the main resource, handed to the request's admission, which sends
    /// them back: upstream adds them after validation, before validating
    /// admission.
    pub(super) fn warn(&self, admission: &dyn WriteAdmission, new: &Value, old: Option<&Value>) {
        let warnings = match old {
            None => self.def.strategy.warnings_on_create(new),
            Some(old) => self.def.strategy.warnings_on_update(new, old),
        };
        for w in warnings {
            admission.warn(w);
        }
    }

    pub(crate) fn validate_create(&self, obj: &Value) -> Result<(), ApiError> {
        let empty = Value::Object(Default::default());
        let m = obj.member("metadata").unwrap_or(&empty);
        let mut errs = validate_object_meta(
            m,
            self.def.namespaced,
            self.def.strategy.name_rule(),
            &FieldPath::new("metadata"),
        );
        if self.def.core_object_meta() {
            errs.extend(validate_kube_finalizer_names(
                m,
                &FieldPath::new("metadata"),
            ));
        }
        errs.extend(self.def.strategy.validate(obj));
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                self.def.group_kind(),
                meta::name(obj),
                &errs,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A chosen name has one attempt, which takes the input; a generated one
    /// copies it for every attempt but the last, which takes it.
    #[test]
    fn the_input_is_copied_only_for_an_attempt_another_may_follow() {
        let obj = json!({"metadata": {"generateName": "x-"}});
        let mut input = Some(obj.clone());
        assert_eq!(attempt_input(&mut input, true), obj);
        assert_eq!(input.as_ref(), Some(&obj));
        assert_eq!(attempt_input(&mut input, false), obj);
        assert!(input.is_none());
    }
}
