//! LimitRanges and ResourceQuotas: a limit range's container defaults
//! (`SetDefaults_LimitRangeItem`: default limit from max, default request from the
//! default limit or min) and the ordering rules of `ValidateLimitRange`
//! (min ≤ default request ≤ default ≤ max, one item per type, no defaults for `Pod`);
//! a quota's non-negative quantities, known scopes, and the
//! `NAME REQUEST LIMIT AGE` table built from `status.hard` / `status.used`.

use std::collections::BTreeSet;

use kapi_machinery::validation::{is_qualified_name, ErrorList, FieldError, FieldPath};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Map, Value};

use super::quantity::quantity_value;
use super::table::{age_cell, age_column, name_cell, name_column, string_column};
use super::util::{arr_at, obj_at, str_at};

pub struct LimitRangeStrategy;
pub struct ResourceQuotaStrategy;

const SCOPES: [&str; 7] = [
    "BestEffort",
    "CrossNamespacePodAffinity",
    "NotBestEffort",
    "NotTerminating",
    "PriorityClass",
    "Terminating",
    "VolumeAttributesClass",
];

/// Copies members of `from` missing in `to` (creating `to` only when there is something to copy).
fn fill_missing(item: &mut Map<String, Value>, from: &str, to: &str) {
    let Some(source) = item.get(from).and_then(Value::as_object).cloned() else {
        return;
    };
    let target = item.entry(to.to_string()).or_insert_with(|| json!({}));
    if let Some(target) = target.as_object_mut() {
        for (k, v) in source {
            target.entry(k).or_insert(v);
        }
    }
}

fn quantity_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One ordering rule: `lower[k] <= upper[k]` for every key both name.
fn ordered(
    item: &Value,
    lower: &str,
    upper: &str,
    on: &str,
    msg: &str,
    path: &FieldPath,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let (Some(lo), Some(hi)) = (
        obj_at(item, &format!("/{lower}")),
        obj_at(item, &format!("/{upper}")),
    ) else {
        return errs;
    };
    for (k, lv) in lo {
        let Some(hv) = hi.get(k) else { continue };
        if let (Some(l), Some(h)) = (quantity_value(lv), quantity_value(hv)) {
            if l > h {
                let bad = if on == lower { lv } else { hv };
                let detail =
                    msg.replacen("{}", &quantity_str(lv), 1)
                        .replacen("{}", &quantity_str(hv), 1);
                errs.push(FieldError::invalid(
                    &path.child(on).key(k),
                    quantity_str(bad),
                    detail,
                ));
            }
        }
    }
    errs
}

impl Strategy for LimitRangeStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(limits) = obj
            .pointer_mut("/spec/limits")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        for item in limits.iter_mut().filter_map(Value::as_object_mut) {
            if item.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            fill_missing(item, "max", "default");
            fill_missing(item, "default", "defaultRequest");
            fill_missing(item, "min", "defaultRequest");
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        let mut types = BTreeSet::new();
        for (i, item) in arr_at(obj, "/spec/limits").iter().enumerate() {
            let path = FieldPath::new("spec").child("limits").index(i);
            let ty = str_at(item, "/type");
            if !types.insert(ty) {
                errs.push(FieldError::duplicate(&path.child("type"), ty));
            }
            for field in [
                "max",
                "min",
                "default",
                "defaultRequest",
                "maxLimitRequestRatio",
            ] {
                errs.extend(validate_resource_list(
                    item,
                    &format!("/{field}"),
                    &path.child(field),
                ));
            }
            if ty == "Pod" {
                for field in ["default", "defaultRequest"] {
                    if obj_at(item, &format!("/{field}")).is_some_and(|m| !m.is_empty()) {
                        errs.push(FieldError::forbidden(
                            &path.child(field),
                            "may not be specified when `type` is 'Pod'",
                        ));
                    }
                }
            }
            errs.extend(ordered(
                item,
                "min",
                "max",
                "min",
                "min value {} is greater than max value {}",
                &path,
            ));
            errs.extend(ordered(
                item,
                "defaultRequest",
                "max",
                "defaultRequest",
                "default request value {} is greater than max value {}",
                &path,
            ));
            errs.extend(ordered(
                item,
                "min",
                "defaultRequest",
                "defaultRequest",
                "min value {} is greater than default request value {}",
                &path,
            ));
            errs.extend(ordered(
                item,
                "defaultRequest",
                "default",
                "defaultRequest",
                "default request value {} is greater than default limit value {}",
                &path,
            ));
            errs.extend(ordered(
                item,
                "min",
                "default",
                "default",
                "min value {} is greater than default value {}",
                &path,
            ));
            errs.extend(ordered(
                item,
                "default",
                "max",
                "default",
                "default value {} is greater than max value {}",
                &path,
            ));
        }
        errs
    }
}

