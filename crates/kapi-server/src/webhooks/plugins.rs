//! The admission chain's plugins of this module, under their upstream names:
//! MutatingAdmissionWebhook (mutating phase), ValidatingAdmissionPolicy and
//! ValidatingAdmissionWebhook (validating phase). Each turns the chain's
//! [`Attributes`] into the [`Attrs`] webhooks and policies see, runs, and hands
//! back the mutated object and the warnings. Audit annotations are produced
//! but the chain has no place for them yet, so they are logged at debug level.

use std::sync::Arc;

use async_trait::async_trait;
use kapi_machinery::status::ApiError;

use super::{Attrs, Outcome};
use crate::admission::{self, Attributes, Plugin};
use crate::authn::UserInfo;
use crate::Server;

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
        options: (!a.options.is_null()).then(|| a.options.clone()),
        dry_run: a.dry_run,
        user: a.user.clone().unwrap_or_else(UserInfo::anonymous),
    }
}

fn hand_back(a: &Attributes, out: Outcome) {
    for w in out.warnings {
        a.warnings.add(w);
    }
    for (k, v) in out.annotations {
        tracing::debug!(key = %k, value = %v, "admission audit annotation");
    }
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
pub struct MutatingWebhook;

#[async_trait]
impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn admit(&self, srv: &Arc<Server>, a: &mut Attributes) -> Result<(), ApiError> {
        let mut at = attrs(a);
        let mut out = Outcome::default();
        let result = srv.run_mutating_webhooks(&mut at, &mut out).await;
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
pub struct ValidatingWebhook;

#[async_trait]
impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn validate(&self, srv: &Arc<Server>, a: &Attributes) -> Result<(), ApiError> {
        let mut out = Outcome::default();
        let result = srv.run_validating_webhooks(&attrs(a), &mut out).await;
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
pub struct ValidatingPolicy;

#[async_trait]
impl Plugin for ValidatingPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }
    fn handles(&self, _op: admission::Operation) -> bool {
        true
    }
    async fn validate(&self, srv: &Arc<Server>, a: &Attributes) -> Result<(), ApiError> {
        let mut out = Outcome::default();
        let result = srv.run_validating_policies(&attrs(a), &mut out).await;
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
