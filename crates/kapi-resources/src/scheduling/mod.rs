//! The `scheduling.k8s.io/v1` group: priorityclasses, with upstream's two system
//! classes (created at start-up by the server, protected from deletion there),
//! the reserved `system-` prefix, the user-definable ceiling, immutable `value`
//! and `preemptionPolicy`, and the `NAME VALUE GLOBAL-DEFAULT AGE
//! PREEMPTIONPOLICY` table.
//!
//! Where to look next: `kapi-server`'s `bootstrap.rs` (creates
//! [`SYSTEM_CLASSES`]) and `admission.rs` (refuses deleting them).

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::table::{age_cell, age_column, int_column, name_cell, name_column, string_column};
use crate::core::util::{bool_at, i64_at, set_default, str_at};

pub const GROUP: &str = "scheduling.k8s.io";

/// Upstream `HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
pub const SYSTEM_PREFIX: &str = "system-";

/// A system priority class: name, value, description.
pub struct SystemClass {
    pub name: &'static str,
    pub value: i64,
    pub description: &'static str,
}

/// Upstream `SystemPriorityClasses()`; neither is the global default.
pub const SYSTEM_CLASSES: &[SystemClass] = &[
    SystemClass {
        name: "system-node-critical",
        value: 2_000_001_000,
        description: "Used for system critical pods that must not be moved from their current node.",
    },
    SystemClass {
        name: "system-cluster-critical",
        value: 2_000_000_000,
        description: "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    },
];

impl SystemClass {
    /// The object the server creates at start-up.
    pub fn object(&self) -> Value {
        json!({
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": self.name},
            "value": self.value,
            "description": self.description,
        })
    }
}

/// Upstream `IsKnownSystemPriorityClass`, as the error text it reports.
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    let Some(class) = SYSTEM_CLASSES.iter().find(|c| c.name == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if class.value != value {
        return Err(format!(
            "value of {name} PriorityClass must be {}",
            class.value
        ));
    }
    if global_default {
        return Err(format!(
            "globalDefault of {name} PriorityClass must be false"
        ));
    }
    Ok(())
}

pub struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn default(&self, obj: &mut Value) {
        set_default(obj, "value", json!(0));
        set_default(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
    }

    /// Upstream's strategy sets `generation` to 1 on create and never
    /// changes it (the store carries it over updates).
    fn prepare_for_create(&self, obj: &mut Value) {
        kapi_registry::meta::meta_mut(obj).insert("generation".into(), json!(1));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let name = str_at(obj, "/metadata/name");
        let value = i64_at(obj, "/value").unwrap_or(0);
        if name.starts_with(SYSTEM_PREFIX) {
            if let Err(e) = known_system_class(name, value, bool_at(obj, "/globalDefault")) {
                errs.push(FieldError::forbidden(
                    &FieldPath::new("metadata").child("name"),
                    format!("priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {e}"),
                ));
            }
        } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
            errs.push(FieldError::forbidden(
                &FieldPath::new("value"),
                format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            ));
        }
        let path = FieldPath::new("preemptionPolicy");
        match str_at(obj, "/preemptionPolicy") {
            "PreemptLowerPriority" | "Never" => {}
            "" => errs.push(FieldError::required(&path, "")),
            other => errs.push(FieldError::not_supported(
                &path,
                other,
                &["Never", "PreemptLowerPriority"],
            )),
        }
        errs
    }

    /// Upstream validates only what may change on update.
    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        if new.get("value") != old.get("value") {
            errs.push(FieldError::forbidden(
                &FieldPath::new("value"),
                "may not be changed in an update.",
            ));
        }
        if new.get("preemptionPolicy") != old.get("preemptionPolicy") {
            errs.push(FieldError::invalid(
                &FieldPath::new("preemptionPolicy"),
                new.get("preemptionPolicy").cloned().unwrap_or(Value::Null),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column("Value", "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec."),
            Column::new("Global-Default", "boolean", "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority."),
            age_column(),
            string_column("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(i64_at(obj, "/value").unwrap_or(0)),
            json!(bool_at(obj, "/globalDefault")),
            age_cell(obj),
            json!(str_at(obj, "/preemptionPolicy")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn class(name: &str, value: i64) -> Value {
        let mut pc = json!({"metadata": {"name": name}, "value": value});
        PriorityClassStrategy.default(&mut pc);
        pc
    }

    #[test]
    fn system_prefix_and_ceiling() {
        for c in SYSTEM_CLASSES {
            let mut obj = c.object();
            PriorityClassStrategy.default(&mut obj);
            assert!(PriorityClassStrategy.validate(&obj).is_empty());
        }
        assert_eq!(
            msgs(PriorityClassStrategy.validate(&class("system-mine", 5))),
            vec!["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"]
        );
        assert_eq!(
            msgs(PriorityClassStrategy.validate(&class("system-node-critical", 5))),
            vec!["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"]
        );
        assert_eq!(
            msgs(PriorityClassStrategy.validate(&class("high", 1_000_000_001))),
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
            ]
        );
        let mut bad = class("p", 1);
        bad["preemptionPolicy"] = "Sometimes".into();
        assert_eq!(
            msgs(PriorityClassStrategy.validate(&bad)),
            vec!["preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"Never\", \"PreemptLowerPriority\""]
        );
    }

    #[test]
    fn value_is_immutable() {
        let old = class("p", 1);
        let new = class("p", 2);
        assert_eq!(
            msgs(PriorityClassStrategy.validate_update(&new, &old)),
            vec!["value: Forbidden: may not be changed in an update."]
        );
        assert_eq!(PriorityClassStrategy.cells(&old)[4], "PreemptLowerPriority");
    }

    #[test]
    fn table_columns_are_upstreams() {
        let names: Vec<String> = PriorityClassStrategy
            .columns()
            .iter()
            .map(|c| c.name.to_string())
            .collect();
        assert_eq!(
            names,
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
        );
    }
}
