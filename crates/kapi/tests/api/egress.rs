//! `--egress-selector-config-file`: an HTTP CONNECT proxy written for the
//! test runs on loopback and records every CONNECT it tunnels; kapi is given
//! an `EgressSelectorConfiguration` file read by the same loader `kapi serve`
//! uses, and the traffic upstream sends through a selection is seen at the
//! proxy: `pods/log` to the kubelet through `cluster`, an admission webhook's
//! `url` through `controlplane`. A konnectivity `ProxyService` written for
//! the test (gRPC on a unix socket) does the same for a `GRPC` selection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;
use kapi_egress::Egress;
use kube::api::{Api, LogParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connect_env::{self, pod};
use crate::webhooks::{configure, hook_spec, url_config};
use crate::{harness, webhook_server};

type Routes = Arc<Mutex<HashMap<(String, u16), u16>>>;

/// The test's proxy: `CONNECT host:port` is tunnelled to the loopback port
/// `routes` maps it to, or to `host:port` itself.
struct Proxy {
    port: u16,
    /// Every CONNECT target, in order.
    seen: Arc<Mutex<Vec<String>>>,
    routes: Routes,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start() -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let routes: Routes = Arc::default();
        let (s, r) = (seen.clone(), routes.clone());
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(tunnel(conn, s.clone(), r.clone()));
            }
        });
        Proxy {
            port,
            seen,
            routes,
            task,
        }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// An egress selector file whose `name` selection is HTTPConnect to this proxy.
    fn selector(&self, dir: &tempfile::TempDir, name: &str) -> Egress {
        let path = dir.path().join("egress.yaml");
        let text = format!(
            "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
             egressSelections:\n- name: {name}\n  connection:\n    proxyProtocol: HTTPConnect\n\
             \x20   transport:\n      tcp:\n        url: http://127.0.0.1:{}\n",
            self.port
        );
        std::fs::write(&path, text).unwrap();
        Egress::load(&path).expect("a valid egress selector file")
    }
}

async fn tunnel(mut conn: tokio::net::TcpStream, seen: Arc<Mutex<Vec<String>>>, routes: Routes) {
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read_exact(&mut b).await.is_err() {
            return;
        }
        head.push(b[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(target) = head
        .strip_prefix("CONNECT ")
        .and_then(|r| r.split(' ').next())
    else {
        let _ = conn
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            .await;
        return;
    };
    seen.lock().unwrap().push(target.to_owned());
    let (host, port) = target.rsplit_once(':').unwrap();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().unwrap();
    let routed = routes
        .lock()
        .unwrap()
        .get(&(host.to_owned(), port))
        .copied();
    let upstream = match routed {
        Some(local) => tokio::net::TcpStream::connect(("127.0.0.1", local)).await,
        None => tokio::net::TcpStream::connect((host, port)).await,
    };
    let Ok(mut upstream) = upstream else {
        let _ = conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if conn
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_ok()
    {
        let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
    }
}

#[tokio::test]
async fn pods_log_reaches_the_kubelet_through_the_cluster_selection() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "cluster");
    let routes = proxy.routes.clone();
    let cluster = egress.cluster();
    let env = connect_env::start_routed(
        move |r| {
            // The proxy, not kapi, knows where the node addresses are.
            *routes.lock().unwrap() = r;
            cluster
        },
        |_| {},
        move |o| o.egress = egress,
    )
    .await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let logs = pods.logs("web", &LogParams::default()).await.unwrap();
    assert_eq!(logs.lines().next(), Some("app line 1"));
    assert_eq!(
        proxy.seen(),
        vec![format!("{}:10250", connect_env::NODE_IP)]
    );
}

#[tokio::test]
async fn admission_webhook_urls_go_through_the_controlplane_selection() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "controlplane");
    let ts = harness::start_configured(move |o| o.egress = egress).await;
    let hook = webhook_server::start().await;
    let spec = hook_spec("allow.example.com", url_config(&hook, "/allow"), json!({}));
    configure(&ts, false, "allow", spec).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            cm.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 201, "{out}");
    assert_eq!(hook.calls(), vec!["/allow"]);
    assert_eq!(proxy.seen(), vec![format!("127.0.0.1:{}", hook.port)]);
}

#[tokio::test]
async fn a_proxy_that_refuses_fails_the_webhook_call() {
    let proxy = Proxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let egress = proxy.selector(&dir, "controlplane");
    let ts = harness::start_configured(move |o| o.egress = egress).await;
    let hook = webhook_server::start().await;
    let port = hook.port;
    drop(hook);
    let spec = json!({"name": "gone.example.com",
        "clientConfig": {"url": format!("https://127.0.0.1:{port}/allow")},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"});
    configure(&ts, false, "gone", spec).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
    let (code, out) = ts
        .send_json(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            cm.to_string().into_bytes(),
        )
        .await;
    assert_eq!(code, 500, "{out}");
    let msg = out["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!(
            "proxy error from 127.0.0.1:{} while dialing 127.0.0.1:{port}, code 502",
            proxy.port
        )),
        "{msg}"
    );
}

