//! kapi-resources: the built-in API of Kubernetes as data — which resources exist
//! (`registry.rs`), their strategies (`core/`, `apps/`), their schemas and the
//! OpenAPI documents built from them (`openapi/`), and the table of patch and
//! list semantics those schemas drop (`patchmeta.rs`).

pub mod admissionregistration;
pub mod apps;
pub mod certificates;
pub mod core;
pub mod flowcontrol;
mod more;
pub mod node;
pub mod openapi;
pub mod patchmeta;
pub mod rbac;
pub mod registry;
pub mod reviews;
pub mod scheduling;
pub mod storage;
