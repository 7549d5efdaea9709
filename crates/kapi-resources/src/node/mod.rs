//! The `node.k8s.io/v1` group: runtimeclasses — `handler` a DNS label and
//! immutable, non-negative `overhead.podFixed`, `scheduling.nodeSelector` labels,
//! and the `NAME HANDLER AGE` table.

use kapi_machinery::validation::{
    is_dns1123_label, validate_labels, ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
    IS_NEGATIVE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::quantity::quantity_value;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{obj_at, present, str_at};

pub const GROUP: &str = "node.k8s.io";

pub struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    crate::core::object_warnings::warning_methods!(
        crate::core::object_warnings::runtime_class_warnings
    );

    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let handler = str_at(obj, "/handler");
        for msg in is_dns1123_label(handler) {
            errs.push(FieldError::invalid(
                &FieldPath::new("handler"),
                handler,
                msg,
            ));
        }
        let fixed = FieldPath::new("overhead").child("podFixed");
        for (name, q) in obj_at(obj, "/overhead/podFixed").into_iter().flatten() {
            match quantity_value(q) {
                None => errs.push(FieldError::invalid(
                    &fixed.key(name),
                    q.clone(),
                    "must be a valid quantity",
                )),
                Some(v) if v < 0.0 => errs.push(FieldError::invalid(
                    &fixed.key(name),
                    q.clone(),
                    IS_NEGATIVE_ERROR_MSG,
                )),
                Some(_) => {}
            }
        }
        let scheduling = FieldPath::new("scheduling");
        errs.extend(validate_labels(
            present(obj, "/scheduling/nodeSelector"),
            &scheduling.child("nodeSelector"),
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("handler") != old.get("handler") {
            errs.push(FieldError::invalid(
                &FieldPath::new("handler"),
                new.get("handler").cloned().unwrap_or(Value::Null),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Handler", "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class. The possible values are specific to the node & CRI configuration.  It is assumed that all handlers are available on every node, and handlers of the same name are equivalent on every node. For example, a handler called \"runc\" might specify that the runc OCI runtime (using native Linux containers) will be used to run the containers in a pod. The Handler must be lowercase, conform to the DNS Label (RFC 1123) requirements, and is immutable."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(str_at(obj, "/handler")),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handler_rules() {
        let ok = json!({"handler": "runc", "overhead": {"podFixed": {"cpu": "100m"}}});
        assert!(RuntimeClassStrategy.validate(&ok).is_empty());
        let bad = json!({"handler": "Run_C", "overhead": {"podFixed": {"cpu": "-1"}}});
        let errs: Vec<String> = RuntimeClassStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errs[0].starts_with("handler: Invalid value: \"Run_C\": a lowercase RFC 1123 label")
        );
        assert_eq!(
            errs[1],
            "overhead.podFixed[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
        );
        let changed = json!({"handler": "crun"});
        let errs = RuntimeClassStrategy.validate_update(&changed, &ok);
        assert_eq!(
            errs[0].to_string(),
            "handler: Invalid value: \"crun\": field is immutable"
        );
    }
}