fn validate_resource_list(obj: &Value, ptr: &str, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in obj_at(obj, ptr).into_iter().flatten() {
        let p = path.key(k);
        errs.extend(
            is_qualified_name(k)
                .into_iter()
                .map(|m| FieldError::invalid(&p, k.as_str(), m)),
        );
        match quantity_value(v) {
            None => errs.push(FieldError::invalid(
                &p,
                v.clone(),
                "must be a valid quantity",
            )),
            Some(q) if q < 0.0 => errs.push(FieldError::invalid(
                &p,
                quantity_str(v),
                "must be greater than or equal to 0",
            )),
            Some(_) => {}
        }
    }
    errs
}

impl Strategy for ResourceQuotaStrategy {
    fn default(&self, obj: &mut Value) {
        super::util::default_status(obj, json!({}));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let spec = FieldPath::new("spec");
        let mut errs = validate_resource_list(obj, "/spec/hard", &spec.child("hard"));
        for (i, scope) in arr_at(obj, "/spec/scopes").iter().enumerate() {
            let s = scope.as_str().unwrap_or("");
            if !SCOPES.contains(&s) {
                errs.push(FieldError::not_supported(
                    &spec.child("scopes").index(i),
                    s,
                    &SCOPES,
                ));
            }
        }
        let status = FieldPath::new("status");
        errs.extend(validate_resource_list(
            obj,
            "/status/hard",
            &status.child("hard"),
        ));
        errs.extend(validate_resource_list(
            obj,
            "/status/used",
            &status.child("used"),
        ));
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
            string_column("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let hard = obj_at(obj, "/status/hard");
        let used = obj_at(obj, "/status/used");
        let (mut requests, mut limits) = (Vec::new(), Vec::new());
        for (resource, h) in hard.into_iter().flatten() {
            let u = used
                .and_then(|u| u.get(resource))
                .map_or("0".to_string(), quantity_str);
            let entry = format!("{resource}: {u}/{}", quantity_str(h));
            match resource.split_once('.') {
                Some(("limits", _)) => limits.push(entry),
                _ => requests.push(entry),
            }
        }
        vec![
            name_cell(obj),
            json!(requests.join(", ")),
            json!(limits.join(", ")),
            age_cell(obj),
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
    fn limit_range_defaults_and_order() {
        let mut lr = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}});
        LimitRangeStrategy.default(&mut lr);
        let item = &lr["spec"]["limits"][0];
        assert_eq!(item["default"], json!({"cpu": "2"}));
        assert_eq!(
            item["defaultRequest"],
            json!({"cpu": "2", "memory": "64Mi"})
        );
        assert!(LimitRangeStrategy.validate(&lr).is_empty());
        let bad = json!({"spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]}});
        assert_eq!(msgs(LimitRangeStrategy.validate(&bad)), vec![
            "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1",
        ]);
    }

    #[test]
    fn quota_rules_and_cells() {
        let q = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10", "limits.cpu": "4"}},
            "status": {"hard": {"pods": "10", "limits.cpu": "4", "requests.cpu": "2"}, "used": {"pods": "1"}}});
        assert!(ResourceQuotaStrategy.validate(&q).is_empty());
        assert_eq!(
            ResourceQuotaStrategy.cells(&q)[1..3],
            [
                json!("pods: 1/10, requests.cpu: 0/2"),
                json!("limits.cpu: 0/4")
            ]
        );
        let bad = json!({"spec": {"hard": {"pods": "-1"}, "scopes": ["Sometimes"]}});
        assert_eq!(msgs(ResourceQuotaStrategy.validate(&bad)).len(), 2);
    }
}
