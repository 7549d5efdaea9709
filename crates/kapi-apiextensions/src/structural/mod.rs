//! Structural schemas: a CRD version's `openAPIV3Schema` parsed into a tree that
//! validates, prunes and defaults custom objects as the apiextensions server does.
//!
//! What this module owns:
//! - [`Structural`] / [`Node`]: the parsed schema. One node type serves both the
//!   structural part (type, properties, items, additionalProperties, `x-kubernetes-*`)
//!   and the value validations under `allOf`/`anyOf`/`oneOf`/`not`, which upstream
//!   keeps apart; the structural rules in `schema_rules.rs` enforce the split.
//! - object validation (`validate.rs`, `formats.rs`: kube-openapi's validator with its
//!   messages, ratcheting on update; `listtype.rs`: list-type set/map uniqueness;
//!   `embedded.rs`: `x-kubernetes-embedded-resource` apiVersion/kind/metadata),
//!   pruning (`prune.rs`), defaulting (`default.rs`), CEL rules (`cel.rs` with
//!   `cel_check.rs`, `cel_cost.rs`, `cel_values.rs`), the CRD-side schema checks
//!   ([`validate_schema`]: `schema_rules.rs`, `schema_ext.rs`, `cel_schema.rs`) and
//!   the [`StructuralNav`] that lets strategic merge and server-side apply merge
//!   custom objects (`nav.rs`). `canon.rs` hashes JSON values so duplicate checks
//!   and list-item correlation stay linear.
//!
//! Invariants: nothing here panics on any schema or object; a schema that
//! [`validate_schema`] accepts parses with [`Structural::from_json`]; error paths and
//! messages are upstream's (kube-openapi builds paths as `spec.items[0].name`, map
//! entries as `spec.labels.key`).
//!
//! Where to look next: `crd/` (the CRD and custom-object strategies calling this),
//! `kapi_machinery::validation` (the error type), `kapi_machinery::schema` (the
//! navigation questions).

use std::collections::BTreeMap;

use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

mod canon;
pub mod cel;
mod cel_check;
mod cel_cost;
mod cel_schema;
mod cel_values;
mod default;
mod embedded;
mod formats;
mod go_regex;
mod listtype;
mod nav;
mod parse;
mod prune;
mod schema_ext;
mod schema_rules;
mod validate;

pub use nav::StructuralNav;
pub use schema_rules::validate_schema;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Additional {
    Bool(bool),
    Schema(Box<Node>),
}

/// One `x-kubernetes-validations` rule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub field_path: String,
    pub reason: String,
    pub optional_old_self: Option<bool>,
}

/// One schema node (JSONSchemaProps) with the fields custom resources use.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Node {
    /// `type`, empty when absent.
    pub ty: String,
    pub format: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub title: String,
    pub description: String,
    pub properties: BTreeMap<String, Node>,
    pub additional_properties: Option<Additional>,
    pub items: Option<Box<Node>>,
    pub required: Vec<String>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<String>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub enum_values: Option<Vec<Value>>,
    pub all_of: Vec<Node>,
    pub any_of: Vec<Node>,
    pub one_of: Vec<Node>,
    pub not: Option<Box<Node>>,
    pub x_preserve_unknown_fields: bool,
    /// Whether `x-kubernetes-preserve-unknown-fields` was written at all (even false).
    pub x_preserve_set: bool,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_type: Option<String>,
    pub x_list_map_keys: Vec<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Vec<Rule>,
    /// Whether `externalDocs` was given (forbidden under junctors).
    pub has_external_docs: bool,
    /// `pattern` compiled; `None` when absent or invalid (`validate_schema` reports it).
    pub(crate) pattern_re: Option<Pattern>,
    /// This node or one below it (properties, items, additionalProperties) is an
    /// embedded resource / has a set or map list type: lets those walks skip
    /// subtrees with nothing to check.
    pub(crate) embedded_below: bool,
    pub(crate) list_type_below: bool,
}

