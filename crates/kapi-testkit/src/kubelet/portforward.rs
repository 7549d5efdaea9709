//! `/portForward/<ns>/<pod>`: over SPDY (`portforward.k8s.io`: an error and a
//! data stream per connection, named by `port` and `requestID` headers) and
//! over WebSocket (`v4.channel.k8s.io`: channels 2i and 2i+1 for the i-th
//! `port` parameter, each opened by the port number, little-endian). Every
//! forwarded port echoes what it receives.

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use kapi_kubelet::spdy::{headers, Session};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::exec::spdy_upgrade;
use super::{query, text, Body};

pub async fn serve(mut req: Request<Incoming>) -> Response<Body> {
    let ws = req
        .headers()
        .get(hyper::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        == Some("websocket");
    if ws {
        return websocket(req);
    }
    let resp = match spdy_upgrade(&req, "portforward.k8s.io") {
        Ok(r) => r,
        Err(r) => return r,
    };
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(up) = upgrade.await else { return };
        let (_session, mut incoming) = Session::start(TokioIo::new(up), true);
        while let Some(mut stream) = incoming.recv().await {
            if stream.reply().await.is_err() {
                return;
            }
            if headers::get(&stream.headers, "streamtype") != Some("data") {
                let _ = stream.finish().await;
                continue;
            }
            tokio::spawn(async move {
                while let Some(chunk) = stream.recv().await {
                    if stream.send(chunk).await.is_err() {
                        return;
                    }
                }
                let _ = stream.finish().await;
            });
        }
    });
    resp
}

fn websocket(mut req: Request<Incoming>) -> Response<Body> {
    let ports: Vec<u16> = query(&req)
        .into_iter()
        .filter(|(k, _)| k == "port")
        .filter_map(|(_, v)| v.parse().ok())
        .collect();
    let offered = req
        .headers()
        .get(hyper::header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !offered.split(',').any(|p| p.trim() == "v4.channel.k8s.io") || ports.is_empty() {
        return text(StatusCode::BAD_REQUEST, "unsupported port-forward request");
    }
    let Some(key) = req
        .headers()
        .get(hyper::header::SEC_WEBSOCKET_KEY)
        .map(|k| derive_accept_key(k.as_bytes()))
    else {
        return text(StatusCode::BAD_REQUEST, "missing key");
    };
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(up) = upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(up), Role::Server, None).await;
        let (mut sink, mut source) = ws.split();
        for (i, port) in ports.iter().enumerate() {
            for ch in [2 * i as u8, 2 * i as u8 + 1] {
                let mut m = vec![ch];
                m.extend_from_slice(&port.to_le_bytes());
                if sink.send(Message::binary(m)).await.is_err() {
                    return;
                }
            }
        }
        while let Some(Ok(msg)) = source.next().await {
            match msg {
                Message::Binary(b) if b.first().is_some_and(|c| c % 2 == 0) && b.len() > 1 => {
                    let echo = Message::binary(Bytes::copy_from_slice(&b));
                    if sink.send(echo).await.is_err() {
                        return;
                    }
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = sink.close().await;
    });
    let mut r = text(StatusCode::SWITCHING_PROTOCOLS, "");
    let h = r.headers_mut();
    h.remove(hyper::header::CONTENT_TYPE);
    h.insert(hyper::header::CONNECTION, "Upgrade".parse().unwrap());
    h.insert(hyper::header::UPGRADE, "websocket".parse().unwrap());
    h.insert(hyper::header::SEC_WEBSOCKET_ACCEPT, key.parse().unwrap());
    h.insert(
        hyper::header::SEC_WEBSOCKET_PROTOCOL,
        "v4.channel.k8s.io".parse().unwrap(),
    );
    r
}
