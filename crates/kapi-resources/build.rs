//! Build script: the OpenAPI definitions of the built-in kinds, generated here
//! from k8s-openapi's schemars schemas rather than in the server, so that
//! neither schemars nor the schema function of every k8s-openapi type is
//! linked into the binary (about 5 MB of code that ran once, at start-up).
//!
//! Writes two files to `OUT_DIR`:
//! - `definitions.rs`: every definition reachable from the kinds below and
//!   the meta types, exactly as schemars emits them, as a table of (name, JSON
//!   text) sorted by name (`openapi/defs.rs` parses and completes each one
//!   when it is first asked for);
//! - `kinds.rs`: the `KINDS` table (`openapi/kinds.rs`), each kind with the
//!   definition name k8s-openapi gives its type (`io.k8s.api.core.v1.Pod`).
//!
//! To serve another built-in kind, add one line to the `kinds!` invocation
//! (`"group" "version" Kind list => path::to::Type;`, `list` when the kind has
//! a `<Kind>List`, `single` otherwise).

use std::fmt::Write as _;

use k8s_openapi::api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};

/// One kind with a built-in schema.
struct Kind {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    listable: bool,
    /// The definition name of the type (`JsonSchema::schema_name`).
    name: fn() -> std::borrow::Cow<'static, str>,
    /// Adds the type's schema, and everything it references, to a generator.
    add: fn(&mut SchemaGenerator),
}

fn add<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

macro_rules! kinds {
    ($( $group:literal $version:literal $kind:ident $list:ident => $ty:path; )*) => {
        const KINDS: &[Kind] = &[$(
            Kind {
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

/// Meta types every document may reference (parameters, responses, discovery).
const META: &[fn(&mut SchemaGenerator)] = &[
    add::<meta::ListMeta>,
    add::<meta::DeleteOptions>,
    add::<meta::Patch>,
    add::<meta::WatchEvent<meta::Status>>,
    add::<meta::APIResourceList>,
    add::<meta::APIGroup>,
    add::<meta::APIGroupList>,
    add::<meta::APIVersions>,
];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set"));

    let mut generator = SchemaSettings::draft07()
        .with(|s| {
            s.definitions_path = "/definitions".into();
            s.meta_schema = None;
            s.transforms.clear();
        })
        .into_generator();
    for kind in KINDS {
        (kind.add)(&mut generator);
    }
    for add in META {
        add(&mut generator);
    }
    let mut defs: Vec<_> = generator.take_definitions(false).into_iter().collect();
    defs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut table = String::from(
        "/// Every generated definition as (name, JSON), sorted by name (generated by `build.rs`).\n",
    );
    table.push_str("pub static GENERATED: &[(&str, &str)] = &[\n");
    for (name, def) in &defs {
        let def = serde_json::to_string(def).expect("a schema serializes");
        writeln!(table, "    ({name:?}, {def:?}),").expect("writing to a String");
    }
    table.push_str("];\n");
    std::fs::write(out.join("definitions.rs"), table).expect("write definitions.rs");

    let mut table =
        String::from("/// Every kind with a built-in schema (generated by `build.rs`).\n");
    table.push_str("pub static KINDS: &[KindEntry] = &[\n");
    for k in KINDS {
        writeln!(
            table,
            "    KindEntry {{ group: {:?}, version: {:?}, kind: {:?}, listable: {}, def: {:?} }},",
            k.group,
            k.version,
            k.kind,
            k.listable,
            (k.name)(),
        )
        .expect("writing to a String");
    }
    table.push_str("];\n");
    std::fs::write(out.join("kinds.rs"), table).expect("write kinds.rs");
}
