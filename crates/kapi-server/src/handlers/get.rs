//! GET of one object (or its status subresource, which shows the whole object as upstream).

use axum::http::StatusCode;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use serde_json::Map;

use super::ctx::Ctx;
use kapi_http::negotiate::{self, IncludeObject, View};

pub async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    // The paths past the two fast ones are boxed: held inline they would make
    // every GET's future (moved whole into its box) as large as theirs.
    if super::componentstatus::is_componentstatus(ctx) {
        let probed = Box::pin(super::componentstatus::get(ctx));
        return probed.await;
    }
    if let Some(resp) = super::json_fast::get_json(ctx).await? {
        return Ok(resp);
    }
    if let Some(resp) = super::pb_fast::get_protobuf(ctx).await? {
        return Ok(resp);
    }
    // In a statement of its own: a temporary of the awaiting statement would
    // be kept in this future's state across the await.
    let decoded = Box::pin(decoded(ctx));
    decoded.await
}

/// A GET through the store's decoded object (conversion, tables, metadata).
async fn decoded(ctx: &Ctx) -> Result<Response, ApiError> {
    let obj = ctx
        .entry
        .store
        .get(
            ctx.namespace(),
            ctx.name(),
            ctx.query.get("resourceVersion"),
        )
        .await?;
    respond_object(ctx, StatusCode::OK, &obj)
}

/// One object in the representation the client asked for.
pub fn respond_object(
    ctx: &Ctx,
    code: StatusCode,
    obj: &serde_json::Value,
) -> Result<Response, ApiError> {
    let body = match ctx.accept.view {
        View::Object => return Ok(negotiate::respond(code, obj, ctx.accept.format)),
        View::PartialMetadata => negotiate::partial(obj),
        View::Table => {
            let include = IncludeObject::parse(ctx.query.get("includeObject"))?;
            let mut meta = Map::new();
            if let Some(rv) = kapi_registry::meta::resource_version(obj) {
                meta.insert("resourceVersion".into(), rv.into());
            }
            negotiate::table(
                &ctx.entry.def,
                std::slice::from_ref(obj),
                meta,
                include,
                true,
            )
        }
    };
    Ok(negotiate::respond(code, &body, ctx.accept.format))
}
