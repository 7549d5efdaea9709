//! The core (`""`, `v1`) group: one strategy per kind — namespaces, configmaps,
//! secrets, pods, services, endpoints, events, serviceaccounts, nodes, pod templates and
//! replication controllers, persistent volumes and claims, limit ranges and quotas.
//!
//! Layout: each kind has its own file; `podspec.rs` / `podspec_validation.rs` hold the
//! `PodSpec` rules that pods and every workload template share; `table.rs` the table
//! helpers (`human_duration`, AGE cells); `util.rs` JSON helpers; `quantity.rs` enough
//! of `resource.Quantity` to compare values.
//!
//! Where to look next: `registry.rs` binds these strategies to resource declarations;
//! `apps/` reuses `podspec*` for workload templates.

pub mod componentstatus;
pub mod configmap;
pub mod endpoints;
pub mod event;
pub mod namespace;
pub mod node;
pub mod object_warnings;
pub mod pod;
mod pod_ephemeral;
mod pod_table;
pub mod pod_warnings;
pub mod podspec;
pub mod podspec_validation;
pub mod podtemplate;
mod probe_validation;
pub mod quantity;
pub mod quota;
pub mod quota_usage;
pub mod secret;
pub mod service;
pub mod serviceaccount;
pub mod table;
mod tls_pair;
pub mod util;
pub mod volume;
pub mod workload_warnings;

pub use configmap::ConfigMapStrategy;
pub use endpoints::EndpointsStrategy;
pub use event::EventStrategy;
pub use namespace::NamespaceStrategy;
pub use node::NodeStrategy;
pub use pod::PodStrategy;
pub use podtemplate::{PodTemplateStrategy, ReplicationControllerStrategy};
pub use quota::{LimitRangeStrategy, ResourceQuotaStrategy};
pub use secret::SecretStrategy;
pub use service::ServiceStrategy;
pub use serviceaccount::ServiceAccountStrategy;
pub use volume::{PersistentVolumeClaimStrategy, PersistentVolumeStrategy};
