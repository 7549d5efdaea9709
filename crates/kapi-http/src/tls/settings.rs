//! What the secure-serving flags ask of TLS: the lowest protocol version
//! (`--tls-min-version`), the TLS 1.2 cipher suites (`--tls-cipher-suites`,
//! IANA names as Go spells them) and certificates chosen by server name
//! (`--tls-sni-cert-key`).
//!
//! Invariants: names are checked as upstream's `cliflag` checks them (an
//! unknown version or suite is an error naming it). rustls speaks TLS 1.2 and
//! 1.3 only, so `VersionTLS10`/`VersionTLS11` leave 1.2 as the floor, and the
//! CBC, RC4, 3DES and RSA-key-exchange suites Go still offers are accepted by
//! name but cannot be served (named in [`TlsSettings::unavailable`]). As in
//! Go, TLS 1.3 suites are not configurable: naming them changes nothing.
//!
//! Server names: explicit patterns trump names read from the certificate, an
//! exact match trumps a wildcard (`*.example.com`, one label), and a client
//! that sends no server name is matched by the IP address it connected to.
//! Where to look next: `tls/serve.rs` picks the configuration per connection.

use std::net::IpAddr;
use std::sync::Arc;

use rustls::CipherSuite as S;

use super::TlsError;

/// `--tls-min-version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MinVersion {
    /// rustls's floor, TLS 1.2 (also what `VersionTLS10`/`VersionTLS11` give).
    #[default]
    Tls12,
    Tls13,
}

impl MinVersion {
    /// Upstream's names; empty is the default.
    pub fn parse(name: &str) -> Result<MinVersion, String> {
        match name {
            "" | "VersionTLS10" | "VersionTLS11" | "VersionTLS12" => Ok(MinVersion::Tls12),
            "VersionTLS13" => Ok(MinVersion::Tls13),
            other => Err(format!("unknown tls version {other:?}")),
        }
    }
}

/// TLS 1.2 suites rustls (ring) implements, by the names Go gives them.
const SERVED: &[(&str, S)] = &[
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        S::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        S::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        S::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// TLS 1.3 suites: valid names, not configurable (as in Go).
const TLS13: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// Suites Go knows and rustls does not implement.
const UNSERVABLE: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_RC4_128_SHA",
];

/// A certificate served to clients asking for some names.
#[derive(Debug, Clone)]
pub struct NamedCert {
    pub cert_pem: String,
    pub key_pem: String,
    /// Patterns given on the command line; empty takes the certificate's names.
    pub names: Vec<String>,
}

/// The TLS settings of the secure port.
#[derive(Debug, Clone, Default)]
pub struct TlsSettings {
    pub min_version: MinVersion,
    /// TLS 1.2 suites allowed; `None` keeps the defaults.
    pub cipher_suites: Option<Vec<S>>,
    /// Suites named on the command line that rustls cannot serve.
    pub unavailable: Vec<String>,
    /// `--tls-sni-cert-key`, in command-line order.
    pub sni: Vec<NamedCert>,
    /// `--disable-http2-serving`: ALPN offers HTTP/1.1 only.
    pub http1_only: bool,
}

impl TlsSettings {
    /// Read `--tls-min-version` and `--tls-cipher-suites`.
    pub fn parse(min_version: &str, cipher_suites: &[String]) -> Result<TlsSettings, String> {
        let mut settings = TlsSettings {
            min_version: MinVersion::parse(min_version)?,
            ..TlsSettings::default()
        };
        if cipher_suites.is_empty() {
            return Ok(settings);
        }
        let mut suites = Vec::new();
        for name in cipher_suites {
            if let Some((_, s)) = SERVED.iter().find(|(n, _)| n == name) {
                if !suites.contains(s) {
                    suites.push(*s);
                }
            } else if UNSERVABLE.contains(&name.as_str()) {
                settings.unavailable.push(name.clone());
            } else if !TLS13.contains(&name.as_str()) {
                return Err(format!(
                    "Cipher suite {name} not supported or doesn't exist"
                ));
            }
        }
        settings.cipher_suites = Some(suites);
        Ok(settings)
    }

    /// The protocol versions to offer.
    pub(crate) fn versions(&self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        static TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];
        match self.min_version {
            MinVersion::Tls12 => rustls::DEFAULT_VERSIONS,
            MinVersion::Tls13 => TLS13_ONLY,
        }
    }

    /// `provider` keeping only the allowed TLS 1.2 suites (every TLS 1.3 one stays).
    pub(crate) fn restrict(&self, provider: &mut rustls::crypto::CryptoProvider) {
        if let Some(allowed) = &self.cipher_suites {
            provider.cipher_suites.retain(|s| match s {
                rustls::SupportedCipherSuite::Tls13(_) => true,
                rustls::SupportedCipherSuite::Tls12(_) => allowed.contains(&s.suite()),
            });
        }
    }
}

