//! The plugins by upstream name, in upstream's order (kube-apiserver 1.33
//! `AllOrderedPlugins`), the default-on set, and the [`Chain`] the
//! `--enable-admission-plugins` / `--disable-admission-plugins` flags select.
//!
//! Every upstream name is known (so disabling one kapi does not implement is
//! accepted, as scripts written for kube-apiserver do); enabling a name kapi
//! has no implementation for is a startup error, never a silent no-op.
//! Webhook and policy plugins go where their names stand, before
//! ResourceQuota, as upstream requires.

use std::sync::Arc;

use kapi_machinery::status::ApiError;

use super::{Attributes, Operation, Plugin};
use crate::Server;

/// Upstream's plugin order.
pub const ORDER: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    // Webhook, policy, quota and deny plugins go last.
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// Upstream's default-on plugins.
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
];

/// The plugins kapi implements, by upstream name.
fn build(name: &str) -> Option<Arc<dyn Plugin>> {
    Some(match name {
        "AlwaysAdmit" => Arc::new(Always(true)),
        "AlwaysDeny" => Arc::new(Always(false)),
        "NamespaceLifecycle" => Arc::new(super::namespace::Lifecycle),
        "LimitRanger" => Arc::new(super::limitranger::LimitRanger),
        "ServiceAccount" => Arc::new(super::serviceaccount::ServiceAccount),
        "PodSecurity" => Arc::new(super::podsecurity::PodSecurity),
        "Priority" => Arc::new(super::priority::Priority),
        "DefaultTolerationSeconds" => Arc::new(super::tolerations::DefaultTolerationSeconds),
        "DefaultStorageClass" => Arc::new(super::storageclass::DefaultStorageClass),
        "ResourceQuota" => Arc::new(super::quota::ResourceQuota),
        "MutatingAdmissionWebhook" => Arc::new(crate::webhooks::plugins::MutatingWebhook),
        "ValidatingAdmissionPolicy" => Arc::new(crate::webhooks::plugins::ValidatingPolicy),
        "ValidatingAdmissionWebhook" => Arc::new(crate::webhooks::plugins::ValidatingWebhook),
        _ => return None,
    })
}

/// The enabled plugins, in order.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Chain {
    /// Upstream's default set (of what kapi implements).
    pub fn defaults() -> Chain {
        Chain::from_flags(&[], &[]).expect("the default set is valid")
    }

    /// The chain `--enable-admission-plugins` / `--disable-admission-plugins`
    /// select: the default set plus `enable` minus `disable`, in upstream's
    /// order. Unknown names and names in both lists are errors, as upstream's.
    pub fn from_flags(enable: &[String], disable: &[String]) -> Result<Chain, String> {
        for (flag, names) in [
            ("enable-admission-plugins", enable),
            ("disable-admission-plugins", disable),
        ] {
            for n in names {
                if !ORDER.contains(&n.as_str()) {
                    return Err(format!("{flag} plugin {n:?} is unknown"));
                }
            }
        }
        let both: Vec<&String> = enable.iter().filter(|n| disable.contains(n)).collect();
        if !both.is_empty() {
            return Err(format!(
                "{both:?} in enable-admission-plugins and disable-admission-plugins overlapped"
            ));
        }
        for n in enable {
            if build(n).is_none() {
                return Err(format!(
                    "enable-admission-plugins plugin {n:?} is not implemented by kapi"
                ));
            }
        }
        let plugins = ORDER
            .iter()
            .filter(|n| DEFAULT_ON.contains(n) || enable.iter().any(|e| e == *n))
            .filter(|n| !disable.iter().any(|d| d == *n))
            .filter_map(|n| build(n))
            .collect();
        Ok(Chain { plugins })
    }

    /// A chain of the given plugins, in the given order (tests, embedding).
    pub fn of(plugins: Vec<Arc<dyn Plugin>>) -> Chain {
        Chain { plugins }
    }

    /// The names of the enabled plugins, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// Whether any plugin mutates requests of `op`.
    pub fn mutates(&self, op: Operation) -> bool {
        self.plugins.iter().any(|p| p.mutating() && p.handles(op))
    }

    /// Whether any plugin validates requests of `op`.
    pub fn validates(&self, op: Operation) -> bool {
        self.plugins.iter().any(|p| p.validating() && p.handles(op))
    }

    /// The mutating phase: every plugin's [`Plugin::admit`], in order.
    pub async fn admit(&self, srv: &Arc<Server>, a: &mut Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.mutating() && p.handles(a.operation) {
                p.admit(srv, a).await?;
            }
        }
        Ok(())
    }

    /// The validating phase: every plugin's [`Plugin::validate`], in order.
    pub async fn validate(&self, srv: &Arc<Server>, a: &Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.validating() && p.handles(a.operation) {
                p.validate(srv, a).await?;
            }
        }
        Ok(())
    }
}

/// AlwaysAdmit / AlwaysDeny (deprecated upstream, kept for their names).
struct Always(bool);

#[async_trait::async_trait]
impl Plugin for Always {
    fn name(&self) -> &'static str {
        if self.0 {
            "AlwaysAdmit"
        } else {
            "AlwaysDeny"
        }
    }
    fn handles(&self, _op: Operation) -> bool {
        true
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        !self.0
    }
    async fn validate(&self, _srv: &Arc<Server>, a: &Attributes) -> Result<(), ApiError> {
        Err(a.forbidden("admission control is denying all modifications"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_select_plugins_in_upstream_order() {
        let c = Chain::from_flags(&s(&["AlwaysDeny"]), &s(&["NamespaceLifecycle"])).unwrap();
        assert_eq!(c.names().last(), Some(&"AlwaysDeny"));
        assert!(!c.names().contains(&"NamespaceLifecycle"));
        let d = Chain::defaults();
        assert_eq!(d.names().first(), Some(&"NamespaceLifecycle"));
        let mut ordered = d.names();
        ordered.sort_by_key(|n| ORDER.iter().position(|o| o == n));
        assert_eq!(ordered, d.names());
    }

    #[test]
    fn bad_flags_are_errors() {
        let e = Chain::from_flags(&s(&["Nope"]), &[]).unwrap_err();
        assert_eq!(e, "enable-admission-plugins plugin \"Nope\" is unknown");
        assert!(Chain::from_flags(&[], &s(&["Nope"])).is_err());
        assert!(Chain::from_flags(&s(&["AlwaysDeny"]), &s(&["AlwaysDeny"])).is_err());
        // Known upstream names kapi does not implement: disabling is fine.
        assert!(Chain::from_flags(&[], &s(&["StorageObjectInUseProtection"])).is_ok());
        assert!(Chain::from_flags(&s(&["AlwaysPullImages"]), &[]).is_err());
    }
}
