//! `GRPC`: konnectivity's `ProxyService` over a unix socket, as
//! kube-apiserver's konnectivity client uses it (one gRPC connection and one
//! `Proxy` stream per dial, its "single-use tunnel").
//!
//! A dial: connect to the socket (at most [`CONNECT_TIMEOUT`]), send
//! `DIAL_REQ {tcp, host:port, random}`, wait (at most [`DIAL_TIMEOUT`]) for
//! the `DIAL_RSP` carrying that random — its `error`, when set, is the dial's
//! error as upstream returns it; else its `connectID` names the connection.
//! The caller then gets one end of an in-memory pipe; [`Tunnel`] carries the
//! other: bytes written become `DATA {connectID}` packets, `DATA` received is
//! what the caller reads. When the caller closes (or shuts down writing),
//! `CLOSE_REQ {connectID}` goes out and the tunnel ends at `CLOSE_RSP` or
//! [`CLOSE_TIMEOUT`] later.
//!
//! As upstream's client: a `DIAL_RSP` for another random, or `DIAL_CLS`,
//! ends the tunnel (the dial fails with "tunnel closed" / "dial closed"); a
//! `DATA` packet without data is the end of what the caller reads (Go's
//! client returns EOF on it); `DATA` for another connection is ignored; a
//! caller that leaves received data unread for [`READ_TIMEOUT`] loses the
//! tunnel; at the dial timeout `DIAL_CLS {random}` is sent before giving up.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tonic::transport::{Endpoint, Uri};
use tonic::Streaming;

use crate::{BoxIo, Dialer};

/// The generated `ProxyService` messages, client and server.
pub mod proto {
    tonic::include_proto!("_");
}

use proto::proxy_service_client::ProxyServiceClient;
use proto::{packet::Payload, Packet, PacketType};

/// Upstream's gRPC dial timeout to the socket (`grpc.WithTimeout(30s)`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long upstream waits for `DIAL_RSP` ("dial timeout, backstop").
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long upstream waits for `CLOSE_RSP` after `CLOSE_REQ`.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long received data may wait for the caller to read it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The pipe between the caller and the tunnel.
const PIPE: usize = 64 * 1024;

/// A konnectivity server on the unix socket `path`, as a [`Dialer`].
#[derive(Clone)]
pub struct Konnectivity {
    path: PathBuf,
}

impl Konnectivity {
    pub fn uds(path: &str) -> Konnectivity {
        Konnectivity {
            path: PathBuf::from(path),
        }
    }

    async fn client(&self) -> io::Result<ProxyServiceClient<tonic::transport::Channel>> {
        let path = self.path.clone();
        // The URI only fills the requests' authority; the connector dials the socket.
        let endpoint = Endpoint::from_static("http://localhost");
        let connect = endpoint.connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(&path)
                    .await
                    .map(TokioIo::new)
            }
        }));
        let path = self.path.display().to_string();
        let channel = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                let cause = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("dial unix {path}: connect: {cause}"),
                ));
            }
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("dial unix {path}: context deadline exceeded"),
                ))
            }
        };
        Ok(ProxyServiceClient::new(channel))
    }
}

#[async_trait::async_trait]
impl Dialer for Konnectivity {
    async fn dial(&self, host: &str, port: u16) -> io::Result<BoxIo> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let address = crate::connect::join_host_port(host, port);
        let mut client = self.client().await?;
        let random = random_id();
        let (tx, rx) = mpsc::channel::<Packet>(16);
        // Queued before the call: a Go server sends its response headers
        // with its first message, which is the answer to this one.
        send(
            &tx,
            packet(
                PacketType::DialReq,
                Payload::DialRequest(proto::DialRequest {
                    protocol: "tcp".into(),
                    address: address.clone(),
                    random,
                }),
            ),
        )
        .await?;
        let outbound = tokio_stream::wrappers::ReceiverStream::new(rx);
        let answer = async {
            let inbound = client
                .proxy(outbound)
                .await
                .map_err(|s| io::Error::other(s.message().to_owned()))?
                .into_inner();
            dial_response(inbound, random).await
        };
        let (inbound, connect_id) = match tokio::time::timeout(DIAL_TIMEOUT, answer).await {
            Ok(r) => r?,
            Err(_) => {
                let cls = packet(
                    PacketType::DialCls,
                    Payload::CloseDial(proto::CloseDial { random }),
                );
                let _ = tx.try_send(cls);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "dial timeout, backstop",
                ));
            }
        };
        tracing::debug!(%address, proxy = %self.path.display(), connect_id, "tunnelled through konnectivity");
        let (ours, theirs) = tokio::io::duplex(PIPE);
        Tunnel::start(theirs, tx, inbound, connect_id, client);
        Ok(Box::new(ours))
    }
}

