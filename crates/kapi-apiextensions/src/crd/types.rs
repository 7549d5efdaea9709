//! A typed view of the parts of a CustomResourceDefinition (apiextensions.k8s.io/v1)
//! the server acts on. Objects stay JSON everywhere (DESIGN: no typed struct per
//! kind); this view is read from the JSON when a definition is validated or
//! installed, and every field defaults so that a malformed definition still
//! parses and is reported by `validation.rs` rather than by serde.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Crd {
    pub metadata: Meta,
    pub spec: Spec,
    pub status: Status,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Spec {
    pub group: String,
    pub names: Names,
    pub scope: String,
    pub versions: Vec<Version>,
    pub conversion: Option<Conversion>,
    pub preserve_unknown_fields: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
    pub schema: Option<Validation>,
    pub subresources: Option<Subresources>,
    pub additional_printer_columns: Vec<PrinterColumn>,
    pub selectable_fields: Vec<SelectableField>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Validation {
    #[serde(rename = "openAPIV3Schema")]
    pub open_api_v3_schema: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Subresources {
    pub status: Option<Value>,
    pub scale: Option<Scale>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Scale {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PrinterColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    pub json_path: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SelectableField {
    pub json_path: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Conversion {
    pub strategy: String,
    pub webhook: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Status {
    pub conditions: Vec<Condition>,
    pub accepted_names: Names,
    pub stored_versions: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Crd {
    /// The view of `obj`; fields of the wrong type read as unset.
    pub fn parse(obj: &Value) -> Crd {
        serde_json::from_value(obj.clone()).unwrap_or_else(|_| lenient(obj))
    }

    pub fn namespaced(&self) -> bool {
        self.spec.scope == "Namespaced"
    }

    /// The version objects are stored at.
    pub fn storage_version(&self) -> Option<&Version> {
        self.spec.versions.iter().find(|v| v.storage)
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }

    pub fn is_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == "True")
    }
}

/// Field by field, so one mistyped field does not hide the rest of the
/// definition from validation.
fn lenient(obj: &Value) -> Crd {
    fn pick<T: for<'de> Deserialize<'de> + Default>(v: Option<&Value>) -> T {
        v.and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }
    let spec = obj.get("spec");
    let versions = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|vs| vs.iter().map(|v| pick(Some(v))).collect())
        .unwrap_or_default();
    Crd {
        metadata: pick(obj.get("metadata")),
        spec: Spec {
            group: pick(spec.and_then(|s| s.get("group"))),
            names: pick(spec.and_then(|s| s.get("names"))),
            scope: pick(spec.and_then(|s| s.get("scope"))),
            versions,
            conversion: pick(spec.and_then(|s| s.get("conversion"))),
            preserve_unknown_fields: pick(spec.and_then(|s| s.get("preserveUnknownFields"))),
        },
        status: pick(obj.get("status")),
    }
}
