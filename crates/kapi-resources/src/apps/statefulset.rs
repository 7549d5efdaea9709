//! StatefulSets: upstream defaults (OrderedReady, RollingUpdate partition 0, Retain /
//! Retain claim retention, 10 revisions, claim-template defaults), validation as
//! upstream (which checks the template's labels and annotations but, unlike the other
//! workloads, not its pod spec), the fields an update may change, and the
//! `NAME READY AGE` table.
//!
//! Where to look next: `mod.rs` for the shared workload rules.

use kapi_machinery::validation::{
    name_is_dns_label, validate_annotations, validate_labels, ErrorList, FieldError, FieldPath,
    ValidateNameFn,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::{
    container_cells, nonnegative, restart_and_deadline, selector_matches_template, selector_of,
    validate_int_or_percent, validate_selector,
};
use crate::core::podspec::default_pod_template;
use crate::core::table::{
    age_cell, age_column, name_cell, name_column, string_column, CONTAINERS_DOC, IMAGES_DOC,
};
use crate::core::util::{
    child_obj, for_each_item, i64_at, present, set_default, set_default_str, str_at,
};

pub struct StatefulSetStrategy;

/// Spec fields an update may change (upstream `ValidateStatefulSetUpdate`).
const MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

impl Strategy for StatefulSetStrategy {
    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({"replicas": 0, "availableReplicas": 0}));
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        set_default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = child_obj(spec, "updateStrategy") {
            set_default_str(strategy, "type", "RollingUpdate");
            if str_at(strategy, "/type") == "RollingUpdate" {
                set_default(strategy, "rollingUpdate", json!({}));
                if let Some(ru) = strategy.get_mut("rollingUpdate") {
                    set_default(ru, "partition", json!(0));
                }
            }
        }
        set_default(spec, "replicas", json!(1));
        set_default(spec, "revisionHistoryLimit", json!(10));
        if let Some(policy) = child_obj(spec, "persistentVolumeClaimRetentionPolicy") {
            set_default_str(policy, "whenDeleted", "Retain");
            set_default_str(policy, "whenScaled", "Retain");
        }
        for_each_item(spec, "volumeClaimTemplates", |pvc| {
            typed_claim(pvc);
            if let Some(s) = child_obj(pvc, "spec") {
                set_default_str(s, "volumeMode", "Filesystem");
            }
            if let Some(status) = child_obj(pvc, "status") {
                set_default_str(status, "phase", "Pending");
            }
        });
        if let Some(template) = child_obj(spec, "template") {
            default_pod_template(template);
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = validate_policies(obj, &spec);
        errs.extend(nonnegative(obj, "/spec/replicas", &spec.child("replicas")));
        errs.extend(nonnegative(
            obj,
            "/spec/minReadySeconds",
            &spec.child("minReadySeconds"),
        ));
        errs.extend(nonnegative(
            obj,
            "/spec/ordinals/start",
            &spec.child("ordinals.start"),
        ));
        errs.extend(validate_selector(
            obj,
            "statefulset",
            &spec.child("selector"),
        ));
        let template_path = spec.child("template");
        match selector_of(obj) {
            Err(_) => {
                let selector = obj
                    .pointer("/spec/selector")
                    .cloned()
                    .unwrap_or(Value::Null);
                errs.push(FieldError::invalid(&spec.child("selector"), selector, ""));
            }
            Ok(selector) => {
                errs.extend(selector_matches_template(obj, &selector, &template_path));
                errs.extend(validate_labels(
                    present(obj, "/spec/template/metadata/labels"),
                    &template_path.child("labels"),
                ));
                errs.extend(validate_annotations(
                    present(obj, "/spec/template/metadata/annotations"),
                    &template_path.child("annotations"),
                ));
            }
        }
        let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
        errs.extend(restart_and_deadline(
            template,
            "StatefulSet",
            &template_path,
        ));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        let strip = |o: &Value| {
            let mut spec = o.get("spec").cloned().unwrap_or(json!({}));
            if let Some(m) = spec.as_object_mut() {
                MUTABLE.iter().for_each(|k| {
                    m.remove(*k);
                });
            }
            spec
        };
        if strip(new) != strip(old) {
            let msg = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
            errs.push(FieldError::forbidden(&FieldPath::new("spec"), msg));
        }
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        name_is_dns_label
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    /// The template's warnings, then each claim template's (upstream names
    /// a claim's fields without its `spec` on create).
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut w = crate::core::workload_warnings::workload_create_warnings(
            obj,
            false,
            "/spec/template",
            &FieldPath::new("spec").child("template"),
        );
        w.extend(claim_template_warnings(obj, None));
        w
    }

    /// The template's when the generation moved; the claim templates'
    /// always (upstream names their fields under `Spec` on update).
    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        let mut w = crate::core::workload_warnings::workload_update_warnings(
            new,
            old,
            "/spec/template",
            &FieldPath::new("spec").child("template"),
        );
        w.extend(claim_template_warnings(new, Some("Spec")));
        w
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Ready", "Number of the pod with ready state"),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let ready = i64_at(obj, "/status/readyReplicas").unwrap_or(0);
        let desired = i64_at(obj, "/spec/replicas").unwrap_or(0);
        let (names, images) = container_cells(obj);
        vec![
            name_cell(obj),
            json!(format!("{ready}/{desired}")),
            age_cell(obj),
            names,
            images,
        ]
    }
}

