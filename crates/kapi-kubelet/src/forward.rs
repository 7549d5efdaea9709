//! Sending a request to a destination and giving its answer back: plain
//! HTTP (streamed both ways, never buffered whole) and protocol upgrades
//! (the destination's `101` handed to the client, then bytes piped both
//! ways until either side closes), as upstream's `UpgradeAwareHandler`.
//!
//! Invariants: the client's credentials (`Authorization`, `Impersonate-*`)
//! and hop-by-hop headers never reach the destination; a piped upgrade holds
//! no buffer beyond the copy's own, so a peer that stops reading stalls the
//! other side instead of growing memory; both directions end when either
//! side closes its half and the other finishes.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use kapi_machinery::status::{ApiError, Reason};

use crate::location::Location;
use crate::transport::{authority, DialError, Transport};

/// Headers that describe one hop, not the message.
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether the request asks for a protocol upgrade.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
        })
        && headers.contains_key(header::UPGRADE)
}

/// The headers sent on: the client's minus credentials (and minus
/// hop-by-hop ones unless the request is an upgrade, which needs them).
pub fn outgoing_headers(from: &HeaderMap, loc: &Location, upgrade: bool) -> HeaderMap {
    let mut h = from.clone();
    let drop: Vec<_> = h
        .keys()
        .filter(|k| {
            k.as_str().starts_with("impersonate-") || (!upgrade && HOP_BY_HOP.contains(&k.as_str()))
        })
        .cloned()
        .collect();
    for k in drop {
        h.remove(k);
    }
    h.remove(header::AUTHORIZATION);
    if let Ok(v) = HeaderValue::from_str(&authority(&loc.host, loc.port_or_default())) {
        h.insert(header::HOST, v);
    }
    h
}

/// Go's wording of a dial failure (`dial tcp 10.0.0.5:10250: connect: connection refused`).
pub fn dial_message(e: &DialError) -> String {
    match e {
        DialError::Connect(addr, io) => {
            let what = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_owned(),
                std::io::ErrorKind::TimedOut => "i/o timeout".to_owned(),
                _ => io.to_string(),
            };
            format!("dial tcp {addr}: {what}")
        }
        other => other.to_string(),
    }
}

/// Why a request to a destination failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("{}", dial_message(.0))]
    Dial(#[from] DialError),
    #[error("{0}")]
    Http(String),
    #[error("net/http: timeout awaiting response headers")]
    Timeout,
}

/// Send `req` (URI already the destination's path and query) to `loc`.
/// `header_timeout` bounds the wait for the response head.
pub async fn send(
    t: &Transport,
    loc: &Location,
    req: hyper::Request<Body>,
    header_timeout: Option<std::time::Duration>,
) -> Result<hyper::Response<Incoming>, SendError> {
    let io = t
        .connect(&loc.host, loc.port_or_default(), loc.https, loc.kubelet)
        .await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| SendError::Http(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "destination connection ended");
        }
    });
    let fut = sender.send_request(req);
    let resp = match header_timeout {
        Some(d) => tokio::time::timeout(d, fut)
            .await
            .map_err(|_| SendError::Timeout)?,
        None => fut.await,
    };
    resp.map_err(|e| SendError::Http(e.to_string()))
}

/// Build the request to a destination.
pub fn request(
    method: Method,
    path_and_query: &str,
    headers: HeaderMap,
    body: Body,
) -> Result<hyper::Request<Body>, ApiError> {
    let mut req = hyper::Request::new(body);
    *req.method_mut() = method;
    *req.uri_mut() = path_and_query
        .parse()
        .map_err(|e| ApiError::bad_request(format!("invalid path {path_and_query:?}: {e}")))?;
    *req.headers_mut() = headers;
    Ok(req)
}

/// A response from a destination, given back with hop-by-hop headers removed
/// and the body streamed.
pub fn relay(resp: hyper::Response<Incoming>) -> Response<Body> {
    let (mut parts, body) = resp.into_parts();
    for h in HOP_BY_HOP {
        parts.headers.remove(*h);
    }
    Response::from_parts(parts, Body::new(body))
}

/// Proxy an upgrade request: forward it, and on `101` pipe the two upgraded
/// connections; any other answer goes back to the client as it is.
pub async fn upgrade(
    t: &Transport,
    loc: &Location,
    path_and_query: &str,
    mut req: Request<Body>,
    header_timeout: Option<std::time::Duration>,
) -> Result<Response<Body>, ApiError> {
    let client = hyper::upgrade::on(&mut req);
    let (parts, body) = req.into_parts();
    let headers = outgoing_headers(&parts.headers, loc, true);
    let out = request(parts.method, path_and_query, headers, body)?;
    let mut resp = send(t, loc, out, header_timeout)
        .await
        .map_err(|e| ApiError::new(500, Reason::Unknown, format!("error dialing backend: {e}")))?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        return Ok(relay(resp));
    }
    let backend = hyper::upgrade::on(&mut resp);
    let (parts, _) = resp.into_parts();
    let rate = t.config.max_bytes_per_sec;
    tokio::spawn(async move {
        let (Ok(c), Ok(b)) = (client.await, backend.await) else {
            return;
        };
        let (mut c, mut b) = (TokioIo::new(c), TokioIo::new(b));
        let done = if rate > 0 {
            crate::throttle::copy_bidirectional(c, b, rate).await
        } else {
            tokio::io::copy_bidirectional(&mut c, &mut b)
                .await
                .map(|_| ())
        };
        if let Err(e) = done {
            tracing::debug!(error = %e, "upgraded connection ended");
        }
    });
    Ok(Response::from_parts(parts, Body::empty()))
}

/// A plain-text answer as Go's `http.Error` writes it.
pub fn plain(code: StatusCode, msg: &str) -> Response<Body> {
    let mut resp = Response::new(Body::from(msg.to_owned()));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
