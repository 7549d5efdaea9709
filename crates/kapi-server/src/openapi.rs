//! OpenAPI over HTTP: `/openapi/v2` (JSON; the protobuf form kubectl asks for
//! first is answered 406 so it falls back), `/openapi/v3` (the index) and
//! `/openapi/v3/{path}` with `ETag` and immutable caching when `?hash=` matches,
//! as upstream. The documents are built in `kapi_resources::openapi`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use kapi_machinery::status::ApiError;

use crate::negotiate::{self, error_response, Format};
use crate::Server;

fn bytes_response(bytes: Vec<u8>, etag: &str, req: &Request, immutable: bool) -> Response {
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
        Response::new(Body::from(bytes))
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::from_str(&quoted) {
        h.insert(header::ETAG, v);
    }
    let cache = if immutable {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    resp
}

fn wants_only_protobuf(req: &Request) -> bool {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    !accept.is_empty()
        && accept.split(',').all(|a| {
            let a = a.trim();
            a.starts_with("application/com.github.proto-openapi") || a.contains("protobuf")
        })
}

pub async fn v2(State(srv): State<Arc<Server>>, req: Request) -> Response {
    if wants_only_protobuf(&req) {
        return error_response(&ApiError::not_acceptable_types(&["application/json"]));
    }
    let (bytes, etag) = srv.openapi.v2_json();
    bytes_response(bytes, &etag, &req, false)
}

pub async fn v3_index(State(srv): State<Arc<Server>>) -> Response {
    negotiate::respond(StatusCode::OK, &srv.openapi.v3_index(), Format::Json)
}

pub async fn v3_document(
    State(srv): State<Arc<Server>>,
    Path(path): Path<String>,
    req: Request,
) -> Response {
    match srv.openapi.v3_document(&path) {
        Some((bytes, hash)) => {
            let query = crate::request::Query::parse(req.uri().query());
            let immutable = query.get("hash") == Some(hash.as_str());
            bytes_response(bytes, &hash, &req, immutable)
        }
        None => error_response(&crate::handlers::not_found()),
    }
}