/// podManagementPolicy, updateStrategy and persistentVolumeClaimRetentionPolicy.
fn validate_policies(obj: &Value, spec: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    match str_at(obj, "/spec/podManagementPolicy") {
        "" => errs.push(FieldError::required(&spec.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        p => errs.push(FieldError::invalid(
            &spec.child("podManagementPolicy"),
            p,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    errs.extend(validate_update_strategy(obj, &spec.child("updateStrategy")));
    let retention = spec.child("persistentVolumeClaimRetentionPolicy");
    for field in ["whenDeleted", "whenScaled"] {
        let ptr = format!("/spec/persistentVolumeClaimRetentionPolicy/{field}");
        match obj.pointer(&ptr).and_then(Value::as_str) {
            None | Some("Retain" | "Delete") => {}
            Some(v) => errs.push(FieldError::not_supported(
                &retention.child(field),
                v,
                &["Retain", "Delete"],
            )),
        }
    }
    errs
}

/// `spec.updateStrategy` (upstream `ValidateStatefulSetSpec`'s strategy switch).
fn validate_update_strategy(obj: &Value, strategy: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let strategy = strategy.clone();
    let rolling = present(obj, "/spec/updateStrategy/rollingUpdate");
    match str_at(obj, "/spec/updateStrategy/type") {
        "" => errs.push(FieldError::required(&strategy, "")),
        "OnDelete" => {
            if let Some(ru) = rolling {
                errs.push(FieldError::invalid(
                    &strategy.child("rollingUpdate"),
                    ru.clone(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru_path = strategy.child("rollingUpdate");
            errs.extend(nonnegative(
                obj,
                "/spec/updateStrategy/rollingUpdate/partition",
                &ru_path.child("partition"),
            ));
            let max = rolling.and_then(|r| r.get("maxUnavailable"));
            errs.extend(validate_int_or_percent(
                max,
                &ru_path.child("maxUnavailable"),
                true,
            ));
            if max.is_some_and(|m| !m.is_null()) && super::int_or_percent(max) == Some(0) {
                errs.push(FieldError::invalid(
                    &ru_path.child("maxUnavailable"),
                    max.cloned().unwrap_or_default(),
                    "cannot be 0",
                ));
            }
        }
        _ => {
            let value = obj
                .pointer("/spec/updateStrategy")
                .cloned()
                .unwrap_or_default();
            errs.push(FieldError::invalid(
                &strategy,
                value,
                "must be 'RollingUpdate' or 'OnDelete'",
            ));
        }
    }
    errs
}

/// A claim template names its type, as upstream's v1 conversion writes it
/// (to keep what clients saw before 1.17; kubernetes issue 87583), whatever
/// was sent or stored (protobuf has no room for it).
fn typed_claim(pvc: &mut Value) {
    let Some(fields) = pvc.as_object_mut() else {
        return;
    };
    let typed = fields.get("kind") == Some(&json!("PersistentVolumeClaim"))
        && fields.get("apiVersion") == Some(&json!("v1"));
    if typed {
        return;
    }
    let rest = std::mem::take(fields);
    fields.insert("kind".into(), json!("PersistentVolumeClaim"));
    fields.insert("apiVersion".into(), json!("v1"));
    fields.extend(
        rest.into_iter()
            .filter(|(k, _)| k != "kind" && k != "apiVersion"),
    );
}

/// Each claim template's spec warnings, its path under `child` when given.
fn claim_template_warnings(obj: &Value, child: Option<&str>) -> Vec<String> {
    let templates = obj
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array);
    let mut w = Vec::new();
    for (i, t) in templates.into_iter().flatten().enumerate() {
        let Some(spec) = t.get("spec") else {
            continue;
        };
        let mut path = FieldPath::new("spec")
            .child("volumeClaimTemplates")
            .index(i);
        if let Some(c) = child {
            path = path.child(c);
        }
        w.extend(crate::core::pod_warnings::claim_spec_warnings(spec, &path));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sts() -> Value {
        let mut s = json!({
            "metadata": {"name": "db"},
            "spec": {"selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "pg"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}
        });
        StatefulSetStrategy.default(&mut s);
        s
    }

    #[test]
    fn defaults() {
        let s = sts();
        let spec = &s["spec"];
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(
            spec["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(
            spec["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Filesystem"
        );
        assert_eq!(
            spec["volumeClaimTemplates"][0]["kind"],
            "PersistentVolumeClaim"
        );
        assert_eq!(spec["volumeClaimTemplates"][0]["apiVersion"], "v1");
        assert_eq!(
            spec["volumeClaimTemplates"][0]["status"]["phase"],
            "Pending"
        );
        assert!(
            StatefulSetStrategy.validate(&s).is_empty(),
            "{:?}",
            StatefulSetStrategy.validate(&s)
        );
    }

    #[test]
    fn validation() {
        let mut s = sts();
        s["spec"]["podManagementPolicy"] = json!("Random");
        s["spec"]["selector"] = json!({});
        let errs: Vec<String> = StatefulSetStrategy
            .validate(&s)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(errs.contains(&"spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'".to_string()), "{errs:?}");
        assert!(errs.contains(
            &"spec.selector: Invalid value: {}: empty selector is invalid for statefulset"
                .to_string()
        ));
    }

    #[test]
    fn update_rules() {
        let old = sts();
        let mut new = old.clone();
        new["spec"]["replicas"] = json!(3);
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("pg:2");
        assert!(StatefulSetStrategy.validate_update(&new, &old).is_empty());
        new["spec"]["serviceName"] = json!("other");
        let errs: Vec<String> = StatefulSetStrategy
            .validate_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs, vec!["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]);
    }

    #[test]
    fn table_cells() {
        let mut s = sts();
        s["status"] = json!({"readyReplicas": 1});
        let cells = StatefulSetStrategy.cells(&s);
        assert_eq!(cells[1], "1/1");
        assert_eq!(cells[3], "c");
        assert_eq!(cells[4], "pg");
    }
}
