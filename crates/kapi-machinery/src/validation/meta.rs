//! `ObjectMeta` validation on JSON metadata (upstream `api/validation/objectmeta.go`).

use super::names::{is_qualified_name, is_valid_label_value, name_is_dns_label, ValidateNameFn};
use super::{
    format_bad_value, ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
    IS_NEGATIVE_ERROR_MSG, TOTAL_ANNOTATION_SIZE_LIMIT_B,
};
use crate::member::Members;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// ObjectMeta

fn meta_str<'a>(meta: &'a Value, key: &str) -> &'a str {
    meta.member_str(key).unwrap_or("")
}

/// A present, non-null member, or `None`.
fn meta_field<'a>(meta: &'a Value, key: &str) -> Option<&'a Value> {
    meta.member(key).filter(|v| !v.is_null())
}

/// Upstream `ValidateObjectMetaAccessor` on a JSON `metadata` object (name generation is
/// expected to have happened already).
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_fn: ValidateNameFn,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let generate_name = meta_str(meta, "generateName");
    if !generate_name.is_empty() {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                msg,
            ));
        }
    }
    let name = meta_str(meta, "name");
    if name.is_empty() {
        let detail = "name or generateName is required";
        errs.push(FieldError::required(&path.child("name"), detail));
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
    }
    let namespace = meta_str(meta, "namespace");
    // Made only for an error: a path is two allocations.
    let ns_path = || path.child("namespace");
    if namespaced && namespace.is_empty() {
        errs.push(FieldError::required(&ns_path(), ""));
    } else if namespaced {
        for msg in name_is_dns_label(namespace, false) {
            errs.push(FieldError::invalid(&ns_path(), namespace, msg));
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            &ns_path(),
            "not allowed on this type",
        ));
    }
    let generation = meta.member("generation").and_then(Value::as_i64);
    if let Some(generation) = generation.filter(|g| *g < 0) {
        let gen_path = path.child("generation");
        errs.push(FieldError::invalid(
            &gen_path,
            generation,
            IS_NEGATIVE_ERROR_MSG,
        ));
    }
    errs.extend(validate_meta_common(meta, path));
    errs
}

/// Checks shared by create and update: labels, annotations, ownerReferences,
/// finalizers — each only when the field is there (an absent one has nothing
/// to report, and its path is not made).
fn validate_meta_common(meta: &Value, path: &FieldPath) -> ErrorList {
    type Check = fn(Option<&Value>, &FieldPath) -> ErrorList;
    let checks: [(&str, Check); 4] = [
        ("labels", validate_labels),
        ("annotations", validate_annotations),
        ("ownerReferences", validate_owner_references),
        ("finalizers", validate_finalizers),
    ];
    let mut errs = ErrorList::new();
    for (field, check) in checks {
        if let Some(value) = meta_field(meta, field) {
            errs.extend(check(Some(value), &path.child(field)));
        }
    }
    errs
}

