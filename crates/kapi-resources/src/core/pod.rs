//! Pods: the strategy of `pods` — pod-level defaults (including what upstream's
//! default admission plugins add on create: service account, priority, default
//! tolerations), status on create (`Pending` + QoS class), validation, the rules for
//! updating a running pod's spec, field selectors and graceful deletion.
//!
//! Invariants: defaults are idempotent and run on every write; `prepare_for_create`
//! only adds what upstream adds once; the spec of an existing pod changes only in
//! the places upstream allows (images, activeDeadlineSeconds, added tolerations, ...).
//!
//! Where to look next: `podspec.rs` / `podspec_validation.rs` for `PodSpec`,
//! `pod_table.rs` for `kubectl get pods` columns.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, StatusMetadata, Strategy};
use serde_json::{json, Map, Value};

use super::pod_ephemeral;
use super::podspec::{default_host_network_ports, default_pod_spec};
use super::podspec_validation::validate_pod_spec;
use super::quantity::quantity_value;
use super::util::{arr_at, bool_at, child_obj, for_each_item, i64_at, set_default, str_at};

pub struct PodStrategy;

const SELECTABLE: &[&str] = &[
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    // Accepted by upstream's field label conversion but not in its field set:
    // selects as the empty string.
    "status.podIPs",
    "status.nominatedNodeName",
];

const UPDATE_FORBIDDEN: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

impl Strategy for PodStrategy {
    /// Upstream skips warnings on pod updates (a high-frequency path that
    /// humans rarely drive), so only creates warn.
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        super::pod_warnings::pod_create_warnings(obj)
    }

    /// Upstream's pod status strategy keeps the stored owner references (old
    /// kubelets corrupted them).
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(&["ownerReferences"])
    }

    fn default(&self, obj: &mut Value) {
        let Some(spec) = child_obj(obj, "spec") else {
            return;
        };
        // `serviceAccountName`, `priority`, `preemptionPolicy` and the
        // default tolerations are admission's (ServiceAccount, Priority,
        // DefaultTolerationSeconds), not defaults: a disabled plugin leaves
        // them out, and the creating manager never owns them.
        default_pod_spec(spec);
        default_host_network_ports(spec);
        default_requests_from_limits(spec);
        set_default(spec, "enableServiceLinks", json!(true));
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            default_requests_from_limits(spec);
        }
        let qos = qos_class(obj.get("spec").unwrap_or(&Value::Null));
        if let Some(map) = obj.as_object_mut() {
            map.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": qos}),
            );
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_pod_spec(spec, &FieldPath::new("spec"));
        errs.extend(pod_ephemeral::validate_create(spec));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = validate_pod_spec(
            new.get("spec").unwrap_or(&Value::Null),
            &FieldPath::new("spec"),
        );
        let null = Value::Null;
        errs.extend(validate_spec_update(
            new.get("spec").unwrap_or(&null),
            old.get("spec").unwrap_or(&null),
        ));
        errs
    }

    fn validate_subresource_update(&self, sub: &str, new: &Value, old: &Value) -> ErrorList {
        match sub {
            "ephemeralcontainers" => {}
            // The binding handler changes only nodeName, annotations and a condition.
            "binding" => return ErrorList::new(),
            _ => return self.validate_update(new, old),
        }
        let null = Value::Null;
        let (new, old) = (
            new.get("spec").unwrap_or(&null),
            old.get("spec").unwrap_or(&null),
        );
        let mut errs = validate_pod_spec(new, &FieldPath::new("spec"));
        errs.extend(pod_ephemeral::validate_update(new, old));
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn indexed_fields(&self) -> &'static [&'static str] {
        &["spec.nodeName"]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        SELECTABLE
    }

    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let value = match field {
            "spec.hostNetwork" => bool_at(obj, "/spec/hostNetwork").to_string(),
            "status.podIP" => pod_ip(obj).to_string(),
            "status.podIPs" => String::new(),
            _ if SELECTABLE.contains(&field) => {
                str_at(obj, &format!("/{}", field.replace('.', "/"))).to_string()
            }
            _ => return None,
        };
        Some(value)
    }

    /// The grace asked for, else the pod's `terminationGracePeriodSeconds`;
    /// none for a pod no kubelet runs (unscheduled, or finished); a negative
    /// period is 1 s.
    fn graceful_delete(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let period = requested
            .or_else(|| i64_at(obj, "/spec/terminationGracePeriodSeconds"))
            .unwrap_or(0);
        let gone = str_at(obj, "/spec/nodeName").is_empty()
            || matches!(str_at(obj, "/status/phase"), "Failed" | "Succeeded");
        Some(match period {
            _ if gone => 0,
            p if p < 0 => 1,
            p => p,
        })
    }

    fn columns(&self) -> Vec<Column> {
        super::pod_table::columns()
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        super::pod_table::cells(obj)
    }
}

/// The first pod IP (`status.podIPs[0].ip`, falling back to `status.podIP`).
pub fn pod_ip(obj: &Value) -> &str {
    match arr_at(obj, "/status/podIPs").first() {
        Some(first) => str_at(first, "/ip"),
        None => str_at(obj, "/status/podIP"),
    }
}

