//! What upstream does in the resources' REST storage rather than in the
//! admission chain, always on: the service allocators (`services.rs`, through
//! the request's admission, which settles them when the write is over), a
//! CSR's requestor, RBAC escalation prevention on creates, and system
//! priority classes that may not be deleted.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::WriteOptions;
use serde_json::{json, Value};

use crate::handlers::admit::RequestAdmission;
use crate::handlers::Ctx;
use crate::server::Server;

/// A CertificateSigningRequest's requestor is whoever creates it, whatever the
/// body says (upstream's `csrStrategy.PrepareForCreate`).
fn fill_requestor(ctx: &Ctx, obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for f in ["username", "uid", "groups", "extra"] {
        spec.remove(f);
    }
    let Some(user) = &ctx.user else {
        return;
    };
    if !user.name.is_empty() {
        spec.insert("username".into(), user.name.clone().into());
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

impl Server {
    /// The storage-level steps of a create, after the mutating admission.
    pub async fn storage_create(
        &self,
        ctx: &Ctx,
        obj: &mut Value,
        opts: &WriteOptions,
        adm: &RequestAdmission,
    ) -> Result<(), ApiError> {
        adm.allocate_create(obj, opts.dry_run).await?;
        if ctx.entry.def.group == kapi_resources::certificates::GROUP {
            fill_requestor(ctx, obj);
        }
        if let Some(guard) = kapi_auth::authz::escalation::Guard::prepare(
            &self.authz,
            &ctx.escalation_target(),
            Some(obj),
        )
        .await?
        {
            guard.check(obj, None)?;
        }
        Ok(())
    }

    /// The storage-level rules of a delete: system priority classes stay.
    pub fn storage_delete(&self, ctx: &Ctx) -> Result<(), ApiError> {
        let def = &ctx.entry.def;
        let system_class = kapi_resources::scheduling::SYSTEM_CLASSES
            .iter()
            .any(|c| c.name == ctx.name());
        if def.group == kapi_resources::scheduling::GROUP && system_class {
            return Err(ApiError::forbidden(
                def.group_resource(),
                ctx.name(),
                "this is a system priority class and cannot be deleted",
            ));
        }
        Ok(())
    }
}
