//! The `networking.k8s.io/v1` group: ingresses, ingress classes, network policies.
//!
//! Each kind keeps upstream's commonly met rules (`pkg/apis/networking/validation`):
//! ingress paths and backends, an ingress class's immutable controller name, a
//! network policy's selectors, policy types and ports; defaults from
//! `pkg/apis/networking/v1/defaults.go`; tables from upstream's printers.
//!
//! Where to look next: `ingress.rs`, `networkpolicy.rs`.

pub mod ingress;
pub mod networkpolicy;

pub use ingress::{IngressClassStrategy, IngressStrategy};
pub use networkpolicy::NetworkPolicyStrategy;
