//! The HTTPS client to extension servers: one connection per request
//! (HTTP/1.1 over rustls with the ring provider), opened by the `cluster`
//! egress selection's dialer at the endpoint the
//! service resolver picked while verifying the certificate for the service's
//! DNS name `<svc>.<ns>.svc` against the APIService's `caBundle` — or not at
//! all under `insecureSkipTLSVerify` — and presenting the front-proxy client
//! certificate when one is configured.
//!
//! Invariants: the response body is streamed (a watch stays open as long as
//! the extension server keeps it open); the connection task ends with it.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use kapi_client::accept_any::AcceptAnyCert;
use kapi_client::service_resolver::Endpoint;
use kapi_client::trust::GoTrust;

/// How long dialling plus the TLS handshake may take.
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request did not reach the extension server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("dial tcp {0}: {1}")]
    Dial(String, String),
    #[error("tls: {0}")]
    Tls(String),
    #[error("{0}")]
    Http(String),
}

/// The client TLS configuration for one APIService.
pub fn tls_config(
    ca_bundle_pem: &[u8],
    insecure: bool,
    client: Option<&(String, String)>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = kapi_http::tls::crypto_provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(AcceptAnyCert::new(provider))
    } else {
        let roots = CertificateDer::pem_slice_iter(ca_bundle_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("caBundle: {e}"))?;
        GoTrust::config(builder, roots).map_err(|e| format!("caBundle: {e}"))?
    };
    let mut config = match client {
        Some((cert, key)) => {
            let chain = kapi_http::tls::parse_cert_chain(cert).map_err(|e| e.to_string())?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("proxy client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| e.to_string())?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Send `req` (origin-form URI) to `endpoint` over TLS as `server_name`,
/// the connection opened by `dialer`.
pub async fn send(
    endpoint: &Endpoint,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
    dialer: &Arc<dyn kapi_egress::Dialer>,
    req: Request<Body>,
) -> Result<Response<hyper::body::Incoming>, ClientError> {
    let authority = endpoint.authority();
    let dial = async {
        let tcp = dialer
            .dial(&endpoint.host, endpoint.port)
            .await
            .map_err(|e| ClientError::Dial(authority.clone(), e.to_string()))?;
        let name = ServerName::try_from(server_name.to_owned())
            .map_err(|e| ClientError::Tls(e.to_string()))?;
        tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| ClientError::Tls(e.to_string()))
    };
    let stream = tokio::time::timeout(DIAL_TIMEOUT, dial)
        .await
        .map_err(|_| ClientError::Dial(authority.clone(), "i/o timeout".into()))??;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ClientError::Http(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "extension server connection ended");
        }
    });
    sender
        .send_request(req)
        .await
        .map_err(|e| ClientError::Http(e.to_string()))
}
