//! The protobuf fast path from the watch cache: each cached object's protobuf
//! message (or its `PartialObjectMetadata`'s) is encoded once per object version
//! and kept on the cached object (`kapi_registry::cache::Encoded`, under a
//! byte budget), and every LIST, GET and watcher that sends it reuses the bytes:
//! a LIST is the list head plus each item's bytes, streamed in chunks; a GET is
//! the bytes in an envelope; a watch event's frame is built once per event and
//! shared by every watcher that sees the event unchanged.
//!
//! Applies only where the stored JSON is what the client gets (no conversion)
//! and the cache answers; anything else goes the normal way (`negotiate.rs`).
//! The bytes are those of the normal path by construction
//! (`kapi_protobuf::parts`), checked by the `protobuf_fast_path` API test.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use kapi_machinery::status::ApiError;
use kapi_registry::cache::{CachedObject, Form};
use kapi_registry::store::{CachedSource, Written};
use kapi_registry::{ResourceDef, Store};
use kapi_storage::{KeyValue, Revision};
use serde_json::{Map, Value};

use super::chunked::Chunked;
use super::ctx::Ctx;
use super::list::list_options;
use kapi_http::negotiate::{self, Format, View};

/// What a protobuf client gets of each object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PbView {
    Object,
    Metadata,
}

impl PbView {
    /// The view for a request, when the fast path applies to it.
    pub fn of(ctx: &Ctx) -> Option<PbView> {
        if ctx.accept.format != Format::Protobuf || ctx.entry.def.conversion.is_some() {
            return None;
        }
        match ctx.accept.view {
            View::Object if negotiate::protobuf_kind(&ctx.entry.def) => Some(PbView::Object),
            View::PartialMetadata => Some(PbView::Metadata),
            _ => None,
        }
    }

    /// Whether the request wants the object itself in protobuf, the fast
    /// path applying.
    pub fn object_for(ctx: &Ctx) -> bool {
        PbView::of(ctx) == Some(PbView::Object)
    }

    fn form(self) -> Form {
        match self {
            PbView::Object => Form::Protobuf,
            PbView::Metadata => Form::MetadataProtobuf,
        }
    }

    /// `(apiVersion, kind)` of one item.
    fn item(self, def: &ResourceDef) -> (String, String) {
        match self {
            PbView::Object => (def.api_version(), def.kind.clone()),
            PbView::Metadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()),
        }
    }

    /// `(apiVersion, kind)` of a list.
    fn list(self, def: &ResourceDef) -> (String, String) {
        match self {
            PbView::Object => (def.api_version(), def.list_kind.clone()),
            PbView::Metadata => ("meta.k8s.io/v1".into(), "PartialObjectMetadataList".into()),
        }
    }
}

/// The object's message bytes in `view`, kept on the cached object.
fn item_bytes(store: &Store, view: PbView, obj: &CachedObject) -> Option<Bytes> {
    obj.encoded(view.form(), |kv| encode_item(store, view, kv, None))
}

/// The message bytes of a stored object, at its `mod_revision` or at `rv`.
fn encode_item(store: &Store, view: PbView, kv: &KeyValue, rv: Option<Revision>) -> Option<Bytes> {
    let mut value = store.decode_value(kv).ok()?;
    if let Some(rv) = rv {
        kapi_registry::meta::set_str(&mut value, "resourceVersion", &rv.to_string());
    }
    let value = match view {
        PbView::Object => value,
        PbView::Metadata => negotiate::partial(&value),
    };
    let (av, kind) = view.item(&store.def);
    let mut bytes = kapi_protobuf::encode_message(&av, &kind, &value).ok()?;
    // Kept bytes are counted against the budget by length: hold no more than that
    // (the encoder's buffer grows by doubling, up to twice the length).
    bytes.shrink_to_fit();
    Some(Bytes::from(bytes))
}

