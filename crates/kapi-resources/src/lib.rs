//! kapi-resources: the built-in API of Kubernetes as data — which resources exist
//! (`registry.rs`), their strategies (`core/`, `apps/`, `batch/`, `policy/`, `networking/`, ...), their schemas and the
//! OpenAPI documents built from them (`openapi/`), and the table of patch and
//! list semantics those schemas drop (`patchmeta/`).

pub mod admissionregistration;
pub mod apiregistration;
#[cfg(test)]
mod apply_scenarios;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
#[cfg(test)]
mod created_fields_tests;
pub mod discovery;
pub mod enablement;
pub mod events;
pub mod flowcontrol;
pub mod gotypes;
mod group_registry;
pub mod networking;
pub mod node;
pub mod openapi;
pub mod patchmeta;
pub mod policy;
pub mod rbac;
pub mod registry;
pub mod reviews;
pub mod scheduling;
pub mod storage;
pub mod storage_versions;
mod zero;
