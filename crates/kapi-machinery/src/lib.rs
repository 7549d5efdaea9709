//! kapi-machinery: the pure core of the API server — the vocabulary every layer above
//! shares, with no I/O. Objects are `serde_json::Value`s; this crate knows how to read
//! their metadata, select them (label and field selectors), patch them (JSON, merge and
//! strategic merge patches), track field ownership for server-side apply (field
//! paths, schema-driven merge, ownership), validate names, know CEL's reserved words (`cel.rs`), and report failures as `metav1.Status`.
//!
//! Where to look next: `kapi-registry` builds the generic store on top of this.

pub mod apply;
pub mod cel;
pub mod config_file;
pub mod fieldpath;
pub mod fields;
pub mod gojson;
pub mod gotime;
pub mod labels;
pub mod member;
pub mod quantity;
pub mod schema;
pub mod status;
pub mod strategic;
pub mod typed;
pub mod validation;
