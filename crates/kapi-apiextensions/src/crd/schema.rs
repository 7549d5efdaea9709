//! The one place the CRD code meets `structural/`: a version's schema compiled
//! once when the definition is installed, and the calls the custom-resource
//! strategy makes on every write (prune, default, validate, CEL) and the merge
//! code makes for server-side apply (`SchemaNav`).

use std::sync::Arc;

use kapi_machinery::schema::{NoSchema, SchemaNav, TypeRef};
use kapi_machinery::validation::{ErrorList, FieldPath};
use serde_json::Value;

/// One version's compiled schema.
pub struct Schema {
    raw: Value,
}

impl Schema {
    pub fn new(raw: &Value) -> Result<Schema, String> {
        Ok(Schema { raw: raw.clone() })
    }

    /// The schema as the definition wrote it.
    pub fn raw(&self) -> &Value {
        &self.raw
    }

    pub fn validate(&self, _obj: &Value) -> ErrorList {
        Vec::new()
    }

    pub fn validate_cel(&self, _obj: &Value, _old: Option<&Value>) -> ErrorList {
        Vec::new()
    }

    pub fn prune(&self, _obj: &mut Value) {}

    pub fn default(&self, _obj: &mut Value) {}

    /// The navigator for merges and managedFields, with the root type.
    pub fn nav(&self) -> (Arc<dyn SchemaNav>, TypeRef) {
        (Arc::new(NoSchema), TypeRef::UNKNOWN)
    }
}

/// The structural-schema rules of a definition's schema.
pub fn validate_schema(_schema: &Value, _path: &FieldPath) -> ErrorList {
    Vec::new()
}
