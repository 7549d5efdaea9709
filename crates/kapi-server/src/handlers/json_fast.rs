//! The plain-JSON fast path from the watch cache. A GET answered by the cache
//! (with a `resourceVersion`, or without one once the cache has caught up with
//! storage's current revision) is the cached bytes with the `resourceVersion`
//! spliced in (no decode, no re-encode). A LIST: when the
//! client wants plain JSON and the watch cache answers, the `<Kind>List` is written item by item from the cached bytes (each
//! object's stored JSON with its `resourceVersion` spliced in, and for a built-in
//! kind's typed list without its leading `kind` and `apiVersion`), in chunks of about
//! 64 KiB (`chunked.rs`), so no `Value` tree and no whole-response buffer is ever built: memory
//! beyond the cache itself is one chunk per response in flight.
//!
//! Kept apart from `negotiate.rs` on purpose: other encodings decide there; this
//! is only the fast path for `application/json`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use kapi_machinery::status::ApiError;
use kapi_registry::cache::{CachedObject, TypeMeta};
use kapi_registry::store::{CachedList, WrittenJson};
use serde_json::{json, Map, Value};

use super::chunked::Chunked;
use super::ctx::Ctx;
use super::list::list_options;
use kapi_http::negotiate::{Format, View};

/// Plain JSON objects whose stored bytes are what the client gets: not for a
/// resource stored at another version (its objects must be converted).
pub(super) fn fast_path_applies(ctx: &Ctx) -> bool {
    ctx.accept.view == View::Object
        && ctx.accept.format == Format::Json
        && ctx.entry.def.conversion.is_none()
}

/// The streamed response, or `None` when the normal path must answer.
pub async fn list_json(ctx: &Ctx) -> Result<Option<Response>, ApiError> {
    if !fast_path_applies(ctx) {
        return Ok(None);
    }
    let opts = list_options(ctx)?;
    let store = &ctx.entry.store;
    let Some(list) = store.list_cached(ctx.namespace(), &opts).await? else {
        return Ok(None);
    };
    let def = &ctx.entry.def;
    let head = list_head(&def.list_kind, &def.api_version(), &list);
    let type_meta = match def.list_items_carry_type() {
        true => TypeMeta::Keep,
        false => TypeMeta::Omit,
    };
    let store = store.clone();
    let chunks = Chunked::new(
        head,
        list.items,
        b"]}\n",
        |obj: &Arc<CachedObject>| obj.kv.value.len() + 48,
        move |i, obj, out| {
            if i > 0 {
                out.push(b',');
            }
            if !obj.write_json(obj.kv.mod_revision, type_meta, out) {
                // Not splicable (never for objects the store wrote): go the long way.
                let mut v = store.decode_value(&obj.kv).unwrap_or(Value::Null);
                if type_meta == TypeMeta::Omit {
                    kapi_registry::meta::remove_type_meta(&mut v);
                }
                serde_json::to_writer(out, &v).expect("JSON values serialize");
            }
        },
    )
    .prefetch(|obj| obj.prefetch_header(), |obj| obj.prefetch_value());
    let mut resp = Response::new(chunks.into_body());
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(Some(resp))
}

/// A GET from the cache as the object's bytes, or `None`.
pub async fn get_json(ctx: &Ctx) -> Result<Option<Response>, ApiError> {
    if !fast_path_applies(ctx) {
        return Ok(None);
    }
    let Some(obj) = cached_for_get(ctx).await? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(obj.kv.value.len() + 40);
    if !obj.write_json(obj.kv.mod_revision, TypeMeta::Keep, &mut out) {
        return Ok(None);
    }
    Ok(Some(object_response(StatusCode::OK, out)))
}

/// A write's answer from the JSON the store made of the written object (the
/// JSON the watch cache keeps of it), with its resourceVersion, as a GET from
/// the cache answers; `None` when the normal path must answer.
pub fn written_json(ctx: &Ctx, code: StatusCode, written: &WrittenJson) -> Option<Response> {
    if !fast_path_applies(ctx) {
        return None;
    }
    let mut out = Vec::with_capacity(written.json.len() + 40);
    kapi_registry::cache::write_json_with_rv(&written.json, written.revision, &mut out)
        .then(|| object_response(code, out))
}

/// One object's JSON `out` as the answer, ended by a newline as Go's encoder ends it.
fn object_response(code: StatusCode, mut out: Vec<u8>) -> Response {
    out.push(b'\n');
    let mut resp = Response::new(Body::from(out));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The cached object a GET reads (any fast path's encoding): at or after its
/// `resourceVersion`, or without one the latest (the cache caught up with
/// storage first); `None` when the normal path must answer.
pub async fn cached_for_get(ctx: &Ctx) -> Result<Option<Arc<CachedObject>>, ApiError> {
    let store = &ctx.entry.store;
    match ctx.query.non_empty("resourceVersion") {
        Some(rv) => {
            store
                .get_cached_object(ctx.namespace(), ctx.name(), rv)
                .await
        }
        None => {
            store
                .get_cached_object_latest(ctx.namespace(), ctx.name())
                .await
        }
    }
}

/// `{"kind":…,"apiVersion":…,"metadata":{…},"items":[`
fn list_head(kind: &str, api_version: &str, list: &CachedList) -> Vec<u8> {
    let mut meta = Map::new();
    meta.insert(
        "resourceVersion".into(),
        list.resource_version.clone().into(),
    );
    if let Some(c) = &list.continue_token {
        meta.insert("continue".into(), c.clone().into());
    }
    if let Some(n) = list.remaining {
        meta.insert("remainingItemCount".into(), n.into());
    }
    let head = json!({"kind": kind, "apiVersion": api_version, "metadata": meta});
    let mut out = serde_json::to_vec(&head).expect("JSON values serialize");
    out.pop(); // the closing brace
    out.extend_from_slice(b",\"items\":[");
    out
}
