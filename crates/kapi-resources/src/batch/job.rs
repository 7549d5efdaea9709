//! Jobs: upstream's defaults (`SetDefaults_Job`), the generated selector and pod
//! labels (`job-name`, `controller-uid` and their `batch.kubernetes.io/` forms)
//! unless `spec.manualSelector` is true, `ValidateJob` / `ValidateJobUpdate`
//! (selector, template, completion mode and policies immutable — the template's
//! scheduling directives stay mutable while a job is suspended and never started),
//! the `status.successful` field selector and the
//! `NAME STATUS COMPLETIONS DURATION AGE` table.
//!
//! Invariants: the selector is generated in `prepare_for_create`, after the store
//! has set the uid and the (possibly generated) name, and before defaulting copies
//! the template's labels to an unlabelled job — the order that gives upstream's
//! observable result.

use kapi_machinery::validation::{
    is_dns1123_label, ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Map, Value};

use super::{default_job_spec_parts, validate_job_spec, validate_label_selector};
use crate::apps::{container_cells, format_selector, selector_matches_template, selector_of};
use crate::core::table::{
    age_cell, age_column, human_duration, name_cell, name_column, now_unix, parse_rfc3339,
    string_column, CONTAINERS_DOC, IMAGES_DOC,
};
use crate::core::util::{arr_at, bool_at, child_obj, i64_at, present, set_default, str_at};

pub const LEGACY_JOB_NAME: &str = "job-name";
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
pub const LEGACY_CONTROLLER_UID: &str = "controller-uid";
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";

pub struct JobStrategy;

/// Upstream `generateSelector`: labels the pod template with the job's name and uid
/// (keeping any the user set) and selects on the uid.
fn generate_selector(obj: &mut Value) {
    let name = str_at(obj, "/metadata/name").to_string();
    let uid = str_at(obj, "/metadata/uid").to_string();
    let Some(spec) = child_obj(obj, "spec") else {
        return;
    };
    if let Some(labels) = child_obj(spec, "template")
        .and_then(|t| child_obj(t, "metadata"))
        .and_then(|m| child_obj(m, "labels"))
    {
        for (key, value) in [
            (LEGACY_JOB_NAME, &name),
            (JOB_NAME, &name),
            (LEGACY_CONTROLLER_UID, &uid),
            (CONTROLLER_UID, &uid),
        ] {
            set_default(labels, key, json!(value));
        }
    }
    if let Some(match_labels) =
        child_obj(spec, "selector").and_then(|s| child_obj(s, "matchLabels"))
    {
        set_default(match_labels, CONTROLLER_UID, json!(uid));
    }
}

/// Upstream `ValidateHasLabel` on the pod template.
fn has_label(obj: &Value, key: &str, expected: &str) -> Option<FieldError> {
    let path = FieldPath::new("spec")
        .child("template")
        .child("metadata")
        .child("labels")
        .key(key);
    let labels = obj.pointer("/spec/template/metadata/labels");
    let detail = format!("must be '{expected}'");
    match labels.and_then(|l| l.get(key)) {
        None => Some(FieldError::required(&path, detail)),
        Some(v) if v.as_str() != Some(expected) => Some(FieldError::invalid(
            &path,
            labels.cloned().unwrap_or(Value::Null),
            detail,
        )),
        Some(_) => None,
    }
}

/// Upstream `validateGeneratedSelector`; `prefixed` also requires the
/// `batch.kubernetes.io/` labels (always on create; on update when the old job had them).
fn validate_generated_selector(obj: &Value, prefixed: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    if bool_at(obj, "/spec/manualSelector") || present(obj, "/spec/selector").is_none() {
        return errs;
    }
    let (name, uid) = (str_at(obj, "/metadata/name"), str_at(obj, "/metadata/uid"));
    if uid.is_empty() {
        errs.push(FieldError::required(
            &FieldPath::new("metadata").child("uid"),
            "",
        ));
    }
    let mut expected = vec![(LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name)];
    if prefixed {
        expected.extend([(CONTROLLER_UID, uid), (JOB_NAME, name)]);
    }
    errs.extend(expected.iter().filter_map(|(k, v)| has_label(obj, k, v)));
    let expected_labels: Map<String, Value> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    if let Ok(selector) = selector_of(obj) {
        if !selector.matches(&expected_labels) {
            errs.push(FieldError::invalid(
                &FieldPath::new("spec").child("selector"),
                obj.pointer("/spec/selector")
                    .cloned()
                    .unwrap_or(Value::Null),
                "`selector` not auto-generated",
            ));
        }
    }
    errs
}

