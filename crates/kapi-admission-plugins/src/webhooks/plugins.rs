//! The admission chain's plugins of this module, under their upstream names:
//! MutatingAdmissionWebhook (mutating phase), ValidatingAdmissionPolicy and
//! ValidatingAdmissionWebhook (validating phase). Each turns the chain's
//! [`Attributes`] into the [`Attrs`] webhooks and policies see, runs, and hands
//! back the mutated object, the warnings and the audit annotations (to the
//! request's audit event through [`Attributes::annotate`]).

use async_trait::async_trait;
use kapi_machinery::status::ApiError;

use super::{Attrs, Outcome};
use crate::Context;
use kapi_admission::{self as admission, Attributes, Plugin};
use kapi_auth::authn::UserInfo;
use kapi_registry::store::KeptList;

fn attrs(a: &Attributes) -> Attrs {
    // Upstream sets a namespace's own requests' namespace to its name.
    let namespace = if a.group.is_empty() && a.resource == "namespaces" {
        a.name.clone()
    } else {
        a.namespace.clone()
    };
    Attrs {
        operation: a.operation,
        gvr: (a.group.clone(), a.version.clone(), a.resource.clone()),
        gvk: (a.kind_group.clone(), a.kind_version.clone(), a.kind.clone()),
        subresource: a.subresource.clone(),
        namespace,
        name: a.error_name_or_empty(),
        object: a.object.clone(),
        old_object: a.old_object.clone(),
        options: (!a.options.is_null()).then(|| serde_json::Value::clone(&a.options)),
        dry_run: a.dry_run,
        user: a.user.clone().unwrap_or_else(UserInfo::anonymous),
    }
}

fn hand_back(a: &Attributes, out: Outcome) {
    for w in out.warnings {
        a.warnings.add(w);
    }
    for (k, v) in out.annotations {
        a.annotate(&k, &v);
    }
}

const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";
const MAX_POLICY_ANNOTATION: usize = 10 * 1024;

/// Policies' annotations as upstream's collector publishes them: values cut
/// at 10 KiB, the distinct values of one `<policy>/<key>` (from several
/// bindings or params) joined by `", "`.
fn merge_policy_annotations(out: &mut Outcome) {
    let mut merged: Vec<(String, Vec<String>)> = Vec::new();
    for (k, mut v) in std::mem::take(&mut out.annotations) {
        if k == VALIDATION_FAILURE {
            merged.push((k, vec![v]));
            continue;
        }
        if v.len() > MAX_POLICY_ANNOTATION {
            let mut end = MAX_POLICY_ANNOTATION;
            while !v.is_char_boundary(end) {
                end -= 1;
            }
            v.truncate(end);
        }
        match merged.iter_mut().find(|(key, _)| *key == k) {
            Some((_, values)) if values.contains(&v) => {}
            Some((_, values)) => values.push(v),
            None => merged.push((k, vec![v])),
        }
    }
    out.annotations = merged
        .into_iter()
        .map(|(k, values)| (k, values.join(", ")))
        .collect();
}

trait NameOrEmpty {
    fn error_name_or_empty(&self) -> String;
}

impl NameOrEmpty for Attributes {
    /// The name, or the object's name once known (a create's name may come
    /// from the body only).
    fn error_name_or_empty(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        self.object
            .as_ref()
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string()
    }
}

/// MutatingAdmissionWebhook.
pub struct MutatingWebhook {
    pub(crate) cx: Context,
    /// The configurations, while none changes.
    pub(crate) configs: KeptList,
}

#[async_trait]
impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        let hooks = cx
            .hooks("mutatingwebhookconfigurations", &self.configs)
            .await?;
        if hooks.is_empty() {
            return Ok(());
        }
        let mut at = attrs(a);
        let mut out = Outcome::default();
        // Boxed: held inline, the calls' state would make every request's
        // admission future as large, and each request would copy it whole.
        let run = Box::pin(cx.run_mutating_webhooks(&mut at, hooks, &mut out));
        let result = run.await;
        hand_back(a, out);
        result?;
        a.object = at.object;
        Ok(())
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }
}

/// ValidatingAdmissionWebhook.
pub struct ValidatingWebhook {
    pub(crate) cx: Context,
    /// The configurations, while none changes.
    pub(crate) configs: KeptList,
}

#[async_trait]
impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        let hooks = cx
            .hooks("validatingwebhookconfigurations", &self.configs)
            .await?;
        if hooks.is_empty() {
            return Ok(());
        }
        let mut out = Outcome::default();
        let attrs = attrs(a);
        let run = Box::pin(cx.run_validating_webhooks(&attrs, hooks, &mut out));
        let result = run.await;
        hand_back(a, out);
        result
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        true
    }
}

/// ValidatingAdmissionPolicy.
pub struct ValidatingPolicy {
    pub(crate) cx: Context,
    /// The policies and their bindings, while none changes.
    pub(crate) policies: KeptList,
    pub(crate) bindings: KeptList,
}

#[async_trait]
impl Plugin for ValidatingPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        let policies = cx
            .list_sorted("validatingadmissionpolicies", &self.policies)
            .await?;
        if policies.is_empty() {
            return Ok(());
        }
        let mut out = Outcome::default();
        let result =
            Box::pin(cx.run_validating_policies(&attrs(a), policies, &self.bindings, &mut out))
                .await;
        merge_policy_annotations(&mut out);
        hand_back(a, out);
        result
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        true
    }
}
