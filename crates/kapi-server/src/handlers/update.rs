//! PUT of the main resource or its status: the body replaces the object, subject
//! to the store's concurrency and carry-over rules.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use kapi_registry::store::UpdateTarget;

use super::admit::RequestAdmission;
use super::ctx::Ctx;
use super::identity::check_identity;
use kapi_http::body::read_body;
use kapi_http::negotiate;

pub async fn update(ctx: &Ctx, body: Body, status: bool) -> Result<Response, ApiError> {
    let target = if status {
        ctx.update_target()
    } else {
        UpdateTarget::Main
    };
    update_target(ctx, body, target).await
}

/// PUT of the main resource or of a subresource that replaces the object
/// (`status`, `finalize`).
pub async fn update_target(
    ctx: &Ctx,
    body: Body,
    target: UpdateTarget,
) -> Result<Response, ApiError> {
    let bytes = read_body(body).await?;
    let (mut obj, dups) =
        negotiate::decode_object_body_checked(&ctx.entry.def, ctx.content_type(), &bytes)?;
    check_identity(ctx, &mut obj, true)?;
    let opts = ctx.write_options()?;
    super::fieldcheck::check_types(&ctx.entry.def, &obj)?;
    let warnings = ctx.srv.check_and_prune(ctx, &mut obj, &dups, &bytes)?;
    super::fieldcheck::check_bytes(&ctx.entry.def, &obj)?;
    let create = target == UpdateTarget::Main && ctx.entry.def.strategy.allow_create_on_update();
    let guard = kapi_auth::authz::escalation::Guard::prepare(
        &ctx.srv.authz,
        &ctx.escalation_target(),
        Some(&obj),
    )
    .await?;
    let adm = RequestAdmission::write(ctx, "UpdateOptions", &opts);
    let (out, created) = ctx
        .entry
        .store
        .update_admitted(
            ctx.namespace(),
            ctx.name(),
            target,
            &opts,
            create,
            |cur| {
                if let Some(g) = &guard {
                    g.check(&obj, cur)?;
                }
                Ok(obj.clone())
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
