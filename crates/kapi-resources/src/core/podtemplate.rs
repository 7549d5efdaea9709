//! PodTemplates and ReplicationControllers: the two core kinds built around a pod
//! template. PodTemplates get pod-template defaults and `ValidatePodTemplate` and
//! the `NAME CONTAINERS IMAGES POD LABELS` table. ReplicationControllers get
//! `SetDefaults_ReplicationController` (selector and labels from the template, one
//! replica), `ValidateReplicationControllerSpec` (a non-empty map selector that
//! matches the template, `Always` restarts) and the ReplicaSet-like table.

use kapi_machinery::labels::LabelSelector;
use kapi_machinery::validation::{validate_labels, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Map, Value};

use super::podspec::{default_pod_template, default_template_metadata};
use super::podspec_validation::validate_pod_template_spec;
use super::table::{
    age_cell, age_column, int_column, name_cell, name_column, string_column, CONTAINERS_DOC,
    IMAGES_DOC,
};
use super::util::{child_obj, format_labels, i64_at, obj_at, present, set_default};
use crate::apps::{int_cell, nonnegative, restart_and_deadline, template_container_cells};

pub struct PodTemplateStrategy;
pub struct ReplicationControllerStrategy;

impl Strategy for PodTemplateStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(template) = child_obj(obj, "template") {
            default_template_metadata(template);
            default_pod_template(template);
        }
    }

    /// Upstream's strategy: 1 on create, +1 per template change.
    fn tracks_generation(&self) -> bool {
        true
    }

    crate::core::workload_warnings::template_warning_methods!(false, "/template", "template");

    fn validate(&self, obj: &Value) -> ErrorList {
        let template = obj.get("template").unwrap_or(&Value::Null);
        validate_pod_template_spec(template, &FieldPath::new("template"))
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Containers", CONTAINERS_DOC),
            string_column("Images", IMAGES_DOC),
            string_column("Pod Labels", "The labels for the pod template."),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (names, images) = template_container_cells(obj, "/template");
        let labels = format_labels(obj_at(obj, "/template/metadata/labels"));
        vec![name_cell(obj), names, images, json!(labels)]
    }
}

/// The RC's map selector as a label selector.
fn map_selector(obj: &Value) -> Option<LabelSelector> {
    let map = obj_at(obj, "/spec/selector")?;
    let pairs: Vec<(String, String)> = map
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    Some(LabelSelector::from_validated_set(pairs))
}

impl Strategy for ReplicationControllerStrategy {
    /// Upstream keeps the pre-GC default for this group-version: dependents are
    /// orphaned unless the client asks for a propagation policy.
    fn gc_policy(&self) -> kapi_registry::GcPolicy {
        kapi_registry::GcPolicy::OrphanDependents
    }

    fn default(&self, obj: &mut Value) {
        super::util::default_status(obj, json!({"replicas": 0}));
        let labels = obj.pointer("/spec/template/metadata/labels").cloned();
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if let Some(labels) = labels.as_ref().filter(|l| l.is_object()) {
            if obj_at(spec, "/selector").is_none_or(Map::is_empty) {
                spec["selector"] = labels.clone();
            }
        }
        set_default(spec, "replicas", json!(1));
        if let Some(template) = spec.get_mut("template").filter(|t| t.is_object()) {
            // The template is a pointer, so absent from the zero object: its
            // ObjectMeta's creationTimestamp (a struct Go writes as null) is
            // a field of the decoded object the creating manager is given.
            if let Some(meta) = template.get_mut("metadata").filter(|m| m.is_object()) {
                set_default(meta, "creationTimestamp", Value::Null);
            }
            default_pod_template(template);
        }
        if let Some(labels) = labels.filter(|l| l.is_object()) {
            let empty = obj_at(obj, "/metadata/labels").is_none_or(Map::is_empty);
            if let (true, Some(meta)) = (empty, child_obj(obj, "metadata")) {
                meta["labels"] = labels;
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = nonnegative(obj, "/spec/minReadySeconds", &spec.child("minReadySeconds"));
        let selector = map_selector(obj).filter(|s| !s.is_empty());
        if selector.is_none() {
            errs.push(FieldError::required(&spec.child("selector"), ""));
        }
        errs.extend(validate_labels(
            present(obj, "/spec/selector"),
            &spec.child("selector"),
        ));
        errs.extend(nonnegative(obj, "/spec/replicas", &spec.child("replicas")));
        let tpath = spec.child("template");
        let Some(template) = present(obj, "/spec/template") else {
            errs.push(FieldError::required(&tpath, ""));
            return errs;
        };
        if let Some(selector) = selector {
            if !selector.matches_object(template) {
                let labels = template
                    .pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or(json!({}));
                errs.push(FieldError::invalid(
                    &tpath.child("metadata").child("labels"),
                    labels,
                    "`selector` does not match template `labels`",
                ));
            }
        }
        errs.extend(validate_pod_template_spec(template, &tpath));
        errs.extend(restart_and_deadline(
            template,
            "ReplicationController",
            &tpath,
        ));
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

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "status.replicas")
            .then(|| i64_at(obj, "/status/replicas").unwrap_or(0).to_string())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            int_column("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
            int_column("Current", "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller"),
            int_column("Ready", "The number of ready replicas for this replication controller."),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (names, images) = template_container_cells(obj, "/spec/template");
        vec![
            name_cell(obj),
            int_cell(obj, "/spec/replicas"),
            int_cell(obj, "/status/replicas"),
            int_cell(obj, "/status/readyReplicas"),
            age_cell(obj),
            names,
            images,
            json!(format_labels(obj_at(obj, "/spec/selector"))),
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
    fn pod_templates() {
        let mut pt = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}});
        PodTemplateStrategy.default(&mut pt);
        assert_eq!(pt["template"]["spec"]["restartPolicy"], "Always");
        assert!(PodTemplateStrategy.validate(&pt).is_empty());
        assert_eq!(
            PodTemplateStrategy.cells(&pt)[1..],
            [json!("c"), json!("i"), json!("a=b")]
        );
        pt["template"]["spec"]["containers"][0]["name"] = json!("Bad_Name");
        assert_eq!(PodTemplateStrategy.validate(&pt).len(), 1);
    }

    #[test]
    fn replication_controllers() {
        let mut rc = json!({"metadata": {"name": "r"}, "spec": {"template": {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        ReplicationControllerStrategy.default(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "x"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert!(ReplicationControllerStrategy.validate(&rc).is_empty());
        assert_eq!(ReplicationControllerStrategy.cells(&rc)[7], "app=x");
        rc["spec"]["selector"] = json!({"app": "y"});
        rc["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(msgs(ReplicationControllerStrategy.validate(&rc)), vec![
            "spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ]);
        let no_template = json!({"spec": {"replicas": 1}});
        assert_eq!(
            msgs(ReplicationControllerStrategy.validate(&no_template)),
            vec![
                "spec.selector: Required value",
                "spec.template: Required value",
            ]
        );
    }
}
