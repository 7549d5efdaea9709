//! POST: decode, check identity against the URL, default and record the
//! manager's fields, admit (mutating phase here, validating phase inside the
//! store), create.

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

pub async fn create(ctx: &Ctx, body: Body) -> Result<Response, ApiError> {
    if let Some(msg) = ctx.entry.def.strategy.refuses_create() {
        let mut err = ApiError::method_not_supported(ctx.entry.def.group_resource(), "create");
        err.message = msg;
        return Err(err);
    }
    let bytes = read_body(body).await?;
    let (mut obj, dups) =
        negotiate::decode_object_body_checked(&ctx.entry.def, ctx.content_type(), &bytes)?;
    check_identity(ctx, &mut obj, false)?;
    if super::reviews::is_review(ctx) {
        return super::reviews::create(ctx, obj).await;
    }
    if ctx.entry.def.group.is_empty() && ctx.entry.def.resource == "bindings" {
        return super::binding::bind_legacy(ctx, obj).await;
    }
    let opts = ctx.write_options()?;
    super::fieldcheck::check_types(&ctx.entry.def, &obj)?;
    let warnings = ctx.srv.check_and_prune(ctx, &mut obj, &dups, &bytes)?;
    super::fieldcheck::check_bytes(&ctx.entry.def, &obj)?;
    let adm = RequestAdmission::write(ctx, "CreateOptions", &opts);
    let mut opts = ctx
        .entry
        .store
        .before_admission(&mut obj, None, &opts, UpdateTarget::Main);
    opts.answer_json = super::json_fast::fast_path_applies(ctx);
    opts.answer_protobuf = super::pb_fast::PbView::object_for(ctx);
    opts.refuse_named_revision = true;
    adm.admit_create(&mut obj).await?;
    ctx.srv.storage_create(ctx, &mut obj, &opts, &adm).await?;
    let store = &ctx.entry.store;
    let written = store.create_written(obj, &opts, Some(&adm)).await?;
    let fast = written
        .json
        .as_ref()
        .and_then(|j| super::json_fast::written_json(ctx, StatusCode::CREATED, j))
        .or_else(|| super::pb_fast::written_protobuf(ctx, StatusCode::CREATED, &written));
    let mut resp = match fast {
        Some(resp) => resp,
        None => {
            let created = store.written_object(written)?;
            super::get::respond_object(ctx, StatusCode::CREATED, &created)?
        }
    };
    super::fieldcheck::add_warnings(&mut resp, &warnings);
    super::fieldcheck::add_warnings(&mut resp, &adm.warnings());
    Ok(resp)
}
