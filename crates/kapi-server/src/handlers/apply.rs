//! PATCH with `application/apply-patch+yaml`: server-side apply. The body (YAML
//! or JSON) is the manager's whole configuration of the object; the store's
//! compare-and-swap loop runs the merge (`kapi_registry::managed`) against the
//! current object, so a concurrent write makes the apply re-run on the newer
//! object. An absent object is created (201), as upstream does.
//!
//! Options as upstream's `PatchOptions` validation: `fieldManager` is required
//! (422 on `PatchOptions.meta.k8s.io`), `force` is only for apply. Errors of
//! the configuration against the schema (a list-map element without its key,
//! duplicate keys, undeclared fields) are upstream's plain 500 "failed to
//! create typed patch object".

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use kapi_registry::meta;
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use kapi_http::body::read_body;
use kapi_http::negotiate;

/// `?force=`: absent, `true` or `false`.
pub fn force(ctx: &Ctx) -> Result<Option<bool>, ApiError> {
    match ctx.query.get("force") {
        None => Ok(None),
        Some("true") | Some("1") => Ok(Some(true)),
        Some("false") | Some("0") | Some("") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!(
            "force: invalid boolean value {other:?}"
        ))),
    }
}

fn invalid_options(err: FieldError) -> ApiError {
    ApiError::invalid(
        GroupKind::new("meta.k8s.io", "PatchOptions"),
        "",
        &vec![err],
    )
}

/// A non-apply patch may not say `force`.
pub fn check_no_force(ctx: &Ctx) -> Result<(), ApiError> {
    if force(ctx)?.is_some() {
        let e = FieldError::forbidden(
            &FieldPath::new("force"),
            "may not be specified for non-apply patch",
        );
        return Err(invalid_options(e));
    }
    Ok(())
}

pub async fn apply(ctx: &Ctx, body: Body, status: bool) -> Result<Response, ApiError> {
    let force = force(ctx)?.unwrap_or(false);
    let Some(manager) = ctx.query.non_empty("fieldManager").map(str::to_owned) else {
        let e = FieldError::required(
            &FieldPath::new("fieldManager"),
            "is required for apply patch",
        );
        return Err(invalid_options(e));
    };
    let mut opts = ctx.write_options()?;
    opts.managed_fields_set = true;
    let bytes = read_body(body).await?;
    let (patch, dups) = negotiate::decode_yaml_checked(&bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {}", e.message)))?;
    if !patch.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply configuration is not an object",
        ));
    }
    // Unknown fields are not a fieldValidation matter for apply: the typed
    // conversion of the configuration rejects them (500, "field not declared in
    // schema"), as upstream.
    let warnings = super::fieldcheck::check_apply_yaml(ctx, &dups)?;
    let target = if status {
        ctx.update_target()
    } else {
        UpdateTarget::Main
    };
    let sub = target.subresource();
    let store = &ctx.entry.store;
    let api_version = ctx.entry.def.api_version();
    let (name, namespace) = (ctx.name().to_owned(), ctx.namespace().map(str::to_owned));
    let adm = RequestAdmission::write(ctx, "PatchOptions", &opts);
    if !status {
        if let Some(out) = create_if_absent(ctx, &patch, &manager, force, &opts, &adm).await? {
            let mut resp = super::get::respond_object(ctx, StatusCode::CREATED, &out)?;
            super::fieldcheck::add_warnings(&mut resp, &warnings);
            super::fieldcheck::add_warnings(&mut resp, &adm.warnings());
            return Ok(resp);
        }
    }
    let guard = kapi_auth::authz::escalation::Guard::prepare(
        &ctx.srv.authz,
        &ctx.escalation_target(),
        Some(&patch),
    )
    .await?;
    let (out, created) = store
        .update_admitted(
            ctx.namespace(),
            ctx.name(),
            target,
            &opts,
            !status,
            |current| {
                check_name(&patch, &name, namespace.as_deref())?;
                let fm = store.field_manager(&api_version, sub);
                let now = meta::now_rfc3339();
                let mut obj = fm.apply(current, &patch, &manager, force, &now)?;
                meta::set_str(&mut obj, "name", &name);
                if let Some(ns) = &namespace {
                    meta::set_str(&mut obj, "namespace", ns);
                }
                if let Some(g) = &guard {
                    g.check(&obj, current)?;
                }
                Ok(obj)
            },
            &adm,
        )
        .await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut resp = super::get::respond_object(ctx, code, &out)?;
    super::fieldcheck::add_warnings(&mut resp, &warnings);
    super::fieldcheck::add_warnings(&mut resp, &adm.warnings());
    Ok(resp)
}

/// An apply to an absent object is a create, and goes through create admission
/// like a POST (namespace lifecycle, allocations); `None` when the object exists
/// (or appears meanwhile), so the merge path answers.
async fn create_if_absent(
    ctx: &Ctx,
    patch: &Value,
    manager: &str,
    force: bool,
    opts: &kapi_registry::store::options::WriteOptions,
    adm: &RequestAdmission,
) -> Result<Option<Value>, ApiError> {
    let store = &ctx.entry.store;
    match store.get(ctx.namespace(), ctx.name(), None).await {
        Ok(_) => return Ok(None),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    check_name(patch, ctx.name(), ctx.namespace())?;
    let api_version = ctx.entry.def.api_version();
    let fm = store.field_manager(&api_version, None);
    let mut obj = fm.apply(None, patch, manager, force, &meta::now_rfc3339())?;
    meta::set_str(&mut obj, "name", ctx.name());
    if let Some(ns) = ctx.namespace() {
        meta::set_str(&mut obj, "namespace", ns);
    }
    let opts = &store.before_admission(&mut obj, None, opts, UpdateTarget::Main);
    adm.admit_create(&mut obj).await?;
    ctx.srv.storage_create(ctx, &mut obj, opts, adm).await?;
    match store.create_admitted(obj, opts, Some(adm)).await {
        Ok(out) => Ok(Some(out)),
        Err(e) if e.is_already_exists() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The configuration may name the object only as the URL does.
fn check_name(patch: &Value, name: &str, namespace: Option<&str>) -> Result<(), ApiError> {
    if let Some(n) = meta::meta_str(patch, "name").filter(|n| !n.is_empty()) {
        if n != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
    }
    if let (Some(ns), Some(url_ns)) = (meta::meta_str(patch, "namespace"), namespace) {
        if !ns.is_empty() && ns != url_ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    Ok(())
}