/// Iterate a string map; a non-object map or non-string value yields a type error.
fn string_map<'a>(
    map: Option<&'a Value>,
    path: &FieldPath,
    errs: &mut ErrorList,
) -> Vec<(&'a str, &'a str)> {
    let Some(map) = map else { return Vec::new() };
    let Some(obj) = map.as_object() else {
        errs.push(FieldError::type_invalid(
            path,
            map.clone(),
            "must be an object",
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in obj {
        match v.as_str() {
            Some(s) => out.push((k.as_str(), s)),
            None => errs.push(FieldError::type_invalid(
                &path.key(k),
                v.clone(),
                "must be a string",
            )),
        }
    }
    out
}

/// Upstream `ValidateLabels`: keys are qualified names, values label values.
pub fn validate_labels(labels: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in string_map(labels, path, &mut errs) {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
    errs
}

/// Upstream `ValidateAnnotations`: keys (lower-cased) are qualified names; total size
/// of keys plus values is at most [`TOTAL_ANNOTATION_SIZE_LIMIT_B`].
pub fn validate_annotations(annotations: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut total = 0usize;
    for (k, v) in string_map(annotations, path, &mut errs) {
        for msg in is_qualified_name(&k.to_ascii_lowercase()) {
            errs.push(FieldError::invalid(path, k, msg));
        }
        total += k.len() + v.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(
            path,
            "",
            TOTAL_ANNOTATION_SIZE_LIMIT_B,
        ));
    }
    errs
}

/// Upstream `ValidateOwnerReferences` (errors are reported on the list path, as upstream).
pub fn validate_owner_references(refs: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(refs) = refs else { return errs };
    let Some(items) = refs.as_array() else {
        errs.push(FieldError::type_invalid(
            path,
            refs.clone(),
            "must be an array",
        ));
        return errs;
    };
    let mut first_controller: Option<String> = None;
    for item in items {
        errs.extend(validate_owner_reference(item, path));
        if item.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{}/{}", meta_str(item, "kind"), meta_str(item, "name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(path, refs.clone(), format!(
                    "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                ))),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

fn validate_owner_reference(item: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let api_version = meta_str(item, "apiVersion");
    // schema.ParseGroupVersion: "" | "v" | "g/v"; anything else parses to an empty version.
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [v] => ("", *v),
        [g, v] => (*g, *v),
        _ => ("", ""),
    };
    if version.is_empty() {
        let detail = "version must not be empty";
        errs.push(FieldError::invalid(
            &path.child("apiVersion"),
            api_version,
            detail,
        ));
    }
    for key in ["kind", "name", "uid"] {
        let value = meta_str(item, key);
        if value.is_empty() {
            errs.push(FieldError::invalid(
                &path.child(key),
                value,
                "must not be empty",
            ));
        }
    }
    let kind = meta_str(item, "kind");
    if group.is_empty() && version == "v1" && kind == "Event" {
        let detail = "/v1, Kind=Event is disallowed from being an owner";
        errs.push(FieldError::invalid(path, item.clone(), detail));
    }
    errs
}

/// Upstream `ValidateFinalizers`: qualified names, and not both `orphan` and
/// `foregroundDeletion`.
pub fn validate_finalizers(finalizers: Option<&Value>, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(list) = finalizers else { return errs };
    let Some(items) = list.as_array() else {
        errs.push(FieldError::type_invalid(
            path,
            list.clone(),
            "must be an array",
        ));
        return errs;
    };
    for item in items {
        let Some(name) = item.as_str() else {
            errs.push(FieldError::type_invalid(
                path,
                item.clone(),
                "must be a string",
            ));
            continue;
        };
        for msg in is_qualified_name(name) {
            errs.push(FieldError::invalid(path, name, msg));
        }
    }
    let has = |n: &str| items.iter().any(|i| i.as_str() == Some(n));
    if has("orphan") && has("foregroundDeletion") {
        let detail = "finalizer orphan and foregroundDeletion cannot be both set";
        errs.push(FieldError::invalid(path, list.clone(), detail));
    }
    errs
}

/// Finalizer names kube-apiserver knows without a domain.
pub const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

/// The check kube-apiserver's own `ValidateObjectMeta` (core validation) adds
/// for its kinds after the generic one: each finalizer name without a `/`
/// must be a standard one.
pub fn validate_kube_finalizer_names(meta: &Value, path: &FieldPath) -> ErrorList {
    let Some(items) = meta.member("finalizers").and_then(Value::as_array) else {
        return ErrorList::new();
    };
    let at = path.child("finalizers");
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| Some((i, item.as_str()?)))
        .filter(|(_, name)| !name.contains('/') && !STANDARD_FINALIZERS.contains(name))
        .map(|(i, name)| {
            let msg = "name is neither a standard finalizer name nor is it fully qualified";
            FieldError::invalid(&at.index(i), name, msg)
        })
        .collect()
}

/// Upstream `ValidateObjectMetaAccessorUpdate`, minus the `resourceVersion` presence check
/// (the store owns conditional vs. unconditional updates): immutable identity fields, no
/// decremented generation, no new finalizers while deleting, then the create-time checks for
/// labels, annotations, ownerReferences and finalizers.
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    if meta_field(old, "deletionTimestamp").is_some() {
        let strings = |m: &Value| -> Vec<String> {
            let items = m.get("finalizers").and_then(Value::as_array);
            items
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        };
        let old_set = strings(old);
        let mut extra: Vec<String> = strings(new)
            .into_iter()
            .filter(|f| !old_set.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            let list = format_bad_value(&Value::from(extra));
            errs.push(FieldError::forbidden(&path.child("finalizers"), format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers {list}"
            )));
        }
    }
    let generation = |m: &Value| m.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation(new) < generation(old) {
        let detail = "must not be decremented";
        errs.push(FieldError::invalid(
            &path.child("generation"),
            generation(new),
            detail,
        ));
    }
    for key in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        errs.extend(validate_immutable_member(new, old, key, path));
    }
    errs.extend(validate_meta_common(new, path));
    errs
}

/// Absent, `null` and (for strings) `""` all count as unset.
fn validate_immutable_member(new: &Value, old: &Value, key: &str, path: &FieldPath) -> ErrorList {
    let norm = |m: &Value| match meta_field(m, key) {
        Some(Value::String(s)) if s.is_empty() => None,
        other => other.cloned(),
    };
    let (new_v, old_v) = (norm(new), norm(old));
    if new_v == old_v {
        return ErrorList::new();
    }
    let shown = match new_v {
        Some(v) => v,
        None if matches!(old_v, Some(Value::String(_))) => Value::from(""),
        None => Value::Null,
    };
    vec![FieldError::invalid(
        &path.child(key),
        shown,
        FIELD_IMMUTABLE_ERROR_MSG,
    )]
}
