//! The built-in resources of this milestone as data: for each, its names, scope,
//! verbs, subresources, short names, categories, storage key prefix and strategy.
//!
//! Invariants: names, short names, categories and verbs are upstream's (as served by
//! kube-apiserver 1.33 discovery); key prefixes follow upstream's etcd layout, which
//! keeps historical names (`/services/specs` with `/services/endpoints`, and
//! `/minions` for nodes, `/controllers` for replication controllers, `/ingress`
//! for ingresses). Namespaces have no `deletecollection`, as upstream.
//!
//! Where to look next: `core/` and `apps/` for the strategies; `kapi-server` installs
//! handlers and discovery from these declarations.

use std::borrow::Cow;
use std::sync::Arc;

use kapi_registry::{Conversion, Origin, ResourceDef, Strategy, Subresource, Verb};

use crate::apps::{DaemonSetStrategy, DeploymentStrategy, ReplicaSetStrategy, StatefulSetStrategy};
use crate::autoscaling::{HpaConversion, HpaV1Strategy, HpaV2Strategy};
use crate::batch::{CronJobStrategy, JobStrategy};
use crate::coordination::LeaseStrategy;
use crate::core::{
    ConfigMapStrategy, EndpointsStrategy, EventStrategy, LimitRangeStrategy, NamespaceStrategy,
    NodeStrategy, PersistentVolumeClaimStrategy, PersistentVolumeStrategy, PodStrategy,
    PodTemplateStrategy, ReplicationControllerStrategy, ResourceQuotaStrategy, SecretStrategy,
    ServiceAccountStrategy, ServiceStrategy,
};
use crate::discovery::EndpointSliceStrategy;
use crate::events::{EventsConversion, EventsV1Strategy};
use crate::networking::{IngressClassStrategy, IngressStrategy, NetworkPolicyStrategy};
use crate::policy::PodDisruptionBudgetStrategy;

/// The scale subresource of a workload whose replicas live at the usual places.
pub const WORKLOAD_SCALE: Subresource = Subresource::Scale {
    spec_replicas: Cow::Borrowed("/spec/replicas"),
    status_replicas: Cow::Borrowed("/status/replicas"),
    label_selector: Cow::Borrowed("/spec/selector"),
};

/// What varies between declarations; everything else is derived.
pub(crate) struct Decl {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    in_all: bool,
    categories: &'static [&'static str],
    verbs: Option<&'static [Verb]>,
    subresources: Vec<Subresource>,
    key_prefix: &'static str,
    strategy: Arc<dyn Strategy>,
    conversion: Option<Arc<dyn Conversion>>,
    /// Whether the kind has a protobuf message (not every served beta kind does).
    protobuf: bool,
    origin: Origin,
}

impl Decl {
    pub(crate) fn new(
        group: &'static str,
        plural: &'static str,
        kind: &'static str,
        strategy: Arc<dyn Strategy>,
    ) -> Self {
        Decl {
            group,
            version: "v1",
            plural,
            kind,
            namespaced: true,
            short_names: &[],
            in_all: false,
            categories: &[],
            verbs: None,
            subresources: Vec::new(),
            key_prefix: "",
            strategy,
            conversion: None,
            protobuf: true,
            origin: Origin::Builtin,
        }
    }

    /// Stored as JSON whatever `--storage-media-type` says: a kind of
    /// upstream's aggregator (or apiextensions) server.
    pub(crate) fn stored_as_json(mut self) -> Self {
        self.origin = Origin::BuiltinJson;
        self
    }

    /// JSON only: the kind has no protobuf message in the codec's schema.
    pub(crate) fn json_only(mut self) -> Self {
        self.protobuf = false;
        self
    }

    /// Served at `version`, stored as `conversion` says.
    fn converted(mut self, version: &'static str, conversion: Arc<dyn Conversion>) -> Self {
        self.version = version;
        self.conversion = Some(conversion);
        self
    }

    /// Serve at `version` instead of `v1` (no storage conversion: stateless resources).
    pub(crate) fn at_version(mut self, version: &'static str) -> Self {
        self.version = version;
        self
    }

    pub(crate) fn cluster_scoped(mut self) -> Self {
        self.namespaced = false;
        self
    }

