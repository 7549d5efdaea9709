//! VolumeAttachments (spec immutable, status through its subresource) and
//! CSIStorageCapacities (immutable class and topology), with their tables.
//!
//! Where to look next: `csi.rs` for the driver-name rule `spec.attacher` follows.

use kapi_machinery::labels::from_label_selector_json;
use kapi_machinery::validation::{
    is_dns1123_subdomain, name_is_dns_subdomain, validate_labels, ErrorList, FieldError, FieldPath,
    FIELD_IMMUTABLE_ERROR_MSG, IS_NEGATIVE_ERROR_MSG,
};
use kapi_registry::strategy::RESET_FOR_STATUS;
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Value};

use super::validate_csi_driver_name;
use crate::apps::validate_requirement;
use crate::core::quantity::quantity_value;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, bool_at, obj_at, present, str_at};

pub struct VolumeAttachmentStrategy;
pub struct CsiStorageCapacityStrategy;

/// Upstream `maxAttachedVolumeMetadataSize` and `maxVolumeErrorMessageSize`.
const MAX_METADATA_BYTES: usize = 256 * 1024;
const MAX_ERROR_MESSAGE: usize = 1024;

fn validate_status(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let status = FieldPath::new("status");
    let size: usize = obj_at(obj, "/status/attachmentMetadata")
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > MAX_METADATA_BYTES {
        errs.push(FieldError::too_long(
            &status.child("attachmentMetadata"),
            "",
            MAX_METADATA_BYTES,
        ));
    }
    for field in ["attachError", "detachError"] {
        let msg = str_at(obj, &format!("/status/{field}/message"));
        if msg.len() > MAX_ERROR_MESSAGE {
            errs.push(FieldError::too_long(
                &status.child(field).child("message"),
                msg,
                MAX_ERROR_MESSAGE,
            ));
        }
    }
    errs
}

impl Strategy for VolumeAttachmentStrategy {
    /// Status writes keep the stored labels, annotations, finalizers and
    /// owner references (upstream's `ResetObjectMetaForStatus`).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(RESET_FOR_STATUS)
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs =
            validate_csi_driver_name(str_at(obj, "/spec/attacher"), &spec.child("attacher"));
        let node = str_at(obj, "/spec/nodeName");
        if node.is_empty() {
            errs.push(FieldError::required(&spec.child("nodeName"), ""));
        } else {
            for msg in is_dns1123_subdomain(node) {
                errs.push(FieldError::invalid(&spec.child("nodeName"), node, msg));
            }
        }
        let source = spec.child("source");
        let pv = present(obj, "/spec/source/persistentVolumeName");
        let inline = present(obj, "/spec/source/inlineVolumeSpec");
        match (pv, inline) {
            (Some(_), Some(_)) | (None, None) => errs.push(FieldError::required(
                &source,
                "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            )),
            (Some(pv), None) => {
                let name = pv.as_str().unwrap_or("");
                for msg in name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(
                        &source.child("persistentVolumeName"),
                        name,
                        msg,
                    ));
                }
            }
            (None, Some(_)) => {}
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("spec") != old.get("spec") {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec"),
                new.get("spec").cloned().unwrap_or(Value::Null),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, _old: &Value) -> ErrorList {
        validate_status(new)
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Attacher", "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().").format("name"),
            string_column("PV", "persistentVolumeName represents the name of the persistent volume to attach."),
            string_column("Node", "nodeName represents the node that the volume should be attached to."),
            Column::new("Attached", "boolean", "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(str_at(obj, "/spec/attacher")),
            json!(str_at(obj, "/spec/source/persistentVolumeName")),
            json!(str_at(obj, "/spec/nodeName")),
            json!(bool_at(obj, "/status/attached")),
            age_cell(obj),
        ]
    }
}

fn validate_quantity(obj: &Value, field: &str, errs: &mut ErrorList) {
    let Some(q) = present(obj, &format!("/{field}")) else {
        return;
    };
    match quantity_value(q) {
        Some(v) if v < 0.0 => errs.push(FieldError::invalid(
            &FieldPath::new(field),
            q.clone(),
            IS_NEGATIVE_ERROR_MSG,
        )),
        Some(_) => {}
        None => errs.push(FieldError::invalid(
            &FieldPath::new(field),
            q.clone(),
            "must be a valid quantity",
        )),
    }
}

impl Strategy for CsiStorageCapacityStrategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let class = str_at(obj, "/storageClassName");
        let path = FieldPath::new("storageClassName");
        if class.is_empty() {
            errs.push(FieldError::required(&path, ""));
        }
        for msg in name_is_dns_subdomain(class, false)
            .into_iter()
            .filter(|_| !class.is_empty())
        {
            errs.push(FieldError::invalid(&path, class, msg));
        }
        if let Some(selector) = present(obj, "/nodeTopology") {
            let p = FieldPath::new("nodeTopology");
            errs.extend(validate_labels(
                present(selector, "/matchLabels"),
                &p.child("matchLabels"),
            ));
            for (i, req) in arr_at(selector, "/matchExpressions").iter().enumerate() {
                errs.extend(validate_requirement(
                    req,
                    &p.child("matchExpressions").index(i),
                ));
            }
            if errs.is_empty() && from_label_selector_json(selector).is_err() {
                errs.push(FieldError::invalid(
                    &p,
                    selector.clone(),
                    "invalid label selector.",
                ));
            }
        }
        validate_quantity(obj, "capacity", &mut errs);
        validate_quantity(obj, "maximumVolumeSize", &mut errs);
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        for field in ["nodeTopology", "storageClassName"] {
            if new.get(field) != old.get(field) {
                errs.push(FieldError::invalid(
                    &FieldPath::new(field),
                    new.get(field).cloned().unwrap_or(Value::Null),
                    FIELD_IMMUTABLE_ERROR_MSG,
                ));
            }
        }
        errs
    }
    // No printer is wired for CSIStorageCapacity upstream: its table is the
    // default one (Name, Created At).
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn attachment_rules() {
        let va = json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}});
        assert!(VolumeAttachmentStrategy.validate(&va).is_empty());
        let bad = json!({"spec": {"attacher": "", "source": {}}});
        assert_eq!(
            msgs(VolumeAttachmentStrategy.validate(&bad)),
            vec![
                "spec.attacher: Required value",
                "spec.attacher: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.nodeName: Required value",
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
            ]
        );
        let mut moved = va.clone();
        moved["spec"]["nodeName"] = "n2".into();
        assert!(
            msgs(VolumeAttachmentStrategy.validate_update(&moved, &va))[0]
                .ends_with("field is immutable")
        );
        assert_eq!(VolumeAttachmentStrategy.cells(&va)[2], "pv1");
        let attacher = &VolumeAttachmentStrategy.columns()[1];
        assert_eq!((attacher.name, attacher.format), ("Attacher", "name"));
    }

    #[test]
    fn capacity_rules() {
        let c = json!({"storageClassName": "fast", "capacity": "10Gi"});
        assert!(CsiStorageCapacityStrategy.validate(&c).is_empty());
        // Upstream's default table: no printer is wired for this kind.
        let columns: Vec<&str> = CsiStorageCapacityStrategy
            .columns()
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(columns, ["Name", "Created At"]);
        let mut moved = c.clone();
        moved["storageClassName"] = "slow".into();
        assert_eq!(
            msgs(CsiStorageCapacityStrategy.validate_update(&moved, &c)),
            vec!["storageClassName: Invalid value: \"slow\": field is immutable"]
        );
    }
}
