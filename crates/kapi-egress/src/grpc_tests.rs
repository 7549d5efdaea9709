use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use super::proto::proxy_service_server::{ProxyService, ProxyServiceServer};
use super::*;

/// A konnectivity server for the tests: dials what DIAL_REQ asks for itself
/// (or answers `refuse` as the dial's error), pipes bytes as DATA, answers
/// CLOSE_REQ, and records every address and packet type it saw.
#[derive(Clone, Default)]
struct Server {
    dialled: Arc<Mutex<Vec<String>>>,
    received: Arc<Mutex<Vec<i32>>>,
    refuse: Option<String>,
}

type PacketStream =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<Packet, Status>> + Send>>;

#[tonic::async_trait]
impl ProxyService for Server {
    type ProxyStream = PacketStream;

    async fn proxy(
        &self,
        req: Request<Streaming<Packet>>,
    ) -> Result<Response<Self::ProxyStream>, Status> {
        let mut inbound = req.into_inner();
        let (tx, rx) = mpsc::channel::<Result<Packet, Status>>(16);
        let me = self.clone();
        tokio::spawn(async move {
            let mut upstream: Option<tokio::net::tcp::OwnedWriteHalf> = None;
            while let Some(Ok(p)) = inbound.next().await {
                me.received.lock().unwrap().push(p.r#type);
                match p.payload {
                    Some(Payload::DialRequest(d)) => {
                        me.dialled.lock().unwrap().push(d.address.clone());
                        let dialled = match &me.refuse {
                            Some(e) => Err(e.clone()),
                            None => tokio::net::TcpStream::connect(&d.address)
                                .await
                                .map_err(|e| e.to_string()),
                        };
                        let (error, connect_id) = match dialled {
                            Ok(s) => {
                                let (mut r, w) = s.into_split();
                                upstream = Some(w);
                                let tx = tx.clone();
                                tokio::spawn(async move {
                                    let mut buf = [0u8; 4096];
                                    while let Ok(n @ 1..) = r.read(&mut buf).await {
                                        let data = proto::Data {
                                            connect_id: 7,
                                            error: String::new(),
                                            data: buf[..n].to_vec(),
                                        };
                                        if tx
                                            .send(Ok(packet(PacketType::Data, Payload::Data(data))))
                                            .await
                                            .is_err()
                                        {
                                            return;
                                        }
                                    }
                                });
                                (String::new(), 7)
                            }
                            Err(e) => (e, 0),
                        };
                        let rsp = proto::DialResponse {
                            error,
                            connect_id,
                            random: d.random,
                            bearer_token: String::new(),
                        };
                        let _ = tx
                            .send(Ok(packet(PacketType::DialRsp, Payload::DialResponse(rsp))))
                            .await;
                    }
                    Some(Payload::Data(d)) => {
                        if let Some(w) = upstream.as_mut() {
                            let _ = w.write_all(&d.data).await;
                        }
                    }
                    Some(Payload::CloseRequest(c)) => {
                        upstream = None;
                        let rsp = proto::CloseResponse {
                            error: String::new(),
                            connect_id: c.connect_id,
                        };
                        let _ = tx
                            .send(Ok(packet(
                                PacketType::CloseRsp,
                                Payload::CloseResponse(rsp),
                            )))
                            .await;
                    }
                    _ => {}
                }
            }
        });
        let out = tokio_stream::wrappers::ReceiverStream::new(rx);
        Ok(Response::new(Box::pin(out)))
    }
}

/// Serve `server` on a socket in `dir`; its path.
async fn serve(dir: &tempfile::TempDir, server: Server) -> String {
    let path = dir.path().join("konnectivity.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(ProxyServiceServer::new(server))
            .serve_with_incoming(incoming),
    );
    path.display().to_string()
}

async fn echo() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    port
}

#[tokio::test]
async fn an_echo_server_answers_through_the_tunnel_and_close_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::default();
    let path = serve(&dir, server.clone()).await;
    let port = echo().await;
    let dialer = Konnectivity::uds(&path);
    let mut c = dialer.dial("127.0.0.1", port).await.unwrap();
    c.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    c.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    let big = vec![b'x'; 200_000];
    c.write_all(&big).await.unwrap();
    let mut back = vec![0u8; big.len()];
    c.read_exact(&mut back).await.unwrap();
    assert_eq!(back, big);
    c.shutdown().await.unwrap();
    // CLOSE_RSP ends the tunnel: the caller reads its end.
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut rest))
        .await
        .expect("the tunnel ends at CLOSE_RSP")
        .unwrap();
    assert_eq!(
        *server.dialled.lock().unwrap(),
        vec![format!("127.0.0.1:{port}")]
    );
    let seen = server.received.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&(PacketType::DialReq as i32)));
    assert_eq!(seen.last(), Some(&(PacketType::CloseReq as i32)));
    assert!(seen.contains(&(PacketType::Data as i32)));
}

#[tokio::test]
async fn a_dial_error_is_the_proxys_text() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server {
        refuse: Some("dial tcp 10.0.0.9:10250: connect: connection refused".into()),
        ..Server::default()
    };
    let path = serve(&dir, server.clone()).await;
    let e = Konnectivity::uds(&path)
        .dial("10.0.0.9", 10250)
        .await
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "dial tcp 10.0.0.9:10250: connect: connection refused"
    );
    assert_eq!(*server.dialled.lock().unwrap(), vec!["10.0.0.9:10250"]);
}

#[tokio::test]
async fn ipv6_targets_are_bracketed() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server {
        refuse: Some("no route".into()),
        ..Server::default()
    };
    let path = serve(&dir, server.clone()).await;
    let _ = Konnectivity::uds(&path).dial("[2001:db8::1]", 443).await;
    assert_eq!(*server.dialled.lock().unwrap(), vec!["[2001:db8::1]:443"]);
}

#[tokio::test]
async fn no_server_on_the_socket_is_a_dial_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.sock").display().to_string();
    let e = Konnectivity::uds(&path)
        .dial("10.0.0.1", 80)
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .starts_with(&format!("dial unix {path}: connect: ")),
        "{e}"
    );
}
