//! Patch and list semantics of the built-in kinds: the facts upstream keeps in Go
//! struct tags (`patchStrategy`, `patchMergeKey`, `+listType`, `+listMapKey`,
//! `+mapType`, `+structType`) and that k8s-openapi's schemars schemas drop.
//!
//! What this module owns:
//! - [`FACTS`] and [`ATOMIC_STRUCTS`]: the table, transcribed from upstream's
//!   `staging/src/k8s.io/api/{core,apps,batch,policy,discovery,networking}/v1/types.go` and
//!   `apimachinery/pkg/apis/meta/v1/types.go`. `openapi::defs` writes these facts
//!   into the definitions as `x-kubernetes-*` extensions, so the documents and
//!   [`BuiltinSchema`] can never disagree;
//! - [`BuiltinSchema`] (`schema.rs`), the `SchemaNav` answering strategic-merge and apply
//!   questions from those definitions, and [`root_type`].
//!
//! Invariants: every fact names a definition and property that exists (tested);
//! `TypeRef`s are upstream definition names (`io.k8s.api.core.v1.PodSpec`), plus
//! the synthetic `map[<def>]` for a map whose values are objects of `<def>` (its
//! entries are found through `SchemaNav::map_value`). A list with patch
//! strategy `merge` and a merge key but no `x-kubernetes-list-type` is a map
//! keyed by the merge key; with `merge` and no key it is a set.
//!
//! Where to look next: `kapi_machinery::schema` (the questions),
//! `openapi/defs.rs` (how the table lands in the documents), `openapi/kinds.rs`
//! (which Rust type backs which kind).

use kapi_machinery::schema::TypeRef;

/// The SSA list semantics a field declares (`x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFact {
    /// No `x-kubernetes-list-type` (or not a list).
    Unset,
    Atomic,
    Set,
    Map(&'static [&'static str]),
}

/// The facts about one field of one definition.
#[derive(Debug, Clone, Copy)]
pub struct Fact {
    pub def: &'static str,
    pub field: &'static str,
    /// `x-kubernetes-patch-strategy` ("" for none), e.g. `merge,retainKeys`.
    pub strategy: &'static str,
    /// `x-kubernetes-patch-merge-key` ("" for none).
    pub merge_key: &'static str,
    pub list: ListFact,
    /// `x-kubernetes-map-type: atomic`.
    pub map_atomic: bool,
}

macro_rules! core {
    ($t:literal) => {
        concat!("io.k8s.api.core.v1.", $t)
    };
}
macro_rules! apps {
    ($t:literal) => {
        concat!("io.k8s.api.apps.v1.", $t)
    };
}
macro_rules! meta {
    ($t:literal) => {
        concat!("io.k8s.apimachinery.pkg.apis.meta.v1.", $t)
    };
}

const fn merge(def: &'static str, field: &'static str, key: &'static str, list: ListFact) -> Fact {
    strat(def, field, "merge", key, list)
}

const fn strat(
    def: &'static str,
    field: &'static str,
    strategy: &'static str,
    merge_key: &'static str,
    list: ListFact,
) -> Fact {
    Fact {
        def,
        field,
        strategy,
        merge_key,
        list,
        map_atomic: false,
    }
}

const fn atomic(def: &'static str, field: &'static str) -> Fact {
    strat(def, field, "", "", ListFact::Atomic)
}

const fn keyed(def: &'static str, field: &'static str, keys: &'static [&'static str]) -> Fact {
    strat(def, field, "", "", ListFact::Map(keys))
}

const fn atomic_map(def: &'static str, field: &'static str) -> Fact {
    Fact {
        map_atomic: true,
        ..strat(def, field, "", "", ListFact::Unset)
    }
}

use ListFact::{Map as M, Set, Unset};

const NAME: ListFact = M(&["name"]);
const TYPE: ListFact = M(&["type"]);
const PORT_PROTO: ListFact = M(&["containerPort", "protocol"]);