/// One server-name pattern and the configuration it selects.
#[derive(Debug, Clone)]
struct Route {
    pattern: String,
    explicit: bool,
    config: Arc<rustls::ServerConfig>,
}

/// The server configurations of the secure port: the default one, and those
/// `--tls-sni-cert-key` selects by server name.
#[derive(Debug, Clone)]
pub struct ServingConfigs {
    pub default: Arc<rustls::ServerConfig>,
    routes: Vec<Route>,
}

impl From<Arc<rustls::ServerConfig>> for ServingConfigs {
    fn from(default: Arc<rustls::ServerConfig>) -> Self {
        ServingConfigs {
            default,
            routes: Vec::new(),
        }
    }
}

impl ServingConfigs {
    /// The default configuration plus one per named certificate (each made by
    /// `make` from its PEM pair), routed by its patterns.
    pub fn new(
        default: Arc<rustls::ServerConfig>,
        sni: &[NamedCert],
        make: impl Fn(&str, &str) -> Result<Arc<rustls::ServerConfig>, TlsError>,
    ) -> Result<ServingConfigs, TlsError> {
        let mut routes = Vec::new();
        for named in sni {
            let config = make(&named.cert_pem, &named.key_pem)
                .map_err(|e| TlsError::Pki(format!("failed to load SNI cert and key: {e}")))?;
            let (patterns, explicit) = if named.names.is_empty() {
                (certificate_names(&named.cert_pem)?, false)
            } else {
                (named.names.clone(), true)
            };
            for pattern in patterns {
                routes.push(Route {
                    pattern: pattern.to_ascii_lowercase(),
                    explicit,
                    config: config.clone(),
                });
            }
        }
        Ok(ServingConfigs { default, routes })
    }

    /// Whether any certificate is chosen by name.
    pub fn has_sni(&self) -> bool {
        !self.routes.is_empty()
    }

    /// The configuration for a client asking for `server_name`, or, without
    /// one, connected to `local_ip`.
    pub fn select(&self, server_name: Option<&str>, local_ip: IpAddr) -> Arc<rustls::ServerConfig> {
        let name = match server_name {
            Some(n) => n.trim_end_matches('.').to_ascii_lowercase(),
            None => local_ip.to_string(),
        };
        let wildcard = name.split_once('.').map(|(_, rest)| format!("*.{rest}"));
        // Explicit before extracted, exact before wildcard; first given wins.
        for explicit in [true, false] {
            for want in std::iter::once(Some(&name)).chain([wildcard.as_ref()]) {
                let Some(want) = want else { continue };
                if let Some(r) = self
                    .routes
                    .iter()
                    .find(|r| r.explicit == explicit && &r.pattern == want)
                {
                    return r.config.clone();
                }
            }
        }
        self.default.clone()
    }
}

/// The DNS and IP names a certificate is for (its SANs, else its CN).
fn certificate_names(cert_pem: &str) -> Result<Vec<String>, TlsError> {
    let der = super::pki::pem_to_der(cert_pem)?;
    let cert = super::pki::parse_x509(&der)?;
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                x509_parser::extensions::GeneralName::DNSName(d) => names.push(d.to_string()),
                x509_parser::extensions::GeneralName::IPAddress(b) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*b) {
                        names.push(IpAddr::from(v4).to_string());
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*b) {
                        names.push(IpAddr::from(v6).to_string());
                    }
                }
                _ => {}
            }
        }
    }
    if names.is_empty() {
        if let Some(cn) = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
        {
            names.push(cn.to_owned());
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_upstream() {
        assert_eq!(
            MinVersion::parse("VersionTLS14").unwrap_err(),
            "unknown tls version \"VersionTLS14\""
        );
        assert_eq!(MinVersion::parse("VersionTLS13"), Ok(MinVersion::Tls13));
        let s = TlsSettings::parse(
            "",
            &[
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
                "TLS_RSA_WITH_AES_128_CBC_SHA".into(),
                "TLS_AES_128_GCM_SHA256".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            s.cipher_suites,
            Some(vec![S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256])
        );
        assert_eq!(s.unavailable, ["TLS_RSA_WITH_AES_128_CBC_SHA"]);
        assert_eq!(
            TlsSettings::parse("", &["TLS_FOO".into()]).unwrap_err(),
            "Cipher suite TLS_FOO not supported or doesn't exist"
        );
    }
}
