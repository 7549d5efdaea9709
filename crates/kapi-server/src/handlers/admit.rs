//! One request's admission as the handlers use it: the admission chain
//! (`kapi_admission::RequestAdmission`) for the resource and user of this
//! request, with what upstream's service REST storage does around a write of
//! a Service (`services.rs`): a create takes its ClusterIP and node ports
//! before the store, an update what it newly needs before the mutating
//! phase, inside the store's compare-and-swap loop; once the write is over,
//! what it took and does not hold goes back.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_admission::Target;
use kapi_machinery::status::ApiError;
use kapi_registry::admission::WriteAdmission;
use kapi_registry::store::options::{DeleteOptions, WriteOptions};
use serde_json::Value;

use super::ctx::Ctx;
use crate::services::{Held, Reserved, ServiceAllocator};

pub struct RequestAdmission {
    inner: kapi_admission::RequestAdmission,
    /// Set for writes of Services themselves: what they take.
    services: Option<(Arc<ServiceAllocator>, Reserved)>,
}

fn target(ctx: &Ctx) -> Target<'_> {
    Target {
        def: &ctx.entry.def,
        subresource: ctx.info.subresource.as_deref(),
        namespace: ctx.namespace(),
        name: ctx.name(),
        user: ctx.user.as_ref(),
        audit: ctx.audit.as_ref(),
    }
}

impl RequestAdmission {
    fn wrap(ctx: &Ctx, inner: kapi_admission::RequestAdmission) -> RequestAdmission {
        let def = &ctx.entry.def;
        let services =
            def.group.is_empty() && def.resource == "services" && ctx.info.subresource.is_none();
        RequestAdmission {
            inner,
            services: services.then(|| (ctx.srv.services.clone(), Reserved::default())),
        }
    }

    /// For a write (create, update, patch, apply); `kind` names its options
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub fn write(ctx: &Ctx, kind: &str, opts: &WriteOptions) -> RequestAdmission {
        let chain = ctx.srv.admission.clone();
        let inner = kapi_admission::RequestAdmission::write(chain, &target(ctx), kind, opts);
        RequestAdmission::wrap(ctx, inner)
    }

    /// For a delete (also each item of a delete-collection).
    pub fn delete(ctx: &Ctx, opts: &DeleteOptions) -> RequestAdmission {
        let chain = ctx.srv.admission.clone();
        let inner = kapi_admission::RequestAdmission::delete(chain, &target(ctx), opts);
        RequestAdmission::wrap(ctx, inner)
    }

    /// A create through a subresource (`pods/eviction`, `pods/binding`,
    /// `serviceaccounts/token`) or of `bindings`: the mutating phase on the
    /// subresource's object, in the URL's namespace.
    pub async fn subresource_create(
        ctx: &Ctx,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<RequestAdmission, ApiError> {
        let chain = ctx.srv.admission.clone();
        let inner = kapi_admission::RequestAdmission::subresource_create(
            chain,
            &target(ctx),
            obj,
            opts,
            |obj| super::ctx::check_namespace(ctx, obj),
        )
        .await?;
        Ok(RequestAdmission::wrap(ctx, inner))
    }

    /// What a new Service takes (`services.rs`), before the store.
    pub async fn allocate_create(&self, obj: &mut Value, dry_run: bool) -> Result<(), ApiError> {
        let Some((alloc, reserved)) = &self.services else {
            return Ok(());
        };
        let name = kapi_registry::meta::name(obj).to_owned();
        let mut taken = Held::default();
        let r = alloc.allocate_create(&name, obj, dry_run, &mut taken).await;
        if r.is_err() {
            // The store never sees this create: nothing else gives it back.
            alloc.release(&taken).await;
        } else {
            reserved.record(taken, Held::default());
        }
        r
    }

    /// The create's mutating phase (the handler runs it before the store).
    pub async fn admit_create(&self, obj: &mut Value) -> Result<(), ApiError> {
        self.inner.admit_create(obj).await
    }

    /// The validating phase of a create (`subresource_create`'s second half).
    pub async fn validate_create(&self, obj: &Value) -> Result<(), ApiError> {
        self.inner.validate_create(obj).await
    }

    /// Whether deletes need the object (some plugin looks at deletes).
    pub fn looks_at_deletes(&self) -> bool {
        self.inner.looks_at_deletes()
    }

    /// The warnings plugins added so far.
    pub fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
}

#[async_trait]
impl WriteAdmission for RequestAdmission {
    async fn mutate(&self, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        if let (Some((alloc, reserved)), Some(old)) = (&self.services, old) {
            let name = kapi_registry::meta::name(old).to_owned();
            let mut taken = Held::default();
            let dry_run = self.inner.dry_run();
            let r = alloc
                .allocate_update(&name, obj, old, dry_run, &mut taken)
                .await;
            reserved.record(taken, alloc.held(old));
            r?;
        }
        self.inner.mutate(obj, old).await
    }

    async fn finished(&self, stored: Option<&Value>) {
        if let Some((alloc, reserved)) = &self.services {
            alloc.release(&reserved.to_release(alloc, stored)).await;
        }
    }

    fn wants_written(&self) -> bool {
        self.services.is_some()
    }

    fn warn(&self, text: String) {
        self.inner.warn(text);
    }

    async fn admit_delete(&self, old: &Value, grace: Option<i64>) -> Result<(), ApiError> {
        self.inner.admit_delete(old, grace).await
    }

    async fn validate(&self, obj: &mut Value, old: Option<&mut Value>) -> Result<(), ApiError> {
        WriteAdmission::validate(&self.inner, obj, old).await
    }
}
