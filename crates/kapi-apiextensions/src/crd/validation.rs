//! Validation of CustomResourceDefinitions, as upstream's
//! `apis/apiextensions/validation`: the name `<plural>.<group>`, the group (a
//! domain with a dot), scope, names (DNS-1035 labels; kind and listKind mixed
//! case), versions (unique, exactly one storage version, a schema each in v1),
//! subresources (scale paths under `.spec` / `.status`), printer columns,
//! selectable fields, deprecation warnings, conversion, and on update the
//! immutable group, plural (and, once established, scope and kind) and the
//! stored versions. Each version's schema goes through the structural-schema
//! rules of `schema.rs` (upstream: `ValidateCustomResourceDefinitionOpenAPISchema`).
//!
//! Messages are upstream's word for word; the error paths are the v1 field names.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, ErrorList, FieldError, FieldPath,
};
use serde_json::Value;

use super::schema;
use super::types::{Crd, Names, PrinterColumn, Scale, SelectableField, Version};
use super::validation_extra;

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const MAX_SELECTABLE_FIELDS: usize = 8;
const MAX_WARNING_LEN: usize = 256;

/// A new definition (metadata is validated generically by the store).
pub fn validate(obj: &Value) -> ErrorList {
    let crd = Crd::parse(obj);
    let mut errs = ErrorList::new();
    let required = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
    if crd.metadata.name != required && !crd.metadata.name.is_empty() {
        errs.push(FieldError::invalid(
            &FieldPath::new("metadata").child("name"),
            crd.metadata.name.clone(),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    errs.extend(validate_spec(obj, &crd, &FieldPath::new("spec")));
    errs.extend(validate_names(
        &crd.status.accepted_names,
        &FieldPath::new("status").child("acceptedNames"),
    ));
    errs
}

/// An update of the main resource.
pub fn validate_update(new: &Value, old: &Value) -> ErrorList {
    let (crd, prev) = (Crd::parse(new), Crd::parse(old));
    let mut errs = validate(new);
    let spec = FieldPath::new("spec");
    let mut immutable = |path: FieldPath, a: &str, b: &str| {
        if a != b {
            errs.push(FieldError::invalid(
                &path,
                a.to_owned(),
                "field is immutable",
            ));
        }
    };
    if prev.is_true("Established") {
        immutable(spec.child("scope"), &crd.spec.scope, &prev.spec.scope);
        let kind = spec.child("names").child("kind");
        immutable(kind, &crd.spec.names.kind, &prev.spec.names.kind);
    }
    immutable(spec.child("group"), &crd.spec.group, &prev.spec.group);
    let plural = spec.child("names").child("plural");
    immutable(plural, &crd.spec.names.plural, &prev.spec.names.plural);
    errs.extend(validate_stored_versions(&crd));
    errs
}

/// An update through `status`.
pub fn validate_status_update(new: &Value) -> ErrorList {
    let crd = Crd::parse(new);
    validate_names(
        &crd.status.accepted_names,
        &FieldPath::new("status").child("acceptedNames"),
    )
}

fn validate_stored_versions(crd: &Crd) -> ErrorList {
    let path = FieldPath::new("status").child("storedVersions");
    let stored = &crd.status.stored_versions;
    if stored.is_empty() {
        return vec![FieldError::invalid(
            &path,
            Value::Array(Vec::new()),
            "must have at least one stored version",
        )];
    }
    let mut errs = ErrorList::new();
    for v in &crd.spec.versions {
        if v.storage && !stored.contains(&v.name) {
            let detail = format!("must have the storage version {}", v.name);
            errs.push(FieldError::invalid(&path, v.name.clone(), detail));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !crd.spec.versions.iter().any(|v| &v.name == s) {
            errs.push(FieldError::invalid(
                &path.index(i),
                s.clone(),
                "must appear in spec.versions",
            ));
        }
    }
    errs
}

fn validate_spec(obj: &Value, crd: &Crd, path: &FieldPath) -> ErrorList {
    let spec = &crd.spec;
    let mut errs = ErrorList::new();
    let group = path.child("group");
    if spec.group.is_empty() {
        errs.push(FieldError::required(&group, ""));
    } else {
        let problems = is_dns1123_subdomain(&spec.group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &group,
                spec.group.clone(),
                problems.join(","),
            ));
        } else if !spec.group.contains('.') {
            errs.push(FieldError::invalid(
                &group,
                spec.group.clone(),
                "should be a domain with at least one dot",
            ));
        }
    }
    match spec.scope.as_str() {
        "" => errs.push(FieldError::required(&path.child("scope"), "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("scope"),
            other.to_owned(),
            &["Cluster", "Namespaced"],
        )),
    }
    let versions_path = path.child("versions");
    let raw_versions = obj
        .pointer("/spec/versions")
        .cloned()
        .unwrap_or(Value::Null);
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        let vp = versions_path.index(i);
        if !seen.insert(v.name.as_str()) {
            unique = false;
        }
        let problems = is_dns1035_label(&v.name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &vp.child("name"),
                v.name.clone(),
                problems.join(","),
            ));
        }
        errs.extend(validate_version(v, &vp));
    }
    if !unique {
        errs.push(FieldError::invalid(
            &versions_path,
            raw_versions.clone(),
            "must contain unique version names",
        ));
    }
    if spec.versions.iter().filter(|v| v.storage).count() != 1 {
        errs.push(FieldError::invalid(
            &versions_path,
            raw_versions,
            "must have exactly one version marked as storage version",
        ));
    }
    let names = path.child("names");
    for (field, value) in [
        ("plural", &spec.names.plural),
        ("singular", &spec.names.singular),
        ("kind", &spec.names.kind),
        ("listKind", &spec.names.list_kind),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(&names.child(field), ""));
        }
    }
    errs.extend(validate_names(&spec.names, &names));
    errs.extend(validation_extra::validate_conversion(
        crd,
        &path.child("conversion"),
    ));
    errs
}

