//! Which Rust type backs which kind: the table from (group, version, kind) to the
//! k8s-openapi type whose schemars schema is the kind's OpenAPI definition.
//!
//! To serve another built-in kind, add one line to the `kinds!` invocation
//! (`"group" "version" Kind list => path::to::Type;`, `list` when the kind has a
//! `<Kind>List`, `single` otherwise). Definition names are k8s-openapi's
//! `JsonSchema::schema_name`, which already are upstream's names
//! (`io.k8s.api.core.v1.Pod`), so no renaming happens anywhere.
//!
//! Invariants: one entry per (group, version, kind); the definition of a kind is
//! named `schema_name()` and its list `schema_name() + "List"`.
//! Where to look next: `defs.rs` (how entries become definitions).

use std::borrow::Cow;

use k8s_openapi::api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::{JsonSchema, Schema, SchemaGenerator};

/// One kind with a built-in schema.
pub struct KindEntry {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Whether a `<Kind>List` definition is generated.
    pub listable: bool,
    name: fn() -> Cow<'static, str>,
    add: fn(&mut SchemaGenerator) -> Schema,
}

impl KindEntry {
    /// The upstream definition name, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub fn def_name(&self) -> String {
        (self.name)().into_owned()
    }

    /// Registers the kind's schema (and everything it references) in `generator`.
    pub fn add_to(&self, generator: &mut SchemaGenerator) {
        (self.add)(generator);
    }
}

/// Adds `T`'s schema to the generator's definitions, returning its `$ref`.
pub fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

macro_rules! kinds {
    ($( $group:literal $version:literal $kind:ident $list:ident => $ty:path; )*) => {
        /// Every kind with a built-in schema.
        pub static KINDS: &[KindEntry] = &[$(
            KindEntry {
                group: $group,
                version: $version,
                kind: stringify!($kind),
                listable: kinds!(@list $list),
                name: <$ty as JsonSchema>::schema_name,
                add: add::<$ty>,
            },
        )*];
    };
    (@list list) => { true };
    (@list single) => { false };
}

