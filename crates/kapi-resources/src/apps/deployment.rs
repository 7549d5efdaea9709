//! Deployments: upstream defaults (1 replica, RollingUpdate 25%/25%, 10 revisions,
//! 600s progress deadline, pod-template defaults), `ValidateDeploymentSpec`, the
//! immutable selector, and the `NAME READY UP-TO-DATE AVAILABLE AGE` table.
//!
//! Where to look next: `mod.rs` for the shared workload rules.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Value};

use super::{
    container_cells, immutable_selector, int_cell, int_or_percent, nonnegative,
    validate_int_or_percent, validate_selector, validate_template_for_replicaset,
};
use crate::core::podspec::default_pod_template;
use crate::core::table::{
    age_cell, age_column, name_cell, name_column, string_column, CONTAINERS_DOC, IMAGES_DOC,
};
use crate::core::util::{child_obj, i64_at, present, set_default, set_default_str, str_at};

pub struct DeploymentStrategy;

impl Strategy for DeploymentStrategy {
    /// Upstream's deployment status strategy keeps the stored labels.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(&["labels"])
    }

    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({}));
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        set_default(spec, "replicas", json!(1));
        if let Some(strategy) = child_obj(spec, "strategy") {
            set_default_str(strategy, "type", "RollingUpdate");
            if str_at(strategy, "/type") == "RollingUpdate" {
                if let Some(ru) = child_obj(strategy, "rollingUpdate") {
                    set_default(ru, "maxUnavailable", json!("25%"));
                    set_default(ru, "maxSurge", json!("25%"));
                }
            }
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        set_default(spec, "progressDeadlineSeconds", json!(600));
        if let Some(template) = child_obj(spec, "template") {
            default_pod_template(template);
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = nonnegative(obj, "/spec/replicas", &spec.child("replicas"));
        errs.extend(validate_selector(
            obj,
            "deployment",
            &spec.child("selector"),
        ));
        errs.extend(validate_template_for_replicaset(obj, &spec));
        errs.extend(validate_strategy(
            obj.pointer("/spec/strategy").unwrap_or(&Value::Null),
            &spec.child("strategy"),
        ));
        errs.extend(nonnegative(
            obj,
            "/spec/minReadySeconds",
            &spec.child("minReadySeconds"),
        ));
        errs.extend(nonnegative(
            obj,
            "/spec/revisionHistoryLimit",
            &spec.child("revisionHistoryLimit"),
        ));
        if let Some(deadline) = i64_at(obj, "/spec/progressDeadlineSeconds") {
            errs.extend(nonnegative(
                obj,
                "/spec/progressDeadlineSeconds",
                &spec.child("progressDeadlineSeconds"),
            ));
            if deadline <= i64_at(obj, "/spec/minReadySeconds").unwrap_or(0) {
                let path = spec.child("progressDeadlineSeconds");
                errs.push(FieldError::invalid(
                    &path,
                    deadline,
                    "must be greater than minReadySeconds",
                ));
            }
        }
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

    /// Annotations move it too: the controller copies them to the
    /// ReplicaSets (upstream's `PrepareForUpdate`).
    fn generation_moves(&self, new: &Value, old: &Value) -> bool {
        // Go's semantic equality: no annotations and none at all are equal.
        let annotations = |o: &Value| {
            o.pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .filter(|m| !m.is_empty())
                .cloned()
        };
        new.get("spec") != old.get("spec") || annotations(new) != annotations(old)
    }

    crate::core::workload_warnings::template_warning_methods!(
        true,
        "/spec/template",
        "spec",
        "template"
    );

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Ready", "Number of the pod with ready state"),
            string_column("Up-to-date", "Total number of non-terminating pods targeted by this deployment that have the desired template spec."),
            string_column("Available", "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.").wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ready = i64_at(obj, "/status/readyReplicas").unwrap_or(0);
        let desired = i64_at(obj, "/spec/replicas").unwrap_or(0);
        let (names, images) = container_cells(obj);
        let selector = match super::selector_of(obj) {
            Ok(s) => json!(s.to_string()),
            Err(_) => json!("<invalid>"),
        };
        vec![
            name_cell(obj),
            json!(format!("{ready}/{desired}")),
            int_cell(obj, "/status/updatedReplicas"),
            int_cell(obj, "/status/availableReplicas"),
            age_cell(obj),
            names,
            images,
            selector,
        ]
    }
}

/// Upstream `ValidateDeploymentStrategy`.
fn validate_strategy(strategy: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let rolling = present(strategy, "/rollingUpdate");
    match str_at(strategy, "/type") {
        "Recreate" if rolling.is_some() => errs.push(FieldError::forbidden(
            &path.child("rollingUpdate"),
            "may not be specified when strategy `type` is 'Recreate'",
        )),
        "Recreate" => {}
        "RollingUpdate" => match rolling {
            None => errs.push(FieldError::required(
                &path.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(ru) => errs.extend(validate_rolling_update(ru, &path.child("rollingUpdate"))),
        },
        _ => errs.push(FieldError::not_supported(
            path,
            strategy.clone(),
            &["Recreate", "RollingUpdate"],
        )),
    }
    errs
}

fn validate_rolling_update(ru: &Value, path: &FieldPath) -> ErrorList {
    let (unavailable, surge) = (ru.get("maxUnavailable"), ru.get("maxSurge"));
    let mut errs = validate_int_or_percent(unavailable, &path.child("maxUnavailable"), false);
    errs.extend(validate_int_or_percent(
        surge,
        &path.child("maxSurge"),
        false,
    ));
    if int_or_percent(unavailable) == Some(0) && int_or_percent(surge) == Some(0) {
        let value = unavailable.cloned().unwrap_or(json!(0));
        let msg = "may not be 0 when `maxSurge` is 0";
        errs.push(FieldError::invalid(
            &path.child("maxUnavailable"),
            value,
            msg,
        ));
    }
    if let (Some(Value::String(_)), Some(p)) = (unavailable, int_or_percent(unavailable)) {
        if p > 100 {
            let value = unavailable.cloned().unwrap_or(Value::Null);
            errs.push(FieldError::invalid(
                &path.child("maxUnavailable"),
                value,
                "must not be greater than 100%",
            ));
        }
    }
    errs
}

#[cfg(test)]
#[path = "deployment_tests.rs"]
mod tests;
