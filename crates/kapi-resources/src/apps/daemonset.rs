//! DaemonSets: upstream defaults (RollingUpdate maxUnavailable 1 / maxSurge 0, 10
//! revisions), the `deprecated.daemonset.template.generation` annotation (what apps/v1
//! shows of the internal templateGeneration: 1 on create, +1 per template change),
//! `ValidateDaemonSetSpec`, the immutable selector, and the
//! `NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE` table.
//!
//! Where to look next: `mod.rs` for the shared workload rules.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::{
    container_cells, format_selector, immutable_selector, int_cell, int_or_percent, nonnegative,
    restart_and_deadline, selector_matches_template, selector_of, validate_int_or_percent,
    validate_selector,
};
use crate::core::podspec::default_pod_template;
use crate::core::podspec_validation::validate_pod_template_spec;
use crate::core::table::{
    age_cell, age_column, int_column, name_cell, name_column, string_column, CONTAINERS_DOC,
    IMAGES_DOC,
};
use crate::core::util::{
    child_obj, format_labels, obj_at, present, set_default, set_default_str, str_at,
};

pub struct DaemonSetStrategy;

const GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

fn set_template_generation(obj: &mut Value, generation: i64) {
    let Some(annotations) = child_obj(obj, "metadata").and_then(|m| child_obj(m, "annotations"))
    else {
        return;
    };
    annotations[GENERATION_ANNOTATION] = json!(generation.to_string());
}

impl Strategy for DaemonSetStrategy {
    fn default(&self, obj: &mut Value) {
        // apps/v1 shows the internal templateGeneration as the annotation on
        // every conversion, so a decoded DaemonSet has it before the registry
        // sets it (0 when the client sent none): the request's manager is
        // recorded for it, as upstream records it.
        if obj
            .pointer(&format!("/metadata/annotations/{GENERATION_ANNOTATION}"))
            .is_none()
        {
            set_template_generation(obj, 0);
        }
        crate::core::util::default_status(
            obj,
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
        );
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if let Some(strategy) = child_obj(spec, "updateStrategy") {
            set_default_str(strategy, "type", "RollingUpdate");
            if str_at(strategy, "/type") == "RollingUpdate" {
                if let Some(ru) = child_obj(strategy, "rollingUpdate") {
                    set_default(ru, "maxUnavailable", json!(1));
                    set_default(ru, "maxSurge", json!(0));
                }
            }
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        if let Some(template) = child_obj(spec, "template") {
            default_pod_template(template);
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        set_template_generation(obj, 1);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let ptr = format!("/metadata/annotations/{GENERATION_ANNOTATION}");
        let previous: i64 = old
            .pointer(&ptr)
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let changed = new.pointer("/spec/template") != old.pointer("/spec/template");
        set_template_generation(new, previous + i64::from(changed));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = ErrorList::new();
        if present(obj, "/spec/selector").is_some() {
            errs.extend(validate_selector(obj, "daemonset", &spec.child("selector")));
        }
        if let Ok(selector) = selector_of(obj) {
            errs.extend(selector_matches_template(
                obj,
                &selector,
                &spec.child("template"),
            ));
        }
        let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
        errs.extend(validate_pod_template_spec(
            template,
            &spec.child("template"),
        ));
        errs.extend(restart_and_deadline(
            template,
            "DaemonSet",
            &spec.child("template"),
        ));
        errs.extend(nonnegative(
            obj,
            "/spec/minReadySeconds",
            &spec.child("minReadySeconds"),
        ));
        errs.extend(validate_update_strategy(
            obj.pointer("/spec/updateStrategy").unwrap_or(&Value::Null),
            &spec.child("updateStrategy"),
        ));
        errs.extend(nonnegative(
            obj,
            "/spec/revisionHistoryLimit",
            &spec.child("revisionHistoryLimit"),
        ));
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
        false,
        "/spec/template",
        "spec",
        "template"
    );

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column("Desired", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
            int_column("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/"),
            int_column("Ready", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
            int_column("Up-to-date", "The total number of nodes that are running updated daemon pod"),
            int_column("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
            string_column("Node Selector", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/"),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (names, images) = container_cells(obj);
        vec![
            name_cell(obj),
            int_cell(obj, "/status/desiredNumberScheduled"),
            int_cell(obj, "/status/currentNumberScheduled"),
            int_cell(obj, "/status/numberReady"),
            int_cell(obj, "/status/updatedNumberScheduled"),
            int_cell(obj, "/status/numberAvailable"),
            json!(format_labels(obj_at(
                obj,
                "/spec/template/spec/nodeSelector"
            ))),
            age_cell(obj),
            names,
            images,
            format_selector(obj),
        ]
    }
}

/// Upstream `ValidateDaemonSetUpdateStrategy`.
fn validate_update_strategy(strategy: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    match str_at(strategy, "/type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = present(strategy, "/rollingUpdate") else {
                errs.push(FieldError::required(&path.child("rollingUpdate"), ""));
                return errs;
            };
            let p = path.child("rollingUpdate");
            let (unavailable, surge) = (ru.get("maxUnavailable"), ru.get("maxSurge"));
            errs.extend(validate_int_or_percent(
                unavailable,
                &p.child("maxUnavailable"),
                true,
            ));
            errs.extend(validate_int_or_percent(surge, &p.child("maxSurge"), true));
            let has_unavailable = int_or_percent(unavailable).is_some_and(|v| v != 0);
            let has_surge = int_or_percent(surge).is_some_and(|v| v != 0);
            if has_unavailable && has_surge {
                let value = surge.cloned().unwrap_or_default();
                errs.push(FieldError::invalid(
                    &p.child("maxSurge"),
                    value,
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(FieldError::required(
                    &p.child("maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        _ => errs.push(FieldError::not_supported(
            path,
            strategy.clone(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds() -> Value {
        let mut d = json!({
            "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}},
                    "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "c", "image": "a:1"}]}}}
        });
        DaemonSetStrategy.default(&mut d);
        d
    }

    #[test]
    fn defaults_and_validation() {
        let d = ds();
        assert_eq!(
            d["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert!(
            DaemonSetStrategy.validate(&d).is_empty(),
            "{:?}",
            DaemonSetStrategy.validate(&d)
        );
        let mut bad = d.clone();
        bad["spec"]["updateStrategy"]["rollingUpdate"] =
            json!({"maxUnavailable": 1, "maxSurge": 1});
        let errs: Vec<String> = DaemonSetStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"]);
    }

    #[test]
    fn template_generation_annotation() {
        let mut d = ds();
        DaemonSetStrategy.prepare_for_create(&mut d);
        assert_eq!(d["metadata"]["annotations"][GENERATION_ANNOTATION], "1");
        let mut same = d.clone();
        DaemonSetStrategy.prepare_for_update(&mut same, &d);
        assert_eq!(same["metadata"]["annotations"][GENERATION_ANNOTATION], "1");
        let mut changed = d.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("a:2");
        DaemonSetStrategy.prepare_for_update(&mut changed, &d);
        assert_eq!(
            changed["metadata"]["annotations"][GENERATION_ANNOTATION],
            "2"
        );
    }

    #[test]
    fn table_cells() {
        let mut d = ds();
        d["status"] = json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2});
        let cells = DaemonSetStrategy.cells(&d);
        assert_eq!(cells.len(), DaemonSetStrategy.columns().len());
        assert_eq!(
            cells[1..6],
            [json!(3), json!(3), json!(2), json!(3), json!(2)]
        );
        assert_eq!(cells[6], "kubernetes.io/os=linux");
        assert_eq!(cells[10], "app=agent");
    }
}
