//! Port-forward over WebSocket as kubectl 1.31+ does it: the client speaks
//! SPDY (`portforward.k8s.io`) inside WebSocket binary messages
//! (`SPDY/3.1+portforward.k8s.io`); the API server upgrades to the kubelet
//! with plain SPDY and moves the bytes between the messages and the
//! kubelet's connection, without parsing them (upstream's tunneling handler).
//!
//! Invariants: the client's WebSocket is only accepted once the kubelet
//! has switched protocols, so a kubelet that refuses answers the client
//! with the kubelet's own error (and kubectl falls back to SPDY); either side
//! closing ends both.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, Request, Response};
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use kapi_machinery::status::{ApiError, Reason};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use crate::forward;
use crate::location::Location;
use crate::throttle::{self, Limiter};
use crate::transport::Transport;
use crate::ws;

pub async fn tunnel(
    t: Arc<Transport>,
    loc: Location,
    path: String,
    mut req: Request<Body>,
) -> Result<Response<Body>, ApiError> {
    let mut h = forward::outgoing_headers(req.headers(), &loc, false);
    for k in [
        header::SEC_WEBSOCKET_KEY,
        header::SEC_WEBSOCKET_PROTOCOL,
        header::SEC_WEBSOCKET_VERSION,
        header::SEC_WEBSOCKET_EXTENSIONS,
    ] {
        h.remove(k);
    }
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    h.insert(
        "x-stream-protocol-version",
        HeaderValue::from_static("portforward.k8s.io"),
    );
    let out = forward::request(Method::POST, &path, h, Body::empty())?;
    let timeout = Some(t.config.timeout);
    let mut resp = forward::send(&t, &loc, out, timeout)
        .await
        .map_err(|e| ApiError::new(500, Reason::Unknown, format!("error dialing backend: {e}")))?;
    if resp.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
        return Ok(forward::relay(resp));
    }
    let backend = hyper::upgrade::on(&mut resp);
    let (answer, socket) = ws::accept(&mut req, ws::SPDY_TUNNEL).map_err(ApiError::bad_request)?;
    let rate = t.config.max_bytes_per_sec;
    tokio::spawn(async move {
        let (Some(socket), Ok(backend)) = (socket.await, backend.await) else {
            return;
        };
        pipe(socket, TokioIo::new(backend), rate).await;
    });
    Ok(answer)
}

async fn pipe(socket: ws::Socket, backend: TokioIo<hyper::upgrade::Upgraded>, rate: u64) {
    let (mut sink, mut source) = socket.split();
    let (mut rd, mut wr) = tokio::io::split(backend);
    let (mut up_limit, mut down_limit) = (Limiter::of(rate), Limiter::of(rate));
    let up = async {
        while let Some(Ok(msg)) = source.next().await {
            match msg {
                Message::Binary(b) => {
                    if wr.write_all(&b).await.is_err() {
                        break;
                    }
                    throttle::pass(&mut up_limit, b.len()).await;
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = wr.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sink.send(Message::binary(buf[..n].to_vec())).await.is_err() {
                        break;
                    }
                    throttle::pass(&mut down_limit, n).await;
                }
            }
        }
        let close = CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        };
        let _ = sink.send(Message::Close(Some(close))).await;
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}
