//! Connections to destinations: a dial through the configured [`Dialer`]
//! bounded by `--kubelet-timeout`, then TLS for `https` destinations with
//! the kubelet client certificate and CA (`config.rs` says when the peer
//! is verified).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use kapi_client::accept_any::AcceptAnyCert;
use kapi_client::trust::GoTrust;

use crate::config::{BoxIo, KubeletConfig};

/// The built connection factory.
pub struct Transport {
    pub config: KubeletConfig,
    tls: Arc<rustls::ClientConfig>,
    /// TLS for proxied `https:` pods and services: never verified, as upstream's
    /// proxy transport skips verification of those (they are addressed by IP).
    tls_insecure: Arc<rustls::ClientConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum DialError {
    #[error("dial tcp {0}: i/o timeout")]
    Timeout(String),
    #[error("dial tcp {0}: {1}")]
    Connect(String, std::io::Error),
    #[error("tls: {0}")]
    Tls(std::io::Error),
}

impl Transport {
    pub fn new(config: KubeletConfig) -> Result<Transport, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match &config.certificate_authority {
            Some(ca) => GoTrust::config(builder, read_certs(ca)?)
                .map_err(|e| format!("{}: {e}", ca.display()))?,
            None => builder
                .dangerous()
                .with_custom_certificate_verifier(AcceptAnyCert::new(provider.clone())),
        };
        let identity = match (&config.client_certificate, &config.client_key) {
            (Some(c), Some(k)) => Some((read_certs(c)?, read_key(k)?)),
            (None, None) => None,
            _ => {
                return Err(
                    "--kubelet-client-certificate and --kubelet-client-key go together".into(),
                )
            }
        };
        let identity2 = identity.as_ref().map(|(c, k)| (c.clone(), k.clone_key()));
        let tls = match identity2 {
            Some((certs, key)) => builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| e.to_string())?,
            None => builder.with_no_client_auth(),
        };
        let insecure = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(AcceptAnyCert::new(provider));
        let tls_insecure = match identity {
            Some((certs, key)) => insecure
                .with_client_auth_cert(certs, key)
                .map_err(|e| e.to_string())?,
            None => insecure.with_no_client_auth(),
        };
        Ok(Transport {
            config,
            tls: Arc::new(tls),
            tls_insecure: Arc::new(tls_insecure),
        })
    }

    /// Open a connection to `host:port`, TLS when `https`; `kubelet` picks the
    /// kubelet TLS settings (verified against the CA) over the proxy ones.
    pub async fn connect(
        &self,
        host: &str,
        port: u16,
        https: bool,
        kubelet: bool,
    ) -> Result<BoxIo, DialError> {
        let addr = authority(host, port);
        let dial = self.config.dialer.dial(host, port);
        let tcp = match tokio::time::timeout(self.config.timeout, dial).await {
            Err(_) => return Err(DialError::Timeout(addr)),
            Ok(Err(e)) => return Err(DialError::Connect(addr, e)),
            Ok(Ok(io)) => io,
        };
        if !https {
            return Ok(tcp);
        }
        let cfg = if kubelet {
            self.tls.clone()
        } else {
            self.tls_insecure.clone()
        };
        let name = ServerName::try_from(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
        )
        .map_err(|e| DialError::Tls(std::io::Error::other(e)))?;
        let connector = tokio_rustls::TlsConnector::from(cfg);
        let tls = tokio::time::timeout(self.config.timeout, connector.connect(name, tcp))
            .await
            .map_err(|_| DialError::Timeout(addr))?
            .map_err(DialError::Tls)?;
        Ok(Box::new(tls))
    }
}

/// `host:port`, bracketing IPv6 addresses.
pub fn authority(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn read_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let certs: Result<Vec<_>, _> = rustls_pemfile::certs(&mut pem.as_slice()).collect();
    let certs = certs.map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificates", path.display()));
    }
    Ok(certs)
}

fn read_key(path: &std::path::Path) -> Result<PrivateKeyDer<'static>, String> {
    let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no private key", path.display()))
}