fn validate_version(v: &Version, path: &FieldPath) -> ErrorList {
    let mut errs = validate_deprecation_warning(v, &path.child("deprecationWarning"));
    let schema_path = path.child("schema").child("openAPIV3Schema");
    let schema = v
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    match schema {
        None => errs.push(FieldError::required(&schema_path, "schemas are required")),
        Some(s) => {
            if v.subresources.as_ref().is_some_and(|s| s.status.is_some()) {
                errs.extend(validation_extra::validate_status_root(
                    s,
                    &path.child("schema"),
                ));
            }
            errs.extend(schema::validate_schema(s, &schema_path))
        }
    }
    if let Some(scale) = v.subresources.as_ref().and_then(|s| s.scale.as_ref()) {
        errs.extend(validate_scale(
            scale,
            &path.child("subresources").child("scale"),
        ));
    }
    for (i, col) in v.additional_printer_columns.iter().enumerate() {
        errs.extend(validate_column(
            col,
            &path.child("additionalPrinterColumns").index(i),
        ));
    }
    if !v.selectable_fields.is_empty() {
        let sf_path = path.child("selectableFields");
        match schema {
            None => errs.push(FieldError::invalid(
                &sf_path,
                "",
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(s) => errs.extend(validate_selectable_fields(&v.selectable_fields, s, &sf_path)),
        }
    }
    errs
}

fn validate_deprecation_warning(v: &Version, path: &FieldPath) -> ErrorList {
    let Some(w) = &v.deprecation_warning else {
        return Vec::new();
    };
    let mut errs = ErrorList::new();
    if !v.deprecated {
        errs.push(FieldError::invalid(
            path,
            w.clone(),
            "can only be set for deprecated versions",
        ));
    }
    if w.len() > MAX_WARNING_LEN {
        errs.push(FieldError::too_long(path, "", MAX_WARNING_LEN));
    }
    if w.chars().any(|c| c.is_control()) {
        errs.push(FieldError::invalid(
            path,
            w.clone(),
            "must only contain printable UTF-8 characters",
        ));
    }
    errs
}

/// Upstream's `validateSimpleJSONPath`.
fn simple_json_path(s: &str, path: &FieldPath) -> ErrorList {
    if s.is_empty() {
        vec![FieldError::invalid(path, s.to_owned(), "must not be empty")]
    } else if !s.starts_with('.') {
        vec![FieldError::invalid(
            path,
            s.to_owned(),
            "must be a simple json path starting with .",
        )]
    } else {
        Vec::new()
    }
}

fn validate_scale(scale: &Scale, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut under = |field: &str, value: &str, prefixes: &[&str], detail: &str, required: bool| {
        let p = path.child(field);
        if value.is_empty() {
            if required {
                errs.push(FieldError::required(&p, ""));
            }
            return;
        }
        let simple = simple_json_path(value, &p);
        if !simple.is_empty() {
            errs.extend(simple);
        } else if !prefixes.iter().any(|pre| value.starts_with(pre)) {
            errs.push(FieldError::invalid(&p, value.to_owned(), detail));
        }
    };
    under(
        "specReplicasPath",
        &scale.spec_replicas_path,
        &[".spec."],
        "should be a json path under .spec",
        true,
    );
    under(
        "statusReplicasPath",
        &scale.status_replicas_path,
        &[".status."],
        "should be a json path under .status",
        true,
    );
    if let Some(sel) = &scale.label_selector_path {
        under(
            "labelSelectorPath",
            sel,
            &[".spec.", ".status."],
            "should be a json path under either .spec or .status",
            false,
        );
    }
    errs
}

fn validate_column(col: &PrinterColumn, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if col.name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let types = format!("must be one of {COLUMN_TYPES}");
    if col.type_.is_empty() {
        errs.push(FieldError::required(&path.child("type"), types));
    } else if !COLUMN_TYPES.split(',').any(|t| t == col.type_) {
        errs.push(FieldError::invalid(
            &path.child("type"),
            col.type_.clone(),
            types,
        ));
    }
    if !col.format.is_empty() && !COLUMN_FORMATS.split(',').any(|f| f == col.format) {
        errs.push(FieldError::invalid(
            &path.child("format"),
            col.format.clone(),
            format!("must be one of {COLUMN_FORMATS}"),
        ));
    }
    let jp = path.child("jsonPath");
    if col.json_path.is_empty() {
        errs.push(FieldError::required(&jp, ""));
    } else {
        errs.extend(simple_json_path(&col.json_path, &jp));
    }
    errs
}

fn validate_selectable_fields(
    fields: &[SelectableField],
    schema: &Value,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut unique = BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let jp = path.index(i).child("jsonPath");
        if f.json_path.is_empty() {
            errs.push(FieldError::required(&jp, ""));
            continue;
        }
        let Some(segments) = f
            .json_path
            .strip_prefix('.')
            .map(|p| p.split('.').collect::<Vec<_>>())
        else {
            errs.push(FieldError::invalid(
                &jp,
                f.json_path.clone(),
                "is an invalid path: must start with a '.'",
            ));
            continue;
        };
        let Some(found) = schema_at(schema, &segments) else {
            let detail = format!(
                "is an invalid path: does not refer to a valid field: {}",
                f.json_path
            );
            errs.push(FieldError::invalid(&jp, f.json_path.clone(), detail));
            continue;
        };
        if segments.first() == Some(&"metadata") {
            errs.push(FieldError::invalid(
                &jp,
                f.json_path.clone(),
                "must not point to fields in metadata",
            ));
        }
        let ty = found.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(ty, "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &jp,
                f.json_path.clone(),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(f.json_path.clone()) {
            errs.push(FieldError::duplicate(&jp, f.json_path.clone()));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errs.push(FieldError::too_many(
            path,
            Some(unique.len()),
            Some(MAX_SELECTABLE_FIELDS),
        ));
    }
    errs
}

/// The schema of the field at `segments` under `schema`'s properties.
fn schema_at<'a>(schema: &'a Value, segments: &[&str]) -> Option<&'a Value> {
    segments
        .iter()
        .try_fold(schema, |s, seg| s.get("properties")?.get(*seg))
}

/// Upstream's `ValidateCustomResourceDefinitionNames`.
pub fn validate_names(names: &Names, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut label = |field: &str, value: &str, mixed_case: bool| {
        if value.is_empty() {
            return;
        }
        let problems = if mixed_case {
            is_dns1035_label(&value.to_lowercase())
        } else {
            is_dns1035_label(value)
        };
        if !problems.is_empty() {
            let detail = if mixed_case {
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                )
            } else {
                problems.join(",")
            };
            errs.push(FieldError::invalid(
                &path.child(field),
                value.to_owned(),
                detail,
            ));
        }
    };
    label("plural", &names.plural, false);
    label("singular", &names.singular, false);
    label("kind", &names.kind, true);
    label("listKind", &names.list_kind, true);
    for (i, s) in names.short_names.iter().enumerate() {
        let problems = is_dns1035_label(s);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("shortNames").index(i),
                s.clone(),
                problems.join(","),
            ));
        }
    }
    if !names.kind.is_empty() && names.kind == names.list_kind {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            names.list_kind.clone(),
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in names.categories.iter().enumerate() {
        let problems = is_dns1035_label(c);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("categories").index(i),
                c.clone(),
                problems.join(","),
            ));
        }
    }
    errs
}
