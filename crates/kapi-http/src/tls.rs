//! Secure serving: certificates, the rustls server configuration, the admin
//! kubeconfig, and the TLS/plain HTTP accept loops.
//!
//! Layout:
//! - `tls/pki.rs` — [`Pki`], [`load_or_generate`]: the CA, serving and admin
//!   certificates under `<data-dir>/pki/`.
//! - this file — [`server_config`] (rustls, ring provider only, ALPN h2 +
//!   http/1.1, optional client certificates), [`write_kubeconfig`],
//!   [`TlsError`], [`PeerIdentity`].
//! - `tls/serve.rs` — [`serve_tls`] / [`serve_plain`]: accept loop, handshake
//!   timeout, hyper-util auto (HTTP/1.1 + HTTP/2), graceful shutdown, and the
//!   per-request `Option<PeerIdentity>` + `ConnectInfo<SocketAddr>` extensions.
//! - `tls/coalesce.rs` — the TLS stream an HTTP/2 connection writes through:
//!   frames reach the socket in batches, not one system call per DATA frame.
//!
//! Invariants: exactly one crypto provider (ring) is used, passed explicitly;
//! no process-wide default provider is installed. The handshake proves the
//! client holds the key of the certificate it presents, but accepts any chain
//! (upstream's `RequestClientCert`): a [`PeerIdentity`] is a *claimed*
//! identity until authentication (`kapi-auth`) verifies the chain against the client CAs — so a
//! certificate that is expired or from another CA gets upstream's 401 Status,
//! not a failed handshake. Where to look next: `kapi-auth` turns the verified
//! identity (or a bearer token) into a `UserInfo`.

mod coalesce;
mod pki;
mod records;
mod serve;
pub mod settings;
#[cfg(test)]
mod tests;
mod unread;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;

pub use pki::write_file_atomic;
pub use pki::{load_or_generate, Pki, ADMIN_GROUP, ADMIN_USER, CA_COMMON_NAME};
pub use serve::{
    serve_plain, serve_tls, serve_tls_with, ConnectionSettings, GoAway, HANDSHAKE_TIMEOUT,
    SHUTDOWN_DRAIN_TIMEOUT,
};
pub use settings::{MinVersion, NamedCert, ServingConfigs, TlsSettings};

/// Errors from certificate handling and TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("certificate generation: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("tls: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("client certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("pem: {0}")]
    Pem(String),
    #[error("pki: {0}")]
    Pki(String),
}

impl TlsError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        TlsError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The identity a client certificate claims: `user` is the subject CN,
/// `groups` the subject O values (in certificate order); `chain` the presented
/// certificates, leaf first, which authentication verifies against the client
/// CAs (and front-proxy authentication against its own CA). `verified` caches
/// that verdict for the connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerIdentity {
    pub user: String,
    pub groups: Vec<String>,
    pub chain: Vec<CertificateDer<'static>>,
    pub verified: Arc<OnceLock<bool>>,
}

impl PeerIdentity {
    /// Parse CN / O out of a DER certificate. `None` if it does not parse.
    pub fn from_der(der: &[u8]) -> Option<Self> {
        let cert = pki::parse_x509(der).ok()?;
        let subject = cert.subject();
        let user = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_string();
        let groups = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        Some(PeerIdentity {
            user,
            groups,
            chain: vec![CertificateDer::from(der.to_vec())],
            verified: Arc::default(),
        })
    }
}

/// The ring provider, the only one this crate uses.
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Build the server configuration from a PEM certificate chain and PEM
/// private key (PKCS#8, PKCS#1 or SEC1). With non-empty `client_cas` (each a
/// PEM bundle of one or more CA certificates), client certificates are
/// requested (with those CAs as hints) but optional, and any chain is accepted
/// at the handshake ([`ClaimedCertificates`]); with none, no client
/// certificate is requested. ALPN: `h2`, `http/1.1`.
pub fn server_config(
    cert_pem: &str,
    key_pem: &str,
    client_cas: &[String],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    server_config_with(cert_pem, key_pem, client_cas, &TlsSettings::default())
}

/// The configurations of the secure port: [`server_config_with`] for the
/// default pair and for each `--tls-sni-cert-key` pair in `settings`.
pub fn serving_configs(
    cert_pem: &str,
    key_pem: &str,
    client_cas: &[String],
    settings: &TlsSettings,
) -> Result<ServingConfigs, TlsError> {
    let default = server_config_with(cert_pem, key_pem, client_cas, settings)?;
    ServingConfigs::new(default, &settings.sni, |c, k| {
        server_config_with(c, k, client_cas, settings)
    })
}

