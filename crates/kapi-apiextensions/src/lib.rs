//! kapi-apiextensions: what custom resources need beyond the generic store.
//! `structural/` turns a CRD's OpenAPI v3 schema into a structural schema and
//! validates, prunes and defaults objects against it (with CEL rules); `crd/`
//! holds the strategies of CustomResourceDefinitions and of the custom objects
//! they define. The server installs and removes custom resources at run time
//! (`kapi-server`).

pub mod crd;
pub mod structural;
