//! The one place the CRD code meets `structural/`: a version's schema compiled
//! once when the definition is installed, and the calls the custom-resource
//! strategy makes on every write (prune, default, validate, CEL) and the merge
//! code makes for server-side apply (`SchemaNav`).

use std::sync::Arc;

use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_machinery::validation::{ErrorList, FieldPath};
use serde_json::Value;

use crate::structural::{self, Structural, StructuralNav};

/// One version's compiled schema.
pub struct Schema {
    raw: Value,
    structural: Arc<Structural>,
}

impl Schema {
    pub fn new(raw: &Value) -> Result<Schema, String> {
        Ok(Schema {
            raw: raw.clone(),
            structural: Arc::new(Structural::from_json(raw)?),
        })
    }

    /// The schema as the definition wrote it.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    /// Schema validation then CEL rules, in upstream's order (on update, errors
    /// in unchanged values are dropped: validation ratcheting).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        self.structural.validate_all(obj, old)
    }

    /// Drop unknown fields; the dropped paths.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        self.structural.prune(obj)
    }

    pub fn default(&self, obj: &mut Value) {
        self.structural.default(obj)
    }

    /// The navigator for merges and managedFields (ObjectMeta answered by
    /// `fallback`), with the root type.
    pub fn nav(&self, fallback: Arc<dyn SchemaNav>) -> (Arc<dyn SchemaNav>, TypeRef) {
        let nav = StructuralNav::with_fallback(self.structural.clone(), fallback);
        (Arc::new(nav), StructuralNav::root_type())
    }
}

/// The structural-schema rules of a definition's schema.
pub fn validate_schema(schema: &Value, path: &FieldPath) -> ErrorList {
    structural::validate_schema(schema, path)
}
