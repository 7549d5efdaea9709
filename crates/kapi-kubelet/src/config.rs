//! How the API server reaches kubelets and other proxy destinations, as
//! kube-apiserver's `--kubelet-*` flags describe it, and the connection
//! factory built from it ([`Transport`]).
//!
//! Invariants: without `--kubelet-certificate-authority` the kubelet's
//! serving certificate is not verified (upstream sets `Insecure` when the
//! kubelet client config has no CA); the client certificate, when given, is
//! presented on every kubelet connection and on `https:` proxy connections to
//! pods and services (upstream's proxy transport carries the same TLS
//! identity). Every dial goes through the [`Dialer`]: the `cluster` egress
//! selection's (`kapi-egress`), or in tests a seam that reaches a fake
//! kubelet at a node address.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use kapi_egress::{BoxIo, Dialer, Io, TcpDialer};

/// The address types tried, in order, when none is configured.
pub const DEFAULT_ADDRESS_TYPES: &[&str] = &[
    "Hostname",
    "InternalDNS",
    "InternalIP",
    "ExternalDNS",
    "ExternalIP",
];

/// The kubelet port when the node does not publish one.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// `--kubelet-*` and `--enable-aggregator-routing`.
#[derive(Clone)]
pub struct KubeletConfig {
    pub client_certificate: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    pub certificate_authority: Option<PathBuf>,
    pub preferred_address_types: Vec<String>,
    /// `--kubelet-timeout`: bounds the dial and the wait for response headers
    /// of non-streaming kubelet calls.
    pub timeout: Duration,
    /// `--max-connection-bytes-per-sec`: each direction of a piped upgrade
    /// at most this many bytes a second (0: unlimited).
    pub max_bytes_per_sec: u64,
    /// Opens connections: the `cluster` egress selection (tests route node
    /// addresses elsewhere).
    pub dialer: Arc<dyn Dialer>,
}

impl std::fmt::Debug for KubeletConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeletConfig")
            .field("client_certificate", &self.client_certificate)
            .field("certificate_authority", &self.certificate_authority)
            .field("preferred_address_types", &self.preferred_address_types)
            .field("timeout", &self.timeout)
            .field("max_bytes_per_sec", &self.max_bytes_per_sec)
            .finish_non_exhaustive()
    }
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            client_certificate: None,
            client_key: None,
            certificate_authority: None,
            preferred_address_types: DEFAULT_ADDRESS_TYPES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            timeout: Duration::from_secs(5),
            max_bytes_per_sec: 0,
            dialer: Arc::new(TcpDialer),
        }
    }
}