/// [`server_config`] with the protocol versions and TLS 1.2 cipher suites
/// `settings` allow.
pub fn server_config_with(
    cert_pem: &str,
    key_pem: &str,
    client_cas: &[String],
    settings: &TlsSettings,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut provider = aes128_first(&crypto_provider());
    settings.restrict(&mut provider);
    let provider = Arc::new(provider);
    let chain = parse_cert_chain(cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| TlsError::Pem(format!("private key: {e}")))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(settings.versions())?;
    let builder = if client_cas.is_empty() {
        builder.with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for bundle in client_cas {
            for cert in parse_cert_chain(bundle)? {
                roots.add(cert)?;
            }
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()?;
        builder.with_client_cert_verifier(Arc::new(ClaimedCertificates(verifier)))
    };
    let mut config = builder.with_single_cert(chain, key)?;
    config.ignore_client_order = true;
    config.alpn_protocols = if settings.http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

/// `provider` with the server's cipher-suite preference: AES-128-GCM before
/// AES-256-GCM before ChaCha20-Poly1305, in each TLS version. It is the order
/// Go's crypto/tls (so kube-apiserver) uses on hardware with AES instructions,
/// whatever order the client lists them in; rustls clients and curl list
/// AES-256 first, which costs more per byte for the same security level a
/// Go server would give them.
fn aes128_first(provider: &rustls::crypto::CryptoProvider) -> rustls::crypto::CryptoProvider {
    use rustls::CipherSuite as S;
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        S::TLS13_AES_128_GCM_SHA256
        | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
        S::TLS13_AES_256_GCM_SHA384
        | S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        | S::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
        _ => 2,
    };
    let mut provider = provider.clone();
    provider.cipher_suites.sort_by_key(rank);
    provider
}

/// A client-certificate verifier for the handshake that proves possession of
/// the key (the signature checks are the WebPKI verifier's) and leaves the
/// chain to authentication, as Go's `tls.RequestClientCert` does upstream.
#[derive(Debug)]
struct ClaimedCertificates(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for ClaimedCertificates {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// All `CERTIFICATE` blocks of a PEM bundle; an error if there is none.
pub fn parse_cert_chain(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem(format!("certificate: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::Pem("no CERTIFICATE block found".into()));
    }
    Ok(certs)
}

/// Cluster, user and context names written by [`write_kubeconfig`].
pub const KUBECONFIG_CLUSTER: &str = "kapi";
pub const KUBECONFIG_USER: &str = "kapi-admin";
pub const KUBECONFIG_CONTEXT: &str = "kapi";

/// Write a kubeconfig (YAML, mode 0600, atomically) with cluster `kapi`, user
/// `kapi-admin` and current context `kapi`, the CA and client credentials
/// embedded as base64 `*-data` fields.
pub fn write_kubeconfig(
    path: &Path,
    server_url: &str,
    ca_pem: &str,
    client_cert_pem: &str,
    client_key_pem: &str,
) -> io::Result<()> {
    let text = kubeconfig_yaml(server_url, ca_pem, client_cert_pem, client_key_pem);
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    pki::write_file_atomic(path, text.as_bytes(), 0o600)
}

/// The kubeconfig text. Strings are emitted JSON-quoted, which YAML reads as
/// double-quoted scalars.
fn kubeconfig_yaml(server_url: &str, ca: &str, cert: &str, key: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let q = |s: &str| serde_json::Value::String(s.to_string()).to_string();
    format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: {cluster}\n\
         \x20 cluster:\n\
         \x20   server: {server}\n\
         \x20   certificate-authority-data: {ca}\n\
         users:\n\
         - name: {user}\n\
         \x20 user:\n\
         \x20   client-certificate-data: {cert}\n\
         \x20   client-key-data: {key}\n\
         contexts:\n\
         - name: {context}\n\
         \x20 context:\n\
         \x20   cluster: {cluster}\n\
         \x20   user: {user}\n\
         current-context: {context}\n\
         preferences: {{}}\n",
        cluster = q(KUBECONFIG_CLUSTER),
        user = q(KUBECONFIG_USER),
        context = q(KUBECONFIG_CONTEXT),
        server = q(server_url),
        ca = b64(ca),
        cert = b64(cert),
        key = b64(key),
    )
}
