//! The `coordination.k8s.io/v1` group: Leases — upstream `ValidateLeaseSpec`
//! (positive duration, non-negative transitions, the coordinated-election strategy
//! names) and the `NAME HOLDER AGE` table.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath, IS_NEGATIVE_ERROR_MSG};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{i64_at, present};

pub struct LeaseStrategy;

const STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

impl Strategy for LeaseStrategy {
    /// Validated with the generic `ObjectMeta` checks alone upstream.
    fn core_object_meta(&self) -> bool {
        false
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let path = FieldPath::new("spec");
        let mut errs = ErrorList::new();
        if let Some(d) = i64_at(obj, "/spec/leaseDurationSeconds").filter(|d| *d <= 0) {
            errs.push(FieldError::invalid(
                &path.child("leaseDurationSeconds"),
                d,
                "must be greater than 0",
            ));
        }
        if let Some(t) = i64_at(obj, "/spec/leaseTransitions").filter(|t| *t < 0) {
            errs.push(FieldError::invalid(
                &path.child("leaseTransitions"),
                t,
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
        if let Some(s) = present(obj, "/spec/strategy").and_then(Value::as_str) {
            if !STRATEGIES.contains(&s) {
                errs.push(FieldError::not_supported(
                    &path.child("strategy"),
                    s,
                    &STRATEGIES,
                ));
            }
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Holder", "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let holder = present(obj, "/spec/holderIdentity")
            .and_then(Value::as_str)
            .unwrap_or("");
        vec![name_cell(obj), json!(holder), age_cell(obj)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_rules_and_cells() {
        let bad = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        let got: Vec<String> = LeaseStrategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let ok = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}});
        assert!(LeaseStrategy.validate(&ok).is_empty());
        assert_eq!(LeaseStrategy.cells(&ok)[1], "me");
    }
}
