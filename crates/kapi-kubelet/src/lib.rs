//! kapi-kubelet: how the API server reaches nodes and what runs on them —
//! the connect subresources (`pods/log`, `pods/exec`, `pods/attach`,
//! `pods/portforward`, and `proxy` of pods, services and nodes).
//!
//! A request flows: `connect.rs` (one entry point per subresource) →
//! `location.rs` (pod → node → kubelet address and port; Service → ready
//! endpoint; the proxyable-address check) and `options.rs` (query options,
//! kubelet URL) → `transport.rs` (dial through the `config.rs` dialer, TLS
//! with the kubelet client identity) → `forward.rs` (streamed HTTP, piped
//! upgrades, rate-limited by `throttle.rs` under `--max-connection-bytes-per-sec`), `translate.rs` (WebSocket v5 → SPDY, over `spdy/`) or
//! `tunnel.rs` (port-forward's SPDY-in-WebSocket). Nothing here knows the
//! filter chain: authentication, authorization, audit and flow control have
//! run before the server calls in.

pub mod config;
pub mod connect;
pub mod forward;
pub mod location;
pub mod options;
pub mod spdy;
pub mod throttle;
pub mod translate;
pub mod transport;
pub mod tunnel;
pub mod ws;

pub use config::{BoxIo, Dialer, KubeletConfig, TcpDialer};
pub use connect::{Connector, ProxyKind, ProxyTarget};
pub use options::StreamKind;
