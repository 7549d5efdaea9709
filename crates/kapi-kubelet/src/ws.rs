//! The WebSocket side of the streaming subresources: which subprotocol a
//! client offers, the server handshake answer, and the channel framing of
//! the `v4`/`v5.channel.k8s.io` protocols (one leading byte names the
//! channel: 0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize; in v5 a message
//! `[255, n]` closes channel `n`).

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

pub const V5_CHANNEL: &str = "v5.channel.k8s.io";
pub const V4_CHANNEL: &str = "v4.channel.k8s.io";
/// kubectl 1.31+ port-forward: SPDY frames carried in WebSocket messages.
pub const SPDY_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";

pub const STDIN: u8 = 0;
pub const STDOUT: u8 = 1;
pub const STDERR: u8 = 2;
pub const ERROR: u8 = 3;
pub const RESIZE: u8 = 4;
pub const CLOSE: u8 = 255;

pub type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Whether the request is a WebSocket upgrade.
pub fn is_websocket(h: &HeaderMap) -> bool {
    h.get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// The subprotocols the client offers, in its order.
pub fn offered(h: &HeaderMap) -> Vec<String> {
    h.get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Whether `protocol` is offered by a WebSocket upgrade request.
pub fn wants(h: &HeaderMap, protocol: &str) -> bool {
    is_websocket(h) && offered(h).iter().any(|p| p == protocol)
}

/// Accept a WebSocket upgrade with `protocol`: the `101` to answer with and
/// a future resolving to the socket once the client's connection is handed
/// over.
pub fn accept(
    req: &mut Request<Body>,
    protocol: &str,
) -> Result<
    (
        Response<Body>,
        impl std::future::Future<Output = Option<Socket>>,
    ),
    String,
> {
    let key = req
        .headers()
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or("missing Sec-WebSocket-Key")?
        .as_bytes()
        .to_vec();
    let on = hyper::upgrade::on(req);
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    let accept = HeaderValue::from_str(&derive_accept_key(&key)).map_err(|e| e.to_string())?;
    h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    let proto = HeaderValue::from_str(protocol).map_err(|e| e.to_string())?;
    h.insert(header::SEC_WEBSOCKET_PROTOCOL, proto);
    let socket = async move {
        let upgraded = on.await.ok()?;
        Some(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await)
    };
    Ok((resp, socket))
}

/// One channel message.
pub fn frame(channel: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(channel);
    out.extend_from_slice(data);
    out
}
