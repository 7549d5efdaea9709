//! StorageClasses: defaults (`reclaimPolicy: Delete`, `volumeBindingMode:
//! Immediate`), validation of provisioner, parameters, policies and allowed
//! topologies, the fields upstream forbids updating, and the table whose NAME
//! carries ` (default)` for the default class.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_qualified_name, ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::table::{age_cell, age_column, name_column, string_column};
use crate::core::util::{arr_at, bool_at, obj_at, set_default, str_at};

pub struct StorageClassStrategy;

const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETER_BYTES: usize = 256 * 1024;
pub const DEFAULT_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
pub const BETA_DEFAULT_ANNOTATION: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// Upstream `storageutil.IsDefaultAnnotation`.
pub fn is_default_class(obj: &Value) -> bool {
    let annotations = obj_at(obj, "/metadata/annotations");
    [DEFAULT_ANNOTATION, BETA_DEFAULT_ANNOTATION]
        .iter()
        .any(|a| annotations.and_then(|m| m.get(*a)).and_then(Value::as_str) == Some("true"))
}

fn validate_parameters(obj: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(params) = obj_at(obj, "/parameters") else {
        return errs;
    };
    if params.len() > MAX_PARAMETERS {
        errs.push(FieldError::too_long(
            path,
            "Provisioner Parameters exceeded max allowed",
            MAX_PARAMETERS,
        ));
        return errs;
    }
    let mut total = 0;
    for (k, v) in params {
        if k.is_empty() {
            errs.push(FieldError::invalid(
                path,
                k.as_str(),
                "field can not be empty.",
            ));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > MAX_PARAMETER_BYTES {
        errs.push(FieldError::too_long(path, "", MAX_PARAMETER_BYTES));
    }
    errs
}

/// Upstream `ValidateTopologySelectorTerm` over every term, plus duplicate terms.
fn validate_topologies(obj: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen_terms: Vec<Vec<(String, BTreeSet<String>)>> = Vec::new();
    for (i, term) in arr_at(obj, "/allowedTopologies").iter().enumerate() {
        let term_path = path.index(i);
        let mut exprs: Vec<(String, BTreeSet<String>)> = Vec::new();
        for (j, req) in arr_at(term, "/matchLabelExpressions").iter().enumerate() {
            let p = term_path.child("matchLabelExpressions").index(j);
            let key = str_at(req, "/key").to_string();
            let values = arr_at(req, "/values");
            if values.is_empty() {
                errs.push(FieldError::required(
                    &p.child("values"),
                    "must specify as least one value",
                ));
            }
            let mut set = BTreeSet::new();
            for (k, v) in values.iter().filter_map(Value::as_str).enumerate() {
                if !set.insert(v.to_string()) {
                    errs.push(FieldError::duplicate(&p.child("values").index(k), v));
                }
            }
            for msg in is_qualified_name(&key) {
                errs.push(FieldError::invalid(&p.child("key"), key.as_str(), msg));
            }
            if exprs.iter().any(|(k, _)| *k == key) {
                errs.push(FieldError::duplicate(&p.child("key"), key.as_str()));
            }
            exprs.push((key, set));
        }
        exprs.sort();
        if seen_terms.contains(&exprs) {
            errs.push(FieldError::duplicate(
                &term_path.child("matchLabelExpressions"),
                "",
            ));
        }
        seen_terms.push(exprs);
    }
    errs
}

impl Strategy for StorageClassStrategy {
    crate::core::object_warnings::warning_methods!(
        crate::core::object_warnings::storage_class_warnings
    );

    fn default(&self, obj: &mut Value) {
        set_default(obj, "reclaimPolicy", json!("Delete"));
        set_default(obj, "volumeBindingMode", json!("Immediate"));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let provisioner = str_at(obj, "/provisioner");
        let path = FieldPath::new("provisioner");
        if provisioner.is_empty() {
            errs.push(FieldError::required(&path, ""));
        } else {
            for msg in is_qualified_name(&provisioner.to_lowercase()) {
                errs.push(FieldError::invalid(&path, provisioner, msg));
            }
        }
        errs.extend(validate_parameters(obj, &FieldPath::new("parameters")));
        let reclaim = str_at(obj, "/reclaimPolicy");
        if !reclaim.is_empty() && !["Delete", "Retain"].contains(&reclaim) {
            errs.push(FieldError::not_supported(
                &FieldPath::new("reclaimPolicy"),
                reclaim,
                &["Delete", "Retain"],
            ));
        }
        let modes = ["Immediate", "WaitForFirstConsumer"];
        match obj.get("volumeBindingMode").and_then(Value::as_str) {
            None => errs.push(FieldError::required(
                &FieldPath::new("volumeBindingMode"),
                "",
            )),
            Some(m) if !modes.contains(&m) => errs.push(FieldError::not_supported(
                &FieldPath::new("volumeBindingMode"),
                m,
                &modes,
            )),
            Some(_) => {}
        }
        errs.extend(validate_topologies(
            obj,
            &FieldPath::new("allowedTopologies"),
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        let (np, op) = (new.get("parameters"), old.get("parameters"));
        if np != op && !(empty(np) && empty(op)) {
            errs.push(FieldError::forbidden(
                &FieldPath::new("parameters"),
                "updates to parameters are forbidden.",
            ));
        }
        if new.get("provisioner") != old.get("provisioner") {
            errs.push(FieldError::forbidden(
                &FieldPath::new("provisioner"),
                "updates to provisioner are forbidden.",
            ));
        }
        if new.get("reclaimPolicy") != old.get("reclaimPolicy") {
            errs.push(FieldError::forbidden(
                &FieldPath::new("reclaimPolicy"),
                "updates to reclaimPolicy are forbidden.",
            ));
        }
        if new.get("volumeBindingMode") != old.get("volumeBindingMode") {
            errs.push(FieldError::invalid(
                &FieldPath::new("volumeBindingMode"),
                new.get("volumeBindingMode").cloned().unwrap_or(Value::Null),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Provisioner", "provisioner indicates the type of the provisioner."),
            string_column("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete."),
            string_column("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature."),
            string_column("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let mut name = str_at(obj, "/metadata/name").to_string();
        if is_default_class(obj) {
            name.push_str(" (default)");
        }
        let or = |ptr: &str, dflt: &str| match str_at(obj, ptr) {
            "" => dflt.to_string(),
            s => s.to_string(),
        };
        vec![
            json!(name),
            json!(str_at(obj, "/provisioner")),
            json!(or("/reclaimPolicy", "Delete")),
            json!(or("/volumeBindingMode", "Immediate")),
            json!(bool_at(obj, "/allowVolumeExpansion")),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_and_validation() {
        let mut sc =
            json!({"metadata": {"name": "fast"}, "provisioner": "kubernetes.io/no-provisioner"});
        StorageClassStrategy.default(&mut sc);
        assert_eq!(
            (
                sc["reclaimPolicy"].as_str(),
                sc["volumeBindingMode"].as_str()
            ),
            (Some("Delete"), Some("Immediate"))
        );
        assert!(StorageClassStrategy.validate(&sc).is_empty());
        let bad = json!({"provisioner": "", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later",
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]});
        assert_eq!(
            msgs(StorageClassStrategy.validate(&bad)),
            vec![
                "provisioner: Required value",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
                "allowedTopologies[0].matchLabelExpressions[0].values: Required value: must specify as least one value",
            ]
        );
    }

    #[test]
    fn immutable_fields_and_default_name() {
        let mut old = json!({"metadata": {"name": "s", "annotations": {DEFAULT_ANNOTATION: "true"}}, "provisioner": "a"});
        StorageClassStrategy.default(&mut old);
        let mut new = old.clone();
        new["provisioner"] = "b".into();
        new["parameters"] = json!({"x": "y"});
        assert_eq!(
            msgs(StorageClassStrategy.validate_update(&new, &old)),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
            ]
        );
        assert_eq!(StorageClassStrategy.cells(&old)[0], "s (default)");
    }
}