    pub(crate) fn short(mut self, names: &'static [&'static str]) -> Self {
        self.short_names = names;
        self
    }

    pub(crate) fn in_all(mut self) -> Self {
        self.in_all = true;
        self
    }

    pub(crate) fn categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }

    /// A resource whose storage supports only these verbs.
    pub(crate) fn verbs(mut self, verbs: &'static [Verb]) -> Self {
        self.verbs = Some(verbs);
        self
    }

    pub(crate) fn sub(mut self, subresources: Vec<Subresource>) -> Self {
        self.subresources = subresources;
        self
    }

    pub(crate) fn key(mut self, prefix: &'static str) -> Self {
        self.key_prefix = prefix;
        self
    }

    pub(crate) fn build(self) -> ResourceDef {
        let verbs = if let Some(verbs) = self.verbs {
            verbs.to_vec()
        } else if self.plural == "namespaces" {
            Verb::ALL
                .iter()
                .copied()
                .filter(|v| *v != Verb::DeleteCollection)
                .collect()
        } else {
            Verb::ALL.to_vec()
        };
        let key_prefix = match self.key_prefix {
            "" => format!("/{}", self.plural),
            custom => custom.to_string(),
        };
        ResourceDef {
            group: self.group.to_string(),
            version: self.version.to_string(),
            resource: self.plural.to_string(),
            singular: self.kind.to_lowercase(),
            kind: self.kind.to_string(),
            list_kind: format!("{}List", self.kind),
            namespaced: self.namespaced,
            verbs,
            subresources: self.subresources,
            short_names: self.short_names.iter().map(|s| s.to_string()).collect(),
            categories: if self.in_all {
                vec!["all".to_string()]
            } else {
                self.categories.iter().map(|c| c.to_string()).collect()
            },
            strategy: self.strategy,
            key_prefix,
            conversion: self.conversion,
            protobuf: self.protobuf,
            origin: self.origin,
        }
    }
}

/// Every built-in resource of this milestone: the core group, then `apps/v1`.
/// What of the built-in API the flags set.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--event-ttl`: how long events live after each write (zero: until
    /// deleted).
    pub event_ttl: std::time::Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            event_ttl: crate::core::event::DEFAULT_EVENT_TTL,
        }
    }
}

/// The built-in resources as `settings` make them.
pub fn builtin_resources_with(settings: &Settings) -> Vec<ResourceDef> {
    let mut defs = builtin_resources();
    for def in &mut defs {
        match (def.group.as_str(), def.resource.as_str()) {
            ("", "events") => def.strategy = Arc::new(EventStrategy::new(settings.event_ttl)),
            ("events.k8s.io", "events") => {
                let core = EventStrategy::new(settings.event_ttl);
                def.strategy = Arc::new(EventsV1Strategy::new(core));
            }
            _ => {}
        }
    }
    defs
}

pub fn builtin_resources() -> Vec<ResourceDef> {
    core_resources()
        .into_iter()
        .chain(apps_resources())
        .chain(batch_resources())
        .chain(group_resources())
        .chain(converted_resources())
        .chain(crate::group_registry::resources())
        .map(Decl::build)
        .collect()
}

