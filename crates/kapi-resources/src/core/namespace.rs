//! Namespaces: the `kubernetes.io/metadata.name` label and `Active` phase defaults,
//! the `kubernetes` finalizer added on create, finalizers kept on update (they change
//! only through `/finalize`), DNS-label names, and the `NAME STATUS AGE` table.
//!
//! Where to look next: `registry.rs` (namespaces have no deletecollection upstream).

use kapi_machinery::validation::{
    is_qualified_name, name_is_dns_label, ErrorList, FieldError, FieldPath, ValidateNameFn,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{arr_at, child_obj, set_default, set_default_str, str_at};

pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn default(&self, obj: &mut Value) {
        let name = str_at(obj, "/metadata/name").to_string();
        if !name.is_empty() {
            if let Some(labels) = child_obj(obj, "metadata").and_then(|m| child_obj(m, "labels")) {
                labels["kubernetes.io/metadata.name"] = json!(name);
            }
        }
        if let Some(status) = child_obj(obj, "status") {
            set_default_str(status, "phase", "Active");
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), json!({"phase": "Active"}));
        }
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        set_default(spec, "finalizers", json!([]));
        if let Some(list) = spec["finalizers"].as_array_mut() {
            if !list.iter().any(|f| f == "kubernetes") {
                list.push(json!("kubernetes"));
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let finalizers = old.pointer("/spec/finalizers").cloned();
        if let Some(spec) = child_obj(new, "spec").and_then(Value::as_object_mut) {
            match finalizers {
                Some(f) => spec.insert("finalizers".into(), f),
                None => spec.remove("finalizers"),
            };
        }
    }

    /// A namespace with spec finalizers is only marked `Terminating`; the namespace
    /// controller (kapi-server `controllers/namespace.rs`) empties it, then removes the
    /// finalizer through `finalize`.
    fn begin_delete(&self, obj: &mut Value) -> bool {
        let pending = obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if pending {
            if let Some(map) = obj.as_object_mut() {
                let status = map.entry("status").or_insert_with(|| json!({}));
                status["phase"] = json!("Terminating");
            }
        }
        pending
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec").child("finalizers");
        let mut errs = ErrorList::new();
        for f in arr_at(obj, "/spec/finalizers")
            .iter()
            .filter_map(Value::as_str)
        {
            errs.extend(
                is_qualified_name(f)
                    .into_iter()
                    .map(|m| FieldError::invalid(&path, f, m)),
            );
            if !f.contains('/') && !kapi_machinery::validation::STANDARD_FINALIZERS.contains(&f) {
                let msg = "name is neither a standard finalizer name nor is it fully qualified";
                errs.push(FieldError::invalid(&path, f, msg));
            }
        }
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        name_is_dns_label
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.phase"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "status.phase").then(|| str_at(obj, "/status/phase").to_string())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Status", "The status of the namespace"),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(str_at(obj, "/status/phase")),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_create() {
        let mut ns = json!({"metadata": {"name": "team-a"}});
        NamespaceStrategy.default(&mut ns);
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "team-a"
        );
        assert_eq!(ns["status"]["phase"], "Active");
        NamespaceStrategy.prepare_for_create(&mut ns);
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        NamespaceStrategy.prepare_for_create(&mut ns);
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    }

    #[test]
    fn update_keeps_finalizers() {
        let old = json!({"spec": {"finalizers": ["kubernetes"]}});
        let mut new = json!({"spec": {"finalizers": []}});
        NamespaceStrategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["finalizers"], json!(["kubernetes"]));
    }

    #[test]
    fn validation_and_name_rule() {
        let ns = json!({"spec": {"finalizers": ["custom"]}});
        let errs: Vec<String> = NamespaceStrategy
            .validate(&ns)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"]);
        assert!(!(NamespaceStrategy.name_rule())("a.b", false).is_empty());
    }

    #[test]
    fn table_and_fields() {
        let ns = json!({"metadata": {"name": "x"}, "status": {"phase": "Terminating"}});
        let cells = NamespaceStrategy.cells(&ns);
        assert_eq!(cells[0], "x");
        assert_eq!(cells[1], "Terminating");
        assert_eq!(cells[2], "<unknown>");
        assert_eq!(
            NamespaceStrategy.field_value(&ns, "status.phase").unwrap(),
            "Terminating"
        );
    }
}
