//! The `policy/v1` group: PodDisruptionBudgets — upstream
//! `ValidatePodDisruptionBudgetSpec` (min/max as int-or-percent, not both, the
//! label selector, the unhealthy-pod eviction policy), status counters
//! non-negative, generation tracking and the
//! `NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE` table.
//!
//! Where to look next: `kapi-server`'s eviction subresource reads
//! `status.disruptionsAllowed` from these objects.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, IS_NEGATIVE_ERROR_MSG};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::apps::validate_int_or_percent;
use crate::batch::validate_label_selector;
use crate::core::table::{age_cell, age_column, int_column, name_cell, name_column, string_column};
use crate::core::util::{i64_at, present, str_at};

pub struct PodDisruptionBudgetStrategy;

const EVICTION_POLICIES: [&str; 2] = ["AlwaysAllow", "IfHealthyBudget"];

fn int_or_string_cell(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) => json!(s),
        Some(Value::Number(n)) => json!(n.to_string()),
        _ => json!("N/A"),
    }
}

impl Strategy for PodDisruptionBudgetStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn default(&self, obj: &mut Value) {
        crate::core::util::default_status(
            obj,
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        );
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let mut errs = ErrorList::new();
        let (min, max) = (
            present(spec, "/minAvailable"),
            present(spec, "/maxUnavailable"),
        );
        if min.is_some() && max.is_some() {
            errs.push(FieldError::invalid(
                &path,
                spec.clone(),
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        errs.extend(validate_int_or_percent(
            min,
            &path.child("minAvailable"),
            true,
        ));
        errs.extend(validate_int_or_percent(
            max,
            &path.child("maxUnavailable"),
            true,
        ));
        if let Some(selector) = present(spec, "/selector") {
            errs.extend(validate_label_selector(selector, &path.child("selector")));
        }
        if let Some(p) = present(spec, "/unhealthyPodEvictionPolicy") {
            let p = p.as_str().unwrap_or("");
            if !EVICTION_POLICIES.contains(&p) {
                errs.push(FieldError::not_supported(
                    &path.child("unhealthyPodEvictionPolicy"),
                    p,
                    &EVICTION_POLICIES,
                ));
            }
        }
        let status = FieldPath::new("status");
        for field in [
            "disruptionsAllowed",
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
        ] {
            if let Some(v) = i64_at(obj, &format!("/status/{field}")).filter(|v| *v < 0) {
                errs.push(FieldError::invalid(
                    &status.child(field),
                    v,
                    IS_NEGATIVE_ERROR_MSG,
                ));
            }
        }
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column(
                "Min Available",
                "The minimum number of pods that must be available.",
            ),
            string_column(
                "Max Unavailable",
                "The maximum number of pods that may be unavailable.",
            ),
            int_column(
                "Allowed Disruptions",
                "Calculated number of pods that may be disrupted at this time.",
            ),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            int_or_string_cell(present(obj, "/spec/minAvailable")),
            int_or_string_cell(present(obj, "/spec/maxUnavailable")),
            json!(i64_at(obj, "/status/disruptionsAllowed").unwrap_or(0)),
            age_cell(obj),
        ]
    }
}

/// `status.disruptionsAllowed` of a budget (0 when unset).
pub fn disruptions_allowed(pdb: &Value) -> i64 {
    i64_at(pdb, "/status/disruptionsAllowed").unwrap_or(0)
}

/// The budget's name, for messages.
pub fn name(pdb: &Value) -> &str {
    str_at(pdb, "/metadata/name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_and_cells() {
        let both = json!({"spec": {"minAvailable": 1, "maxUnavailable": "10%"}});
        let errs = PodDisruptionBudgetStrategy.validate(&both);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].detail,
            "minAvailable and maxUnavailable cannot be both set"
        );
        let bad = json!({"spec": {"minAvailable": "150%", "unhealthyPodEvictionPolicy": "Never"}});
        let got: Vec<String> = PodDisruptionBudgetStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(got, vec![
            "spec.minAvailable: Invalid value: \"150%\": must not be greater than 100%",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]);
        let ok = json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}});
        assert!(PodDisruptionBudgetStrategy.validate(&ok).is_empty());
        assert_eq!(
            PodDisruptionBudgetStrategy.cells(&ok)[1..4],
            [json!("2"), json!("N/A"), json!(1)]
        );
    }
}