fn core_resources() -> Vec<Decl> {
    let status = || vec![Subresource::Status];
    vec![
        Decl::new("", "namespaces", "Namespace", Arc::new(NamespaceStrategy))
            .cluster_scoped()
            .short(&["ns"])
            .sub(vec![Subresource::Finalize, Subresource::Status]),
        Decl::new("", "configmaps", "ConfigMap", Arc::new(ConfigMapStrategy)).short(&["cm"]),
        // Read-only, computed on each read by probing the components.
        Decl::new(
            "",
            "componentstatuses",
            "ComponentStatus",
            Arc::new(crate::core::componentstatus::ComponentStatusStrategy),
        )
        .cluster_scoped()
        .short(&["cs"])
        .verbs(&[Verb::Get, Verb::List]),
        // Create-only: a Binding assigns the pod it names (the older form of pods/binding).
        Decl::new(
            "",
            "bindings",
            "Binding",
            Arc::new(kapi_registry::DefaultStrategy),
        )
        .verbs(&[Verb::Create]),
        Decl::new("", "secrets", "Secret", Arc::new(SecretStrategy)),
        Decl::new("", "pods", "Pod", Arc::new(PodStrategy))
            .short(&["po"])
            .in_all()
            .sub(vec![
                Subresource::Status,
                Subresource::Eviction,
                Subresource::Binding,
                Subresource::EphemeralContainers,
                Subresource::Log,
                Subresource::Exec,
                Subresource::Attach,
                Subresource::PortForward,
                Subresource::Proxy {
                    kind: "PodProxyOptions",
                },
            ]),
        Decl::new("", "services", "Service", Arc::new(ServiceStrategy))
            .short(&["svc"])
            .in_all()
            .sub(vec![
                Subresource::Status,
                Subresource::Proxy {
                    kind: "ServiceProxyOptions",
                },
            ])
            .key("/services/specs"),
        Decl::new("", "endpoints", "Endpoints", Arc::new(EndpointsStrategy))
            .short(&["ep"])
            .key("/services/endpoints"),
        Decl::new(
            "",
            "events",
            "Event",
            Arc::new(EventStrategy::new(crate::core::event::DEFAULT_EVENT_TTL)),
        )
        .short(&["ev"]),
        Decl::new(
            "",
            "serviceaccounts",
            "ServiceAccount",
            Arc::new(ServiceAccountStrategy),
        )
        .short(&["sa"])
        .sub(vec![Subresource::Token]),
        Decl::new("", "nodes", "Node", Arc::new(NodeStrategy))
            .cluster_scoped()
            .short(&["no"])
            .sub(vec![
                Subresource::Status,
                Subresource::Proxy {
                    kind: "NodeProxyOptions",
                },
            ])
            .key("/minions"),
        Decl::new(
            "",
            "podtemplates",
            "PodTemplate",
            Arc::new(PodTemplateStrategy),
        ),
        Decl::new(
            "",
            "replicationcontrollers",
            "ReplicationController",
            Arc::new(ReplicationControllerStrategy),
        )
        .short(&["rc"])
        .in_all()
        .sub(vec![Subresource::Status, WORKLOAD_SCALE])
        .key("/controllers"),
        Decl::new(
            "",
            "persistentvolumes",
            "PersistentVolume",
            Arc::new(PersistentVolumeStrategy),
        )
        .cluster_scoped()
        .short(&["pv"])
        .sub(status()),
        Decl::new(
            "",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            Arc::new(PersistentVolumeClaimStrategy),
        )
        .short(&["pvc"])
        .sub(status()),
        Decl::new(
            "",
            "limitranges",
            "LimitRange",
            Arc::new(LimitRangeStrategy),
        )
        .short(&["limits"]),
        Decl::new(
            "",
            "resourcequotas",
            "ResourceQuota",
            Arc::new(ResourceQuotaStrategy),
        )
        .short(&["quota"])
        .sub(status()),
    ]
}

fn apps_resources() -> Vec<Decl> {
    let workload = || vec![Subresource::Status, WORKLOAD_SCALE];
    let apps = |plural, kind, strategy: Arc<dyn Strategy>| {
        Decl::new("apps", plural, kind, strategy).in_all()
    };
    vec![
        apps("deployments", "Deployment", Arc::new(DeploymentStrategy))
            .short(&["deploy"])
            .sub(workload()),
        apps("replicasets", "ReplicaSet", Arc::new(ReplicaSetStrategy))
            .short(&["rs"])
            .sub(workload()),
        apps("statefulsets", "StatefulSet", Arc::new(StatefulSetStrategy))
            .short(&["sts"])
            .sub(workload()),
        apps("daemonsets", "DaemonSet", Arc::new(DaemonSetStrategy))
            .short(&["ds"])
            .sub(vec![Subresource::Status]),
    ]
}

fn batch_resources() -> Vec<Decl> {
    let status = || vec![Subresource::Status];
    vec![
        Decl::new("batch", "jobs", "Job", Arc::new(JobStrategy))
            .in_all()
            .sub(status()),
        Decl::new("batch", "cronjobs", "CronJob", Arc::new(CronJobStrategy))
            .short(&["cj"])
            .in_all()
            .sub(status()),
    ]
}

/// `apps/v1` controllerrevisions and the one-kind-per-group resources of
/// `policy`, `coordination.k8s.io`, `discovery.k8s.io` and `networking.k8s.io`.
fn group_resources() -> Vec<Decl> {
    let status = || vec![Subresource::Status];
    vec![
        Decl::new(
            "apps",
            "controllerrevisions",
            "ControllerRevision",
            Arc::new(crate::apps::ControllerRevisionStrategy),
        ),
        Decl::new(
            "policy",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            Arc::new(PodDisruptionBudgetStrategy),
        )
        .short(&["pdb"])
        .sub(status()),
        Decl::new(
            "coordination.k8s.io",
            "leases",
            "Lease",
            Arc::new(LeaseStrategy),
        ),
        Decl::new(
            "discovery.k8s.io",
            "endpointslices",
            "EndpointSlice",
            Arc::new(EndpointSliceStrategy),
        ),
        Decl::new(
            "networking.k8s.io",
            "ingresses",
            "Ingress",
            Arc::new(IngressStrategy),
        )
        .short(&["ing"])
        .sub(status())
        .key("/ingress"),
        Decl::new(
            "networking.k8s.io",
            "ingressclasses",
            "IngressClass",
            Arc::new(IngressClassStrategy),
        )
        .cluster_scoped(),
        Decl::new(
            "networking.k8s.io",
            "networkpolicies",
            "NetworkPolicy",
            Arc::new(NetworkPolicyStrategy),
        )
        .short(&["netpol"]),
    ]
}

