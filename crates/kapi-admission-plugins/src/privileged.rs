//! `--allow-privileged=false` (kube-apiserver's default): pod specs — of pods,
//! pod templates and workloads — may not ask for privileged containers. As
//! upstream's `ValidatePodSpec` with `capabilities.AllowPrivileged` unset, the
//! write is refused 422 with `<path>.securityContext.privileged: Forbidden:
//! disallowed by cluster policy` for every such container, init container or
//! ephemeral container.
//!
//! Not an upstream admission plugin: upstream checks this in validation; kapi
//! runs it in the chain's validating phase (always first), which the store
//! calls right after the resource's own validation, so the answer is the same
//! error. Where to look next: `podsecurity/` for the namespace-level standards.

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, GroupKind};
use kapi_machinery::validation::{FieldError, FieldPath};
use serde_json::Value;

use kapi_admission::{Attributes, Operation, Plugin};

pub struct DenyPrivileged;

/// The pod spec a write carries and its field path.
fn pod_spec<'a>(a: &Attributes, obj: &'a Value) -> Option<(&'a Value, FieldPath)> {
    let (spec, path) = crate::podspec::find(a, obj)?;
    let fp = path[1..]
        .iter()
        .fold(FieldPath::new(path[0]), |fp, p| fp.child(p));
    Some((spec, fp))
}

/// Upstream's errors for the privileged containers of `spec`.
pub fn privileged_errors(spec: &Value, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let items = spec.get(list).and_then(Value::as_array);
        for (i, c) in items.into_iter().flatten().enumerate() {
            if c.pointer("/securityContext/privileged") == Some(&Value::Bool(true)) {
                let p = path
                    .child(list)
                    .index(i)
                    .child("securityContext")
                    .child("privileged");
                errs.push(FieldError::forbidden(&p, "disallowed by cluster policy"));
            }
        }
    }
    errs
}

#[async_trait]
impl Plugin for DenyPrivileged {
    fn name(&self) -> &'static str {
        "AllowPrivileged"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn concerns(&self, a: &Attributes) -> bool {
        crate::podspec::path(a).is_some()
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let ephemeral = a.subresource == "ephemeralcontainers";
        if !a.subresource.is_empty() && !ephemeral {
            return Ok(());
        }
        let Some((spec, path)) = a.object.as_ref().and_then(|o| pod_spec(a, o)) else {
            return Ok(());
        };
        let errs = privileged_errors(spec, &path);
        if errs.is_empty() {
            return Ok(());
        }
        let gk = GroupKind::new(&a.kind_group, &a.kind);
        Err(ApiError::invalid(gk, &a.error_name(), &errs))
    }
}