/// Field facts of the built-in kinds (see the module doc for the sources).
#[rustfmt::skip]
pub static FACTS: &[Fact] = &[
    // core/v1 PodSpec
    merge(core!("PodSpec"), "containers", "name", NAME),
    merge(core!("PodSpec"), "initContainers", "name", NAME),
    merge(core!("PodSpec"), "ephemeralContainers", "name", NAME),
    strat(core!("PodSpec"), "volumes", "merge,retainKeys", "name", NAME),
    merge(core!("PodSpec"), "imagePullSecrets", "name", NAME),
    merge(core!("PodSpec"), "hostAliases", "ip", M(&["ip"])),
    merge(core!("PodSpec"), "topologySpreadConstraints", "topologyKey", M(&["topologyKey", "whenUnsatisfiable"])),
    merge(core!("PodSpec"), "schedulingGates", "name", NAME),
    strat(core!("PodSpec"), "resourceClaims", "merge,retainKeys", "name", NAME),
    atomic(core!("PodSpec"), "tolerations"),
    atomic(core!("PodSpec"), "readinessGates"),
    atomic_map(core!("PodSpec"), "nodeSelector"),
    // core/v1 containers
    merge(core!("Container"), "ports", "containerPort", PORT_PROTO),
    merge(core!("Container"), "env", "name", NAME),
    merge(core!("Container"), "volumeMounts", "mountPath", M(&["mountPath"])),
    merge(core!("Container"), "volumeDevices", "devicePath", M(&["devicePath"])),
    atomic(core!("Container"), "command"),
    atomic(core!("Container"), "args"),
    atomic(core!("Container"), "envFrom"),
    atomic(core!("Container"), "resizePolicy"),
    merge(core!("EphemeralContainer"), "ports", "containerPort", PORT_PROTO),
    merge(core!("EphemeralContainer"), "env", "name", NAME),
    merge(core!("EphemeralContainer"), "volumeMounts", "mountPath", M(&["mountPath"])),
    merge(core!("EphemeralContainer"), "volumeDevices", "devicePath", M(&["devicePath"])),
    atomic(core!("EphemeralContainer"), "command"),
    atomic(core!("EphemeralContainer"), "args"),
    atomic(core!("EphemeralContainer"), "envFrom"),
    atomic(core!("EphemeralContainer"), "resizePolicy"),
    merge(core!("ContainerStatus"), "volumeMounts", "mountPath", M(&["mountPath"])),
    keyed(core!("ContainerStatus"), "allocatedResourcesStatus", &["name"]),
    keyed(core!("ResourceStatus"), "resources", &["resourceID"]),
    keyed(core!("ResourceRequirements"), "claims", &["name"]),
    atomic(core!("Capabilities"), "add"),
    atomic(core!("Capabilities"), "drop"),
    atomic(core!("ExecAction"), "command"),
    atomic(core!("HTTPGetAction"), "httpHeaders"),
    atomic(core!("HostAlias"), "hostnames"),
    // core/v1 PodStatus and pod-level details
    merge(core!("PodStatus"), "conditions", "type", TYPE),
    merge(core!("PodStatus"), "podIPs", "ip", M(&["ip"])),
    strat(core!("PodStatus"), "hostIPs", "merge", "ip", ListFact::Atomic),
    strat(core!("PodStatus"), "resourceClaimStatuses", "merge,retainKeys", "name", NAME),
    atomic(core!("PodStatus"), "containerStatuses"),
    atomic(core!("PodStatus"), "initContainerStatuses"),
    atomic(core!("PodStatus"), "ephemeralContainerStatuses"),
    atomic(core!("PodSecurityContext"), "supplementalGroups"),
    atomic(core!("PodSecurityContext"), "sysctls"),
    atomic(core!("PodDNSConfig"), "nameservers"),
    atomic(core!("PodDNSConfig"), "options"),
    atomic(core!("PodDNSConfig"), "searches"),
    // core/v1 affinity and scheduling
    atomic(core!("NodeAffinity"), "preferredDuringSchedulingIgnoredDuringExecution"),
    atomic(core!("NodeSelector"), "nodeSelectorTerms"),
    atomic(core!("NodeSelectorTerm"), "matchExpressions"),
    atomic(core!("NodeSelectorTerm"), "matchFields"),
    atomic(core!("NodeSelectorRequirement"), "values"),
    atomic(core!("PodAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
    atomic(core!("PodAffinity"), "preferredDuringSchedulingIgnoredDuringExecution"),
    atomic(core!("PodAntiAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
    atomic(core!("PodAntiAffinity"), "preferredDuringSchedulingIgnoredDuringExecution"),
    atomic(core!("PodAffinityTerm"), "namespaces"),
    atomic(core!("PodAffinityTerm"), "matchLabelKeys"),
    atomic(core!("PodAffinityTerm"), "mismatchLabelKeys"),
    atomic(core!("TopologySpreadConstraint"), "matchLabelKeys"),
    // core/v1 volumes
    atomic(core!("ConfigMapVolumeSource"), "items"),
    atomic(core!("SecretVolumeSource"), "items"),
    atomic(core!("DownwardAPIVolumeSource"), "items"),
    atomic(core!("ProjectedVolumeSource"), "sources"),
    atomic(core!("ConfigMapProjection"), "items"),
    atomic(core!("SecretProjection"), "items"),
    atomic(core!("DownwardAPIProjection"), "items"),
    atomic(core!("PersistentVolumeClaimSpec"), "accessModes"),
    atomic(core!("PersistentVolumeClaimStatus"), "accessModes"),
    merge(core!("PersistentVolumeClaimStatus"), "conditions", "type", TYPE),
    // core/v1 Node, Namespace, Service, Endpoints, ServiceAccount, others
    strat(core!("NodeSpec"), "podCIDRs", "merge", "", Set),
    atomic(core!("NodeSpec"), "taints"),
    merge(core!("NodeStatus"), "conditions", "type", TYPE),
    merge(core!("NodeStatus"), "addresses", "type", TYPE),
    atomic(core!("NodeStatus"), "images"),
    atomic(core!("NodeStatus"), "volumesInUse"),
    atomic(core!("NodeStatus"), "volumesAttached"),
    atomic(core!("NodeStatus"), "runtimeHandlers"),
    atomic(core!("ContainerImage"), "names"),
    atomic(core!("NamespaceSpec"), "finalizers"),
    merge(core!("NamespaceStatus"), "conditions", "type", TYPE),
    merge(core!("ServiceSpec"), "ports", "port", M(&["port", "protocol"])),
    atomic_map(core!("ServiceSpec"), "selector"),
    atomic(core!("ServiceSpec"), "clusterIPs"),
    atomic(core!("ServiceSpec"), "externalIPs"),
    atomic(core!("ServiceSpec"), "ipFamilies"),
    atomic(core!("ServiceSpec"), "loadBalancerSourceRanges"),
    merge(core!("ServiceStatus"), "conditions", "type", TYPE),
    atomic(core!("LoadBalancerStatus"), "ingress"),
    atomic(core!("LoadBalancerIngress"), "ports"),
    atomic(core!("Endpoints"), "subsets"),
    atomic(core!("EndpointSubset"), "addresses"),
    atomic(core!("EndpointSubset"), "notReadyAddresses"),
    atomic(core!("EndpointSubset"), "ports"),
    merge(core!("ServiceAccount"), "secrets", "name", Unset),
    atomic(core!("ServiceAccount"), "imagePullSecrets"),
    atomic_map(core!("ReplicationControllerSpec"), "selector"),
    merge(core!("ReplicationControllerStatus"), "conditions", "type", TYPE),
    merge(core!("ComponentStatus"), "conditions", "type", TYPE),
    // meta/v1
    strat(meta!("ObjectMeta"), "finalizers", "merge", "", Set),
    merge(meta!("ObjectMeta"), "ownerReferences", "uid", M(&["uid"])),
    atomic(meta!("ObjectMeta"), "managedFields"),
    atomic(meta!("LabelSelector"), "matchExpressions"),
    atomic(meta!("LabelSelectorRequirement"), "values"),
    atomic(meta!("StatusDetails"), "causes"),
    atomic(meta!("DeleteOptions"), "dryRun"),
    // apps/v1
    strat(apps!("DeploymentSpec"), "strategy", "retainKeys", "", Unset),
    merge(apps!("DeploymentStatus"), "conditions", "type", TYPE),
    merge(apps!("ReplicaSetStatus"), "conditions", "type", TYPE),
    merge(apps!("StatefulSetStatus"), "conditions", "type", TYPE),
    merge(apps!("DaemonSetStatus"), "conditions", "type", TYPE),
    atomic(apps!("StatefulSetSpec"), "volumeClaimTemplates"),
    // batch/v1
    strat("io.k8s.api.batch.v1.JobStatus", "conditions", "merge", "type", ListFact::Atomic),
    strat("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded", "", "", Set),
    strat("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed", "", "", Set),
    atomic("io.k8s.api.batch.v1.PodFailurePolicy", "rules"),
    atomic("io.k8s.api.batch.v1.PodFailurePolicyRule", "onPodConditions"),
    strat("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "values", "", "", Set),
    atomic("io.k8s.api.batch.v1.SuccessPolicy", "rules"),
    atomic("io.k8s.api.batch.v1.CronJobStatus", "active"),
    // policy/v1, discovery.k8s.io/v1, networking.k8s.io/v1
    merge("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "conditions", "type", TYPE),
    atomic("io.k8s.api.discovery.v1.EndpointSlice", "endpoints"),
    atomic("io.k8s.api.discovery.v1.EndpointSlice", "ports"),
    strat("io.k8s.api.discovery.v1.Endpoint", "addresses", "", "", Set),
    atomic("io.k8s.api.networking.v1.IngressSpec", "rules"),
    atomic("io.k8s.api.networking.v1.IngressSpec", "tls"),
    atomic("io.k8s.api.networking.v1.IngressTLS", "hosts"),
    atomic("io.k8s.api.networking.v1.HTTPIngressRuleValue", "paths"),
    atomic("io.k8s.api.networking.v1.NetworkPolicySpec", "ingress"),
    atomic("io.k8s.api.networking.v1.NetworkPolicySpec", "egress"),
    atomic("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes"),
    // autoscaling/v2
    merge("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "conditions", "type", TYPE),
    atomic("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"),
    atomic("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentMetrics"),
    atomic("io.k8s.api.autoscaling.v2.HPAScalingRules", "policies"),
    // admissionregistration.k8s.io/v1
    merge("io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", "webhooks", "name", NAME),
    merge("io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", "webhooks", "name", NAME),
    merge("io.k8s.api.admissionregistration.v1.MutatingWebhook", "matchConditions", "name", NAME),
    merge("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "matchConditions", "name", NAME),
    atomic("io.k8s.api.admissionregistration.v1.MutatingWebhook", "rules"),
    atomic("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "rules"),
    atomic("io.k8s.api.admissionregistration.v1.MutatingWebhook", "admissionReviewVersions"),
    atomic("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "admissionReviewVersions"),
    merge("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "matchConditions", "name", NAME),
    atomic("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "validations"),
    atomic("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "auditAnnotations"),
    atomic("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec", "variables"),
    keyed("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus", "conditions", &["type"]),
    strat("io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec", "validationActions", "", "", Set),
    atomic("io.k8s.api.admissionregistration.v1.MatchResources", "resourceRules"),
    atomic("io.k8s.api.admissionregistration.v1.MatchResources", "excludeResourceRules"),
    // certificates.k8s.io/v1
    atomic("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "usages"),
    atomic("io.k8s.api.certificates.v1.CertificateSigningRequestSpec", "groups"),
    keyed("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions", &["type"]),
    // flowcontrol.apiserver.k8s.io/v1
    merge("io.k8s.api.flowcontrol.v1.FlowSchemaStatus", "conditions", "type", TYPE),
    merge("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationStatus", "conditions", "type", TYPE),
    atomic("io.k8s.api.flowcontrol.v1.FlowSchemaSpec", "rules"),
    atomic("io.k8s.api.flowcontrol.v1.PolicyRulesWithSubjects", "subjects"),
    atomic("io.k8s.api.flowcontrol.v1.PolicyRulesWithSubjects", "resourceRules"),
    atomic("io.k8s.api.flowcontrol.v1.PolicyRulesWithSubjects", "nonResourceRules"),
    // rbac.authorization.k8s.io/v1
    atomic("io.k8s.api.rbac.v1.Role", "rules"),
    atomic("io.k8s.api.rbac.v1.ClusterRole", "rules"),
    atomic("io.k8s.api.rbac.v1.RoleBinding", "subjects"),
    atomic("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects"),
    atomic("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors"),
    // storage.k8s.io/v1, node.k8s.io/v1
    merge("io.k8s.api.storage.v1.CSINodeSpec", "drivers", "name", NAME),
    strat("io.k8s.api.storage.v1.CSIDriverSpec", "volumeLifecycleModes", "", "", Set),
    atomic("io.k8s.api.storage.v1.StorageClass", "allowedTopologies"),
    atomic("io.k8s.api.node.v1.Scheduling", "tolerations"),
    // core/v1 storage and quota
    atomic(core!("PersistentVolumeSpec"), "accessModes"),
    atomic(core!("PersistentVolumeSpec"), "mountOptions"),
    atomic(core!("LimitRangeSpec"), "limits"),
    atomic(core!("ResourceQuotaSpec"), "scopes"),
];

/// Definitions replaced as a whole under apply (`+structType=atomic`, emitted as
/// `x-kubernetes-map-type: atomic` on the definition).
pub static ATOMIC_STRUCTS: &[&str] = &[
    meta!("LabelSelector"),
    meta!("OwnerReference"),
    core!("LocalObjectReference"),
    core!("ObjectReference"),
    core!("TypedLocalObjectReference"),
    core!("SecretReference"),
    core!("SecretKeySelector"),
    core!("ConfigMapKeySelector"),
    core!("ObjectFieldSelector"),
    core!("ResourceFieldSelector"),
    core!("NodeSelector"),
    core!("NodeSelectorTerm"),
    core!("TopologySelectorTerm"),
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.autoscaling.v1.CrossVersionObjectReference",
];

/// Defaults of list-map key fields (upstream's OpenAPI `default` on them), so
/// an element that omits one is still named: `(definition, field, default)`.
pub static KEY_DEFAULTS: &[(&str, &str, &str)] = &[
    (core!("ContainerPort"), "protocol", "TCP"),
    (core!("ServicePort"), "protocol", "TCP"),
];

/// The definition name of the object of a kind, e.g. `("", "v1", "Pod")` →
/// `io.k8s.api.core.v1.Pod`; `None` for kinds without a built-in schema.
pub fn root_type(group: &str, version: &str, kind: &str) -> Option<TypeRef> {
    crate::openapi::kinds::find(group, version, kind).map(|k| TypeRef::new(k.def_name()))
}

mod schema;
pub use schema::BuiltinSchema;

#[cfg(test)]
mod tests {
    use super::*;
    use kapi_machinery::schema::{FieldInfo, ListType, MapType, SchemaNav};

    fn field(ty: &str, name: &str) -> FieldInfo {
        let nav = BuiltinSchema::shared();
        let info = nav.field(&TypeRef::new(ty), name);
        FieldInfo::clone(&info.unwrap_or_else(|| panic!("{ty}.{name}")))
    }

    #[test]
    fn pod_spec_containers_merge_by_name() {
        let f = field(core!("PodSpec"), "containers");
        assert_eq!(f.elem, TypeRef::new(core!("Container")));
        assert_eq!(f.patch_strategies, vec!["merge".to_string()]);
        assert_eq!(f.patch_merge_key.as_deref(), Some("name"));
        assert_eq!(f.list_type, ListType::Map(vec!["name".into()]));
        let volumes = field(core!("PodSpec"), "volumes");
        assert!(volumes.has_strategy("retainKeys") && volumes.has_strategy("merge"));
    }

    #[test]
    fn container_ports_are_keyed_by_port_and_protocol() {
        let f = field(core!("Container"), "ports");
        assert_eq!(f.elem, TypeRef::new(core!("ContainerPort")));
        assert_eq!(f.patch_merge_key.as_deref(), Some("containerPort"));
        let keys = vec!["containerPort".to_string(), "protocol".to_string()];
        assert_eq!(f.list_type, ListType::Map(keys));
        assert_eq!(
            field(core!("Container"), "args").list_type,
            ListType::Atomic
        );
    }

    #[test]
    fn meta_and_apps_facts() {
        assert_eq!(
            field(meta!("ObjectMeta"), "finalizers").list_type,
            ListType::Set
        );
        let owners = field(meta!("ObjectMeta"), "ownerReferences");
        assert_eq!(owners.patch_merge_key.as_deref(), Some("uid"));
        let meta = field(core!("Pod"), "metadata");
        assert_eq!(meta.elem, TypeRef::new(meta!("ObjectMeta")));
        assert!(field(apps!("DeploymentSpec"), "strategy").has_strategy("retainKeys"));
        let selector = field(apps!("DeploymentSpec"), "selector");
        assert_eq!(selector.map_type, MapType::Atomic);
        assert_eq!(
            field(core!("ServiceSpec"), "selector").map_type,
            MapType::Atomic
        );
        // merge + merge key without a list type: a map keyed by the merge key.
        let secrets = field(core!("ServiceAccount"), "secrets");
        assert_eq!(secrets.list_type, ListType::Map(vec!["name".into()]));
        let conditions = field(apps!("DeploymentStatus"), "conditions");
        assert_eq!(conditions.patch_merge_key.as_deref(), Some("type"));
    }

    #[test]
    fn later_groups_facts() {
        let hooks = "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration";
        let webhooks = field(hooks, "webhooks");
        assert_eq!(webhooks.patch_merge_key.as_deref(), Some("name"));
        assert_eq!(webhooks.list_type, ListType::Map(vec!["name".into()]));
        let csr = "io.k8s.api.certificates.v1.CertificateSigningRequestStatus";
        let conditions = field(csr, "conditions");
        assert_eq!(conditions.list_type, ListType::Map(vec!["type".into()]));
        assert!(conditions.patch_strategies.is_empty());
        let drivers = field("io.k8s.api.storage.v1.CSINodeSpec", "drivers");
        assert_eq!(drivers.patch_merge_key.as_deref(), Some("name"));
        let rules = field("io.k8s.api.rbac.v1.ClusterRole", "rules");
        assert_eq!(rules.list_type, ListType::Atomic);
    }

    #[test]
    fn maps_and_unknowns() {
        let nav = BuiltinSchema::shared();
        let labels = field(meta!("ObjectMeta"), "labels");
        assert!(labels.elem.is_unknown());
        let limits = field(core!("ResourceRequirements"), "limits");
        let quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity";
        assert_eq!(nav.map_value(&limits.elem), Some(TypeRef::new(quantity)));
        assert!(nav.field(&limits.elem, "cpu").is_none());
        assert!(nav.field(&TypeRef::new(core!("PodSpec")), "nope").is_none());
        assert!(nav.field(&TypeRef::UNKNOWN, "x").is_none());
    }

    #[test]
    fn root_types_of_kinds() {
        let pod = root_type("", "v1", "Pod");
        assert_eq!(pod, Some(TypeRef::new(core!("Pod"))));
        let deploy = root_type("apps", "v1", "Deployment");
        assert_eq!(deploy, Some(TypeRef::new(apps!("Deployment"))));
        let scale = root_type("autoscaling", "v1", "Scale");
        assert_eq!(scale, Some(TypeRef::new("io.k8s.api.autoscaling.v1.Scale")));
        assert_eq!(root_type("example.com", "v1", "Widget"), None);
    }
}
