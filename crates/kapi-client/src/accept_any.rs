//! Skipping verification of a server's certificate, as Go's
//! `InsecureSkipVerify`: for APIServices with `insecureSkipTLSVerify`,
//! `insecureSkipTLSVerifyBackend` log requests, kubelets without
//! `--kubelet-certificate-authority`, component status probes, and webhook
//! kubeconfigs with `insecure-skip-tls-verify`. Any
//! certificate chain is accepted; the handshake signatures are still checked
//! against the presented key, as Go does.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Accepts any server certificate; checks signatures with `provider`'s
/// algorithms.
#[derive(Debug)]
pub struct AcceptAnyCert(Arc<CryptoProvider>);

impl AcceptAnyCert {
    pub fn new(provider: Arc<CryptoProvider>) -> Arc<AcceptAnyCert> {
        Arc::new(AcceptAnyCert(provider))
    }
}

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