/// Resources served at more than one version, or from another group's storage:
/// HorizontalPodAutoscalers (`autoscaling/v2` stored, `v1` converted) and
/// `events.k8s.io/v1` events (core `v1` events, converted).
fn converted_resources() -> Vec<Decl> {
    let hpa = |version, strategy: Arc<dyn Strategy>| {
        Decl::new(
            "autoscaling",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            strategy,
        )
        .short(&["hpa"])
        .in_all()
        .sub(vec![Subresource::Status])
        .converted(version, Arc::new(HpaConversion))
    };
    vec![
        hpa("v2", Arc::new(HpaV2Strategy)),
        hpa("v1", Arc::new(HpaV1Strategy)),
        Decl::new(
            "events.k8s.io",
            "events",
            "Event",
            Arc::new(EventsV1Strategy::new(EventStrategy::new(
                crate::core::event::DEFAULT_EVENT_TTL,
            ))),
        )
        .short(&["ev"])
        .converted("v1", Arc::new(EventsConversion)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(resource: &str) -> ResourceDef {
        builtin_resources()
            .into_iter()
            .find(|r| r.resource == resource)
            .unwrap()
    }

    #[test]
    fn declarations() {
        let all = builtin_resources();
        assert_eq!(all.len(), 59);
        let pods = find("pods");
        assert_eq!(
            (
                pods.api_version(),
                pods.kind.as_str(),
                pods.list_kind.as_str()
            ),
            ("v1".to_string(), "Pod", "PodList")
        );
        assert_eq!(pods.singular, "pod");
        assert_eq!(pods.short_names, vec!["po"]);
        assert_eq!(pods.categories, vec!["all"]);
        assert!(pods.has_status());
        assert_eq!(pods.verbs.len(), 8);
        assert_eq!(find("endpoints").singular, "endpoints");
        assert_eq!(find("deployments").api_version(), "apps/v1");
        assert_eq!(
            find("deployments").subresource("scale"),
            Some(&WORKLOAD_SCALE)
        );
        assert!(find("daemonsets").subresource("scale").is_none());
        assert!(find("configmaps").categories.is_empty());
    }

    #[test]
    fn scope_verbs_and_keys() {
        let ns = find("namespaces");
        assert!(
            !ns.namespaced && !ns.supports(Verb::DeleteCollection) && ns.supports(Verb::Create)
        );
        assert_eq!(ns.key(None, "default"), "/namespaces/default");
        assert_eq!(
            find("services").key(Some("default"), "kubernetes"),
            "/services/specs/default/kubernetes"
        );
        assert_eq!(
            find("endpoints").list_prefix(Some("a")),
            "/services/endpoints/a/"
        );
        assert_eq!(find("nodes").key(None, "n1"), "/minions/n1");
        assert_eq!(find("configmaps").key(Some("a"), "b"), "/configmaps/a/b");
        assert_eq!(find("statefulsets").short_names, vec!["sts"]);
    }

    /// Every resource's etcd key prefix is kube-apiserver's: the resource's
    /// plural (no group) unless upstream's storage factory names another
    /// (`SpecialDefaultResourcePrefixes`), and `<group>/<plural>` for the
    /// aggregator's APIServices (its own storage options).
    #[test]
    fn key_prefixes_are_upstreams() {
        let special = [
            ("", "replicationcontrollers", "/controllers"),
            ("", "endpoints", "/services/endpoints"),
            ("", "nodes", "/minions"),
            ("", "services", "/services/specs"),
            ("networking.k8s.io", "ingresses", "/ingress"),
            (
                "apiregistration.k8s.io",
                "apiservices",
                "/apiregistration.k8s.io/apiservices",
            ),
        ];
        for def in builtin_resources() {
            let want = special
                .iter()
                .find(|(g, r, _)| *g == def.group && *r == def.resource)
                .map_or(format!("/{}", def.resource), |(_, _, p)| p.to_string());
            assert_eq!(def.key_prefix, want, "{}", def.gvr());
        }
        assert_eq!(
            find("serviceaccounts").key(Some("ns"), "default"),
            "/serviceaccounts/ns/default"
        );
    }
}