/// A compiled `pattern`; equal when the source is.
#[derive(Debug, Clone)]
pub(crate) struct Pattern(pub(crate) regex::Regex);

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Node {
    /// Parse one JSONSchemaProps object. Unknown keys are ignored; keys of the wrong
    /// JSON type are an error (the API decoder would reject them).
    pub fn from_json(v: &Value) -> Result<Node, String> {
        parse::node(v, "")
    }

    /// The schema for the value of map entries (`additionalProperties` as a schema).
    pub fn additional_schema(&self) -> Option<&Node> {
        match &self.additional_properties {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema of child `key` of an object: a declared property, else the
    /// `additionalProperties` schema.
    pub fn child(&self, key: &str) -> Option<&Node> {
        self.properties
            .get(key)
            .or_else(|| self.additional_schema())
    }
}

/// Errors after which upstream does not run CEL rules (`hasBlockingErr`).
fn is_blocking(e: &FieldError) -> bool {
    use kapi_machinery::validation::ErrorType as T;
    matches!(
        e.kind,
        T::NotSupported | T::Required | T::TooLong | T::TooMany | T::TypeInvalid
    )
}

/// A CRD version's schema, parsed. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Structural {
    /// The schema tree. Read-only in spirit: the compiled CEL rules were built from
    /// it, so a changed schema is parsed anew with [`Structural::from_json`].
    pub root: Node,
    pub(crate) cel: cel::CompiledRules,
}

impl Structural {
    /// Parse a JSONSchemaProps JSON value (`spec.versions[*].schema.openAPIV3Schema`).
    /// CEL rules are compiled here; a rule that does not compile makes every object
    /// fail `validate_cel` with the compile error (`validate_schema` rejects such CRDs).
    pub fn from_json(schema: &Value) -> Result<Structural, String> {
        let root = Node::from_json(schema)?;
        let cel = cel::CompiledRules::compile(&root);
        Ok(Structural { root, cel })
    }

    /// Validate a whole custom object against the schema (OpenAPI value validations,
    /// embedded resources, list-type uniqueness). Upstream's paths and messages.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, None);
        errs.extend(embedded::validate(&FieldPath::default(), obj, &self.root));
        errs.extend(listtype::validate(None, &self.root, obj));
        errs
    }

    /// [`Structural::validate`] for an update: schema errors in values that did not
    /// change from `old` are dropped (upstream's CRD validation ratcheting, on by
    /// default since 1.30); list-type and embedded-resource checks still apply.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate::validate(&self.root, obj, Some(old));
        errs.extend(embedded::validate(&FieldPath::default(), obj, &self.root));
        errs.extend(listtype::validate(None, &self.root, obj));
        errs
    }

    /// Everything upstream's custom-object strategy checks against the schema, in its
    /// order: OpenAPI validation (ratcheted on update), embedded resources, list
    /// types, then the CEL rules — unless an earlier error is blocking (a wrong type,
    /// missing required field, unsupported enum value, too long or too many), when the
    /// rules are skipped with upstream's note that some were not checked (a schema
    /// without rules gets no note).
    pub fn validate_all(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.validate_all_with_warnings(obj, old).0
    }

    /// [`Structural::validate_all`] plus the ratcheting warnings of the CEL rules.
    pub fn validate_all_with_warnings(
        &self,
        obj: &Value,
        old: Option<&Value>,
    ) -> (Vec<FieldError>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut errs = match old {
            Some(old) => self.validate_update(obj, old),
            None => self.validate(obj),
        };
        if self.cel.is_empty() {
            // Without rules upstream has no CEL validator, and no note.
        } else if errs.iter().any(is_blocking) {
            errs.push(FieldError::invalid(
                &FieldPath::new("<nil>"),
                "null",
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            let (cel_errs, cel_warnings) = self.validate_cel_with_warnings(obj, old);
            errs.extend(cel_errs);
            warnings = cel_warnings;
        }
        (errs, warnings)
    }

    /// Evaluate the `x-kubernetes-validations` rules; `old` is the stored object on
    /// update (`None` on create, when transition rules are skipped).
    pub fn validate_cel(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.cel.validate(&self.root, obj, old).0
    }

    /// [`Structural::validate_cel`] plus the warnings upstream sends instead of
    /// errors for rules (without `oldSelf`) failing on values that did not change
    /// (ratcheting), as `Warning` header texts.
    pub fn validate_cel_with_warnings(
        &self,
        obj: &Value,
        old: Option<&Value>,
    ) -> (Vec<FieldError>, Vec<String>) {
        self.cel.validate(&self.root, obj, old)
    }

    /// Drop fields the schema does not declare; returns the dropped paths, sorted.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(obj, &self.root)
    }

    /// Apply `default`s (structural defaulting), after dropping `null`s of fields that
    /// are neither nullable nor defaulted — both as upstream's decoder does on create,
    /// update and every read from storage.
    pub fn default(&self, obj: &mut Value) {
        default::default(obj, &self.root)
    }
}
