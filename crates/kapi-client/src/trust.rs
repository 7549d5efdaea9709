//! Verifying a server's certificate against a CA bundle as Go's `crypto/x509`
//! does, for every client whose trust a `caBundle`, a kubeconfig or a flag
//! names (webhooks, APIServices, kubelets).
//!
//! The chain is checked by rustls's WebPKI verifier. One case differs: Go
//! trusts a server certificate that is itself one of the roots (byte for
//! byte), whatever its basic constraints say — what `openssl req -x509`
//! makes by default is a self-signed certificate with `CA:TRUE`, and such a
//! certificate given as its own `caBundle` is common. WebPKI refuses an
//! end-entity certificate that is a CA (`CaUsedAsEndEntity`). For exactly
//! that certificate the checks Go makes on a one-certificate chain are made
//! here: its validity period, the server's name against its subject
//! alternative names, and server authentication among its extended key
//! usages when it lists any. The handshake signatures are checked against
//! its key in every case.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// WebPKI's verification of a chain to `roots`, and Go's acceptance of a
/// server certificate that is one of them.
#[derive(Debug)]
pub struct GoTrust {
    webpki: Arc<WebPkiServerVerifier>,
    roots: Vec<CertificateDer<'static>>,
}

impl GoTrust {
    /// A verifier trusting `roots` (none is an error), checking signatures
    /// with `provider`'s algorithms.
    pub fn new(
        roots: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Arc<GoTrust>, String> {
        let mut store = rustls::RootCertStore::empty();
        for c in &roots {
            store.add(c.clone()).map_err(|e| e.to_string())?;
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Arc::new(GoTrust { webpki, roots }))
    }

    /// A rustls client configuration's verifier trusting `roots`.
    pub fn config(
        builder: rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>,
        roots: Vec<CertificateDer<'static>>,
    ) -> Result<rustls::ConfigBuilder<rustls::ClientConfig, rustls::client::WantsClientCert>, String>
    {
        let provider = builder.crypto_provider().clone();
        let verifier = GoTrust::new(roots, provider)?;
        Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(verifier))
    }
}

/// Go's checks of a one-certificate chain whose certificate is a root.
fn verify_root_as_leaf(
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), rustls::Error> {
    let bad = |e: CertificateError| rustls::Error::InvalidCertificate(e);
    let (_, parsed) = x509_parser::parse_x509_certificate(cert)
        .map_err(|_| bad(CertificateError::BadEncoding))?;
    let now = now.as_secs() as i64;
    let validity = parsed.validity();
    if now < validity.not_before.timestamp() {
        return Err(bad(CertificateError::NotValidYet));
    }
    if now > validity.not_after.timestamp() {
        return Err(bad(CertificateError::Expired));
    }
    let ee =
        webpki::EndEntityCert::try_from(cert).map_err(|_| bad(CertificateError::BadEncoding))?;
    ee.verify_is_valid_for_subject_name(name)
        .map_err(|e| match e {
            webpki::Error::CertNotValidForName(c) => {
                bad(CertificateError::NotValidForNameContext {
                    expected: c.expected,
                    presented: c.presented,
                })
            }
            _ => bad(CertificateError::NotValidForName),
        })?;
    if let Ok(Some(eku)) = parsed.extended_key_usage() {
        if !eku.value.any && !eku.value.server_auth {
            return Err(bad(CertificateError::InvalidPurpose));
        }
    }
    Ok(())
}

impl ServerCertVerifier for GoTrust {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Ok(v) => Ok(v),
            Err(e) => {
                if !self.roots.iter().any(|r| r.as_ref() == end_entity.as_ref()) {
                    return Err(e);
                }
                verify_root_as_leaf(end_entity, server_name, now)?;
                Ok(ServerCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
