//! The create-only review kinds of `authentication.k8s.io/v1` (tokenreviews,
//! selfsubjectreviews) and `authorization.k8s.io/v1` (subjectaccessreviews,
//! selfsubjectaccessreviews, localsubjectaccessreviews,
//! selfsubjectrulesreviews): their spec validation
//! (`pkg/apis/authorization/validation`). They store nothing; the server
//! answers them (`kapi-server`'s `reviews.rs`), so these strategies only
//! validate.

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use kapi_registry::Strategy;
use serde_json::Value;

use crate::core::util::{arr_at, present, str_at};

pub const AUTHENTICATION: &str = "authentication.k8s.io";
pub const AUTHORIZATION: &str = "authorization.k8s.io";

/// Which review a strategy validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    Token,
    SelfSubject,
    SubjectAccess,
    SelfSubjectAccess,
    LocalSubjectAccess,
    SelfSubjectRules,
}

pub struct ReviewStrategy(pub Review);

/// Metadata counts as empty when every member is null or empty (what Go's
/// zero `ObjectMeta` encodes to).
fn meta_is_empty(obj: &Value, except: &[&str]) -> bool {
    obj.get("metadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(k, _)| !except.contains(&k.as_str()) && k.as_str() != "managedFields")
        .all(|(_, v)| match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Object(m) => m.is_empty(),
            _ => false,
        })
}

/// The attribute rules every access review shares.
fn access_spec(obj: &Value, needs_subject: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = FieldPath::new("spec");
    let resource = present(obj, "/spec/resourceAttributes");
    let non_resource = present(obj, "/spec/nonResourceAttributes");
    match (resource, non_resource) {
        (Some(_), Some(n)) => errs.push(FieldError::invalid(
            &spec.child("nonResourceAttributes"),
            n.clone(),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => errs.push(FieldError::invalid(
            &spec.child("resourceAttributes"),
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if needs_subject
        && str_at(obj, "/spec/user").is_empty()
        && arr_at(obj, "/spec/groups").is_empty()
    {
        errs.push(FieldError::invalid(
            &spec.child("user"),
            "",
            "at least one of user or group must be specified",
        ));
    }
    errs
}

impl Strategy for ReviewStrategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        match self.0 {
            Review::Token | Review::SelfSubject | Review::SelfSubjectRules => {}
            Review::SubjectAccess => {
                errs = access_spec(obj, true);
                if !meta_is_empty(obj, &[]) {
                    let m = obj.get("metadata").cloned().unwrap_or(Value::Null);
                    errs.push(FieldError::invalid(
                        &FieldPath::new("metadata"),
                        m,
                        "must be empty",
                    ));
                }
            }
            Review::SelfSubjectAccess => errs = access_spec(obj, false),
            Review::LocalSubjectAccess => {
                errs = access_spec(obj, true);
                if !meta_is_empty(obj, &["namespace"]) {
                    let m = obj.get("metadata").cloned().unwrap_or(Value::Null);
                    errs.push(FieldError::invalid(
                        &FieldPath::new("metadata"),
                        m,
                        "must be empty except for namespace",
                    ));
                }
                let ns = str_at(obj, "/metadata/namespace");
                if let Some(attrs) = present(obj, "/spec/resourceAttributes") {
                    let want = str_at(attrs, "/namespace");
                    if want != ns {
                        errs.push(FieldError::invalid(
                            &FieldPath::new("spec.resourceAttributes.namespace"),
                            want,
                            "must match metadata.namespace",
                        ));
                    }
                }
                if let Some(n) = present(obj, "/spec/nonResourceAttributes") {
                    errs.push(FieldError::invalid(
                        &FieldPath::new("spec.nonResourceAttributes"),
                        n.clone(),
                        "disallowed on this kind of request",
                    ));
                }
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn access_review_rules() {
        let sar = ReviewStrategy(Review::SubjectAccess);
        assert_eq!(
            msgs(sar.validate(&json!({"metadata": {"creationTimestamp": null}, "spec": {}}))),
            vec![
                "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "spec.user: Invalid value: \"\": at least one of user or group must be specified",
            ]
        );
        let ok = json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods"}}});
        assert!(sar.validate(&ok).is_empty());
        let local = ReviewStrategy(Review::LocalSubjectAccess);
        let wrong_ns = json!({"metadata": {"namespace": "a"},
            "spec": {"user": "alice", "resourceAttributes": {"namespace": "b", "verb": "get"}}});
        assert_eq!(
            msgs(local.validate(&wrong_ns)),
            vec!["spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace"]
        );
    }
}
