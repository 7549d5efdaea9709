//! kapi-admission-plugins — the admission plugins by upstream name, in
//! upstream's order (kube-apiserver 1.33 `AllOrderedPlugins`), the default-on
//! set, and the [`Selection`] the `--enable-admission-plugins` /
//! `--disable-admission-plugins` flags make, which [`Selection::build`] turns
//! into a `kapi_admission::Chain`.
//!
//! One file (or folder) per plugin: `namespace.rs` (NamespaceLifecycle),
//! `limitranger.rs`, `serviceaccount.rs`, `podsecurity/`, `priority.rs`,
//! `tolerations.rs` (DefaultTolerationSeconds), `storageclass.rs`
//! (DefaultStorageClass), `quota.rs` (ResourceQuota), `noderestriction.rs`
//! (NodeRestriction), `nodetaint.rs` (TaintNodesByCondition),
//! `storageprotection.rs` (StorageObjectInUseProtection); `privileged.rs` (`--allow-privileged`); `webhooks/` (the
//! admission webhooks, and the CEL and matching they share with policies)
//! and `policy/` (ValidatingAdmissionPolicy).
//!
//! Plugins read what they need through the [`Context`] they are built with:
//! the resource table (objects come from the watch cache) and the authorizer
//! (the `authorizer` variable of policies' CEL).
//!
//! Adding a plugin: implement `kapi_admission::Plugin` in a file of its own,
//! add its constructor to [`build`] under its upstream name.
//!
//! Per-plugin configuration comes from `--admission-control-config-file`
//! (`config.rs`): PodSecurity's defaults and exemptions
//! (`podsecurity/config.rs`) and ResourceQuota's limited resources
//! (`quota_config.rs`), checked when [`Selection::with_configs`] is called.
//!
//! Every upstream name is known (so disabling one kapi does not implement is
//! accepted, as scripts written for kube-apiserver do); enabling a name kapi
//! has no implementation for is a startup error, never a silent no-op.
//! Webhook and policy plugins go where their names stand, before
//! ResourceQuota, as upstream requires.

pub mod config;
mod limitranger;
mod namespace;
mod noderestriction;
mod nodetaint;
mod podsecurity;
mod podspec;
pub mod policy;
mod priority;
mod privileged;
mod quota;
mod quota_config;
mod serviceaccount;
mod storageclass;
mod storageprotection;
mod tolerations;
pub mod webhooks;

use std::sync::Arc;

use kapi_admission::{Attributes, Chain, Operation, Plugin};
use kapi_auth::authz::Authorizer;
use kapi_machinery::status::ApiError;
use kapi_registry::apis::Apis;

/// What the plugins read: the served resources and the authorizer.
#[derive(Clone)]
pub struct Context {
    pub apis: Arc<Apis>,
    pub authz: Arc<dyn Authorizer>,
    /// How webhooks' services are dialled (`--enable-aggregator-routing`).
    pub routing: kapi_client::service_resolver::Routing,
    /// How webhooks are reached: a `url` through the `controlplane`
    /// selection, a `service` through `cluster` (`--egress-selector-config-file`).
    pub egress: kapi_egress::Egress,
}

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

/// Whether kapi implements the plugin of this upstream name.
fn implemented(name: &str) -> bool {
    IMPLEMENTED.contains(&name)
}

const IMPLEMENTED: &[&str] = &[
    "AlwaysAdmit",
    "AlwaysDeny",
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "TaintNodesByCondition",
    "ResourceQuota",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
];

