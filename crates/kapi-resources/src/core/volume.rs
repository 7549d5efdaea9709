//! PersistentVolumes and PersistentVolumeClaims: upstream's defaults (phase
//! `Pending`, `Retain`, `Filesystem`), the commonly met rules of
//! `ValidatePersistentVolumeSpec` / `ValidatePersistentVolumeClaimSpec` (access
//! modes, a single `storage` capacity, exactly one volume source, reclaim policy,
//! volume mode, the storage request), the immutable volume source of a PV, a
//! claim's spec frozen after creation except the storage request of a bound claim
//! (which may only grow), and both tables.

use kapi_machinery::validation::{is_dns1123_subdomain, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::quantity::quantity_value;
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{arr_at, child_obj, obj_at, present, set_default, set_default_str, str_at};
use crate::batch::validate_label_selector;

/// The finalizer that keeps a claim while a pod uses it (put on by the
/// StorageObjectInUseProtection admission plugin, taken off by the claim
/// protection controller).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer that keeps a volume while it is bound.
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

pub struct PersistentVolumeStrategy;
pub struct PersistentVolumeClaimStrategy;

const ACCESS_MODES: [&str; 4] = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const RECLAIM_POLICIES: [&str; 3] = ["Delete", "Recycle", "Retain"];
const VOLUME_MODES: [&str; 2] = ["Block", "Filesystem"];
const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// The persistent volume sources a PV may name (upstream `PersistentVolumeSource`).
const SOURCES: [&str; 22] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "flexVolume",
    "iscsi",
    "fc",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

fn validate_access_modes(spec: &Value, path: &FieldPath, required_msg: &str) -> ErrorList {
    let modes = arr_at(spec, "/accessModes");
    let mut errs = ErrorList::new();
    if modes.is_empty() {
        errs.push(FieldError::required(path, required_msg));
    }
    for m in modes {
        let m = m.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&m) {
            errs.push(FieldError::not_supported(path, m, &ACCESS_MODES));
        }
    }
    if modes.len() > 1 && modes.iter().any(|m| m == "ReadWriteOncePod") {
        errs.push(FieldError::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

fn validate_enum_opt(spec: &Value, field: &str, valid: &[&str], path: &FieldPath) -> ErrorList {
    match present(spec, &format!("/{field}")).and_then(Value::as_str) {
        Some(v) if !valid.contains(&v) => {
            vec![FieldError::not_supported(&path.child(field), v, valid)]
        }
        _ => Vec::new(),
    }
}

fn validate_class_name(spec: &Value, path: &FieldPath) -> ErrorList {
    let class = str_at(spec, "/storageClassName");
    if class.is_empty() {
        return Vec::new();
    }
    is_dns1123_subdomain(class)
        .into_iter()
        .map(|m| FieldError::invalid(&path.child("storageClassName"), class, m))
        .collect()
}

/// Upstream `ValidateResourceQuantityValue` plus positivity for storage sizes.
fn validate_storage_quantity(value: &Value, path: &FieldPath) -> ErrorList {
    match quantity_value(value) {
        None => vec![FieldError::invalid(
            path,
            value.clone(),
            "must be a valid quantity",
        )],
        Some(q) if q <= 0.0 => vec![FieldError::invalid(
            path,
            value.clone(),
            "must be greater than zero",
        )],
        Some(_) => Vec::new(),
    }
}

fn pv_sources(spec: &Value) -> Vec<&'static str> {
    SOURCES
        .iter()
        .copied()
        .filter(|s| present(spec, &format!("/{s}")).is_some())
        .collect()
}

impl Strategy for PersistentVolumeStrategy {
    crate::core::object_warnings::warning_methods!(crate::core::object_warnings::volume_warnings);

    fn default(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            set_default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
            set_default(spec, "volumeMode", json!("Filesystem"));
            super::podspec::default_host_path(spec);
        }
        if let Some(status) = child_obj(obj, "status") {
            set_default_str(status, "phase", "Pending");
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(status) = child_obj(obj, "status") {
            status["lastPhaseTransitionTime"] = json!(kapi_registry::meta::now_rfc3339());
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_access_modes(spec, &path.child("accessModes"), "");
        let capacity = obj_at(spec, "/capacity");
        match capacity {
            None => errs.push(FieldError::required(&path.child("capacity"), "")),
            Some(c) if c.is_empty() => errs.push(FieldError::required(&path.child("capacity"), "")),
            Some(c) => {
                if !c.contains_key("storage") || c.len() > 1 {
                    let keys: Vec<Value> = c.keys().map(|k| json!(k)).collect();
                    errs.push(FieldError::not_supported(
                        &path.child("capacity"),
                        Value::Array(keys),
                        &["storage"],
                    ));
                }
                for (k, v) in c {
                    errs.extend(validate_storage_quantity(v, &path.child("capacity").key(k)));
                }
            }
        }
        errs.extend(validate_enum_opt(
            spec,
            "persistentVolumeReclaimPolicy",
            &RECLAIM_POLICIES,
            &path,
        ));
        errs.extend(validate_enum_opt(spec, "volumeMode", &VOLUME_MODES, &path));
        errs.extend(validate_class_name(spec, &path));
        let sources = pv_sources(spec);
        match sources.as_slice() {
            [] => errs.push(FieldError::required(&path, "must specify a volume type")),
            [one] => errs.extend(validate_source(spec, one, &path)),
            [_, rest @ ..] => {
                for s in rest {
                    errs.push(FieldError::forbidden(
                        &path.child(s),
                        "may not specify more than 1 volume type",
                    ));
                }
            }
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        let source = |o: &Value| -> Vec<Option<Value>> {
            SOURCES
                .iter()
                .map(|s| o.pointer(&format!("/spec/{s}")).cloned())
                .collect()
        };
        if source(new) != source(old) {
            errs.push(FieldError::forbidden(
                &FieldPath::new("spec").child("persistentvolumesource"),
                "spec.persistentvolumesource is immutable after creation",
            ));
        }
        if new.pointer("/spec/volumeMode") != old.pointer("/spec/volumeMode") {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec").child("volumeMode"),
                new.pointer("/spec/volumeMode")
                    .cloned()
                    .unwrap_or(Value::Null),
                kapi_machinery::validation::FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Capacity", "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
            string_column("Access Modes", "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes"),
            string_column("Reclaim Policy", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
            string_column("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
            string_column("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
            string_column("StorageClass", "StorageClass of the pv"),
            string_column("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
            string_column("Reason", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
            age_column(),
            string_column("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let claim = match present(obj, "/spec/claimRef") {
            Some(c) => format!("{}/{}", str_at(c, "/namespace"), str_at(c, "/name")),
            None => String::new(),
        };
        vec![
            name_cell(obj),
            json!(quantity_cell(obj, "/spec/capacity/storage")),
            json!(access_modes_cell(arr_at(obj, "/spec/accessModes"))),
            json!(str_at(obj, "/spec/persistentVolumeReclaimPolicy")),
            json!(phase_cell(obj)),
            json!(claim),
            json!(storage_class(obj)),
            json!(present(obj, "/spec/volumeAttributesClassName")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")),
            json!(str_at(obj, "/status/reason")),
            age_cell(obj),
            json!(present(obj, "/spec/volumeMode")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")),
        ]
    }
}

/// The required members of the common sources.
fn validate_source(spec: &Value, source: &str, path: &FieldPath) -> ErrorList {
    let required: &[&str] = match source {
        "hostPath" | "local" => &["path"],
        "nfs" => &["server", "path"],
        "csi" => &["driver", "volumeHandle"],
        _ => &[],
    };
    let mut errs: ErrorList = required
        .iter()
        .filter(|f| str_at(spec, &format!("/{source}/{f}")).is_empty())
        .map(|f| FieldError::required(&path.child(source).child(f), ""))
        .collect();
    if source == "local" && present(spec, "/nodeAffinity").is_none() {
        errs.push(FieldError::required(
            &path.child("nodeAffinity"),
            "Local volume requires node affinity",
        ));
    }
    errs
}

/// Upstream `GetAccessModesAsString`.
fn access_modes_cell(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|x| x == m);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn quantity_cell(obj: &Value, ptr: &str) -> String {
    match obj.pointer(ptr) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

fn phase_cell(obj: &Value) -> String {
    if present(obj, "/metadata/deletionTimestamp").is_some() {
        return "Terminating".to_string();
    }
    str_at(obj, "/status/phase").to_string()
}

/// Upstream `GetPersistentVolume(Claim)Class`: the beta annotation wins.
fn storage_class(obj: &Value) -> String {
    match obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(STORAGE_CLASS_ANNOTATION))
        .and_then(Value::as_str)
    {
        Some(c) => c.to_string(),
        None => str_at(obj, "/spec/storageClassName").to_string(),
    }
}

fn storage_request(obj: &Value) -> Option<f64> {
    obj.pointer("/spec/resources/requests/storage")
        .and_then(quantity_value)
}

impl Strategy for PersistentVolumeClaimStrategy {
    crate::core::object_warnings::warning_methods!(crate::core::object_warnings::claim_warnings);

    fn default(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            set_default(spec, "volumeMode", json!("Filesystem"));
        }
        if let Some(status) = child_obj(obj, "status") {
            set_default_str(status, "phase", "Pending");
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_access_modes(
            spec,
            &path.child("accessModes"),
            "at least 1 access mode is required",
        );
        if let Some(selector) = present(spec, "/selector") {
            errs.extend(validate_label_selector(selector, &path.child("selector")));
        }
        let storage_path = path.child("resources").key("storage");
        match spec.pointer("/resources/requests/storage") {
            None => errs.push(FieldError::required(&storage_path, "")),
            Some(v) => errs.extend(validate_storage_quantity(v, &storage_path)),
        }
        errs.extend(validate_enum_opt(spec, "volumeMode", &VOLUME_MODES, &path));
        errs.extend(validate_class_name(spec, &path));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        let mut old_spec = old.get("spec").cloned().unwrap_or(Value::Null);
        let mut new_spec = new.get("spec").cloned().unwrap_or(Value::Null);
        if str_at(old, "/spec/volumeName").is_empty() {
            if let (Some(o), Some(n)) = (old_spec.as_object_mut(), new_spec.get("volumeName")) {
                o.insert("volumeName".into(), n.clone());
            }
        }
        if str_at(new, "/status/phase") == "Bound" {
            let old_storage = old.pointer("/spec/resources/requests/storage").cloned();
            if let Some(requests) = new_spec
                .pointer_mut("/resources/requests")
                .and_then(Value::as_object_mut)
            {
                match old_storage {
                    Some(s) => requests.insert("storage".into(), s),
                    None => requests.remove("storage"),
                };
            }
        }
        for spec in [&mut old_spec, &mut new_spec] {
            if let Some(s) = spec.as_object_mut() {
                s.remove("volumeAttributesClassName");
            }
        }
        if new_spec != old_spec {
            errs.push(FieldError::forbidden(
                &FieldPath::new("spec"),
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
        if let (Some(n), Some(o)) = (storage_request(new), storage_request(old)) {
            if n < o {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("spec")
                        .child("resources")
                        .child("requests")
                        .child("storage"),
                    "field can not be less than previous value",
                ));
            }
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Status", "phase represents the current phase of PersistentVolumeClaim."),
            string_column("Volume", "volumeName is the binding reference to the PersistentVolume backing this claim."),
            string_column("Capacity", "capacity represents the actual resources of the underlying volume."),
            string_column("Access Modes", "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1"),
            string_column("StorageClass", "StorageClass of the pvc"),
            string_column("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            age_column(),
            string_column("VolumeMode", "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let volume = str_at(obj, "/spec/volumeName");
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (
                quantity_cell(obj, "/status/capacity/storage"),
                access_modes_cell(arr_at(obj, "/status/accessModes")),
            )
        };
        vec![
            name_cell(obj),
            json!(phase_cell(obj)),
            json!(volume),
            json!(capacity),
            json!(modes),
            json!(storage_class(obj)),
            json!(present(obj, "/spec/volumeAttributesClassName")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")),
            age_cell(obj),
            json!(present(obj, "/spec/volumeMode")
                .and_then(Value::as_str)
                .unwrap_or("<unset>")),
        ]
    }
}

#[cfg(test)]
#[path = "volume_tests.rs"]
mod tests;
