//! One request's admission: [`RequestAdmission`] carries the request's
//! attributes (resource, namespace, name, user, dry-run, options) and runs the
//! chain for each object the request writes. It is what the store calls
//! inside its writes (`kapi_registry::admission::WriteAdmission`), and what the
//! handlers call for the create's mutating phase.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_machinery::member::Members;
use kapi_machinery::status::ApiError;
use kapi_registry::admission::WriteAdmission;
use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, WriteOptions};
use serde_json::{json, Value};

use kapi_auth::audit::AuditHandle;
use kapi_http::user::UserInfo;
use kapi_registry::ResourceDef;

use super::{Attributes, Chain, Operation, RequestAttributes, Warnings};

/// The request whose writes are admitted: the resource its URL names and who
/// asks.
pub struct Target<'a> {
    pub def: &'a ResourceDef,
    pub subresource: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub user: Option<&'a UserInfo>,
    pub audit: Option<&'a AuditHandle>,
}

pub struct RequestAdmission {
    chain: Arc<Chain>,
    base: Attributes,
}

/// The options object of kind `kind` with `extra` (name and value) after its
/// common members. Without `extra`, one of the eight shared objects (the
/// four kinds, dry run or not): most writes name no field manager and no
/// grace period, and their options are then built once, not per request
/// (an attribute that changes them copies its own).
fn options(kind: &str, dry_run: bool, extra: Vec<(&str, Value)>) -> Arc<Value> {
    static COMMON: std::sync::LazyLock<Vec<(&'static str, bool, Arc<Value>)>> =
        std::sync::LazyLock::new(|| {
            let kinds = [
                "CreateOptions",
                "UpdateOptions",
                "PatchOptions",
                "DeleteOptions",
            ];
            kinds
                .iter()
                .flat_map(|&k| {
                    [false, true].map(|d| (k, d, Arc::new(build_options(k, d, Vec::new()))))
                })
                .collect()
        });
    if extra.is_empty() {
        if let Some((_, _, shared)) = COMMON.iter().find(|(k, d, _)| *k == kind && *d == dry_run) {
            return shared.clone();
        }
    }
    Arc::new(build_options(kind, dry_run, extra))
}

fn build_options(kind: &str, dry_run: bool, extra: Vec<(&str, Value)>) -> Value {
    let mut o = serde_json::Map::with_capacity(3 + extra.len());
    o.insert("kind".into(), kind.into());
    o.insert("apiVersion".into(), "meta.k8s.io/v1".into());
    if dry_run {
        o.insert("dryRun".into(), json!(["All"]));
    }
    for (name, value) in extra {
        o.insert(name.into(), value);
    }
    Value::Object(o)
}

impl RequestAdmission {
    fn base(
        chain: Arc<Chain>,
        t: &Target<'_>,
        operation: Operation,
        dry_run: bool,
        options: Arc<Value>,
    ) -> RequestAdmission {
        let def = t.def;
        let subresource = t.subresource.unwrap_or_default().to_owned();
        let (kind_group, kind_version, kind) = def
            .subresource(&subresource)
            .and_then(|s| s.response_kind())
            .map(|(g, v, k)| (g.to_owned(), v.to_owned(), k.to_owned()))
            .unwrap_or_else(|| (def.group.clone(), def.version.clone(), def.kind.clone()));
        RequestAdmission {
            chain,
            base: Attributes {
                operation,
                name: t.name.to_owned(),
                options,
                object: None,
                old_object: None,
                request: Arc::new(RequestAttributes {
                    group: def.group.clone(),
                    version: def.version.clone(),
                    kind_group,
                    kind_version,
                    kind,
                    resource: def.resource.clone(),
                    subresource,
                    namespace: t.namespace.unwrap_or("").to_owned(),
                    user: t.user.cloned(),
                    dry_run,
                    warnings: Warnings::default(),
                    audit: t.audit.cloned(),
                }),
            },
        }
    }

    /// For a write (create, update, patch, apply); `kind` names its options
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`). A patch is
    /// admitted with `UpdateOptions` (or `CreateOptions` when it creates), as
    /// upstream's patch handler converts its options (`patchToUpdateOptions`).
    pub fn write(
        chain: Arc<Chain>,
        t: &Target<'_>,
        kind: &str,
        opts: &WriteOptions,
    ) -> RequestAdmission {
        // The options as the request gave them: a manager defaulted from
        // the User-Agent is the managedFields' only (upstream's
        // `managerOrUserAgent`), not written back into them.
        let mut extra = Vec::new();
        if let Some(m) = opts
            .field_manager
            .as_ref()
            .filter(|_| !opts.field_manager_defaulted)
        {
            extra.push(("fieldManager", Value::from(m.as_str())));
        }
        if let Some(v) = &opts.field_validation {
            extra.push(("fieldValidation", Value::from(v.as_str())));
        }
        let kind = if kind == "PatchOptions" {
            "UpdateOptions"
        } else {
            kind
        };
        let op = if kind == "CreateOptions" {
            Operation::Create
        } else {
            Operation::Update
        };
        let options = options(kind, opts.dry_run, extra);
        RequestAdmission::base(chain, t, op, opts.dry_run, options)
    }

    /// For a delete (also each item of a delete-collection).
    pub fn delete(chain: Arc<Chain>, t: &Target<'_>, opts: &DeleteOptions) -> RequestAdmission {
        // The options as the request gave them.
        let mut extra = Vec::new();
        if let Some(g) = opts.grace_period {
            extra.push(("gracePeriodSeconds", json!(g)));
        }
        let pre = &opts.preconditions;
        if pre.uid.is_some() || pre.resource_version.is_some() {
            let mut p = serde_json::Map::new();
            if let Some(uid) = &pre.uid {
                p.insert("uid".into(), uid.as_str().into());
            }
            if let Some(rv) = &pre.resource_version {
                p.insert("resourceVersion".into(), rv.as_str().into());
            }
            extra.push(("preconditions", Value::Object(p)));
        }
        if let Some(orphan) = opts.orphan_dependents {
            extra.push(("orphanDependents", orphan.into()));
        }
        if let Some(policy) = opts.propagation {
            extra.push(("propagationPolicy", policy.as_str().into()));
        }
        let options = options("DeleteOptions", opts.dry_run, extra);
        RequestAdmission::base(chain, t, Operation::Delete, opts.dry_run, options)
    }

    /// Both phases of a connect (`pods/exec`, `attach`, `portforward`, the
    /// `proxy` subresources), as upstream's connect handler runs them: the
    /// object is the request's options object (`PodExecOptions`, ...), there
    /// are no options and no old object.
    pub async fn connect(chain: Arc<Chain>, t: &Target<'_>, object: Value) -> Result<(), ApiError> {
        let op = Operation::Connect;
        if !chain.mutates(op) && !chain.validates(op) {
            return Ok(());
        }
        let adm = RequestAdmission::base(chain, t, op, false, Arc::new(Value::Null));
        let mut a = adm.base.clone();
        a.object = Some(object);
        adm.chain.admit(&mut a).await?;
        adm.chain.validate(&a).await
    }

    /// Whether the request is a dry run.
    pub fn dry_run(&self) -> bool {
        self.base.dry_run
    }

    /// The warnings plugins added so far.
    pub fn warnings(&self) -> Vec<String> {
        self.base.warnings.take()
    }

    fn attrs(&self, op: Operation, obj: Option<Value>, old: Option<Value>) -> Attributes {
        let mut a = self.base.clone();
        a.operation = op;
        // A subresource's object is named by the URL (a TokenRequest's own
        // name may be empty); a create of a main resource by its body.
        if (op == Operation::Create && a.subresource.is_empty()) || a.name.is_empty() {
            let named = obj.as_ref().or(old.as_ref()).map(meta::name).unwrap_or("");
            a.name = named.to_owned();
        }
        if op == Operation::Create && a.options.member_str("kind") != Some("CreateOptions") {
            // A PUT or apply that creates is a create, with CreateOptions.
            Arc::make_mut(&mut a.options)["kind"] = json!("CreateOptions");
        }
        a.object = obj;
        a.old_object = old;
        a
    }

    /// The create's mutating phase (the handler runs it before the store).
    pub async fn admit_create(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.mutate(obj, None).await
    }

    /// A create through a subresource (`pods/eviction`, `pods/binding`,
    /// `serviceaccounts/token`) or of `bindings`: the body made the
    /// subresource's object (its `apiVersion` and `kind` filled, the URL's
    /// namespace, which the caller sets), then the mutating phase, as
    /// upstream's create handler runs it before the REST storage. The storage
    /// runs [`RequestAdmission::validate_create`] once it checked the object.
    pub async fn subresource_create(
        chain: Arc<Chain>,
        t: &Target<'_>,
        obj: &mut Value,
        opts: &WriteOptions,
        set_namespace: impl FnOnce(&mut Value) -> Result<(), ApiError>,
    ) -> Result<RequestAdmission, ApiError> {
        let adm = RequestAdmission::write(chain, t, "CreateOptions", opts);
        let Some(root) = obj.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        };
        let b = &adm.base;
        let api_version = match b.kind_group.as_str() {
            "" => b.kind_version.clone(),
            g => format!("{g}/{}", b.kind_version),
        };
        for (k, v) in [("apiVersion", api_version), ("kind", b.kind.clone())] {
            if root
                .get(k)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                root.insert(k.into(), v.into());
            }
        }
        set_namespace(obj)?;
        adm.admit_create(obj).await?;
        Ok(adm)
    }

    /// The validating phase of a create (`subresource_create`'s second half).
    pub async fn validate_create(&self, obj: &Value) -> Result<(), ApiError> {
        WriteAdmission::validate(self, &mut obj.clone(), None).await
    }

    /// Whether deletes need the object (some plugin looks at deletes).
    pub fn looks_at_deletes(&self) -> bool {
        self.chain.mutates(Operation::Delete) || self.chain.validates(Operation::Delete)
    }
}

#[async_trait]
impl WriteAdmission for RequestAdmission {
    async fn mutate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let op = if old.is_none() {
            Operation::Create
        } else {
            Operation::Update
        };
        if !self.chain.mutates(op) {
            return Ok(());
        }
        let mut a = self.attrs(op, Some(std::mem::take(obj)), old.cloned());
        let result = self.chain.admit(&mut a).await;
        *obj = a.object.take().unwrap_or_default();
        result
    }

    /// Added to the request's warnings (one already there is not repeated).
    fn warn(&self, text: String) {
        self.base.warnings.add(text);
    }

    /// Both phases for deleting `old` (the object as stored).
    /// A delete by name is admitted with its options as the strategy settled
    /// them (a pod's grace period); each item of a delete-collection with the
    /// request's own options and no name, as upstream's collection attributes.
    async fn admit_delete(&self, old: &Value, grace: Option<i64>) -> Result<(), ApiError> {
        let op = Operation::Delete;
        if !self.chain.mutates(op) && !self.chain.validates(op) {
            return Ok(());
        }
        let mut a = self.base.clone();
        a.operation = op;
        a.old_object = Some(old.clone());
        if let Some(g) = grace.filter(|_| !a.name.is_empty()) {
            if a.options
                .member("gracePeriodSeconds")
                .and_then(Value::as_i64)
                != Some(g)
            {
                Arc::make_mut(&mut a.options)["gracePeriodSeconds"] = json!(g);
            }
        }
        self.chain.admit(&mut a).await?;
        self.chain.validate(&a).await
    }

    async fn validate(&self, obj: &mut Value, mut old: Option<&mut Value>) -> Result<(), ApiError> {
        let op = if old.is_none() {
            Operation::Create
        } else {
            Operation::Update
        };
        if !self.chain.validates(op) {
            return Ok(());
        }
        // The plugins read the objects from the attributes: moved there and
        // back rather than copied.
        let lent = old.as_deref_mut().map(std::mem::take);
        let mut a = self.attrs(op, Some(std::mem::take(obj)), lent);
        let result = self.chain.validate(&a).await;
        *obj = a.object.take().unwrap_or_default();
        if let Some(old) = old {
            *old = a.old_object.take().unwrap_or_default();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_options_are_the_ones_built_and_a_change_copies_them() {
        for kind in [
            "CreateOptions",
            "UpdateOptions",
            "PatchOptions",
            "DeleteOptions",
        ] {
            for dry_run in [false, true] {
                let shared = options(kind, dry_run, Vec::new());
                assert_eq!(*shared, build_options(kind, dry_run, Vec::new()));
                assert!(Arc::ptr_eq(&shared, &options(kind, dry_run, Vec::new())));
                let mut changed = shared.clone();
                Arc::make_mut(&mut changed)["kind"] = json!("Other");
                assert_eq!(options(kind, dry_run, Vec::new())["kind"], kind);
            }
        }
        let managed = options(
            "UpdateOptions",
            true,
            vec![
                ("fieldManager", json!("kubectl")),
                ("fieldValidation", json!("Strict")),
            ],
        );
        assert_eq!(
            *managed,
            json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"], "fieldManager": "kubectl", "fieldValidation": "Strict"})
        );
        assert_eq!(options("Other", false, Vec::new())["kind"], "Other");
    }
}
