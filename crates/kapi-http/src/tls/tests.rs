//! Tests for the PKI, kubeconfig and a real TLS round trip on loopback.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::{routing::get, Extension, Router};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;
use x509_parser::extensions::GeneralName;

use super::*;

mod http2;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kapi-tls-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn sans_of(pem: &str) -> Vec<String> {
    let der = pki::pem_to_der(pem).unwrap();
    let cert = pki::parse_x509(&der).unwrap();
    let ext = cert.subject_alternative_name().unwrap().unwrap();
    ext.value
        .general_names
        .iter()
        .map(|n| match n {
            GeneralName::IPAddress(b) if b.len() == 4 => {
                std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*b).unwrap()).to_string()
            }
            GeneralName::IPAddress(b) => {
                std::net::Ipv6Addr::from(<[u8; 16]>::try_from(*b).unwrap()).to_string()
            }
            other => other.to_string(),
        })
        .collect()
}

#[test]
fn pki_is_generated_then_reused() {
    let tmp = TempDir::new();
    let first = load_or_generate(&tmp.0, &["10.0.0.1".into(), "0.0.0.0".into()]).unwrap();
    for key in ["ca.key", "apiserver.key", "admin.key"] {
        assert_eq!(mode(&tmp.0.join("pki").join(key)), 0o600, "{key}");
    }
    let sans = sans_of(&first.serving_cert_pem).join(" ");
    for want in [
        "localhost",
        "kubernetes.default.svc.cluster.local",
        "127.0.0.1",
        "::1",
        "10.0.0.1",
    ] {
        assert!(sans.contains(want), "{want} missing from {sans}");
    }
    assert!(!sans.contains("0.0.0.0"), "{sans}");

    let admin = PeerIdentity::from_der(&pki::pem_to_der(&first.admin_cert_pem).unwrap()).unwrap();
    assert_eq!(admin.user, ADMIN_USER);
    assert_eq!(admin.groups, vec![ADMIN_GROUP]);

    let again = load_or_generate(&tmp.0, &["10.0.0.1".into()]).unwrap();
    assert_eq!(again.ca_cert_pem, first.ca_cert_pem);
    assert_eq!(again.serving_cert_pem, first.serving_cert_pem);
    assert_eq!(again.admin_cert_pem, first.admin_cert_pem);

    // A new SAN re-issues the serving certificate under the same CA.
    let more = load_or_generate(&tmp.0, &["10.0.0.1".into(), "api.example".into()]).unwrap();
    assert_eq!(more.ca_cert_pem, first.ca_cert_pem);
    assert_ne!(more.serving_cert_pem, first.serving_cert_pem);
    assert_eq!(more.admin_cert_pem, first.admin_cert_pem);
    assert!(sans_of(&more.serving_cert_pem)
        .join(" ")
        .contains("api.example"));
}

#[test]
fn ca_without_key_is_an_error() {
    let tmp = TempDir::new();
    load_or_generate(&tmp.0, &[]).unwrap();
    std::fs::remove_file(tmp.0.join("pki/ca.key")).unwrap();
    assert!(matches!(
        load_or_generate(&tmp.0, &[]),
        Err(TlsError::Pki(_))
    ));
}

