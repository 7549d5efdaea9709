//! CustomResourceDefinitions as upstream stores them: at
//! `apiextensions.k8s.io/v1beta1` (kube-apiserver's apiextensions server
//! encodes definitions at v1beta1, the more compact form, and as JSON), served
//! at `v1`. [`StoredAsV1beta1`] is the definitions' [`Conversion`] between
//! the two, as upstream's conversion through its internal version:
//!
//! - `v1` → `v1beta1`: `version` is the first version's name; a per-version
//!   schema, subresources, printer columns or selectable fields identical in
//!   every version move up to `validation`, `subresources`,
//!   `additionalPrinterColumns`, `selectableFields`; the webhook settings of
//!   `conversion` flatten; `preserveUnknownFields` is always written.
//! - `v1beta1` → `v1`: the reverse, after v1beta1's defaults (scope
//!   `Namespaced`, `versions` from `version`, conversion `None`,
//!   `preserveUnknownFields: true`, the first storage version in
//!   `status.storedVersions`).
//!
//! Column paths are `JSONPath` in v1beta1 and `jsonPath` in v1. Fields are
//! written in the order of upstream's Go types, so a definition upstream
//! stored and kapi rewrote unchanged keeps its bytes.

use serde_json::{Map, Value};

use kapi_registry::Conversion;

pub const V1: &str = "apiextensions.k8s.io/v1";
pub const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// The definitions' conversion to and from their storage version.
pub struct StoredAsV1beta1;

impl Conversion for StoredAsV1beta1 {
    fn storage_api_version(&self) -> &str {
        V1BETA1
    }

    fn convert(&self, mut obj: Value, api_version: &str) -> Value {
        let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let upgrade = match (from, api_version) {
            (V1, V1BETA1) => false,
            (V1BETA1, V1) => true,
            _ => return obj,
        };
        let spec = take(&mut obj, "spec");
        let status = obj.as_object_mut().and_then(|o| o.shift_remove("status"));
        let (spec, status) = if upgrade {
            let mut spec = spec;
            v1beta1_defaults(&mut spec);
            let status = match status {
                Some(Value::Object(s)) => s,
                _ => Map::new(),
            };
            let status = stored_versions_default(status, &spec);
            (to_v1(spec), Some(Value::Object(status)))
        } else {
            (to_v1beta1(spec), status)
        };
        let root = obj.as_object_mut().expect("objects are JSON objects");
        root.insert("apiVersion".into(), api_version.into());
        root.insert("spec".into(), Value::Object(spec));
        if let Some(s) = status {
            root.insert("status".into(), s);
        }
        obj
    }
}

