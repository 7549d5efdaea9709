//! WATCH: newline-delimited `WatchEvent` JSON over a chunked response, or with a
//! protobuf `Accept` length-prefixed protobuf `WatchEvent` frames. Events come
//! from the store's watch, polled by the response body itself (no task in
//! between); JSON lines and protobuf frames of cached events are encoded once
//! per event and shared by every watcher (`pb_fast.rs` for protobuf); with
//! `as=Table` each object becomes a one-row Table (column definitions on the
//! first), as kubectl `get -w` expects. `sendInitialEvents` is refused unless
//! the `WatchList` feature gate is on (off by default in 1.33). The stream ends after `timeoutSeconds`,
//! or without it after a random time between `--min-request-timeout` and twice
//! that (upstream's spread), and — cleanly, as a finished response — when the
//! server stops accepting requests at shutdown.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use kapi_machinery::status::ApiError;
use kapi_registry::store::options::WatchOptions;
use kapi_registry::store::{WatchEvent, WatchEventType};
use serde_json::{json, Map};

use super::ctx::Ctx;
use super::list::query_options;
use super::pb_fast::{self, PbView};
use kapi_http::negotiate::{self, Format, IncludeObject, View};

pub async fn watch(ctx: Ctx) -> Result<Response, ApiError> {
    let o = query_options(&ctx, true)?;
    let pb_view = PbView::of(&ctx);
    let timeout = match o.timeout_seconds {
        Some(secs) => Duration::from_secs(secs.max(0) as u64),
        None => ctx
            .srv
            .config
            .min_request_timeout
            .mul_f64(1.0 + rand::random::<f64>()),
    };
    let opts = WatchOptions {
        label: o.label,
        field: o.field,
        resource_version: ctx.query.get("resourceVersion").map(str::to_owned),
        rv_match: o.rv_match,
        allow_bookmarks: ctx.query.flag("allowWatchBookmarks"),
        send_initial_events: o.send_initial_events,
        encoded_json: ctx.accept.view == View::Object && ctx.accept.format == Format::Json,
        cached_objects: pb_view.is_some(),
        timeout: Some(timeout),
    };
    let include = IncludeObject::parse(ctx.query.get("includeObject"))?;
    let rx = ctx.entry.store.watch(ctx.namespace(), &opts).await?;
    let store = ctx.entry.store.clone();
    let def = ctx.entry.def.clone();
    let view = ctx.accept.view;
    let format = ctx.accept.format;
    let mut first = true;
    let lines = rx.map(move |ev: WatchEvent| {
        if let Some(line) = ev.json {
            return Ok(line);
        }
        let mut ev = ev;
        if let (Some(src), Some(view)) = (&ev.cached, pb_view) {
            if let Some(frame) = pb_fast::watch_frame(&store, view, ev.kind.as_str(), src) {
                return Ok(frame);
            }
        }
        if let Some(src) = ev.cached.take() {
            // Not encodable the fast way: the normal way reports why.
            ev.object = match store.decode_value(&src.object.kv) {
                Ok(mut v) => {
                    let rv = src.revision.to_string();
                    kapi_registry::meta::set_str(&mut v, "resourceVersion", &rv);
                    v
                }
                Err(e) => {
                    return Ok(bytes::Bytes::from(frame(format, "ERROR", e.to_status())));
                }
            };
        }
        let object = match (view, ev.kind) {
            (
                View::Table,
                WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted,
            ) => {
                let mut meta = Map::new();
                if let Some(rv) = kapi_registry::meta::resource_version(&ev.object) {
                    meta.insert("resourceVersion".into(), rv.into());
                }
                let t =
                    negotiate::table(&def, std::slice::from_ref(&ev.object), meta, include, first);
                first = false;
                t
            }
            (
                View::PartialMetadata,
                WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted,
            ) => negotiate::partial(&ev.object),
            _ => ev.object,
        };
        Ok::<_, std::convert::Infallible>(bytes::Bytes::from(frame(
            format,
            ev.kind.as_str(),
            object,
        )))
    });
    let shutdown = ctx.lifecycle.as_ref().map(|lc| lc.not_accepting());
    let end = async move {
        match shutdown {
            Some(stopped) => tokio::select! {
                () = tokio::time::sleep(timeout) => {}
                () = stopped => {}
            },
            None => tokio::time::sleep(timeout).await,
        }
    };
    let stream = lines.take_until(end);
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::OK;
    let content_type = match format {
        Format::Protobuf => kapi_protobuf::WATCH_MEDIA_TYPE,
        _ => "application/json",
    };
    // `Cache-Control: no-cache, private` comes from the filter chain.
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

/// One event on the wire: a JSON line, or a protobuf frame.
fn frame(format: Format, kind: &str, object: serde_json::Value) -> Vec<u8> {
    if format == Format::Protobuf {
        match kapi_protobuf::encode_watch_frame(kind, &object) {
            Ok(f) => return f,
            Err(e) => {
                tracing::error!(error = %e, "protobuf encoding of a watch event failed");
                let status = ApiError::internal(format!("unable to encode the event: {e}"));
                if let Ok(f) = kapi_protobuf::encode_watch_frame("ERROR", &status.to_status()) {
                    return f;
                }
            }
        }
    }
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object}))
        .expect("JSON values serialize");
    line.push(b'\n');
    line
}
