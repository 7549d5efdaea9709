//! ControllerRevisions: upstream `ValidateControllerRevision` (data required,
//! revision non-negative), immutable `data`, and the
//! `NAME CONTROLLER REVISION AGE` table.

use kapi_machinery::validation::{
    ErrorList, FieldError, FieldPath, FIELD_IMMUTABLE_ERROR_MSG, IS_NEGATIVE_ERROR_MSG,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, i64_at, present, str_at};

pub struct ControllerRevisionStrategy;

/// Upstream `formatResourceName` of the controller owner: `kind.group/name`.
fn controller_cell(obj: &Value) -> String {
    let Some(owner) = arr_at(obj, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".to_string();
    };
    let api_version = str_at(owner, "/apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = str_at(owner, "/kind");
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{}", group_kind.to_lowercase(), str_at(owner, "/name"))
}

impl Strategy for ControllerRevisionStrategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        if present(obj, "/data").is_none() {
            errs.push(FieldError::required(
                &FieldPath::new("data"),
                "data is mandatory",
            ));
        }
        if let Some(r) = i64_at(obj, "/revision").filter(|r| *r < 0) {
            errs.push(FieldError::invalid(
                &FieldPath::new("revision"),
                r,
                IS_NEGATIVE_ERROR_MSG,
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        if new.get("data") != old.get("data") {
            errs.push(FieldError::invalid(
                &FieldPath::new("data"),
                new.get("data").cloned().unwrap_or(Value::Null),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }

    fn columns(&self) -> Vec<Column> {
        vec![
            name_column(),
            string_column("Controller", "Controller of the object"),
            string_column(
                "Revision",
                "Revision indicates the revision of the state represented by Data.",
            ),
            age_column(),
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_cell(obj),
            json!(controller_cell(obj)),
            json!(i64_at(obj, "/revision").unwrap_or(0)),
            age_cell(obj),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions() {
        let cr = json!({"metadata": {"name": "web-1", "ownerReferences": [{"apiVersion": "apps/v1",
            "kind": "StatefulSet", "name": "web", "uid": "u", "controller": true}]}, "data": {"a": 1}, "revision": 2});
        assert!(ControllerRevisionStrategy.validate(&cr).is_empty());
        assert_eq!(
            ControllerRevisionStrategy.cells(&cr)[1..3],
            [json!("statefulset.apps/web"), json!(2)]
        );
        let mut changed = cr.clone();
        changed["data"] = json!({"a": 2});
        changed["revision"] = json!(-1);
        let got: Vec<String> = ControllerRevisionStrategy
            .validate_update(&changed, &cr)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            vec![
                "revision: Invalid value: -1: must be greater than or equal to 0",
                "data: Invalid value: {\"a\":2}: field is immutable",
            ]
        );
    }
}
