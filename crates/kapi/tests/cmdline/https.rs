//! A kube-apiserver started with a `--cert-dir` of its own and flags under
//! test, and raw HTTPS clients for it: TLS settings of the test's choosing
//! (versions, cipher suites, server name), the admin's client certificate,
//! HTTP/1.1 or HTTP/2 straight over the connection (h2 for what hyper hides:
//! the server's SETTINGS and GOAWAY).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::proc::Server;

/// A running kube-apiserver on `127.0.0.1:<port>`, its data under `dir`.
pub struct Setup {
    pub server: Server,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

impl Setup {
    /// Start with `--cert-dir` in a temp dir, a free port and `extra` flags.
    pub fn start(extra: &[String]) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start(dir.path(), &args(dir.path(), extra));
        let port = server.port();
        Setup { server, port, dir }
    }

    /// Start again on the same data (a restart with `extra` flags).
    pub fn restart(dir: tempfile::TempDir, extra: &[String]) -> Setup {
        let server = Server::start(dir.path(), &args(dir.path(), extra));
        let port = server.port();
        Setup { server, port, dir }
    }

    pub fn pki(&self) -> PathBuf {
        self.dir.path().join("certs/kapi-data/pki")
    }

    /// A client configuration trusting the server's CA, presenting the admin
    /// certificate, offering `versions` and (when given) only `suites`.
    pub fn client_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
        suites: Option<&[rustls::CipherSuite]>,
    ) -> Arc<rustls::ClientConfig> {
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some(suites) = suites {
            provider
                .cipher_suites
                .retain(|s| suites.contains(&s.suite()));
        }
        let mut roots = rustls::RootCertStore::empty();
        for c in certs(&read(&self.pki().join("ca.crt"))) {
            roots.add(c).unwrap();
        }
        let key = rustls_pemfile::private_key(&mut read(&self.pki().join("admin.key")).as_bytes())
            .unwrap()
            .unwrap();
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_client_auth_cert(certs(&read(&self.pki().join("admin.crt"))), key)
            .unwrap();
        Arc::new(config)
    }

    /// A TLS connection to the server asking for `server_name`.
    pub async fn connect(
        &self,
        config: Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(("127.0.0.1", self.port)).await?;
        let name = ServerName::try_from(server_name.to_owned()).unwrap();
        tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
    }

    /// A TLS 1.3 connection speaking HTTP/2, as the admin.
    pub async fn h2(&self) -> h2::client::SendRequest<bytes::Bytes> {
        let mut config = (*self.client_config(&[&rustls::version::TLS13], None)).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let tls = self.connect(Arc::new(config), "localhost").await.unwrap();
        let (send, conn) = h2::client::handshake(tls).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        send
    }
}

fn args(dir: &Path, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        format!("--cert-dir={}", dir.join("certs").display()),
        "--secure-port=0".to_string(),
        "--bind-address=127.0.0.1".to_string(),
        "--storage-ready-timeout=30s".to_string(),
    ];
    args.extend(extra.iter().cloned());
    args
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn certs(pem: &str) -> Vec<CertificateDer<'static>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

/// One HTTP/1.1 GET over `stream`: (status, body).
pub async fn get(stream: TlsStream<TcpStream>, path: &str) -> (u16, String) {
    use http_body_util::BodyExt as _;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::get(path)
        .header("host", "localhost")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.unwrap();
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (code, String::from_utf8_lossy(&body).into_owned())
}

/// A verifier that accepts any server certificate and keeps the leaf, to see
/// which certificate the server chose.
#[derive(Debug, Default)]
pub struct Recorder(pub Mutex<Option<CertificateDer<'static>>>);

impl Recorder {
    /// A TLS 1.3 client configuration trusting anything, recording into `self`.
    pub fn config(self: &Arc<Self>) -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .dangerous()
            .with_custom_certificate_verifier(self.clone())
            .with_no_client_auth();
        Arc::new(config)
    }

    /// The subject CN of the recorded certificate.
    pub fn common_name(&self) -> String {
        let der = self.0.lock().unwrap().clone().expect("a certificate");
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        let cn = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .unwrap_or_default()
            .to_owned();
        cn
    }
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        *self.0.lock().unwrap() = Some(end_entity.clone().into_owned());
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
