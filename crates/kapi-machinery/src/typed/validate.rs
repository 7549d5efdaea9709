//! Validation of an applied configuration against its schema, as upstream's
//! typed conversion of an apply patch: the whole value is walked (atomic lists
//! and maps too), and the first error is reported with its path — a field a
//! struct type does not declare, a list-map element without its key fields, or
//! two elements with the same key in a list map or set.
//!
//! Struct types are those the schema marks as such ([`SchemaNav::is_struct`]);
//! map-valued types take any key, and `apiVersion`, `kind` and `metadata` are
//! always allowed (custom resource schemas and embedded resources often leave
//! them undeclared; upstream adds them).
//!
//! [`SchemaNav::is_struct`]: crate::schema::SchemaNav::is_struct

use serde_json::Value;

use super::{at_path, Node, Typed, TypedError};
use crate::fieldpath::{Path, PathElement, Set};
use crate::schema::ListType;

impl Typed<'_> {
    /// Check an applied configuration (see the module doc).
    pub fn validate(&self, obj: &Value) -> Result<(), TypedError> {
        self.validate_at(obj, &self.root_node(), &mut Vec::new())
    }

    fn validate_at(&self, v: &Value, node: &Node, path: &mut Path) -> Result<(), TypedError> {
        match v {
            Value::Object(m) => {
                let strict =
                    self.schema.is_struct(node.ty()) && self.schema.map_value(node.ty()).is_none();
                for (k, child) in m {
                    let (cn, named) = self.field_node(node, path.is_empty(), k);
                    path.push(PathElement::Field(k.clone()));
                    let undeclared = strict
                        && !named
                        && !matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
                    if undeclared {
                        return Err(at_path(
                            path,
                            TypedError("field not declared in schema".into()),
                        ));
                    }
                    self.validate_at(child, &cn, path)?;
                    path.pop();
                }
            }
            Value::Array(items) => {
                let en = self.elem_node(node);
                let mut seen = Set::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = self
                        .item_element(node, i, item)
                        .map_err(|e| at_path(path, e))?;
                    if *node.list() != ListType::Atomic {
                        let one = [pe.clone()];
                        if seen.has(&one) {
                            let e = TypedError(format!("duplicate entries for key {pe}"));
                            return Err(at_path(path, e));
                        }
                        seen.insert(&one);
                    }
                    path.push(pe);
                    self.validate_at(item, &en, path)?;
                    path.pop();
                }
            }
            _ => {}
        }
        Ok(())
    }
}