/// The plugin of upstream name `name`, reading through `cx`, configured as
/// `sel` says.
fn build(name: &str, cx: &Context, sel: &Selection) -> Option<Arc<dyn Plugin>> {
    let cx = cx.clone();
    Some(match name {
        "AlwaysAdmit" => Arc::new(Always(true)),
        "AlwaysDeny" => Arc::new(Always(false)),
        "NamespaceLifecycle" => Arc::new(namespace::Lifecycle {
            cx,
            seen: Default::default(),
        }),
        "LimitRanger" => Arc::new(limitranger::LimitRanger { cx }),
        "ServiceAccount" => Arc::new(serviceaccount::ServiceAccount { cx }),
        "NodeRestriction" => Arc::new(noderestriction::NodeRestriction { cx }),
        "PodSecurity" => Arc::new(podsecurity::PodSecurity {
            cx,
            config: sel.podsecurity.clone(),
        }),
        "Priority" => Arc::new(priority::Priority { cx }),
        "DefaultTolerationSeconds" => Arc::new(tolerations::DefaultTolerationSeconds {
            not_ready: sel.toleration_seconds.0,
            unreachable: sel.toleration_seconds.1,
        }),
        "DefaultStorageClass" => Arc::new(storageclass::DefaultStorageClass { cx }),
        "StorageObjectInUseProtection" => Arc::new(storageprotection::StorageObjectInUseProtection),
        "TaintNodesByCondition" => Arc::new(nodetaint::TaintNodesByCondition),
        "ResourceQuota" => Arc::new(quota::ResourceQuota {
            cx,
            config: sel.quota.clone(),
            quotas: Default::default(),
        }),
        "MutatingAdmissionWebhook" => Arc::new(webhooks::plugins::MutatingWebhook {
            cx,
            configs: Default::default(),
        }),
        "ValidatingAdmissionPolicy" => Arc::new(webhooks::plugins::ValidatingPolicy {
            cx,
            policies: Default::default(),
            bindings: Default::default(),
        }),
        "ValidatingAdmissionWebhook" => Arc::new(webhooks::plugins::ValidatingWebhook {
            cx,
            configs: Default::default(),
        }),
        _ => return None,
    })
}

/// The enabled plugins' names, in upstream's order, checked against what
/// exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    names: Vec<&'static str>,
    podsecurity: Arc<podsecurity::config::PodSecurityConfig>,
    quota: Arc<quota_config::QuotaConfig>,
    /// `--default-not-ready-toleration-seconds`,
    /// `--default-unreachable-toleration-seconds`.
    toleration_seconds: (i64, i64),
}

/// Plugins upstream configures from the admission configuration file that
/// kapi either lacks or takes no settings for.
const UNCONFIGURABLE: &[&str] = &[
    "ValidatingAdmissionWebhook",
    "MutatingAdmissionWebhook",
    "EventRateLimit",
    "ImagePolicyWebhook",
    "PodNodeSelector",
    "PodTolerationRestriction",
];

impl Default for Selection {
    /// Upstream's default set (of what kapi implements).
    fn default() -> Self {
        Selection::from_flags(&[], &[]).expect("the default set is valid")
    }
}

