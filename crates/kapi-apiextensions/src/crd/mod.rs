//! CustomResourceDefinitions: the strategy of the definitions themselves
//! (`strategy.rs`, `validation.rs`), and what a definition turns into — the
//! served resources of its versions (`resources.rs`) with the strategy of
//! their objects (`custom.rs`: prune, default, validate, tables, field
//! selectors). `schema.rs` is the one bridge to `structural/`; `jsonpath.rs`
//! evaluates printer-column and scale paths; `types.rs` is a typed view of a
//! definition; `stored.rs` converts definitions to and from v1beta1, the
//! version upstream stores them at.
//!
//! Where to look next: `kapi-server/src/apiextensions/` installs and removes
//! the resources while the server runs.

pub mod conversion;
pub mod custom;
pub mod jsonpath;
pub mod openapi;
pub mod resources;
pub mod schema;
pub mod stored;
pub mod strategy;
pub mod types;
pub mod validation;
mod validation_extra;

pub use conversion::{CrdConversion, ReviewClient};
pub use custom::{CustomStrategy, SinceFn};
pub use resources::{served, Served};
pub use strategy::{set_condition, CrdStrategy, CLEANUP_FINALIZER};
pub use types::Crd;

use std::sync::Arc;

use kapi_registry::{Origin, ResourceDef, Subresource, Verb};

/// The `customresourcedefinitions` resource (apiextensions.k8s.io/v1), as
/// upstream serves it: cluster-scoped, short names `crd`/`crds`, category
/// `api-extensions`, a status subresource.
pub fn definitions_resource() -> ResourceDef {
    ResourceDef {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        resource: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        kind: "CustomResourceDefinition".into(),
        list_kind: "CustomResourceDefinitionList".into(),
        namespaced: false,
        verbs: Verb::ALL.to_vec(),
        subresources: vec![Subresource::Status],
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        strategy: Arc::new(CrdStrategy),
        key_prefix: "/apiextensions.k8s.io/customresourcedefinitions".into(),
        // Stored at v1beta1, as upstream's apiextensions server stores them.
        conversion: Some(Arc::new(stored::StoredAsV1beta1)),
        protobuf: true,
        origin: Origin::BuiltinJson,
    }
}
