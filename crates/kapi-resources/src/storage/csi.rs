//! CSIDrivers and CSINodes: driver-name rules, CSIDriver spec defaults
//! (`attachRequired: true`, `fsGroupPolicy: ReadWriteOnceWithFSType`,
//! `volumeLifecycleModes: [Persistent]`, …), token-request rules, the fields
//! upstream keeps immutable, and the two tables.

use std::collections::BTreeSet;

use kapi_machinery::validation::{
    is_qualified_name, ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
    IS_NEGATIVE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::validate_csi_driver_name;
use crate::core::podspec_validation::validate_enum;
use crate::core::table::{age_cell, age_column, int_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, bool_at, child_obj, i64_at, present, set_default, str_at};

pub struct CsiDriverStrategy;
pub struct CsiNodeStrategy;

const MIN_TOKEN_SECONDS: i64 = 600;
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

fn validate_token_requests(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut audiences = BTreeSet::new();
    for (i, t) in arr_at(spec, "/tokenRequests").iter().enumerate() {
        let p = path.index(i);
        let audience = str_at(t, "/audience");
        if !audiences.insert(audience) {
            errs.push(FieldError::duplicate(&p.child("audience"), audience));
        }
        if let Some(secs) = i64_at(t, "/expirationSeconds") {
            if secs < MIN_TOKEN_SECONDS {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    secs,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if secs > MAX_TOKEN_SECONDS {
                errs.push(FieldError::invalid(
                    &p.child("expirationSeconds"),
                    secs,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    errs
}

impl Strategy for CsiDriverStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            set_default(spec, "attachRequired", json!(true));
            set_default(spec, "podInfoOnMount", json!(false));
            set_default(spec, "storageCapacity", json!(false));
            set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            set_default(spec, "requiresRepublish", json!(false));
            set_default(spec, "seLinuxMount", json!(false));
            if arr_at(spec, "/volumeLifecycleModes").is_empty() {
                spec["volumeLifecycleModes"] = json!(["Persistent"]);
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs =
            validate_csi_driver_name(str_at(obj, "/metadata/name"), &FieldPath::new("name"));
        let spec_path = FieldPath::new("spec");
        let empty = json!({});
        let spec = present(obj, "/spec").unwrap_or(&empty);
        for field in [
            "attachRequired",
            "podInfoOnMount",
            "requiresRepublish",
            "storageCapacity",
        ] {
            if spec.get(field).is_none_or(Value::is_null) {
                errs.push(FieldError::required(&spec_path.child(field), ""));
            }
        }
        errs.extend(validate_enum(
            spec.get("fsGroupPolicy"),
            &["File", "None", "ReadWriteOnceWithFSType"],
            &spec_path.child("fsGroupPolicy"),
        ));
        for (i, mode) in arr_at(spec, "/volumeLifecycleModes").iter().enumerate() {
            errs.extend(validate_enum(
                Some(mode),
                &["Ephemeral", "Persistent"],
                &spec_path.child("volumeLifecycleModes").index(i),
            ));
        }
        errs.extend(validate_token_requests(
            spec,
            &spec_path.child("tokenRequests"),
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        // Upstream's path really says `attachedRequired`.
        for (field, path) in [
            ("attachRequired", "attachedRequired"),
            ("fsGroupPolicy", "fsGroupPolicy"),
            ("volumeLifecycleModes", "volumeLifecycleModes"),
        ] {
            let (n, o) = (
                new.pointer(&format!("/spec/{field}")),
                old.pointer(&format!("/spec/{field}")),
            );
            if n != o {
                errs.push(FieldError::invalid(
                    &FieldPath::new("spec").child(path),
                    n.cloned().unwrap_or(Value::Null),
                    FIELD_IMMUTABLE_ERROR_MSG,
                ));
            }
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            Column::new("AttachRequired", "boolean", "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting."),
            Column::new("PodInfoOnMount", "boolean", "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true."),
            Column::new("StorageCapacity", "boolean", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true."),
            string_column("TokenRequests", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication."),
            Column::new("RequiresRepublish", "boolean", "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume."),
            string_column("Modes", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let tokens = match obj.pointer("/spec/tokenRequests").and_then(Value::as_array) {
            None => "<unset>".to_string(),
            Some(ts) => ts
                .iter()
                .map(|t| str_at(t, "/audience"))
                .collect::<Vec<_>>()
                .join(","),
        };
        let modes: Vec<&str> = arr_at(obj, "/spec/volumeLifecycleModes")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let modes = if modes.is_empty() {
            "<none>".to_string()
        } else {
            modes.join(",")
        };
        let attach = obj
            .pointer("/spec/attachRequired")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        vec![
            name_cell(obj),
            json!(attach),
            json!(bool_at(obj, "/spec/podInfoOnMount")),
            json!(bool_at(obj, "/spec/storageCapacity")),
            json!(tokens),
            json!(bool_at(obj, "/spec/requiresRepublish")),
            json!(modes),
            age_cell(obj),
        ]
    }
}

const MAX_NODE_ID_LENGTH: usize = 192;

fn validate_csi_node_driver(
    d: &Value,
    path: &FieldPath,
    names: &mut BTreeSet<String>,
) -> ErrorList {
    let name = str_at(d, "/name");
    let mut errs = validate_csi_driver_name(name, &path.child("name"));
    if !names.insert(name.to_string()) {
        errs.push(FieldError::duplicate(&path.child("name"), name));
    }
    let node_id = str_at(d, "/nodeID");
    if node_id.is_empty() {
        errs.push(FieldError::required(&path.child("nodeID"), ""));
    } else if node_id.len() > MAX_NODE_ID_LENGTH {
        errs.push(FieldError::invalid(
            &path.child("nodeID"),
            node_id,
            format!("must be {MAX_NODE_ID_LENGTH} characters or less"),
        ));
    }
    if let Some(count) = i64_at(d, "/allocatable/count") {
        if count < 0 {
            errs.push(FieldError::invalid(
                &path.child("allocatable").child("count"),
                count,
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
    }
    let mut keys = BTreeSet::new();
    for (i, key) in arr_at(d, "/topologyKeys")
        .iter()
        .filter_map(Value::as_str)
        .enumerate()
    {
        let p = path.child("topologyKeys");
        if key.is_empty() {
            errs.push(FieldError::required(&p, key));
        }
        if !keys.insert(key) {
            errs.push(FieldError::duplicate(&p, key));
        }
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(&p.index(i), key, msg));
        }
    }
    errs
}

impl Strategy for CsiNodeStrategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec").child("drivers");
        let mut names = BTreeSet::new();
        arr_at(obj, "/spec/drivers")
            .iter()
            .enumerate()
            .flat_map(|(i, d)| validate_csi_node_driver(d, &path.index(i), &mut names))
            .collect()
    }

    /// Drivers may come and go, but an existing entry may not change.
    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        for o in arr_at(old, "/spec/drivers") {
            for n in arr_at(new, "/spec/drivers") {
                if str_at(o, "/name") == str_at(n, "/name") && o != n {
                    errs.push(FieldError::invalid(
                        &FieldPath::new("CSINodeDriver"),
                        n.clone(),
                        FIELD_IMMUTABLE_ERROR_MSG,
                    ));
                }
            }
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column(
                "Drivers",
                "Drivers indicates the number of CSI drivers registered on the node",
            ),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(arr_at(obj, "/spec/drivers").len()),
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
    fn driver_defaults_and_immutability() {
        let mut d = json!({"metadata": {"name": "csi.example.com"}, "spec": {}});
        CsiDriverStrategy.default(&mut d);
        assert_eq!(d["spec"]["attachRequired"], true);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        assert!(CsiDriverStrategy.validate(&d).is_empty());
        let mut changed = d.clone();
        changed["spec"]["attachRequired"] = false.into();
        assert_eq!(
            msgs(CsiDriverStrategy.validate_update(&changed, &d)),
            vec!["spec.attachedRequired: Invalid value: false: field is immutable"]
        );
        assert_eq!(CsiDriverStrategy.cells(&d)[4], "<unset>");
    }

    #[test]
    fn node_drivers() {
        let n = json!({"spec": {"drivers": [
            {"name": "a.example.com", "nodeID": "n1"},
            {"name": "a.example.com", "nodeID": ""},
        ]}});
        assert_eq!(
            msgs(CsiNodeStrategy.validate(&n)),
            vec![
                "spec.drivers[1].name: Duplicate value: \"a.example.com\"",
                "spec.drivers[1].nodeID: Required value",
            ]
        );
        assert_eq!(CsiNodeStrategy.cells(&n)[1], 2);
    }
}
