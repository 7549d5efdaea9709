//! kapi-registry: the generic registry store and everything a resource plugs into
//! it — its declaration ([`ResourceDef`]), its policy ([`Strategy`]) — the watch
//! cache the stores read through (`cache/`), the resource table of one server
//! (`apis.rs`: every served resource with its store), the admission hook the
//! store calls (`admission.rs`), and the metadata helpers the store and the
//! handlers share.
//!
//! Where to look next: `kapi-resources` declares the built-in resources;
//! `kapi-server` serves them.

pub mod admission;
pub mod apis;
pub mod cache;
pub mod codec;
pub mod hooks;
mod json_scan;
pub mod managed;
pub mod meta;
pub mod ranges;
pub mod resource;
pub mod store;
pub mod strategy;

pub use codec::{MediaType, Origin, StorageCodec};
pub use resource::{Conversion, ResourceDef, Subresource, Verb};
pub use store::Store;
pub use strategy::{Column, DefaultStrategy, GcPolicy, StatusMetadata, Strategy};
