//! The strategy of one custom resource at one version, built from its
//! definition (upstream: `registry/customresource/strategy.go` and
//! `tableconvertor`): every write is pruned of fields the schema does not know,
//! defaulted, then validated against the schema and its CEL rules (transition
//! rules see the old object on update and on `status`); `generation` counts
//! changes outside metadata and status; the table shows `Name` plus the
//! version's `additionalPrinterColumns` (or `Age` when it has none); the
//! version's `selectableFields` are field selectors; a deprecated version
//! carries its warning.
//!
//! Status and scale behave as for built-ins: the generic store keeps `status`
//! out of main-resource writes and everything but `status` out of `/status`
//! writes when the version has a status subresource.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kapi_machinery::validation::{ErrorList, STANDARD_FINALIZERS};
use kapi_registry::{StatusMetadata, Strategy};
use serde_json::{json, Value};

use super::jsonpath::JsonPath;
use super::schema::Schema;
use super::types::PrinterColumn;

/// Formats a timestamp as the time since then (upstream `HumanDuration`); the
/// server passes the one built-in tables use.
pub type SinceFn = fn(&str) -> Option<String>;

/// `metav1.ObjectMeta` docs upstream puts on the Name and Age columns.
const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// One printer column, parsed.
struct Column {
    def: PrinterColumn,
    path: JsonPath,
}

pub struct CustomStrategy {
    schema: Option<Arc<Schema>>,
    columns: Vec<Column>,
    selectable: Vec<String>,
    warning: Option<String>,
    since: SinceFn,
    /// Set while the definition is being deleted: creates are refused.
    terminating: Arc<AtomicBool>,
}

impl CustomStrategy {
    pub fn new(
        schema: Option<Arc<Schema>>,
        mut columns: Vec<PrinterColumn>,
        selectable: Vec<String>,
        warning: Option<String>,
        since: SinceFn,
        terminating: Arc<AtomicBool>,
    ) -> CustomStrategy {
        if columns.is_empty() {
            columns.push(PrinterColumn {
                name: "Age".into(),
                type_: "date".into(),
                description: AGE_DOC.into(),
                json_path: ".metadata.creationTimestamp".into(),
                ..PrinterColumn::default()
            });
        }
        let columns = columns
            .into_iter()
            .filter_map(|def| {
                let path = JsonPath::parse(&def.json_path).ok()?;
                Some(Column { def, path })
            })
            .collect();
        CustomStrategy {
            schema,
            columns,
            selectable,
            warning,
            since,
            terminating,
        }
    }

    fn check(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        let Some(schema) = &self.schema else {
            return Vec::new();
        };
        schema.validate(obj, old)
    }

    fn cell(&self, col: &Column, obj: &Value) -> Value {
        let Some(value) = col.path.find(obj).into_iter().next() else {
            return Value::Null;
        };
        match (col.def.type_.as_str(), value) {
            ("string", Value::String(s)) => json!(s),
            ("string", Value::Null) => Value::Null,
            ("string", other) => json!(other.to_string()),
            ("integer", Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, |i| json!(i)),
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
            ("boolean", Value::Bool(b)) => json!(b),
            ("date", Value::String(s)) => {
                json!((self.since)(s).unwrap_or_else(|| "<invalid>".into()))
            }
            _ => Value::Null,
        }
    }
}

impl Strategy for CustomStrategy {
    /// Status writes keep the stored metadata (upstream's custom resource
    /// status strategy).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::Stored
    }

    fn default(&self, obj: &mut Value) {
        if let Some(schema) = &self.schema {
            schema.prune(obj);
            schema.default(obj);
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        self.check(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        self.check(new, Some(old))
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        finalizer_warnings(obj, None)
    }

    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        finalizer_warnings(new, Some(old))
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, old: &Value) -> ErrorList {
        self.check(new, Some(old))
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn selectable_field_names(&self) -> Vec<String> {
        self.selectable.clone()
    }

    /// Upstream's custom resource handler words every refusal alike.
    fn field_label_error(&self, label: &str) -> String {
        format!("field label not supported: {label}")
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let path = JsonPath::parse(&format!(".{field}")).ok()?;
        path.find(obj).into_iter().next().map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    fn column_definitions(&self) -> Vec<Value> {
        let mut out = vec![json!({"name": "Name", "type": "string", "format": "name",
                                  "description": NAME_DOC, "priority": 0})];
        for c in &self.columns {
            let description = if c.def.description.is_empty() {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.def.json_path
                )
            } else {
                c.def.description.clone()
            };
            out.push(
                json!({"name": c.def.name, "type": c.def.type_, "format": c.def.format,
                            "description": description, "priority": c.def.priority}),
            );
        }
        out
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let name = obj
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null);
        std::iter::once(name)
            .chain(self.columns.iter().map(|c| self.cell(c, obj)))
            .collect()
    }

    fn unknown_fields(&self, obj: &Value) -> Option<Vec<String>> {
        let schema = self.schema.as_ref()?;
        let mut copy = obj.clone();
        Some(schema.prune(&mut copy))
    }

    fn refuses_create(&self) -> Option<String> {
        self.terminating
            .load(Ordering::Relaxed)
            .then(|| "create not allowed while custom resource definition is terminating".into())
    }

    fn deprecation_warning(&self) -> Option<String> {
        self.warning.clone()
    }
}

/// The warnings for finalizers a write adds (upstream's custom resource
/// `generateWarningsFromObj`): a name that is not domain-qualified may clash
/// with another controller's. The names come sorted, each once.
fn finalizer_warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let names = |o: &Value| -> std::collections::BTreeSet<String> {
        kapi_registry::meta::finalizers(o).into_iter().collect()
    };
    let before = old.map(names).unwrap_or_default();
    names(obj)
        .difference(&before)
        .filter(|f| !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()))
        .map(|f| {
            let advice = if f.contains('.') {
                "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            } else {
                "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
            };
            format!("metadata.finalizers: {f:?}: {advice}")
        })
        .collect()
}
