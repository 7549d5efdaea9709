//! The stream translator: a WebSocket `v5.channel.k8s.io` client (kubectl
//! 1.30+) executing or attaching through a kubelet that speaks SPDY, as
//! upstream's `TranslatingHandler`. The client's WebSocket is accepted first;
//! the API server then runs a SPDY `v4.channel.k8s.io` client against the
//! kubelet and moves each channel's bytes between the two.
//!
//! Invariants: stdout and stderr are relayed in the order the kubelet sends
//! them, and the error channel's status (the exit code) only after both have
//! ended, then the WebSocket is closed; a failure to reach the kubelet is a
//! `Status` on the error channel, as upstream reports it; when the client
//! goes away the SPDY session is shut down, which ends the kubelet's side.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, Response};
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use kapi_machinery::status::ApiError;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use crate::forward;
use crate::location::Location;
use crate::spdy::{Session, Stream};
use crate::throttle;
use crate::transport::Transport;
use crate::ws::{self, Socket};

/// Which standard streams the client asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

/// Accept the client's WebSocket and translate it to SPDY against the
/// kubelet at `loc` / `path`.
pub fn translate(
    t: Arc<Transport>,
    loc: Location,
    path: String,
    streams: Streams,
    mut req: Request<Body>,
) -> Result<Response<Body>, ApiError> {
    let (resp, socket) = ws::accept(&mut req, ws::V5_CHANNEL).map_err(ApiError::bad_request)?;
    tokio::spawn(async move {
        if let Some(socket) = socket.await {
            run(t, loc, path, streams, socket).await;
        }
    });
    Ok(resp)
}

/// The SPDY upgrade to the kubelet.
pub async fn spdy_upgrade(
    t: &Transport,
    loc: &Location,
    path: &str,
    protocol: &str,
) -> Result<Session, String> {
    let mut h = HeaderMap::new();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    let proto = HeaderValue::from_str(protocol).map_err(|e| e.to_string())?;
    h.insert("x-stream-protocol-version", proto);
    let host = crate::transport::authority(&loc.host, loc.port_or_default());
    h.insert(
        header::HOST,
        HeaderValue::from_str(&host).map_err(|e| e.to_string())?,
    );
    let req = forward::request(Method::POST, path, h, Body::empty()).map_err(|e| e.message)?;
    let timeout = Some(t.config.timeout);
    let mut resp = forward::send(t, loc, req, timeout)
        .await
        .map_err(|e| format!("error dialing backend: {e}"))?;
    if resp.status() != hyper::StatusCode::SWITCHING_PROTOCOLS {
        let status = resp.status();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .map(|b| b.to_bytes());
        let text = body
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default();
        return Err(format!(
            "unable to upgrade connection: {}",
            if text.is_empty() {
                status.to_string()
            } else {
                text
            }
        ));
    }
    let upgraded = hyper::upgrade::on(&mut resp)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Session::start(TokioIo::new(upgraded), false).0)
}

/// A normal closure: Go's WebSocket client reports any other close
/// (including one without a code) as an error of the stream it was reading.
fn normal_close() -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

fn failure(message: &str) -> Vec<u8> {
    let status = serde_json::json!({
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "InternalError",
        "code": 500,
    });
    ws::frame(ws::ERROR, status.to_string().as_bytes())
}

async fn open(session: &Session, kind: &str) -> Result<Stream, String> {
    session
        .open(vec![("streamType".into(), kind.into())])
        .await
        .map_err(|e| e.to_string())
}

struct Opened {
    error: Stream,
    stdin: Option<Stream>,
    stdout: Option<Stream>,
    stderr: Option<Stream>,
    resize: Option<Stream>,
}

async fn open_all(session: &Session, s: Streams) -> Result<Opened, String> {
    let error = open(session, "error").await?;
    let maybe = |on: bool, kind: &'static str| async move {
        if on {
            open(session, kind).await.map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(Opened {
        error,
        stdin: maybe(s.stdin, "stdin").await?,
        stdout: maybe(s.stdout, "stdout").await?,
        stderr: maybe(s.stderr, "stderr").await?,
        resize: maybe(s.tty, "resize").await?,
    })
}

async fn run(t: Arc<Transport>, loc: Location, path: String, streams: Streams, socket: Socket) {
    let (mut sink, source) = socket.split();
    let session = match spdy_upgrade(&t, &loc, &path, ws::V4_CHANNEL).await {
        Ok(s) => s,
        Err(msg) => {
            let _ = sink.send(Message::binary(failure(&msg))).await;
            let _ = sink.send(normal_close()).await;
            return;
        }
    };
    let opened = match open_all(&session, streams).await {
        Ok(o) => o,
        Err(msg) => {
            let _ = sink.send(Message::binary(failure(&msg))).await;
            let _ = sink.send(normal_close()).await;
            session.shutdown().await;
            return;
        }
    };
    let (tx, mut rx) = mpsc::channel::<Message>(16);
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            let close = matches!(m, Message::Close(_));
            if sink.send(m).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let rate = t.config.max_bytes_per_sec;
    let input = tokio::spawn(client_input(
        source,
        opened.stdin,
        opened.resize,
        session.clone(),
        rate,
    ));
    let out = relay(opened.stdout, ws::STDOUT, tx.clone(), rate);
    let err = relay(opened.stderr, ws::STDERR, tx.clone(), rate);
    let mut error = opened.error;
    let status = async {
        let mut all = Vec::new();
        while let Some(chunk) = error.recv().await {
            all.extend_from_slice(&chunk);
        }
        all
    };
    let (_, _, status) = tokio::join!(out, err, status);
    if !status.is_empty() {
        let _ = tx
            .send(Message::binary(ws::frame(ws::ERROR, &status)))
            .await;
    }
    let _ = tx.send(normal_close()).await;
    drop(tx);
    let _ = writer.await;
    input.abort();
    session.shutdown().await;
}

async fn relay(stream: Option<Stream>, channel: u8, tx: mpsc::Sender<Message>, rate: u64) {
    let Some(mut stream) = stream else { return };
    let mut limit = throttle::Limiter::of(rate);
    while let Some(chunk) = stream.recv().await {
        throttle::pass(&mut limit, chunk.len()).await;
        if tx
            .send(Message::binary(ws::frame(channel, &chunk)))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The client's messages: stdin data and its close, terminal sizes.
async fn client_input(
    mut source: futures::stream::SplitStream<Socket>,
    stdin: Option<Stream>,
    resize: Option<Stream>,
    session: Session,
    rate: u64,
) {
    let mut limit = throttle::Limiter::of(rate);
    while let Some(Ok(msg)) = source.next().await {
        let data: Bytes = match msg {
            Message::Binary(b) => b,
            Message::Close(_) => break,
            _ => continue,
        };
        let (channel, rest) = match data.first() {
            Some(c) => (*c, data.slice(1..)),
            None => continue,
        };
        let target = match channel {
            ws::STDIN => stdin.as_ref(),
            ws::RESIZE => resize.as_ref(),
            ws::CLOSE => {
                if rest.first() == Some(&ws::STDIN) {
                    if let Some(s) = &stdin {
                        let _ = s.finish().await;
                    }
                }
                continue;
            }
            _ => None,
        };
        if let Some(s) = target {
            throttle::pass(&mut limit, rest.len()).await;
            if s.send(rest).await.is_err() {
                break;
            }
        }
    }
    session.shutdown().await;
}
