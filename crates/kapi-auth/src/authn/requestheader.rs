//! Request header authentication (upstream's front-proxy authenticator): a
//! client certificate that verifies against `--requestheader-client-ca-file`
//! and whose CN is in `--requestheader-allowed-names` (any CN when empty)
//! may name the user in headers — the first non-empty of
//! `--requestheader-username-headers`, every value of
//! `--requestheader-group-headers`, and `<prefix><key>` headers of
//! `--requestheader-extra-headers-prefix` as extra (key path-unescaped and
//! lower-cased). This is what an aggregating server (kapi's own aggregator
//! included) sends; see `aggregator/proxy.rs` for the sending side.
//!
//! Invariants: without a verified, allowed certificate the headers mean
//! nothing and authentication goes on to the other methods; a request this
//! authenticator accepted has the headers removed before any handler runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;

use super::{UserDetails, UserInfo};
use kapi_http::tls::PeerIdentity;

/// The settings of the `--requestheader-*` flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeaderConfig {
    /// PEM bundle of `--requestheader-client-ca-file`.
    pub client_ca: String,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    /// `--requestheader-uid-headers` (none by default, as upstream).
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_headers_prefix: Vec<String>,
}

impl RequestHeaderConfig {
    /// Upstream's defaults for the header names (kube-apiserver's flags
    /// default to empty; kubeadm and every guide set these).
    pub fn with_defaults(client_ca: String) -> Self {
        RequestHeaderConfig {
            client_ca,
            allowed_names: Vec::new(),
            username_headers: vec!["X-Remote-User".into()],
            uid_headers: Vec::new(),
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
        }
    }
}

/// A verifier of certificates against a set of CAs.
#[derive(Clone)]
pub struct CertVerifier(Arc<dyn ClientCertVerifier>);

impl std::fmt::Debug for CertVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertVerifier")
    }
}

impl CertVerifier {
    /// Trust the CA certificates of the PEM bundles.
    pub fn new(ca_pems: &[String]) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        for pem in ca_pems {
            for cert in kapi_http::tls::parse_cert_chain(pem).map_err(|e| e.to_string())? {
                roots.add(cert).map_err(|e| e.to_string())?;
            }
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            kapi_http::tls::crypto_provider(),
        )
        .build()
        .map_err(|e| e.to_string())?;
        Ok(CertVerifier(verifier))
    }

    /// Whether `chain` (leaf first) verifies.
    pub fn verifies(&self, chain: &[CertificateDer<'static>]) -> bool {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return false;
        };
        self.0
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .is_ok()
    }
}

/// The front-proxy authenticator.
#[derive(Debug, Clone)]
pub struct RequestHeader {
    pub config: RequestHeaderConfig,
    verifier: CertVerifier,
}

impl RequestHeader {
    pub fn new(config: RequestHeaderConfig) -> Result<Self, String> {
        let verifier = CertVerifier::new(std::slice::from_ref(&config.client_ca))
            .map_err(|e| format!("--requestheader-client-ca-file: {e}"))?;
        Ok(RequestHeader { config, verifier })
    }

    /// The user the headers name, when `peer` is a trusted front proxy and a
    /// username header is set; `Err` (a reason for the log) for a certificate
    /// that is not trusted for this.
    pub fn authenticate(
        &self,
        peer: &PeerIdentity,
        headers: &HeaderMap,
    ) -> Option<Result<UserInfo, String>> {
        let name = self
            .config
            .username_headers
            .iter()
            .filter_map(|h| headers.get(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .find(|v| !v.is_empty())?
            .to_owned();
        if !self.verifier.verifies(&peer.chain) {
            return Some(Err(
                "front-proxy certificate not signed by the requestheader CA".into(),
            ));
        }
        let allowed = &self.config.allowed_names;
        if !allowed.is_empty() && !allowed.contains(&peer.user) {
            return Some(Err(format!(
                "x509: subject with cn={} is not in the allowed list",
                peer.user
            )));
        }
        let uid = self
            .config
            .uid_headers
            .iter()
            .filter_map(|h| headers.get(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .find(|v| !v.is_empty())
            .unwrap_or_default()
            .to_owned();
        let groups = self
            .config
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h.as_str()).iter())
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in headers {
            for prefix in &self.config.extra_headers_prefix {
                let prefix = prefix.to_ascii_lowercase();
                let Some(rest) = k.as_str().strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if let Ok(v) = v.to_str() {
                    let key = path_unescape(rest).to_lowercase();
                    extra.entry(key).or_default().push(v.to_owned());
                }
            }
        }
        Some(Ok(UserInfo::from(UserDetails {
            name,
            uid,
            groups,
            extra,
        })))
    }

    /// Remove the headers this authenticator reads.
    pub fn clear_headers(&self, headers: &mut HeaderMap) {
        let c = &self.config;
        for h in c
            .username_headers
            .iter()
            .chain(&c.uid_headers)
            .chain(&c.group_headers)
        {
            headers.remove(h.as_str());
        }
        let prefixes: Vec<String> = c
            .extra_headers_prefix
            .iter()
            .map(|p| p.to_ascii_lowercase())
            .collect();
        let drop: Vec<_> = headers
            .keys()
            .filter(|k| prefixes.iter().any(|p| k.as_str().starts_with(p.as_str())))
            .cloned()
            .collect();
        for k in drop {
            headers.remove(k);
        }
    }
}

/// Go's `url.PathUnescape` (invalid escapes are kept as they are).
fn path_unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape() {
        assert_eq!(path_unescape("acme.com%2Fproject"), "acme.com/project");
        assert_eq!(path_unescape("a%2"), "a%2");
        assert_eq!(path_unescape("plain"), "plain");
    }
}