/// Upstream `ValidateJob` (metadata is validated by the store).
fn validate_job(obj: &Value, prefixed: bool) -> ErrorList {
    let spec_path = FieldPath::new("spec");
    let mut errs = validate_generated_selector(obj, prefixed);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    errs.extend(validate_job_spec(spec, &spec_path));
    match present(spec, "/selector") {
        None => errs.push(FieldError::required(&spec_path.child("selector"), "")),
        Some(selector) => errs.extend(validate_label_selector(
            selector,
            &spec_path.child("selector"),
        )),
    }
    if let Ok(selector) = selector_of(obj) {
        errs.extend(selector_matches_template(
            obj,
            &selector,
            &spec_path.child("template"),
        ));
    }
    let completions = i64_at(obj, "/spec/completions").unwrap_or(0);
    if str_at(obj, "/spec/completionMode") == "Indexed" && completions > 0 {
        let name = str_at(obj, "/metadata/name");
        let hostname = format!("{name}-{}", completions - 1);
        if !is_dns1123_label(&hostname).is_empty() {
            errs.push(FieldError::invalid(
                &FieldPath::new("metadata").child("name"),
                name,
                format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    errs
}

/// `ValidateImmutableField` on a member of `spec`.
fn immutable(new: &Value, old: &Value, field: &str) -> Option<FieldError> {
    let ptr = format!("/spec/{field}");
    let (n, o) = (new.pointer(&ptr), old.pointer(&ptr));
    (n.filter(|v| !v.is_null()) != o.filter(|v| !v.is_null())).then(|| {
        FieldError::invalid(
            &FieldPath::new("spec").child(field),
            n.cloned().unwrap_or(Value::Null),
            FIELD_IMMUTABLE_ERROR_MSG,
        )
    })
}

/// The old template as the new one may change it: while a job is suspended and has
/// never started, node affinity, node selector, tolerations, scheduling gates,
/// labels and annotations may change (upstream `AllowMutableSchedulingDirectives`).
fn comparable_old_template(new: &Value, old: &Value) -> Value {
    let mut template = old
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    let mutable = bool_at(old, "/spec/suspend") && present(old, "/status/startTime").is_none();
    if !mutable || !template.is_object() {
        return template;
    }
    let new_t = new.pointer("/spec/template").unwrap_or(&Value::Null);
    let mut copy = |ptr: &str, key: &str| {
        let parent = template.pointer_mut(ptr).and_then(Value::as_object_mut);
        if let Some(parent) = parent {
            match new_t.pointer(&format!("{ptr}/{key}")) {
                Some(v) => parent.insert(key.to_string(), v.clone()),
                None => parent.remove(key),
            };
        }
    };
    for key in ["nodeSelector", "tolerations", "schedulingGates"] {
        copy("/spec", key);
    }
    for key in ["labels", "annotations"] {
        copy("/metadata", key);
    }
    let new_affinity = new_t.pointer("/spec/affinity");
    if let Some(spec) = template.get_mut("spec").and_then(Value::as_object_mut) {
        let mut affinity = spec.get("affinity").cloned().unwrap_or(Value::Null);
        match (new_affinity, affinity.as_object_mut()) {
            (None | Some(Value::Null), Some(a)) => {
                a.remove("nodeAffinity");
                if a.is_empty() {
                    affinity = Value::Null;
                }
            }
            (Some(n), Some(a)) => {
                match n.get("nodeAffinity") {
                    Some(na) => a.insert("nodeAffinity".into(), na.clone()),
                    None => a.remove("nodeAffinity"),
                };
            }
            (Some(n), None) => {
                affinity = match n.get("nodeAffinity") {
                    Some(na) => json!({"nodeAffinity": na}),
                    None => json!({}),
                };
            }
            (None, None) => {}
        }
        match affinity {
            Value::Null => spec.remove("affinity"),
            a => spec.insert("affinity".into(), a),
        };
    }
    template
}

/// Upstream `ValidateJobSpecUpdate` (beyond re-validating the spec).
fn validate_spec_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let indexed = str_at(new, "/spec/completionMode") == "Indexed";
    if !indexed {
        errs.extend(immutable(new, old, "completions"));
    } else if new.pointer("/spec/completions") != old.pointer("/spec/completions") {
        if let Some(c) = i64_at(new, "/spec/completions") {
            if Some(c) != i64_at(new, "/spec/parallelism") {
                errs.push(FieldError::invalid(
                    &FieldPath::new("spec").child("completions"),
                    c,
                    "can only be modified in tandem with spec.parallelism",
                ));
            }
        }
    }
    errs.extend(immutable(new, old, "selector"));
    let old_template = comparable_old_template(new, old);
    let new_template = new
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(Value::Null);
    if new_template != old_template {
        errs.push(FieldError::invalid(
            &FieldPath::new("spec").child("template"),
            new_template,
            FIELD_IMMUTABLE_ERROR_MSG,
        ));
    }
    for field in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(immutable(new, old, field));
    }
    errs
}

fn has_true_condition(obj: &Value, ty: &str) -> bool {
    arr_at(obj, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == ty && str_at(c, "/status") == "True")
}

/// The STATUS cell (upstream `printJob`).
fn status_cell(obj: &Value) -> &'static str {
    if has_true_condition(obj, "Complete") {
        "Complete"
    } else if has_true_condition(obj, "Failed") {
        "Failed"
    } else if present(obj, "/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_true_condition(obj, "Suspended") {
        "Suspended"
    } else if has_true_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

/// The COMPLETIONS cell: `succeeded/completions`, or `n/1 of parallelism` for work queues.
fn completions_cell(obj: &Value) -> String {
    let succeeded = i64_at(obj, "/status/succeeded").unwrap_or(0);
    if let Some(c) = i64_at(obj, "/spec/completions") {
        return format!("{succeeded}/{c}");
    }
    match i64_at(obj, "/spec/parallelism").unwrap_or(0) {
        p if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    }
}

/// The DURATION cell at `now`: completion − start, or now − start while running.
fn duration_cell(obj: &Value, now: i64) -> String {
    let time = |ptr: &str| {
        obj.pointer(ptr)
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
    };
    match (time("/status/startTime"), time("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now - start),
        (Some(start), Some(end)) => human_duration(end - start),
    }
}

impl Strategy for JobStrategy {
    /// Upstream keeps the pre-GC default for this group-version: dependents are
    /// orphaned unless the client asks for a propagation policy.
    fn gc_policy(&self) -> kapi_registry::GcPolicy {
        kapi_registry::GcPolicy::OrphanDependents
    }

    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(obj, json!({}));
        let template_labels = obj.pointer("/spec/template/metadata/labels").cloned();
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        if present(spec, "/completions").is_none() && present(spec, "/parallelism").is_none() {
            spec["completions"] = json!(1);
        }
        set_default(spec, "parallelism", json!(1));
        let backoff = if present(spec, "/backoffLimitPerIndex").is_some() {
            i64::from(i32::MAX)
        } else {
            6
        };
        set_default(spec, "backoffLimit", json!(backoff));
        set_default(spec, "completionMode", json!("NonIndexed"));
        set_default(spec, "suspend", json!(false));
        let replacement = if present(spec, "/podFailurePolicy").is_some() {
            "Failed"
        } else {
            "TerminatingOrFailed"
        };
        set_default(spec, "podReplacementPolicy", json!(replacement));
        default_job_spec_parts(spec);
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        if let (Some(t), true) = (template_labels, labels.is_none_or(Map::is_empty)) {
            if t.is_object() {
                if let Some(meta) = child_obj(obj, "metadata") {
                    meta["labels"] = t;
                }
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if !bool_at(obj, "/spec/manualSelector") {
            generate_selector(obj);
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_job(obj, true)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let old_labels = old.pointer("/spec/template/metadata/labels");
        let prefixed = [JOB_NAME, CONTROLLER_UID]
            .iter()
            .all(|k| old_labels.and_then(|l| l.get(k)).is_some());
        let mut errs = validate_job(new, prefixed);
        errs.extend(validate_spec_update(new, old));
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut w: Vec<String> =
            crate::core::pod_warnings::name_warning(obj, "Pod names and hostnames")
                .into_iter()
                .collect();
        w.extend(job_spec_warnings(obj.get("spec"), &FieldPath::new("spec")));
        w
    }

    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        if !crate::core::workload_warnings::generation_moved(new, old) {
            return Vec::new();
        }
        job_spec_warnings(new.get("spec"), &FieldPath::new("spec"))
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.successful"]
    }

    /// Upstream's Job field label conversion has words of its own.
    fn field_label_error(&self, label: &str) -> String {
        format!("field label \"{label}\" not supported for Job")
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "status.successful")
            .then(|| i64_at(obj, "/status/succeeded").unwrap_or(0).to_string())
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Status", "Status of the job."),
            string_column("Completions", "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."),
            string_column("Duration", "Time required to complete the job."),
            age_column(),
            string_column("Containers", CONTAINERS_DOC).wide(),
            string_column("Images", IMAGES_DOC).wide(),
            string_column("Selector", JOB_SELECTOR_DOC).wide(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let (names, images) = container_cells(obj);
        vec![
            name_cell(obj),
            json!(status_cell(obj)),
            json!(completions_cell(obj)),
            json!(duration_cell(obj, now_unix())),
            age_cell(obj),
            names,
            images,
            format_selector(obj),
        ]
    }
}

/// `batchv1.JobSpec` doc of `selector`, the SELECTOR column description upstream.
pub const JOB_SELECTOR_DOC: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

#[cfg(test)]
#[path = "job_tests.rs"]
mod tests;

/// A job spec's warnings (upstream's `WarningsForJobSpec`): an Indexed job
/// too large for its completed indexes to be tracked, and its template's.
pub(crate) fn job_spec_warnings(spec: Option<&Value>, path: &FieldPath) -> Vec<String> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut w = Vec::new();
    if spec.get("completionMode").and_then(Value::as_str) == Some("Indexed") {
        let count = |f: &str| spec.get(f).and_then(Value::as_i64).unwrap_or(0);
        if count("completions") > 100_000 && count("parallelism") > 10_000 {
            w.push(format!(
                "{path}: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail"
            ));
        }
    }
    w.extend(crate::core::pod_warnings::template_warnings(
        &path.child("template"),
        spec.get("template"),
    ));
    w
}