kinds! {
    "" "v1" Binding single => api::core::v1::Binding;
    "" "v1" ComponentStatus list => api::core::v1::ComponentStatus;
    "" "v1" ConfigMap list => api::core::v1::ConfigMap;
    "" "v1" Endpoints list => api::core::v1::Endpoints;
    "" "v1" Event list => api::core::v1::Event;
    "" "v1" LimitRange list => api::core::v1::LimitRange;
    "" "v1" Namespace list => api::core::v1::Namespace;
    "" "v1" Node list => api::core::v1::Node;
    "" "v1" PersistentVolume list => api::core::v1::PersistentVolume;
    "" "v1" PersistentVolumeClaim list => api::core::v1::PersistentVolumeClaim;
    "" "v1" Pod list => api::core::v1::Pod;
    "" "v1" PodTemplate list => api::core::v1::PodTemplate;
    "" "v1" ReplicationController list => api::core::v1::ReplicationController;
    "" "v1" ResourceQuota list => api::core::v1::ResourceQuota;
    "" "v1" Secret list => api::core::v1::Secret;
    "" "v1" Service list => api::core::v1::Service;
    "" "v1" ServiceAccount list => api::core::v1::ServiceAccount;
    "" "v1" Status single => meta::Status;
    "admissionregistration.k8s.io" "v1" MutatingWebhookConfiguration list => api::admissionregistration::v1::MutatingWebhookConfiguration;
    "admissionregistration.k8s.io" "v1" ValidatingAdmissionPolicy list => api::admissionregistration::v1::ValidatingAdmissionPolicy;
    "admissionregistration.k8s.io" "v1" ValidatingAdmissionPolicyBinding list => api::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    "admissionregistration.k8s.io" "v1" ValidatingWebhookConfiguration list => api::admissionregistration::v1::ValidatingWebhookConfiguration;
    "apps" "v1" ControllerRevision list => api::apps::v1::ControllerRevision;
    "apps" "v1" DaemonSet list => api::apps::v1::DaemonSet;
    "apps" "v1" Deployment list => api::apps::v1::Deployment;
    "apps" "v1" ReplicaSet list => api::apps::v1::ReplicaSet;
    "apps" "v1" StatefulSet list => api::apps::v1::StatefulSet;
    "authentication.k8s.io" "v1" SelfSubjectReview single => api::authentication::v1::SelfSubjectReview;
    "authentication.k8s.io" "v1" TokenRequest single => api::authentication::v1::TokenRequest;
    "authentication.k8s.io" "v1" TokenReview single => api::authentication::v1::TokenReview;
    "authorization.k8s.io" "v1" LocalSubjectAccessReview single => api::authorization::v1::LocalSubjectAccessReview;
    "authorization.k8s.io" "v1" SelfSubjectAccessReview single => api::authorization::v1::SelfSubjectAccessReview;
    "authorization.k8s.io" "v1" SelfSubjectRulesReview single => api::authorization::v1::SelfSubjectRulesReview;
    "authorization.k8s.io" "v1" SubjectAccessReview single => api::authorization::v1::SubjectAccessReview;
    "apiextensions.k8s.io" "v1" CustomResourceDefinition list => k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    "apiregistration.k8s.io" "v1" APIService list => k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    "autoscaling" "v1" Scale single => api::autoscaling::v1::Scale;
    "autoscaling" "v1" HorizontalPodAutoscaler list => api::autoscaling::v1::HorizontalPodAutoscaler;
    "autoscaling" "v2" HorizontalPodAutoscaler list => api::autoscaling::v2::HorizontalPodAutoscaler;
    "batch" "v1" Job list => api::batch::v1::Job;
    "batch" "v1" CronJob list => api::batch::v1::CronJob;
    "certificates.k8s.io" "v1" CertificateSigningRequest list => api::certificates::v1::CertificateSigningRequest;
    "coordination.k8s.io" "v1" Lease list => api::coordination::v1::Lease;
    "discovery.k8s.io" "v1" EndpointSlice list => api::discovery::v1::EndpointSlice;
    "events.k8s.io" "v1" Event list => api::events::v1::Event;
    "flowcontrol.apiserver.k8s.io" "v1" FlowSchema list => api::flowcontrol::v1::FlowSchema;
    "flowcontrol.apiserver.k8s.io" "v1" PriorityLevelConfiguration list => api::flowcontrol::v1::PriorityLevelConfiguration;
    "networking.k8s.io" "v1" Ingress list => api::networking::v1::Ingress;
    "networking.k8s.io" "v1" IngressClass list => api::networking::v1::IngressClass;
    "networking.k8s.io" "v1" NetworkPolicy list => api::networking::v1::NetworkPolicy;
    "node.k8s.io" "v1" RuntimeClass list => api::node::v1::RuntimeClass;
    "policy" "v1" PodDisruptionBudget list => api::policy::v1::PodDisruptionBudget;
    "policy" "v1" Eviction single => api::policy::v1::Eviction;
    "rbac.authorization.k8s.io" "v1" ClusterRole list => api::rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io" "v1" ClusterRoleBinding list => api::rbac::v1::ClusterRoleBinding;
    "rbac.authorization.k8s.io" "v1" Role list => api::rbac::v1::Role;
    "rbac.authorization.k8s.io" "v1" RoleBinding list => api::rbac::v1::RoleBinding;
    "scheduling.k8s.io" "v1" PriorityClass list => api::scheduling::v1::PriorityClass;
    "storage.k8s.io" "v1" StorageClass list => api::storage::v1::StorageClass;
    "storage.k8s.io" "v1" CSIDriver list => api::storage::v1::CSIDriver;
    "storage.k8s.io" "v1" CSINode list => api::storage::v1::CSINode;
    "storage.k8s.io" "v1" VolumeAttachment list => api::storage::v1::VolumeAttachment;
    "storage.k8s.io" "v1" CSIStorageCapacity list => api::storage::v1::CSIStorageCapacity;
}

/// The entry of a kind, if it has a built-in schema.
pub fn find(group: &str, version: &str, kind: &str) -> Option<&'static KindEntry> {
    KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}

/// Meta types every document may reference (parameters, responses, discovery).
pub fn add_meta(generator: &mut SchemaGenerator) {
    add::<meta::ListMeta>(generator);
    add::<meta::DeleteOptions>(generator);
    add::<meta::Patch>(generator);
    add::<meta::WatchEvent<meta::Status>>(generator);
    add::<meta::APIResourceList>(generator);
    add::<meta::APIGroup>(generator);
    add::<meta::APIGroupList>(generator);
    add::<meta::APIVersions>(generator);
}

/// Meta kinds whose definitions carry one group-version-kind per served
/// group-version (upstream registers them in every group).
pub const MULTI_GV_KINDS: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "DeleteOptions",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
        "WatchEvent",
    ),
];

/// Meta kinds served only at core v1 (discovery documents).
pub const CORE_META_KINDS: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        "APIResourceList",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "APIGroup"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        "APIGroupList",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "APIVersions",
    ),
];
