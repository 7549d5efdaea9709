//! kapi-egress: how the API server opens connections leaving it, per
//! network context, as kube-apiserver's `--egress-selector-config-file`
//! (an `EgressSelectorConfiguration`, `apiserver.k8s.io` v1beta1 or
//! v1alpha1) says.
//!
//! Three contexts, named as upstream: `cluster` (kubelets, pods, services
//! and nodes behind the connect subresources and proxies, extension API
//! servers, admission and conversion webhooks addressed by `service`),
//! `controlplane` (authentication, authorization and audit webhooks,
//! admission and conversion webhooks addressed by `url`) and `etcd`. A
//! context without a selection dials directly, as upstream.
//!
//! Every dial of those callers goes through a [`Dialer`]: [`TcpDialer`]
//! (`Direct`), [`connect::HttpConnect`] (`HTTPConnect` to a konnectivity
//! server or any HTTP CONNECT proxy, over TCP, TLS or a unix socket) or
//! [`grpc::Konnectivity`] (`GRPC`: konnectivity's `ProxyService` over a unix
//! socket, `grpc.rs`). The etcd client dials through the `etcd` selection's
//! dialer too (the binary hands it to the storage). The file is read and
//! validated in `config.rs`; [`Egress`] is what it becomes, built once at
//! start and never changed.

pub mod config;
pub mod connect;
pub mod grpc;
pub mod unix;

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

pub use config::{Connection, EgressSelectorConfiguration, Protocol};

/// A byte stream to a destination.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

pub type BoxIo = Box<dyn Io>;

/// Opens connections to `host:port`.
#[async_trait::async_trait]
pub trait Dialer: Send + Sync {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<BoxIo>;
}

/// Plain TCP: upstream's `Direct`.
pub struct TcpDialer;

#[async_trait::async_trait]
impl Dialer for TcpDialer {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<BoxIo> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let s = tokio::net::TcpStream::connect((host, port)).await?;
        let _ = s.set_nodelay(true);
        Ok(Box::new(s))
    }
}

/// The network a connection is meant for (upstream's `EgressType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    ControlPlane,
    Etcd,
    Cluster,
}

impl Network {
    /// The name a selection uses for it.
    pub fn name(self) -> &'static str {
        match self {
            Network::ControlPlane => "controlplane",
            Network::Etcd => "etcd",
            Network::Cluster => "cluster",
        }
    }
}

/// The dialer of each network context. Cheap to clone; [`Default`] dials
/// everything directly (no `--egress-selector-config-file`).
#[derive(Clone)]
pub struct Egress {
    control_plane: Arc<dyn Dialer>,
    cluster: Arc<dyn Dialer>,
    etcd: Arc<dyn Dialer>,
    /// The etcd selection's protocol (`Direct` without one), for messages.
    etcd_protocol: Protocol,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("etcd", &self.etcd_protocol)
            .finish_non_exhaustive()
    }
}

impl Default for Egress {
    fn default() -> Self {
        Egress {
            control_plane: Arc::new(TcpDialer),
            cluster: Arc::new(TcpDialer),
            etcd: Arc::new(TcpDialer),
            etcd_protocol: Protocol::Direct,
        }
    }
}

impl Egress {
    /// Read, validate and build the selections of `path`, as upstream's
    /// `EgressSelectorOptions` (`Validate`, then `ApplyTo`) do; the error is
    /// upstream's message.
    pub fn load(path: &Path) -> Result<Egress, String> {
        if !path.exists() {
            return Err(format!(
                "egress-selector-config-file {} does not exist",
                path.display()
            ));
        }
        let data = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "failed to read egress selector config: unable to read egress selector configuration from {:?} [{e}]",
                path.display().to_string()
            )
        })?;
        let config = config::parse(&data)
            .map_err(|e| format!("failed to read egress selector config: {e}"))?;
        if let Some(msg) = config::validate(&config) {
            return Err(format!(
                "failed to validate egress selector configuration: {msg}"
            ));
        }
        Egress::from_config(&config)
    }

    /// The dialers of a validated configuration.
    pub fn from_config(config: &EgressSelectorConfiguration) -> Result<Egress, String> {
        let mut egress = Egress::default();
        for s in &config.egress_selections {
            let name = s.name.to_ascii_lowercase();
            let network = match name.as_str() {
                "controlplane" => Network::ControlPlane,
                "etcd" => Network::Etcd,
                "cluster" => Network::Cluster,
                _ => return Err(format!("unrecognized service name {}", s.name)),
            };
            let protocol = Protocol::parse(&s.connection.proxy_protocol).ok_or_else(|| {
                format!(
                    "unrecognized service connection protocol {:?}",
                    s.connection.proxy_protocol
                )
            })?;
            let dialer = dialer(&s.connection, protocol).map_err(|e| {
                format!("failed to create dialer for egressSelection {name:?}: {e}")
            })?;
            match network {
                Network::ControlPlane => egress.control_plane = dialer,
                Network::Cluster => egress.cluster = dialer,
                Network::Etcd => {
                    egress.etcd = dialer;
                    egress.etcd_protocol = protocol;
                }
            }
        }
        Ok(egress)
    }

    /// This selector with `network` dialled by `dialer` (tests route
    /// addresses elsewhere).
    pub fn with(mut self, network: Network, dialer: Arc<dyn Dialer>) -> Egress {
        match network {
            Network::ControlPlane => self.control_plane = dialer,
            Network::Cluster => self.cluster = dialer,
            Network::Etcd => self.etcd = dialer,
        }
        self
    }

    /// The dialer of `network`.
    pub fn dialer(&self, network: Network) -> Arc<dyn Dialer> {
        match network {
            Network::ControlPlane => self.control_plane.clone(),
            Network::Cluster => self.cluster.clone(),
            Network::Etcd => self.etcd.clone(),
        }
    }

    pub fn cluster(&self) -> Arc<dyn Dialer> {
        self.dialer(Network::Cluster)
    }

    pub fn control_plane(&self) -> Arc<dyn Dialer> {
        self.dialer(Network::ControlPlane)
    }

    pub fn etcd(&self) -> Arc<dyn Dialer> {
        self.dialer(Network::Etcd)
    }

    /// The protocol the `etcd` selection asks for (`Direct` without one).
    pub fn etcd_protocol(&self) -> Protocol {
        self.etcd_protocol
    }
}

/// The dialer one validated connection describes.
fn dialer(c: &Connection, protocol: Protocol) -> Result<Arc<dyn Dialer>, String> {
    match protocol {
        Protocol::Direct => Ok(Arc::new(TcpDialer)),
        Protocol::HttpConnect => {
            let t = c
                .transport
                .as_ref()
                .ok_or("transport must be set for HTTPConnect")?;
            match (&t.uds, &t.tcp) {
                (Some(uds), _) => Ok(Arc::new(connect::HttpConnect::uds(&uds.uds_name))),
                (None, Some(tcp)) => Ok(Arc::new(connect::HttpConnect::tcp(tcp)?)),
                (None, None) => Err("Either a TCP or UDS transport must be specified".into()),
            }
        }
        // Upstream's message; validation already asks for `uds`.
        Protocol::Grpc => match c.transport.as_ref().and_then(|t| t.uds.as_ref()) {
            Some(uds) => Ok(Arc::new(grpc::Konnectivity::uds(&uds.uds_name))),
            None => Err("UDS transport must be specified for GRPC".into()),
        },
    }
}
