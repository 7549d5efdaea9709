//! HorizontalPodAutoscaler strategies: `autoscaling/v2` (the storage version) with
//! upstream's v2 defaults (one replica minimum, the 80% CPU metric when none is
//! given, behavior rules filled in when a behavior is given), the commonly met
//! rules of `ValidateHorizontalPodAutoscalerSpec`, and the
//! `NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE` table; `autoscaling/v1`
//! validates its own shape and prints the same table through the v2 form.

use kapi_machinery::validation::{validate_path_segment_name, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::convert::v1_to_v2;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, i64_at, present, set_default, str_at};

pub struct HpaV2Strategy;
pub struct HpaV1Strategy;

const SOURCE_TYPES: [&str; 5] = [
    "Object",
    "Pods",
    "Resource",
    "External",
    "ContainerResource",
];
const TARGET_TYPES: [&str; 3] = ["Utilization", "Value", "AverageValue"];

/// The member holding a source type's details (`Resource` → `resource`).
fn source_member(ty: &str) -> String {
    let mut chars = ty.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Upstream `GenerateHPAScaleUpRules` / `GenerateHPAScaleDownRules`.
fn default_rules(rules: &mut Value, window: i64, policies: Value) {
    if rules.is_null() {
        *rules = json!({});
    }
    set_default(rules, "stabilizationWindowSeconds", json!(window));
    set_default(rules, "selectPolicy", json!("Max"));
    if arr_at(rules, "/policies").is_empty() {
        rules["policies"] = policies;
    }
}

/// Upstream v2 `SetDefaults_HorizontalPodAutoscaler`.
pub fn default_v2(obj: &mut Value) {
    // v2's `desiredReplicas` is not `omitempty`: Go writes it as 0.
    crate::core::util::default_status(obj, json!({"desiredReplicas": 0}));
    let Some(spec) = child_obj(obj, "spec") else {
        return;
    };
    set_default(spec, "minReplicas", json!(1));
    if arr_at(spec, "/metrics").is_empty() {
        spec["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]);
    }
    if let Some(behavior) = spec.get_mut("behavior").filter(|b| b.is_object()) {
        let up = behavior
            .as_object_mut()
            .expect("checked")
            .entry("scaleUp")
            .or_insert(Value::Null);
        default_rules(
            up,
            0,
            json!([
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
        let down = behavior
            .as_object_mut()
            .expect("checked")
            .entry("scaleDown")
            .or_insert(Value::Null);
        default_rules(
            down,
            300,
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
        );
    }
}

/// Replica bounds and the scale target (shared by both versions).
fn validate_common(spec: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let min = i64_at(spec, "/minReplicas");
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(FieldError::invalid(
            &path.child("minReplicas"),
            m,
            "must be greater than or equal to 1",
        ));
    }
    let max = i64_at(spec, "/maxReplicas").unwrap_or(0);
    if max < 1 {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let rp = path.child("scaleTargetRef");
    for field in ["kind", "name"] {
        let value = str_at(spec, &format!("/scaleTargetRef/{field}"));
        if value.is_empty() {
            errs.push(FieldError::required(&rp.child(field), ""));
        } else {
            errs.extend(
                validate_path_segment_name(value, false)
                    .into_iter()
                    .map(|m| FieldError::invalid(&rp.child(field), value, m)),
            );
        }
    }
    errs
}

fn validate_metric(metric: &Value, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let ty = str_at(metric, "/type");
    if ty.is_empty() {
        errs.push(FieldError::required(
            &path.child("type"),
            "must specify a metric source type",
        ));
    }
    if !SOURCE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            ty,
            &SOURCE_TYPES,
        ));
        return errs;
    }
    let expected = source_member(ty);
    let present_sources: Vec<String> = SOURCE_TYPES
        .iter()
        .map(|t| source_member(t))
        .filter(|m| present(metric, &format!("/{m}")).is_some())
        .collect();
    if !present_sources.contains(&expected) {
        errs.push(FieldError::required(
            &path.child(&expected),
            "must populate information for the given metric source",
        ));
    }
    for other in present_sources.iter().filter(|m| **m != expected) {
        errs.push(FieldError::forbidden(
            &path.child(other),
            "must populate the given metric source only",
        ));
    }
    let Some(source) = present(metric, &format!("/{expected}")) else {
        return errs;
    };
    let sp = path.child(&expected);
    if (ty == "Resource" || ty == "ContainerResource") && str_at(source, "/name").is_empty() {
        errs.push(FieldError::required(
            &sp.child("name"),
            "must specify a resource name",
        ));
    }
    let tp = sp.child("target");
    match str_at(source, "/target/type") {
        "" => errs.push(FieldError::required(
            &tp.child("type"),
            "must specify a metric target type",
        )),
        t if !TARGET_TYPES.contains(&t) => errs.push(FieldError::not_supported(
            &tp.child("type"),
            t,
            &TARGET_TYPES,
        )),
        _ => {}
    }
    if let Some(u) = i64_at(source, "/target/averageUtilization").filter(|u| *u < 1) {
        errs.push(FieldError::invalid(
            &tp.child("averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

/// Upstream `formatHPAMetrics` (the common source types).
fn targets_cell(obj: &Value) -> String {
    let specs = arr_at(obj, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = arr_at(obj, "/status/currentMetrics");
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<unknown>".to_string(),
    };
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i);
            let ty = str_at(spec, "/type");
            let member = source_member(ty);
            let target = spec
                .get(&member)
                .map(|s| s.get("target").cloned().unwrap_or(Value::Null))
                .unwrap_or(Value::Null);
            let current =
                |key: &str| status.and_then(|s| s.pointer(&format!("/{member}/current/{key}")));
            let name = str_at(spec, &format!("/{member}/name"));
            match ty {
                "Resource" | "ContainerResource" if present(&target, "/averageValue").is_some() => {
                    format!(
                        "{name}: {}/{}",
                        text(current("averageValue")),
                        text(target.get("averageValue"))
                    )
                }
                "Resource" | "ContainerResource" => {
                    let cur = current("averageUtilization")
                        .map_or("<unknown>".to_string(), |u| format!("{}%", text(Some(u))));
                    let tgt = target
                        .get("averageUtilization")
                        .map_or("<auto>".to_string(), |u| format!("{}%", text(Some(u))));
                    format!("{name}: {cur}/{tgt}")
                }
                "Pods" => format!(
                    "{}/{}",
                    text(current("averageValue")),
                    text(target.get("averageValue"))
                ),
                "Object" | "External" if present(&target, "/averageValue").is_some() => {
                    format!(
                        "{}/{} (avg)",
                        text(current("averageValue")),
                        text(target.get("averageValue"))
                    )
                }
                "Object" | "External" => {
                    format!("{}/{}", text(current("value")), text(target.get("value")))
                }
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    if list.len() > 2 {
        return format!("{} + {} more...", list[..2].join(", "), list.len() - 2);
    }
    list.join(", ")
}

impl Strategy for HpaV2Strategy {
    fn default(&self, obj: &mut Value) {
        default_v2(obj);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_common(spec, &path);
        for (i, m) in arr_at(spec, "/metrics").iter().enumerate() {
            errs.extend(validate_metric(m, &path.child("metrics").index(i)));
        }
        for dir in ["scaleUp", "scaleDown"] {
            if let Some(w) = i64_at(spec, &format!("/behavior/{dir}/stabilizationWindowSeconds")) {
                if !(0..=3600).contains(&w) {
                    let p = path
                        .child("behavior")
                        .child(dir)
                        .child("stabilizationWindowSeconds");
                    let msg = if w < 0 {
                        "must be greater than or equal to zero"
                    } else {
                        "must be less than or equal to 3600"
                    };
                    errs.push(FieldError::invalid(&p, w, msg));
                }
            }
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Reference", "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count."),
            string_column("Targets", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond."),
            string_column("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available."),
            string_column("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas."),
            string_column("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let reference = format!(
            "{}/{}",
            str_at(obj, "/spec/scaleTargetRef/kind"),
            str_at(obj, "/spec/scaleTargetRef/name")
        );
        let min = i64_at(obj, "/spec/minReplicas").map_or("<unset>".to_string(), |m| m.to_string());
        vec![
            name_cell(obj),
            json!(reference),
            json!(targets_cell(obj)),
            json!(min),
            json!(i64_at(obj, "/spec/maxReplicas").unwrap_or(0)),
            json!(i64_at(obj, "/status/currentReplicas").unwrap_or(0)),
            age_cell(obj),
        ]
    }
}

impl Strategy for HpaV1Strategy {
    /// autoscaling/v1's `SetDefaults_HorizontalPodAutoscaler`: one replica at
    /// least and, unless asked otherwise, 80 % CPU utilization (a default, so
    /// among the fields of the manager that sent the object).
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = child_obj(obj, "spec") {
            set_default(spec, "minReplicas", json!(1));
            set_default(spec, "targetCPUUtilizationPercentage", json!(80));
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = validate_common(spec, &path);
        if let Some(t) = i64_at(spec, "/targetCPUUtilizationPercentage").filter(|t| *t < 1) {
            errs.push(FieldError::invalid(
                &path.child("targetCPUUtilizationPercentage"),
                t,
                "must be greater than 0",
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        HpaV2Strategy.columns()
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        HpaV2Strategy.cells(&v1_to_v2(obj.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_defaults_validation_and_cells() {
        let mut h = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
        HpaV2Strategy.default(&mut h);
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(h["spec"]["behavior"]["scaleUp"]["policies"][0]["value"], 4);
        assert_eq!(
            h["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
            60
        );
        assert_eq!(h["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
        assert!(HpaV2Strategy.validate(&h).is_empty());
        assert_eq!(
            HpaV2Strategy.cells(&h)[1..6],
            [
                json!("Deployment/web"),
                json!("cpu: <unknown>/80%"),
                json!("1"),
                json!(3),
                json!(0)
            ]
        );
        let bad = json!({"spec": {"minReplicas": 5, "maxReplicas": 2, "scaleTargetRef": {"name": "web"},
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]}});
        let got: Vec<String> = HpaV2Strategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, vec![
            "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
            "spec.scaleTargetRef.kind: Required value",
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
        ]);
    }
}