/// The streamed protobuf LIST, or `None` when the normal path must answer.
pub async fn list_protobuf(ctx: &Ctx) -> Result<Option<Response>, ApiError> {
    let Some(view) = PbView::of(ctx) else {
        return Ok(None);
    };
    let opts = list_options(ctx)?;
    let store = &ctx.entry.store;
    let Some(list) = store.list_cached(ctx.namespace(), &opts).await? else {
        return Ok(None);
    };
    let mut meta = Map::new();
    meta.insert("resourceVersion".into(), list.resource_version.into());
    if let Some(c) = list.continue_token {
        meta.insert("continue".into(), c.into());
    }
    if let Some(n) = list.remaining {
        meta.insert("remainingItemCount".into(), n.into());
    }
    let (av, list_kind) = view.list(&ctx.entry.def);
    let Ok(parts) = kapi_protobuf::list_parts(&av, &list_kind, &Value::Object(meta)) else {
        return Ok(None);
    };
    // Kept bytes are shared, not copied. An object past the budget is encoded
    // once here for its length (the envelope states the list's length up front)
    // and again when its turn comes: the response never holds more than a chunk
    // of unkept encodings, however long the list.
    let mut items = Vec::with_capacity(list.items.len());
    for obj in list.items.iter() {
        let Some(b) = item_bytes(store, view, obj) else {
            // The normal path reports what does not encode.
            return Ok(None);
        };
        items.push(match obj.kept(view.form()) {
            Some(_) => Item::Kept(b),
            None => Item::Again(obj.clone(), b.len()),
        });
    }
    let raw_len = parts.head.len()
        + items
            .iter()
            .map(|i| kapi_protobuf::item_key_len(parts.items_tag, i.len()) + i.len())
            .sum::<usize>();
    let mut head = kapi_protobuf::envelope_head(&av, &list_kind, raw_len);
    head.extend_from_slice(&parts.head);
    let tag = parts.items_tag;
    let store = store.clone();
    let chunks = Chunked::new(
        head,
        items,
        kapi_protobuf::ENVELOPE_TAIL,
        |item: &Item| item.len() + 16,
        move |_, item, out| {
            kapi_protobuf::put_item_key(out, tag, item.len());
            match item {
                Item::Kept(b) => out.extend_from_slice(b),
                Item::Again(obj, len) => write_again(&store, view, obj, *len, out),
            }
        },
    )
    .prefetch(
        |_| {},
        |item| {
            if let Item::Kept(b) = item {
                kapi_registry::cache::prefetch_bytes(b);
            }
        },
    );
    Ok(Some(protobuf_response(chunks.into_body())))
}

/// One item of a streamed protobuf LIST.
enum Item {
    /// Bytes kept with the cached object (shared).
    Kept(Bytes),
    /// An object whose bytes were not kept: encoded again when written; its length.
    Again(Arc<CachedObject>, usize),
}

impl Item {
    fn len(&self) -> usize {
        match self {
            Item::Kept(b) => b.len(),
            Item::Again(_, len) => *len,
        }
    }
}

/// Encode `obj` again into `out`. The encoding is a function of the cached
/// object, which never changes, so it has the length already announced; were it
/// ever not so, the item is padded or cut to that length rather than breaking
/// the framing of every item after it (and the error is logged).
fn write_again(store: &Store, view: PbView, obj: &CachedObject, len: usize, out: &mut Vec<u8>) {
    let bytes = item_bytes(store, view, obj).unwrap_or_default();
    if bytes.len() != len {
        tracing::error!(key = %obj.kv.key, "protobuf encoding changed length between passes");
    }
    let n = bytes.len().min(len);
    out.extend_from_slice(&bytes[..n]);
    out.resize(out.len() + (len - n), 0);
}

/// GET `?resourceVersion=…` from the cache as kept protobuf bytes, or `None`.
pub async fn get_protobuf(ctx: &Ctx) -> Result<Option<Response>, ApiError> {
    let Some(view) = PbView::of(ctx) else {
        return Ok(None);
    };
    let Some(obj) = super::json_fast::cached_for_get(ctx).await? else {
        return Ok(None);
    };
    let store = &ctx.entry.store;
    let Some(raw) = item_bytes(store, view, &obj) else {
        return Ok(None);
    };
    let (av, kind) = view.item(&ctx.entry.def);
    let body = kapi_protobuf::envelope(&av, &kind, &raw);
    Ok(Some(protobuf_response(Body::from(body))))
}

/// One watch frame of `event_type` for the cached object in `src`; the frame of
/// an event every watcher sees alike is built once and shared. `None` when the
/// object does not encode (the caller reports it the normal way).
pub fn watch_frame(
    store: &Store,
    view: PbView,
    event_type: &str,
    src: &CachedSource,
) -> Option<Bytes> {
    let build = || {
        // A deleted object is shown at the delete's revision: not the kept bytes.
        let raw = if src.revision == src.object.kv.mod_revision {
            item_bytes(store, view, &src.object)?
        } else {
            encode_item(store, view, &src.object.kv, Some(src.revision))?
        };
        let (av, kind) = view.item(&store.def);
        let enveloped = kapi_protobuf::envelope(&av, &kind, &raw);
        Some(Bytes::from(kapi_protobuf::watch_frame(
            event_type, &enveloped,
        )))
    };
    match &src.event {
        Some(e) => e.frame(view.form(), build),
        None => build(),
    }
}

/// A written object answered in protobuf straight from its stored bytes,
/// its `resourceVersion` spliced into its metadata
/// (`kapi_protobuf::with_resource_version`: the bytes encoding the decoded
/// object gives), when the client wants the object in protobuf and the
/// store did not decode it; `None` sends the answer the normal way.
pub(super) fn written_protobuf(ctx: &Ctx, code: StatusCode, written: &Written) -> Option<Response> {
    if !PbView::object_for(ctx) {
        return None;
    }
    let kv = written.stored()?;
    let rv = kv.mod_revision.to_string();
    let bytes = kapi_protobuf::with_resource_version(&kv.value, &rv)?;
    let mut resp = protobuf_response(Body::from(bytes));
    *resp.status_mut() = code;
    Some(resp)
}

fn protobuf_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(kapi_protobuf::MEDIA_TYPE),
    );
    resp
}