/// The test's konnectivity server: `ProxyService` on a unix socket; a
/// DIAL_REQ is dialled to the loopback port `routes` maps it to, bytes go
/// both ways as DATA, CLOSE_REQ is answered; every address dialled is kept.
mod konnectivity {
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};

    use kapi_egress::grpc::proto::packet::Payload;
    use kapi_egress::grpc::proto::proxy_service_server::{ProxyService, ProxyServiceServer};
    use kapi_egress::grpc::proto::{CloseResponse, Data, DialResponse, Packet, PacketType};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::sync::mpsc;
    use tokio_stream::StreamExt;
    use tonic::{Request, Response, Status, Streaming};

    use super::Routes;

    #[derive(Clone, Default)]
    pub struct Konnectivity {
        pub dialled: Arc<Mutex<Vec<String>>>,
        pub routes: Routes,
    }

    fn packet(kind: PacketType, payload: Payload) -> Result<Packet, Status> {
        Ok(Packet {
            r#type: kind as i32,
            payload: Some(payload),
        })
    }

    type Out = Pin<Box<dyn tokio_stream::Stream<Item = Result<Packet, Status>> + Send>>;

    #[tonic::async_trait]
    impl ProxyService for Konnectivity {
        type ProxyStream = Out;

        async fn proxy(&self, req: Request<Streaming<Packet>>) -> Result<Response<Out>, Status> {
            let mut inbound = req.into_inner();
            let (tx, rx) = mpsc::channel(16);
            let me = self.clone();
            tokio::spawn(async move {
                let mut upstream = None;
                while let Some(Ok(p)) = inbound.next().await {
                    match p.payload {
                        Some(Payload::DialRequest(d)) => {
                            me.dialled.lock().unwrap().push(d.address.clone());
                            let (host, port) = d.address.rsplit_once(':').unwrap();
                            let host = host.trim_start_matches('[').trim_end_matches(']');
                            let port: u16 = port.parse().unwrap();
                            let local = me
                                .routes
                                .lock()
                                .unwrap()
                                .get(&(host.to_owned(), port))
                                .copied();
                            let dialled = match local {
                                Some(l) => tokio::net::TcpStream::connect(("127.0.0.1", l)).await,
                                None => tokio::net::TcpStream::connect((host, port)).await,
                            };
                            let (error, connect_id) = match dialled {
                                Ok(s) => {
                                    let (mut r, w) = s.into_split();
                                    upstream = Some(w);
                                    let tx = tx.clone();
                                    tokio::spawn(async move {
                                        let mut buf = vec![0u8; 16 * 1024];
                                        while let Ok(n @ 1..) = r.read(&mut buf).await {
                                            let data = Data {
                                                connect_id: 1,
                                                error: String::new(),
                                                data: buf[..n].to_vec(),
                                            };
                                            if tx
                                                .send(packet(PacketType::Data, Payload::Data(data)))
                                                .await
                                                .is_err()
                                            {
                                                return;
                                            }
                                        }
                                    });
                                    (String::new(), 1)
                                }
                                Err(e) => (e.to_string(), 0),
                            };
                            let rsp = DialResponse {
                                error,
                                connect_id,
                                random: d.random,
                                bearer_token: String::new(),
                            };
                            let _ = tx
                                .send(packet(PacketType::DialRsp, Payload::DialResponse(rsp)))
                                .await;
                        }
                        Some(Payload::Data(d)) => {
                            if let Some(w) = upstream.as_mut() {
                                let _ = AsyncWriteExt::write_all(w, &d.data).await;
                            }
                        }
                        Some(Payload::CloseRequest(c)) => {
                            upstream = None;
                            let rsp = CloseResponse {
                                error: String::new(),
                                connect_id: c.connect_id,
                            };
                            let _ = tx
                                .send(packet(PacketType::CloseRsp, Payload::CloseResponse(rsp)))
                                .await;
                        }
                        _ => {}
                    }
                }
            });
            Ok(Response::new(Box::pin(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            )))
        }
    }

    /// Serve on `path`.
    pub fn serve(path: &std::path::Path, server: Konnectivity) {
        let listener = tokio::net::UnixListener::bind(path).unwrap();
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(ProxyServiceServer::new(server))
                .serve_with_incoming(incoming),
        );
    }
}

#[tokio::test]
async fn pods_log_reaches_the_kubelet_through_a_grpc_cluster_selection() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("konnectivity.sock");
    let server = konnectivity::Konnectivity::default();
    konnectivity::serve(&socket, server.clone());
    let path = dir.path().join("egress.yaml");
    let text = format!(
        "apiVersion: apiserver.k8s.io/v1beta1\nkind: EgressSelectorConfiguration\n\
         egressSelections:\n- name: cluster\n  connection:\n    proxyProtocol: GRPC\n\
         \x20   transport:\n      uds:\n        udsName: {}\n",
        socket.display()
    );
    std::fs::write(&path, text).unwrap();
    let egress = Egress::load(&path).expect("a valid egress selector file");
    let routes = server.routes.clone();
    let cluster = egress.cluster();
    let env = connect_env::start_routed(
        move |r| {
            *routes.lock().unwrap() = r;
            cluster
        },
        |_| {},
        move |o| o.egress = egress,
    )
    .await;
    pod(&env.s, "web", &["app"], Some("n1")).await;
    let pods: Api<Pod> = env.s.api("default");
    let logs = pods.logs("web", &LogParams::default()).await.unwrap();
    assert_eq!(logs.lines().next(), Some("app line 1"));
    assert_eq!(
        *server.dialled.lock().unwrap(),
        vec![format!("{}:10250", connect_env::NODE_IP)]
    );
}
