//! ReplicaSets: one replica by default, `ValidateReplicaSetSpec`, the immutable
//! selector, the `status.replicas` field selector and the
//! `NAME DESIRED CURRENT READY AGE` table.
//!
//! Where to look next: `mod.rs` for the shared workload rules.

use kapi_machinery::validation::{ErrorList, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::{
    container_cells, format_selector, immutable_selector, int_cell, nonnegative, validate_selector,
    validate_template_for_replicaset,
};
use crate::core::podspec::default_pod_template;
use crate::core::table::{
    age_cell, age_column, int_column, name_cell, name_column, string_column, CONTAINERS_DOC,
    IMAGES_DOC,
};
use crate::core::util::{child_obj, set_default};

pub struct ReplicaSetStrategy;

impl Strategy for ReplicaSetStrategy {
    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({"replicas": 0}));
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        set_default(spec, "replicas", json!(1));
        if let Some(template) = child_obj(spec, "template") {
            default_pod_template(template);
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = nonnegative(obj, "/spec/replicas", &spec.child("replicas"));
        errs.extend(nonnegative(
            obj,
            "/spec/minReadySeconds",
            &spec.child("minReadySeconds"),
        ));
        errs.extend(validate_selector(
            obj,
            "deployment",
            &spec.child("selector"),
        ));
        errs.extend(validate_template_for_replicaset(obj, &spec));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(immutable_selector(new, old));
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    crate::core::workload_warnings::template_warning_methods!(
        true,
        "/spec/template",
        "spec",
        "template"
    );

    // No selectable fields beyond metadata: upstream's apps/v1 has no field
    // label conversion for ReplicaSets, so `status.replicas` is refused.

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column("Desired", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
            int_column("Current", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset"),
            int_column("Ready", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (names, images) = container_cells(obj);
        vec![
            name_cell(obj),
            int_cell(obj, "/spec/replicas"),
            int_cell(obj, "/status/replicas"),
            int_cell(obj, "/status/readyReplicas"),
            age_cell(obj),
            names,
            images,
            format_selector(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs() -> Value {
        let mut rs = json!({
            "metadata": {"name": "web-1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}
        });
        ReplicaSetStrategy.default(&mut rs);
        rs
    }

    #[test]
    fn defaults_and_validation() {
        let r = rs();
        assert_eq!(r["spec"]["replicas"], 1);
        assert!(ReplicaSetStrategy.validate(&r).is_empty());
        let mut bad = r.clone();
        bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        let errs: Vec<String> = ReplicaSetStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"]);
    }

    #[test]
    fn selector_immutable_and_field_value() {
        let old = rs();
        let mut new = old.clone();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "x": "y"}});
        new["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        assert_eq!(ReplicaSetStrategy.validate_update(&new, &old).len(), 1);
        let mut with_status = old.clone();
        with_status["status"] = json!({"replicas": 2});
        assert_eq!(
            ReplicaSetStrategy
                .field_value(&with_status, "status.replicas")
                .unwrap(),
            "2"
        );
        assert_eq!(
            ReplicaSetStrategy
                .field_value(&old, "status.replicas")
                .unwrap(),
            "0"
        );
    }

    #[test]
    fn table_cells() {
        let mut r = rs();
        r["status"] = json!({"replicas": 1, "readyReplicas": 1});
        let cells = ReplicaSetStrategy.cells(&r);
        assert_eq!(cells[1..4], [json!(1), json!(1), json!(1)]);
        assert_eq!(cells[7], "app=web");
    }
}