impl Selection {
    /// The chain `--enable-admission-plugins` / `--disable-admission-plugins`
    /// select: the default set plus `enable` minus `disable`, in upstream's
    /// order. Unknown names and names in both lists are errors, as upstream's.
    pub fn from_flags(enable: &[String], disable: &[String]) -> Result<Selection, String> {
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
            if !implemented(n) {
                return Err(format!(
                    "enable-admission-plugins plugin {n:?} is not implemented by kapi"
                ));
            }
        }
        let names = ORDER
            .iter()
            .filter(|n| DEFAULT_ON.contains(n) || enable.iter().any(|e| e == *n))
            .filter(|n| !disable.iter().any(|d| d == *n))
            .filter(|n| implemented(n))
            .copied()
            .collect();
        Ok(Selection {
            names,
            podsecurity: Arc::default(),
            quota: Arc::default(),
            toleration_seconds: (tolerations::DEFAULT_SECONDS, tolerations::DEFAULT_SECONDS),
        })
    }

    /// The chain the deprecated `--admission-control` selects: exactly the
    /// plugins named (every other one off), as kube-apiserver computes it.
    pub fn from_admission_control(names: &[String]) -> Result<Selection, String> {
        for n in names {
            if !ORDER.contains(&n.as_str()) {
                return Err(format!("admission-control plugin {n:?} is unknown"));
            }
        }
        let disable: Vec<String> = ORDER
            .iter()
            .filter(|o| !names.iter().any(|n| n == *o))
            .map(|o| o.to_string())
            .collect();
        Selection::from_flags(names, &disable)
    }

    /// Configure the selected plugins from the admission configuration file;
    /// an invalid configuration of a selected plugin is an error naming it.
    pub fn with_configs(mut self, configs: &config::PluginConfigs) -> Result<Selection, String> {
        for name in configs.names() {
            if !self.names.contains(&name) {
                continue;
            }
            let bad = |e: String| {
                format!(
                    "{}couldn't init admission plugin {name:?}: {e}",
                    config::INIT
                )
            };
            let value = &configs.get(name)?.expect("named");
            match name {
                "PodSecurity" => {
                    self.podsecurity = Arc::new(podsecurity::config::PodSecurityConfig::parse(value).map_err(bad)?);
                }
                "ResourceQuota" => {
                    self.quota = Arc::new(quota_config::QuotaConfig::parse(value).map_err(bad)?);
                }
                other if UNCONFIGURABLE.contains(&other) => tracing::warn!(
                    "admission plugin {other}: its configuration (--admission-control-config-file) is not supported by kapi; ignored"
                ),
                other => tracing::warn!(
                    "admission plugin {other}: upstream takes no configuration for it; ignored"
                ),
            }
        }
        Ok(self)
    }

    /// The tolerationSeconds DefaultTolerationSeconds gives pods for the
    /// not-ready and unreachable taints (upstream's flags, 300 each).
    pub fn with_toleration_seconds(mut self, not_ready: i64, unreachable: i64) -> Selection {
        self.toleration_seconds = (not_ready, unreachable);
        self
    }

    /// The names selected, in order.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// The chain of the selected plugins, each reading through `cx`.
    pub fn build(&self, cx: &Context) -> Chain {
        self.build_with(cx, true)
    }

    /// [`Selection::build`]; without `allow_privileged` (`--allow-privileged`)
    /// pod specs asking for privileged containers are refused first
    /// (`privileged.rs`).
    pub fn build_with(&self, cx: &Context, allow_privileged: bool) -> Chain {
        let mut plugins: Vec<Arc<dyn Plugin>> = Vec::new();
        if !allow_privileged {
            plugins.push(Arc::new(privileged::DenyPrivileged));
        }
        plugins.extend(self.names.iter().filter_map(|n| build(n, cx, self)));
        Chain::of(plugins)
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
    // Upstream's AlwaysDeny refuses in both phases (so in the mutating one,
    // before any validating plugin).
    fn mutating(&self) -> bool {
        !self.0
    }
    fn validating(&self) -> bool {
        !self.0
    }
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        Err(a.forbidden("admission control is denying all modifications"))
    }
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
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
        let c = Selection::from_flags(&s(&["AlwaysDeny"]), &s(&["NamespaceLifecycle"])).unwrap();
        assert_eq!(c.names().last(), Some(&"AlwaysDeny"));
        assert!(!c.names().contains(&"NamespaceLifecycle"));
        let d = Selection::default();
        assert_eq!(d.names().first(), Some(&"NamespaceLifecycle"));
        let mut ordered = d.names().to_vec();
        ordered.sort_by_key(|n| ORDER.iter().position(|o| o == n));
        assert_eq!(ordered, d.names());
    }

    /// Every implemented plugin works in upstream's phases (`Admit` and/or
    /// `Validate`) on the operations upstream's `admission.NewHandler` lists
    /// (Priority's delete, a no-op upstream, left out).
    #[test]
    fn plugins_have_upstreams_phases_and_operations() {
        use Operation::{Connect, Create, Delete, Update};
        type Row = (&'static str, bool, bool, &'static [Operation]);
        let all: &[Operation] = &[Create, Update, Delete, Connect];
        let upstream: &[Row] = &[
            ("AlwaysDeny", true, true, all),
            ("NamespaceLifecycle", true, false, &[Create, Update, Delete]),
            ("LimitRanger", true, true, &[Create, Update]),
            ("ServiceAccount", true, true, &[Create]),
            ("NodeRestriction", true, false, &[Create, Update, Delete]),
            ("PodSecurity", false, true, &[Create, Update]),
            ("Priority", true, true, &[Create, Update]),
            ("DefaultTolerationSeconds", true, false, &[Create, Update]),
            ("DefaultStorageClass", true, false, &[Create]),
            ("TaintNodesByCondition", true, false, &[Create]),
            ("StorageObjectInUseProtection", true, false, &[Create]),
            ("ResourceQuota", false, true, &[Create, Update]),
            ("MutatingAdmissionWebhook", true, false, all),
            ("ValidatingAdmissionPolicy", false, true, all),
            ("ValidatingAdmissionWebhook", false, true, all),
        ];
        let cx = Context {
            apis: Arc::new(Apis::default()),
            authz: Arc::new(kapi_auth::authz::AlwaysAllow),
            routing: Default::default(),
            egress: Default::default(),
        };
        for name in IMPLEMENTED.iter().filter(|n| **n != "AlwaysAdmit") {
            let row = upstream.iter().find(|r| r.0 == *name);
            let (_, mutating, validating, ops) = row.unwrap_or_else(|| panic!("{name}: no row"));
            let p = build(name, &cx, &Selection::default()).expect("implemented");
            assert_eq!(
                (p.mutating(), p.validating()),
                (*mutating, *validating),
                "{name}"
            );
            for op in [Create, Update, Delete, Connect] {
                assert_eq!(p.handles(op), ops.contains(&op), "{name} {op:?}");
            }
        }
    }

    #[test]
    fn bad_flags_are_errors() {
        let e = Selection::from_flags(&s(&["Nope"]), &[]).unwrap_err();
        assert_eq!(e, "enable-admission-plugins plugin \"Nope\" is unknown");
        assert!(Selection::from_flags(&[], &s(&["Nope"])).is_err());
        assert!(Selection::from_flags(&s(&["AlwaysDeny"]), &s(&["AlwaysDeny"])).is_err());
        // Known upstream names kapi does not implement: disabling is fine.
        assert!(Selection::from_flags(&[], &s(&["StorageObjectInUseProtection"])).is_ok());
        assert!(Selection::from_flags(&s(&["AlwaysPullImages"]), &[]).is_err());
        let e = Selection::from_admission_control(&s(&["Nope"])).unwrap_err();
        assert_eq!(e, "admission-control plugin \"Nope\" is unknown");
    }

    /// `--admission-control` names the whole chain, in upstream's order
    /// whatever the order given.
    #[test]
    fn admission_control_replaces_the_defaults() {
        let c = Selection::from_admission_control(&s(&["ResourceQuota", "NamespaceLifecycle"]));
        assert_eq!(c.unwrap().names(), ["NamespaceLifecycle", "ResourceQuota"]);
    }

    /// A selected plugin's bad configuration stops the start, naming it; an
    /// unselected plugin's is not read.
    #[test]
    fn plugin_configurations_are_checked_when_selected() {
        let text =
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n\
                    - name: ResourceQuota\n  configuration:\n    kind: Nope\n";
        let configs = config::PluginConfigs::parse(text, std::path::Path::new(".")).unwrap();
        let e = Selection::default().with_configs(&configs).unwrap_err();
        let want =
            "failed to initialize admission: couldn't init admission plugin \"ResourceQuota\": ";
        assert!(e.starts_with(want), "{e}");
        let off = Selection::from_flags(&[], &s(&["ResourceQuota"])).unwrap();
        assert!(off.with_configs(&configs).is_ok());
    }
}