/// Upstream `SetDefaults_Pod`: a resource with a limit but no request requests its limit.
fn default_requests_from_limits(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        for_each_item(spec, list, |c| {
            let Some(limits) = c
                .pointer("/resources/limits")
                .and_then(Value::as_object)
                .cloned()
            else {
                return;
            };
            let Some(resources) = child_obj(c, "resources") else {
                return;
            };
            let Some(requests) = child_obj(resources, "requests") else {
                return;
            };
            for (name, limit) in limits {
                set_default(requests, &name, limit);
            }
        });
    }
}

/// Upstream `qos.GetPodQOS` over `cpu` and `memory`.
pub fn qos_class(spec: &Value) -> &'static str {
    let mut requests: Map<String, Value> = Map::new();
    let mut limits: Map<String, Value> = Map::new();
    let mut guaranteed = true;
    for list in ["/containers", "/initContainers"] {
        for c in arr_at(spec, list) {
            let found_limits = sum_into(&mut limits, c.pointer("/resources/limits"));
            sum_into(&mut requests, c.pointer("/resources/requests"));
            if !(found_limits.contains(&"cpu") && found_limits.contains(&"memory")) {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        guaranteed = requests.iter().all(|(k, r)| limits.get(k) == Some(r));
    }
    if guaranteed && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// Adds the positive cpu/memory quantities of `list` into `acc`; returns which were found.
fn sum_into(acc: &mut Map<String, Value>, list: Option<&Value>) -> Vec<&'static str> {
    let mut found = Vec::new();
    for name in ["cpu", "memory"] {
        let Some(v) = list.and_then(|l| l.get(name)).and_then(quantity_value) else {
            continue;
        };
        if v > 0.0 {
            found.push(name);
            let total = acc.get(name).and_then(Value::as_f64).unwrap_or(0.0) + v;
            acc.insert(name.to_string(), json!(total));
        }
    }
    found
}

/// Upstream `ValidatePodUpdate`'s spec rules.
fn validate_spec_update(new: &Value, old: &Value) -> ErrorList {
    let spec_path = FieldPath::new("spec");
    let mut errs = ErrorList::new();
    let mut munged = new.clone();
    for list in ["containers", "initContainers"] {
        let old_list = arr_at(old, &format!("/{list}"));
        if let Some(items) = munged.get_mut(list).and_then(Value::as_array_mut) {
            if items.len() == old_list.len() {
                for (item, prev) in items.iter_mut().zip(old_list) {
                    if let (Some(obj), Some(image)) = (item.as_object_mut(), prev.get("image")) {
                        obj.insert("image".into(), image.clone());
                    }
                }
            }
        }
    }
    errs.extend(check_active_deadline(new, old, &spec_path));
    copy_member(&mut munged, old, "activeDeadlineSeconds");
    match check_tolerations(new, old, &spec_path.child("tolerations")) {
        Some(err) => errs.push(err),
        None => copy_member(&mut munged, old, "tolerations"),
    }
    if i64_at(old, "/terminationGracePeriodSeconds").is_some_and(|g| g < 0)
        && i64_at(new, "/terminationGracePeriodSeconds") == Some(1)
    {
        copy_member(&mut munged, old, "terminationGracePeriodSeconds");
    }
    let new_gates = arr_at(new, "/schedulingGates");
    if new_gates
        .iter()
        .all(|g| arr_at(old, "/schedulingGates").contains(g))
    {
        copy_member(&mut munged, old, "schedulingGates");
    }
    if munged != *old {
        let msg = format!("{UPDATE_FORBIDDEN}\n{}", spec_diff(old, &munged));
        errs.push(FieldError::forbidden(&spec_path, msg));
    }
    errs
}

fn copy_member(target: &mut Value, source: &Value, key: &str) {
    let Some(map) = target.as_object_mut() else {
        return;
    };
    match source.get(key) {
        Some(v) => map.insert(key.to_string(), v.clone()),
        None => map.remove(key),
    };
}

fn check_active_deadline(new: &Value, old: &Value, spec: &FieldPath) -> ErrorList {
    let path = spec.child("activeDeadlineSeconds");
    match (
        i64_at(new, "/activeDeadlineSeconds"),
        i64_at(old, "/activeDeadlineSeconds"),
    ) {
        (Some(n), Some(o)) if n > o => vec![FieldError::invalid(
            &path,
            n,
            "must be less than or equal to previous value",
        )],
        (None, Some(_)) => vec![FieldError::invalid(
            &path,
            Value::Null,
            "must not update from a positive integer to nil value",
        )],
        _ => Vec::new(),
    }
}

/// Existing tolerations may only change their `tolerationSeconds`.
fn check_tolerations(new: &Value, old: &Value, path: &FieldPath) -> Option<FieldError> {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let new_list: Vec<Value> = arr_at(new, "/tolerations").iter().map(strip).collect();
    let all_kept = arr_at(old, "/tolerations")
        .iter()
        .all(|t| new_list.contains(&strip(t)));
    (!all_kept).then(|| {
        FieldError::forbidden(
            path,
            "existing toleration can not be modified except its tolerationSeconds",
        )
    })
}

/// A short description of the forbidden change, in the spirit of upstream's `cmp.Diff`.
fn spec_diff(old: &Value, new: &Value) -> String {
    let empty = Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::from("  core.PodSpec{\n");
    for k in keys.into_iter().filter(|k| o.get(*k) != n.get(*k)) {
        if let Some(v) = o.get(k) {
            out.push_str(&format!("- \t{k}: {v},\n"));
        }
        if let Some(v) = n.get(k) {
            out.push_str(&format!("+ \t{k}: {v},\n"));
        }
    }
    out.push_str("  }\n");
    out
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