#[test]
fn kubeconfig_is_private_and_well_formed() {
    let tmp = TempDir::new();
    let path = tmp.0.join("sub/admin.kubeconfig");
    write_kubeconfig(&path, "https://127.0.0.1:6443", "CA", "CERT", "KEY").unwrap();
    assert_eq!(mode(&path), 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    assert_eq!(doc["current-context"], "kapi");
    assert_eq!(doc["clusters"][0]["name"], "kapi");
    let cluster = &doc["clusters"][0]["cluster"];
    assert_eq!(cluster["server"], "https://127.0.0.1:6443");
    assert_eq!(cluster["certificate-authority-data"], b64("CA"));
    assert_eq!(doc["users"][0]["name"], "kapi-admin");
    assert_eq!(
        doc["users"][0]["user"]["client-certificate-data"],
        b64("CERT")
    );
    assert_eq!(doc["users"][0]["user"]["client-key-data"], b64("KEY"));
    assert_eq!(doc["contexts"][0]["context"]["cluster"], "kapi");
    assert_eq!(doc["contexts"][0]["context"]["user"], "kapi-admin");
}

fn client_config(pki: &Pki, client_cert: Option<(&str, &str)>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(parse_cert_chain(&pki.ca_cert_pem).unwrap().remove(0))
        .unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match client_cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                parse_cert_chain(cert).unwrap(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// GET /whoami over TLS with HTTP/1.1; returns the response body.
async fn whoami(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> io::Result<String> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = TlsConnector::from(config).connect(name, tcp).await?;
    tls.write_all(b"GET /whoami HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut response = String::new();
    tls.read_to_string(&mut response).await?;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    Ok(response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string())
}

use std::net::SocketAddr;

/// `serve_tls` on a loopback port: its address, the shutdown trigger, the task.
async fn start_tls(
    config: Arc<rustls::ServerConfig>,
    app: Router,
) -> (
    SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_tls(listener, config, app, async {
        let _ = stop_rx.await;
    }));
    (addr, stop_tx, server)
}

/// A TLS connection to `addr` that offers only ALPN `h2`, trusting `pki`'s CA.
async fn connect_h2(
    addr: SocketAddr,
    pki: &Pki,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut h2 = (*client_config(pki, None)).clone();
    h2.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    TlsConnector::from(Arc::new(h2))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// An HTTP/2 client connection to the server at `addr`, driven by a task.
async fn h2_sender<B>(addr: SocketAddr, pki: &Pki) -> hyper::client::conn::http2::SendRequest<B>
where
    B: http_body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let tls = connect_h2(addr, pki).await;
    let (sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    sender
}

#[tokio::test]
async fn tls_round_trip_carries_peer_identity() {
    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let config = server_config(
        &pki.serving_cert_pem,
        &pki.serving_key_pem,
        std::slice::from_ref(&pki.ca_cert_pem),
    )
    .unwrap();
    assert_eq!(
        config.alpn_protocols,
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    );
    let app = Router::new().route(
        "/whoami",
        get(
            |Extension(peer): Extension<Option<PeerIdentity>>| async move {
                match peer {
                    Some(p) => format!("{}|{}", p.user, p.groups.join(",")),
                    None => "none".to_string(),
                }
            },
        ),
    );
    let (addr, stop_tx, server) = start_tls(config, app).await;

    let admin = client_config(&pki, Some((&pki.admin_cert_pem, &pki.admin_key_pem)));
    assert_eq!(
        whoami(addr, admin).await.unwrap(),
        "kubernetes-admin|system:masters"
    );
    assert_eq!(
        whoami(addr, client_config(&pki, None)).await.unwrap(),
        "none"
    );

    // A certificate from another CA passes the handshake as a *claimed*
    // identity (as Go's RequestClientCert); authentication verifies the chain.
    let other = load_or_generate(&TempDir::new().0, &[]).unwrap();
    let mut foreign =
        (*client_config(&pki, Some((&other.admin_cert_pem, &other.admin_key_pem)))).clone();
    foreign.alpn_protocols.clear();
    assert_eq!(
        whoami(addr, Arc::new(foreign)).await.unwrap(),
        "kubernetes-admin|system:masters"
    );

    // ALPN offers h2.
    let tls = connect_h2(addr, &pki).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    drop(tls);

    stop_tx.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("server stops on shutdown")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn plain_serving_has_no_peer() {
    let app = Router::new().route(
        "/",
        get(|Extension(peer): Extension<Option<PeerIdentity>>| async move { format!("{peer:?}") }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_plain(listener, app, async {
        let _ = stop_rx.await;
    }));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).await.unwrap();
    assert!(response.ends_with("None"), "{response}");
    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}

/// The suite negotiated by a client offering `offered` (rustls's default order, AES-256-GCM first, when `None`).
async fn negotiated_suite(
    offered: Option<Vec<rustls::SupportedCipherSuite>>,
) -> rustls::CipherSuite {
    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let server = server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[]).unwrap();
    let mut provider = rustls::crypto::ring::default_provider();
    if let Some(offered) = offered {
        provider.cipher_suites = offered;
    }
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(parse_cert_chain(&pki.ca_cert_pem).unwrap().remove(0))
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let (a, b) = tokio::io::duplex(64 * 1024);
    let accept = tokio_rustls::TlsAcceptor::from(server).accept(a);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let connect = TlsConnector::from(Arc::new(client)).connect(name, b);
    let (_, client) = tokio::try_join!(accept, connect).unwrap();
    client
        .get_ref()
        .1
        .negotiated_cipher_suite()
        .unwrap()
        .suite()
}

#[tokio::test]
async fn the_server_prefers_aes_128_gcm_as_go_does() {
    use rustls::crypto::ring::cipher_suite as cs;
    // rustls and curl list AES-256-GCM first; Go's server picks AES-128-GCM.
    assert_eq!(
        negotiated_suite(None).await,
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
    );
    // A client that offers only the others still gets one of them.
    assert_eq!(
        negotiated_suite(Some(vec![
            cs::TLS13_CHACHA20_POLY1305_SHA256,
            cs::TLS13_AES_256_GCM_SHA384,
        ]))
        .await,
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384
    );
    assert_eq!(
        negotiated_suite(Some(vec![cs::TLS13_CHACHA20_POLY1305_SHA256])).await,
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
    );
}

/// The byte at position `i` of [`patterned`]'s body.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// A body of `n` patterned bytes in chunks of uneven sizes, each a slice
/// starting at a different offset of a larger buffer, so that chunks meet
/// record boundaries at every alignment (`records.rs` splits such writes).
async fn patterned(axum::extract::Path(n): axum::extract::Path<usize>) -> axum::body::Body {
    let mut chunks = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < n {
        let len = (3_000 + k * 7_919 % 70_000).min(n - at);
        let skew = k % 37;
        let mut buf = vec![0u8; skew + len];
        for (j, b) in buf[skew..].iter_mut().enumerate() {
            *b = pattern(at + j);
        }
        chunks.push(Ok::<_, std::convert::Infallible>(
            bytes::Bytes::from(buf).slice(skew..),
        ));
        at += len;
        k += 1;
    }
    axum::body::Body::from_stream(futures::stream::iter(chunks))
}

/// Writes split where rustls copies large buffers fast (`records.rs`) send
/// every byte once and in order, over HTTP/1.1 and HTTP/2, for bodies of
/// one small chunk to many large ones.
#[tokio::test]
async fn bodies_arrive_byte_for_byte_when_writes_are_split_for_aligned_copies() {
    use http_body_util::BodyExt as _;
    use hyper_util::rt::TokioIo;

    let tmp = TempDir::new();
    let pki = load_or_generate(&tmp.0, &[]).unwrap();
    let config = server_config(&pki.serving_cert_pem, &pki.serving_key_pem, &[]).unwrap();
    let app = Router::new().route("/patterned/{n}", get(patterned));
    let (addr, stop_tx, server) = start_tls(config, app).await;
    let sizes = [1, 4_095, 4_097, 70_001, 1_000_003, 3_000_000];
    let request = |n: usize| {
        http::Request::get(format!("https://localhost/patterned/{n}"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap()
    };
    let check = |n: usize, body: bytes::Bytes| {
        assert_eq!(body.len(), n);
        let first_wrong = body.iter().enumerate().find(|(i, b)| **b != pattern(*i));
        assert_eq!(first_wrong, None, "body of {n}");
    };

    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = TlsConnector::from(client_config(&pki, None))
        .connect(name, tcp)
        .await
        .unwrap();
    let (mut h1, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    for n in sizes {
        let resp = h1.send_request(request(n)).await.unwrap();
        check(n, resp.into_body().collect().await.unwrap().to_bytes());
    }

    let h2 = h2_sender(addr, &pki).await;
    let all = sizes.iter().map(|&n| {
        let mut h2 = h2.clone();
        async move {
            let resp = h2.send_request(request(n)).await.unwrap();
            check(n, resp.into_body().collect().await.unwrap().to_bytes());
        }
    });
    futures::future::join_all(all).await;

    stop_tx.send(()).unwrap();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), server).await;
}
