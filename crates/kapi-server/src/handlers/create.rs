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

fn json_response(code: StatusCode, body: Vec<u8>) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    resp
}

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
    let opts = ctx
        .entry
        .store
        .before_admission(&mut obj, None, &opts, UpdateTarget::Main);
    adm.admit_create(&mut obj).await?;
    ctx.srv.storage_create(ctx, &mut obj, &opts, &adm).await?;
    let (created, json) = ctx
        .entry
        .store
        .create_written(obj, &opts, Some(&adm))
        .await?;
    let mut resp = match json {
        // Plain JSON of a resource stored as served: the JSON the store made
        // of the written object (the watch cache keeps the same), with its
        // resourceVersion, as a GET from the cache answers.
        Some(json) if super::json_fast::fast_path_applies(ctx) => {
            let rv = kapi_registry::meta::resource_version(&created)
                .and_then(|rv| rv.parse::<i64>().ok());
            let mut out = Vec::with_capacity(json.len() + 40);
            match rv {
                Some(rv) if kapi_registry::cache::write_json_with_rv(&json, rv, &mut out) => {
                    out.push(b'\n');
                    json_response(StatusCode::CREATED, out)
                }
                _ => super::get::respond_object(ctx, StatusCode::CREATED, &created)?,
            }
        }
        _ => super::get::respond_object(ctx, StatusCode::CREATED, &created)?,
    };
    super::fieldcheck::add_warnings(&mut resp, &warnings);
    super::fieldcheck::add_warnings(&mut resp, &adm.warnings());
    Ok(resp)
}