fn take(obj: &mut Value, field: &str) -> Map<String, Value> {
    match obj.as_object_mut().and_then(|o| o.shift_remove(field)) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// The per-version fields that move to the top in v1beta1: (v1 name, v1beta1 name).
const SHARED: [(&str, &str); 4] = [
    ("schema", "validation"),
    ("subresources", "subresources"),
    ("additionalPrinterColumns", "additionalPrinterColumns"),
    ("selectableFields", "selectableFields"),
];

fn to_v1beta1(mut spec: Map<String, Value>) -> Map<String, Value> {
    let mut versions: Vec<Map<String, Value>> = match spec.shift_remove("versions") {
        Some(Value::Array(vs)) => vs.into_iter().filter_map(into_object).collect(),
        _ => Vec::new(),
    };
    let mut top = Map::new();
    let identical = |field: &str, vs: &[Map<String, Value>]| {
        vs.iter()
            .all(|v| v.get(field) == vs.first().and_then(|f| f.get(field)))
    };
    if !versions.is_empty() {
        let schema_same = identical("schema", &versions);
        for (v1, v1beta1) in SHARED {
            let same = identical(v1, &versions) && (v1 != "selectableFields" || schema_same);
            if !same {
                continue;
            }
            let value = versions[0].get(v1).cloned();
            for v in &mut versions {
                v.shift_remove(v1);
            }
            if let Some(value) = value {
                top.insert(v1beta1.to_owned(), value);
            }
        }
    }
    for v in &mut versions {
        rename_columns(v, "jsonPath", "JSONPath");
    }
    rename_columns(&mut top, "jsonPath", "JSONPath");
    let mut out = Map::new();
    move_field(&mut spec, &mut out, "group");
    if let Some(first) = versions.first().and_then(|v| v.get("name")) {
        out.insert("version".into(), first.clone());
    }
    move_field(&mut spec, &mut out, "names");
    move_field(&mut spec, &mut out, "scope");
    move_field(&mut top, &mut out, "validation");
    move_field(&mut top, &mut out, "subresources");
    if !versions.is_empty() {
        let vs = versions
            .into_iter()
            .map(|v| Value::Object(ordered_version(v)));
        out.insert("versions".into(), Value::Array(vs.collect()));
    }
    move_field(&mut top, &mut out, "additionalPrinterColumns");
    move_field(&mut top, &mut out, "selectableFields");
    if let Some(Value::Object(c)) = spec.shift_remove("conversion") {
        out.insert("conversion".into(), Value::Object(flatten_conversion(c)));
    }
    let preserve = spec
        .shift_remove("preserveUnknownFields")
        .unwrap_or(Value::Bool(false));
    out.insert("preserveUnknownFields".into(), preserve);
    out.extend(spec);
    out
}

fn to_v1(mut spec: Map<String, Value>) -> Map<String, Value> {
    spec.shift_remove("version");
    let mut top: Map<String, Value> = Map::new();
    for (v1, v1beta1) in SHARED {
        if let Some(value) = spec.shift_remove(v1beta1) {
            top.insert(v1.to_owned(), value);
        }
    }
    rename_columns(&mut top, "JSONPath", "jsonPath");
    let versions: Vec<Value> = match spec.shift_remove("versions") {
        Some(Value::Array(vs)) => vs
            .into_iter()
            .filter_map(into_object)
            .map(|mut v| {
                rename_columns(&mut v, "JSONPath", "jsonPath");
                for (k, value) in &top {
                    v.insert(k.clone(), value.clone());
                }
                Value::Object(ordered_version(v))
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut out = Map::new();
    move_field(&mut spec, &mut out, "group");
    move_field(&mut spec, &mut out, "names");
    move_field(&mut spec, &mut out, "scope");
    out.insert("versions".into(), Value::Array(versions));
    if let Some(Value::Object(c)) = spec.shift_remove("conversion") {
        out.insert("conversion".into(), Value::Object(nest_conversion(c)));
    }
    if let Some(Value::Bool(true)) = spec.shift_remove("preserveUnknownFields") {
        out.insert("preserveUnknownFields".into(), Value::Bool(true));
    }
    out.extend(spec);
    out
}

/// v1beta1's defaults, which upstream applies when it reads a stored definition.
fn v1beta1_defaults(spec: &mut Map<String, Value>) {
    spec.entry("scope")
        .or_insert_with(|| Value::String("Namespaced".into()));
    let no_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if let (true, Some(v)) = (no_versions, spec.get("version").cloned()) {
        let one = serde_json::json!([{"name": v, "served": true, "storage": true}]);
        spec.insert("versions".into(), one);
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| serde_json::json!({"strategy": "None"}));
    if let Some(c) = conversion.as_object_mut() {
        let webhook = c.get("strategy").and_then(Value::as_str) == Some("Webhook");
        if webhook && c.get("conversionReviewVersions").is_none() {
            c.insert(
                "conversionReviewVersions".into(),
                serde_json::json!(["v1beta1"]),
            );
        }
    }
    spec.entry("preserveUnknownFields")
        .or_insert(Value::Bool(true));
}

/// With no stored versions recorded, the first storage version counts.
fn stored_versions_default(
    mut status: Map<String, Value>,
    spec: &Map<String, Value>,
) -> Map<String, Value> {
    let recorded = status
        .get("storedVersions")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    if !recorded {
        let storage = spec
            .get("versions")
            .and_then(Value::as_array)
            .and_then(|vs| vs.iter().find(|v| v["storage"] == Value::Bool(true)))
            .and_then(|v| v.get("name").cloned());
        if let Some(name) = storage {
            status.insert("storedVersions".into(), Value::Array(vec![name]));
        }
    }
    status
}

/// v1's `webhook: {clientConfig, conversionReviewVersions}` as v1beta1's flat fields.
fn flatten_conversion(mut c: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    move_field(&mut c, &mut out, "strategy");
    if let Some(Value::Object(mut w)) = c.shift_remove("webhook") {
        if let Some(cc) = w.shift_remove("clientConfig") {
            out.insert("webhookClientConfig".into(), cc);
        }
        if let Some(rv) = w.shift_remove("conversionReviewVersions") {
            out.insert("conversionReviewVersions".into(), rv);
        }
    }
    out.extend(c);
    out
}

/// v1beta1's flat webhook fields as v1's `webhook`.
fn nest_conversion(mut c: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    move_field(&mut c, &mut out, "strategy");
    let cc = c.shift_remove("webhookClientConfig");
    let rv = c.shift_remove("conversionReviewVersions");
    if cc.is_some() || rv.is_some() {
        let mut w = Map::new();
        if let Some(cc) = cc {
            w.insert("clientConfig".into(), cc);
        }
        if let Some(rv) = rv {
            w.insert("conversionReviewVersions".into(), rv);
        }
        out.insert("webhook".into(), Value::Object(w));
    }
    out.extend(c);
    out
}

/// A version's fields in the order of upstream's type (both versions share it).
fn ordered_version(mut v: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for f in [
        "name",
        "served",
        "storage",
        "deprecated",
        "deprecationWarning",
        "schema",
        "subresources",
        "additionalPrinterColumns",
        "selectableFields",
    ] {
        move_field(&mut v, &mut out, f);
    }
    out.extend(v);
    out
}

/// Rename the path key of `holder.additionalPrinterColumns[*]`.
fn rename_columns(holder: &mut Map<String, Value>, from: &str, to: &str) {
    let Some(Value::Array(cols)) = holder.get_mut("additionalPrinterColumns") else {
        return;
    };
    for col in cols.iter_mut().filter_map(Value::as_object_mut) {
        let mut out = Map::new();
        for (k, v) in std::mem::take(col) {
            out.insert(if k == from { to.to_owned() } else { k }, v);
        }
        *col = out;
    }
}

/// Move `field` between maps; the others keep their order.
fn move_field(from: &mut Map<String, Value>, to: &mut Map<String, Value>, field: &str) {
    if let Some(v) = from.shift_remove(field) {
        to.insert(field.to_owned(), v);
    }
}

fn into_object(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;
