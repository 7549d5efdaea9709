//! `autoscaling/v1` ⇄ `autoscaling/v2` HorizontalPodAutoscalers, after upstream's
//! `pkg/apis/autoscaling/v1/conversion.go`: v1 keeps only the CPU utilization
//! target; everything else v2 says (other metrics, current metrics, conditions,
//! behavior) rides in `autoscaling.alpha.kubernetes.io/*` annotations, so an object
//! written through v1 and read through v2 (or back) loses nothing.
//!
//! Known divergence: the annotations hold the metrics in their v2 JSON shape, where
//! upstream writes the older v1 alpha `MetricSpec` shape (`targetAverageValue`…).

use serde_json::{json, Map, Value};

use super::hpa::default_v2;

pub const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
pub const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
pub const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
}

fn annotations(obj: &mut Value) -> &mut Map<String, Value> {
    let meta = obj
        .as_object_mut()
        .expect("objects are JSON objects")
        .entry("metadata")
        .or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let ann = meta
        .as_object_mut()
        .expect("checked")
        .entry("annotations")
        .or_insert_with(|| json!({}));
    if !ann.is_object() {
        *ann = json!({});
    }
    ann.as_object_mut().expect("checked")
}

/// Stores `value` as a JSON-string annotation when it is non-empty.
fn stash(obj: &mut Value, key: &str, value: Option<Value>) {
    let keep = match &value {
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    };
    if keep {
        let text = serde_json::to_string(&value).expect("JSON serializes");
        annotations(obj).insert(key.into(), Value::String(text));
    }
}

/// Removes and parses a JSON-string annotation.
fn unstash(obj: &mut Value, key: &str) -> Option<Value> {
    let text = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)?
        .remove(key)?;
    serde_json::from_str(text.as_str()?).ok()
}

fn drop_empty_annotations(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .get("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            meta.remove("annotations");
        }
    }
}

/// A v2 object as v1.
pub fn v2_to_v1(mut obj: Value) -> Value {
    if !obj.is_object() {
        return obj;
    }
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let status = obj.get("status").cloned();
    let mut v1_spec = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = spec.get(key) {
            v1_spec.insert(key.into(), v.clone());
        }
    }
    let mut others = Vec::new();
    for metric in spec
        .get("metrics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let utilization = metric.pointer("/resource/target/averageUtilization");
        let is_target = is_cpu_utilization(metric)
            && metric
                .pointer("/resource/target/type")
                .and_then(Value::as_str)
                == Some("Utilization")
            && utilization.is_some();
        if is_target && !v1_spec.contains_key("targetCPUUtilizationPercentage") {
            v1_spec.insert(
                "targetCPUUtilizationPercentage".into(),
                utilization.cloned().unwrap_or(Value::Null),
            );
        } else {
            others.push(metric.clone());
        }
    }
    stash(&mut obj, METRICS, Some(Value::Array(others)));
    stash(&mut obj, BEHAVIOR, spec.get("behavior").cloned());
    if let Some(status) = status {
        let mut v1_status = Map::new();
        for key in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            if let Some(v) = status.get(key) {
                v1_status.insert(key.into(), v.clone());
            }
        }
        // Neither count is `omitempty` in v1: Go writes zeros.
        for key in ["currentReplicas", "desiredReplicas"] {
            v1_status.entry(key).or_insert(json!(0));
        }
        let mut current_others = Vec::new();
        for metric in status
            .get("currentMetrics")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match metric.pointer("/resource/current/averageUtilization") {
                Some(u)
                    if is_cpu_utilization(metric)
                        && !v1_status.contains_key("currentCPUUtilizationPercentage") =>
                {
                    v1_status.insert("currentCPUUtilizationPercentage".into(), u.clone());
                }
                _ => current_others.push(metric.clone()),
            }
        }
        stash(
            &mut obj,
            CURRENT_METRICS,
            Some(Value::Array(current_others)),
        );
        stash(&mut obj, CONDITIONS, status.get("conditions").cloned());
        obj["status"] = Value::Object(v1_status);
    }
    obj["spec"] = Value::Object(v1_spec);
    obj["apiVersion"] = json!("autoscaling/v1");
    drop_empty_annotations(&mut obj);
    obj
}

/// A v1 object as v2 (defaulted as v2, as upstream's read path does).
pub fn v1_to_v2(mut obj: Value) -> Value {
    if !obj.is_object() {
        return obj;
    }
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let mut v2_spec = Map::new();
    for key in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        if let Some(v) = spec.get(key) {
            v2_spec.insert(key.into(), v.clone());
        }
    }
    let mut metrics = match unstash(&mut obj, METRICS) {
        Some(Value::Array(others)) => others,
        _ => Vec::new(),
    };
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if !metrics.is_empty() {
        v2_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = unstash(&mut obj, BEHAVIOR) {
        v2_spec.insert("behavior".into(), b);
    }
    let current_others = unstash(&mut obj, CURRENT_METRICS);
    let conditions = unstash(&mut obj, CONDITIONS);
    if let Some(status) = obj.get("status").cloned().filter(Value::is_object) {
        let mut v2_status = Map::new();
        for key in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            if let Some(v) = status.get(key) {
                v2_status.insert(key.into(), v.clone());
            }
        }
        let mut current = match current_others {
            Some(Value::Array(c)) => c,
            _ => Vec::new(),
        };
        if let Some(u) = status
            .get("currentCPUUtilizationPercentage")
            .filter(|v| !v.is_null())
        {
            current.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": u}}}));
        }
        if !current.is_empty() {
            v2_status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions {
            v2_status.insert("conditions".into(), c);
        }
        obj["status"] = Value::Object(v2_status);
    }
    obj["spec"] = Value::Object(v2_spec);
    obj["apiVersion"] = json!("autoscaling/v2");
    drop_empty_annotations(&mut obj);
    default_v2(&mut obj);
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_target_round_trips_and_extras_ride_in_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]},
            "status": {"currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = v2_to_v1(v2.clone());
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["metadata"]["annotations"][METRICS]
            .as_str()
            .unwrap()
            .contains("memory"));
        assert!(v1["metadata"]["annotations"][CONDITIONS].is_string());
        let back = v1_to_v2(v1);
        assert!(back["metadata"].get("annotations").is_none());
        // Upstream order: the annotation's metrics first, then the CPU target.
        assert_eq!(back["spec"]["metrics"][0]["resource"]["name"], "memory");
        assert_eq!(back["spec"]["metrics"][1], v2["spec"]["metrics"][0]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert_eq!(
            back["status"]["currentMetrics"],
            v2["status"]["currentMetrics"]
        );
    }

    #[test]
    fn v1_without_target_reads_back_with_the_default_cpu_metric() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}});
        let v2 = v1_to_v2(v1);
        assert_eq!(v2["spec"]["minReplicas"], 1);
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert_eq!(v2_to_v1(v2)["spec"]["targetCPUUtilizationPercentage"], 80);
    }
}
