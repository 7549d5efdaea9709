//! OpenAPI over HTTP: `/openapi/v2` (JSON, or gnostic protobuf when the Accept
//! header prefers it, as kubectl up to 1.2x asks), `/openapi/v3` (the index) and
//! `/openapi/v3/{path}` with `ETag` and immutable caching when `?hash=` matches,
//! as upstream (`kube-openapi/pkg/handler`). The documents are built in
//! `kapi_resources::openapi`; the protobuf encoding is `openapi_pb.rs`.
//!
//! Invariants: both forms of the v2 document carry the JSON's ETag (upstream
//! does the same) and `Vary: Accept`; the protobuf is encoded once per ETag
//! and cached in [`v2_protobuf`], never per request.

use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use crate::server::Server;
use kapi_http::negotiate::{self, error_response, Format};

/// The media types of the protobuf form (upstream's current and deprecated).
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn bytes_response(
    bytes: impl Into<Body>,
    etag: &str,
    req: &Request,
    immutable: bool,
    content_type: &'static str,
) -> Response {
    let quoted = format!("\"{etag}\"");
    let matches = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == quoted);
    let mut resp = if matches {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(bytes.into())
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&quoted) {
        h.insert(header::ETAG, v);
    }
    // A document under its hash may be cached by anyone; the others take the
    // filter chain's `no-cache, private`.
    if immutable {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
    }
    resp
}

/// Whether the Accept header prefers the protobuf form: the first clause (by
/// `q`, then order) naming JSON, protobuf or a wildcard decides, JSON winning
/// wildcards as upstream; no such clause (or no header) means JSON.
fn prefers_protobuf(req: &Request) -> bool {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mut clauses: Vec<(f32, &str)> = accept
        .split(',')
        .map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse().ok())
                .unwrap_or(1.0);
            (q, media)
        })
        .filter(|(q, _)| *q > 0.0)
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    clauses
        .iter()
        .find_map(|(_, media)| match *media {
            "application/json" | "application/*" | "*/*" => Some(false),
            PROTOBUF | PROTOBUF_DEPRECATED => Some(true),
            _ => None,
        })
        .unwrap_or(false)
}

/// The protobuf form of the v2 document: encoded on first use, then cached
/// until the JSON's ETag changes (a server with other resources).
fn v2_protobuf(srv: &Server) -> (Arc<[u8]>, String) {
    static CACHE: Mutex<Option<(String, Arc<[u8]>)>> = Mutex::new(None);
    let api = srv.openapi();
    let (json, etag) = api.v2_shared();
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((cached_etag, pb)) = cache.as_ref() {
        if cached_etag == etag {
            return (pb.clone(), etag.to_string());
        }
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&json).expect("the v2 document is JSON we rendered");
    let pb: Arc<[u8]> = crate::openapi_pb::encode_document(&doc).into();
    *cache = Some((etag.to_string(), pb.clone()));
    (pb, etag.to_string())
}

pub async fn v2(State(srv): State<Arc<Server>>, req: Request) -> Response {
    let api = srv.openapi();
    if let Some(merged) = srv
        .remote
        .as_ref()
        .and_then(|r| r.merged_v2(&api.v2_shared().0))
    {
        // Remote servers publish documents too: the merged one (JSON only).
        let etag = kapi_resources::openapi::hash(&merged);
        let mut resp = bytes_response(merged, &etag, &req, false, "application/json");
        resp.headers_mut()
            .insert(header::VARY, HeaderValue::from_static("Accept"));
        return resp;
    }
    let mut resp = if prefers_protobuf(&req) {
        let (pb, etag) = v2_protobuf(&srv);
        let body = Body::from(bytes::Bytes::from_owner(pb));
        bytes_response(body, &etag, &req, false, PROTOBUF)
    } else {
        let api = srv.openapi();
        let (json, etag) = api.v2_shared();
        let body = Body::from(bytes::Bytes::from_owner(json));
        bytes_response(body, etag, &req, false, "application/json")
    };
    resp.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    resp
}

pub async fn v3_index(State(srv): State<Arc<Server>>) -> Response {
    let mut index = srv.openapi().v3_index();
    if let Some(remote) = &srv.remote {
        remote.extend_v3_index(&mut index);
    }
    negotiate::respond(StatusCode::OK, &index, Format::Json)
}

pub async fn v3_document(
    State(srv): State<Arc<Server>>,
    Path(path): Path<String>,
    req: Request,
) -> Response {
    match srv.openapi().v3_document(&path) {
        Some((bytes, hash)) => {
            let query = kapi_http::request::Query::parse(req.uri().query());
            let immutable = query.get("hash") == Some(hash.as_str());
            bytes_response(bytes, &hash, &req, immutable, "application/json")
        }
        None => match srv.remote.as_ref().and_then(|r| r.v3_document(&path)) {
            Some((bytes, hash)) => {
                let query = kapi_http::request::Query::parse(req.uri().query());
                let immutable = query.get("hash") == Some(hash.as_str());
                bytes_response(bytes, &hash, &req, immutable, "application/json")
            }
            None => error_response(&kapi_http::request::not_found()),
        },
    }
}