/// Wait for the answer to the dial `random`: the stream and the connection's id.
async fn dial_response(
    mut inbound: Streaming<Packet>,
    random: i64,
) -> io::Result<(Streaming<Packet>, i64)> {
    let closed = || io::Error::new(io::ErrorKind::ConnectionAborted, "tunnel closed");
    loop {
        let Some(pkt) = inbound.message().await.map_err(|_| closed())? else {
            return Err(closed());
        };
        match pkt.payload {
            Some(Payload::DialResponse(r)) if r.random == random => {
                if !r.error.is_empty() {
                    return Err(io::Error::new(io::ErrorKind::ConnectionRefused, r.error));
                }
                return Ok((inbound, r.connect_id));
            }
            // Upstream drops the tunnel on an answer it did not ask for.
            Some(Payload::DialResponse(_)) => return Err(closed()),
            Some(Payload::CloseDial(c)) if c.random == random => {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "dial closed",
                ))
            }
            Some(Payload::CloseDial(_)) => return Err(closed()),
            _ => {}
        }
    }
}

/// The task side of one tunnelled connection.
struct Tunnel {
    connect_id: i64,
    tx: mpsc::Sender<Packet>,
}

impl Tunnel {
    /// Carry `pipe` over the stream until either side closes. The client is
    /// kept so that the connection lives as long as the tunnel.
    fn start(
        pipe: DuplexStream,
        tx: mpsc::Sender<Packet>,
        inbound: Streaming<Packet>,
        connect_id: i64,
        client: ProxyServiceClient<tonic::transport::Channel>,
    ) {
        let (read, write) = tokio::io::split(pipe);
        let tunnel = Tunnel { connect_id, tx };
        let (closing_tx, closing_rx) = oneshot::channel();
        let up = tokio::spawn(tunnel.clone_sender().uplink(read, closing_tx));
        tokio::spawn(async move {
            tunnel.downlink(inbound, write, closing_rx).await;
            up.abort();
            drop(client);
        });
    }

    fn clone_sender(&self) -> Tunnel {
        Tunnel {
            connect_id: self.connect_id,
            tx: self.tx.clone(),
        }
    }

    /// The caller's bytes as `DATA`; at its end, `CLOSE_REQ`.
    async fn uplink(self, mut read: ReadHalf<DuplexStream>, closing: oneshot::Sender<()>) {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let data = proto::Data {
                        connect_id: self.connect_id,
                        error: String::new(),
                        data: buf[..n].to_vec(),
                    };
                    if send(&self.tx, packet(PacketType::Data, Payload::Data(data)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        let close = proto::CloseRequest {
            connect_id: self.connect_id,
        };
        let _ = send(
            &self.tx,
            packet(PacketType::CloseReq, Payload::CloseRequest(close)),
        )
        .await;
        let _ = closing.send(());
    }

    /// Received `DATA` to the caller, until `CLOSE_RSP`, the stream's end, a
    /// caller too slow to read, or the close timeout.
    async fn downlink(
        self,
        mut inbound: Streaming<Packet>,
        mut write: WriteHalf<DuplexStream>,
        mut closing: oneshot::Receiver<()>,
    ) {
        let mut deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
        loop {
            let pkt = tokio::select! {
                m = inbound.message() => match m {
                    Ok(Some(p)) => p,
                    Ok(None) | Err(_) => return,
                },
                _ = &mut closing, if deadline.is_none() => {
                    deadline = Some(Box::pin(tokio::time::sleep(CLOSE_TIMEOUT)));
                    continue;
                }
                _ = async { deadline.as_mut().unwrap().await }, if deadline.is_some() => {
                    tracing::debug!(connect_id = self.connect_id, "konnectivity: close timeout");
                    return;
                }
            };
            match pkt.payload {
                Some(Payload::Data(d)) if d.connect_id == self.connect_id => {
                    if d.data.is_empty() {
                        if !d.error.is_empty() {
                            tracing::debug!(connect_id = self.connect_id, error = %d.error, "konnectivity: remote error");
                        }
                        let _ = write.shutdown().await;
                        continue;
                    }
                    match tokio::time::timeout(READ_TIMEOUT, write.write_all(&d.data)).await {
                        Ok(_) => {}
                        Err(_) => {
                            tracing::warn!(
                                connect_id = self.connect_id,
                                "konnectivity: received data unread for {READ_TIMEOUT:?}, closing the tunnel"
                            );
                            return;
                        }
                    }
                }
                Some(Payload::CloseResponse(c)) if c.connect_id == self.connect_id => {
                    if !c.error.is_empty() {
                        tracing::debug!(connect_id = self.connect_id, error = %c.error, "konnectivity: close error");
                    }
                    return;
                }
                _ => {}
            }
        }
    }
}

fn packet(kind: PacketType, payload: Payload) -> Packet {
    Packet {
        r#type: kind as i32,
        payload: Some(payload),
    }
}

async fn send(tx: &mpsc::Sender<Packet>, p: Packet) -> io::Result<()> {
    tx.send(p)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "tunnel closed"))
}

/// A non-negative random id, as Go's `rand.Int63`.
fn random_id() -> i64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 1) as i64
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
