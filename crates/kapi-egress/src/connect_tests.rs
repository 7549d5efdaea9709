use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A one-shot proxy: reads the CONNECT request, answers `reply` (which may
/// carry tunnel bytes after the header), then echoes what it is sent.
async fn proxy_on<L>(accept: L, reply: &'static [u8]) -> tokio::task::JoinHandle<String>
where
    L: std::future::Future<Output = BoxIo> + Send + 'static,
{
    tokio::spawn(async move {
        let mut s = accept.await;
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).await.unwrap();
            head.push(b[0]);
        }
        s.write_all(reply).await.unwrap();
        let mut buf = [0u8; 64];
        if let Ok(n) = s.read(&mut buf).await {
            let _ = s.write_all(&buf[..n]).await;
        }
        String::from_utf8(head).unwrap()
    })
}

fn tcp(url: String) -> HttpConnect {
    HttpConnect::tcp(&TcpTransport {
        url,
        tls_config: None,
    })
    .unwrap()
}

#[tokio::test]
async fn tunnels_over_tcp_and_keeps_early_bytes() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = proxy_on(
        async move { Box::new(l.accept().await.unwrap().0) as BoxIo },
        b"HTTP/1.1 200 Connection established\r\n\r\nhello",
    )
    .await;
    let mut c = tcp(format!("http://127.0.0.1:{port}"))
        .dial("192.0.2.10", 10250)
        .await
        .unwrap();
    let mut first = [0u8; 5];
    c.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"hello");
    c.write_all(b"ping").await.unwrap();
    let mut echo = [0u8; 4];
    c.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"ping");
    assert_eq!(
        seen.await.unwrap(),
        "CONNECT 192.0.2.10:10250 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    );
}

#[tokio::test]
async fn tunnels_over_a_unix_socket_with_ipv6_targets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proxy.sock");
    let l = tokio::net::UnixListener::bind(&path).unwrap();
    let seen = proxy_on(
        async move { Box::new(l.accept().await.unwrap().0) as BoxIo },
        b"HTTP/1.0 200 OK\r\n\r\n",
    )
    .await;
    let dialer = HttpConnect::uds(path.to_str().unwrap());
    let mut c = dialer.dial("[2001:db8::1]", 443).await.unwrap();
    c.write_all(b"x").await.unwrap();
    let mut echo = [0u8; 1];
    c.read_exact(&mut echo).await.unwrap();
    assert!(seen
        .await
        .unwrap()
        .starts_with("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n"));
}

#[tokio::test]
async fn a_refusal_is_upstreams_error() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let _seen = proxy_on(
        async move { Box::new(l.accept().await.unwrap().0) as BoxIo },
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
    )
    .await;
    let e = tcp(format!("http://127.0.0.1:{port}/"))
        .dial("10.0.0.1", 80)
        .await
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "proxy error from 127.0.0.1:{port} while dialing 10.0.0.1:80, code 403: 403 Forbidden"
        )
    );
}

#[tokio::test]
async fn no_proxy_listening_is_a_dial_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let e = tcp(format!("http://127.0.0.1:{port}"))
        .dial("10.0.0.1", 80)
        .await
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .starts_with(&format!("dial tcp 127.0.0.1:{port}: connect: ")),
        "{e}"
    );
}

#[test]
fn proxy_addresses() {
    assert_eq!(split_host_port("a:1", 80), Some(("a".into(), 1)));
    assert_eq!(split_host_port("a", 443), Some(("a".into(), 443)));
    assert_eq!(
        split_host_port("[::1]:8131", 80),
        Some(("::1".into(), 8131))
    );
    assert_eq!(split_host_port(":1", 80), None);
    assert_eq!(join_host_port("::1", 1), "[::1]:1");
    assert_eq!(
        status_line("HTTP/1.1 200 OK\r\nX: y").unwrap(),
        (200, "200 OK".into())
    );
    assert!(status_line("SSH-2.0").is_err());
}

#[tokio::test]
async fn tunnels_over_tls_presenting_the_client_certificate() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    let dir = tempfile::tempdir().unwrap();
    let pki = kapi_http::tls::load_or_generate(dir.path(), &["127.0.0.1".into()]).unwrap();
    let (cert, key) = pki.issue_client_cert("konnectivity-client", &[]).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let tls = crate::config::TlsConfig {
        ca_bundle: write("ca.crt", &pki.ca_cert_pem),
        client_cert: write("client.crt", &cert),
        client_key: write("client.key", &key),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca_cert_pem.as_bytes()).unwrap())
        .unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let chain = CertificateDer::pem_slice_iter(pki.serving_cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let server_key = PrivateKeyDer::from_pem_slice(pki.serving_key_pem.as_bytes()).unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, server_key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = proxy_on(
        async move {
            let tcp = l.accept().await.unwrap().0;
            let s = acceptor.accept(tcp).await.unwrap();
            assert!(s
                .get_ref()
                .1
                .peer_certificates()
                .is_some_and(|c| !c.is_empty()));
            Box::new(s) as BoxIo
        },
        b"HTTP/1.1 200 OK\r\n\r\n",
    )
    .await;
    let dialer = HttpConnect::tcp(&TcpTransport {
        url: format!("https://127.0.0.1:{port}"),
        tls_config: Some(tls),
    })
    .unwrap();
    let mut c = dialer.dial("192.0.2.10", 10250).await.unwrap();
    c.write_all(b"ping").await.unwrap();
    let mut echo = [0u8; 4];
    c.read_exact(&mut echo).await.unwrap();
    assert_eq!(&echo, b"ping");
    assert!(seen
        .await
        .unwrap()
        .starts_with("CONNECT 192.0.2.10:10250 HTTP/1.1\r\n"));
}
