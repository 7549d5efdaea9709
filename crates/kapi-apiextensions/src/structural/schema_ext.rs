//! The CRD validation's per-node rules for `type` and the `x-kubernetes-*`
//! extensions (list types, list-map keys, map types, preserve-unknown-fields) and
//! the keywords CRDs forbid (`uniqueItems`, `additionalProperties` beside
//! `properties`), with upstream's messages.

use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

use super::{Additional, Node};

pub(super) fn check(s: &Node, p: &FieldPath, errs: &mut Vec<FieldError>, types: &[&str]) {
    if s.ty == "null" {
        errs.push(FieldError::forbidden(
            &p.child("type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    } else if !s.ty.is_empty() && !types.contains(&s.ty.as_str()) {
        errs.push(FieldError::not_supported(
            &p.child("type"),
            s.ty.as_str(),
            types,
        ));
    }
    if s.x_preserve_set && !s.x_preserve_unknown_fields {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    if s.unique_items {
        errs.push(FieldError::forbidden(
            &p.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let ap_conflict = matches!(
        s.additional_properties,
        Some(Additional::Bool(false)) | Some(Additional::Schema(_))
    );
    if !s.properties.is_empty() && ap_conflict {
        errs.push(FieldError::forbidden(
            &p.child("additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    list_and_map_types(s, p, errs);
}

fn list_and_map_types(s: &Node, p: &FieldPath, errs: &mut Vec<FieldError>) {
    if let Some(lt) = s.x_list_type.as_deref() {
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(FieldError::not_supported(
                &p.child("x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    if let Some(mt) = s.x_map_type.as_deref() {
        if !["atomic", "granular"].contains(&mt) {
            errs.push(FieldError::not_supported(
                &p.child("x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let keys_value = || Value::from(s.x_list_map_keys.clone());
    if s.x_list_type.as_deref() == Some("set") {
        if let Some(is) = &s.items {
            let ip = p.child("items");
            if is.ty == "array" && is.x_list_type.as_deref().is_some_and(|t| t != "atomic") {
                errs.push(FieldError::invalid(
                    &ip.child("x-kubernetes-list-type"),
                    is.x_list_type.clone().unwrap_or_default(),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            if is.ty == "object" && is.x_map_type.as_deref() != Some("atomic") {
                let v = is.x_map_type.clone().map_or(Value::Null, Value::from);
                errs.push(FieldError::invalid(
                    &ip.child("x-kubernetes-map-type"),
                    v,
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
        }
    }
    if s.x_list_type.as_deref() == Some("map") {
        if s.x_list_map_keys.is_empty() {
            errs.push(FieldError::required(
                &p.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => errs.push(FieldError::required(
                &p.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(is) if is.ty != "object" => errs.push(FieldError::invalid(
                &p.child("items").child("type"),
                is.ty.as_str(),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(is) => map_keys(s, is, p, errs),
        }
    }
    if !s.x_list_map_keys.is_empty() && s.x_list_type.as_deref() != Some("map") {
        errs.push(FieldError::invalid(
            &p.child("x-kubernetes-list-map-keys"),
            keys_value(),
            "must be empty if x-kubernetes-list-type is not map",
        ));
    }
}

fn map_keys(s: &Node, is: &Node, p: &FieldPath, errs: &mut Vec<FieldError>) {
    let keys_path = p.child("x-kubernetes-list-map-keys");
    let keys_value = Value::from(s.x_list_map_keys.clone());
    for (i, k) in s.x_list_map_keys.iter().enumerate() {
        let kp = p.child("items").child("properties").key(k);
        match is.properties.get(k) {
            Some(ks) => {
                if ks.ty == "array" || ks.ty == "object" {
                    errs.push(FieldError::invalid(
                        &kp.child("type"),
                        is.ty.as_str(),
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
                if ks.default.is_none() && !is.required.contains(k) {
                    errs.push(FieldError::required(
                        &kp.child("default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
            }
            None => errs.push(FieldError::invalid(
                &keys_path,
                keys_value.clone(),
                "entries must all be names of item properties",
            )),
        }
        if s.x_list_map_keys[..i].contains(k) {
            errs.push(FieldError::invalid(
                &keys_path,
                keys_value.clone(),
                "must not contain duplicate entries",
            ));
        }
    }
}
