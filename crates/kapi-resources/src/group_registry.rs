//! Declarations of the built-in groups beyond core and apps that live in their
//! own folders (`rbac/`, ...): names, scope, verbs, subresources, short names
//! and categories as kube-apiserver 1.33 discovery serves them, and upstream's
//! etcd key prefixes.
//!
//! Where to look next: `registry.rs` (the `Decl` builder and the core and apps
//! declarations), each group's folder for its strategies.

use std::sync::Arc;

use crate::node::RuntimeClassStrategy;
use crate::rbac::{
    ClusterRoleBindingStrategy, ClusterRoleStrategy, RoleBindingStrategy, RoleStrategy,
};
use crate::registry::Decl;
use crate::scheduling::PriorityClassStrategy;
use crate::storage::{
    CsiDriverStrategy, CsiNodeStrategy, CsiStorageCapacityStrategy, StorageClassStrategy,
    VolumeAttachmentStrategy,
};
use kapi_registry::{Subresource, Verb};

/// Every declaration of this file, in discovery order.
pub(crate) fn resources() -> Vec<Decl> {
    let mut all = rbac();
    all.extend(storage());
    all.extend(scheduling_and_node());
    all.push(
        Decl::new(
            crate::certificates::GROUP,
            "certificatesigningrequests",
            "CertificateSigningRequest",
            Arc::new(crate::certificates::CertificateSigningRequestStrategy),
        )
        .cluster_scoped()
        .short(&["csr"])
        .sub(vec![Subresource::Approval, Subresource::Status]),
    );
    all.extend(reviews());
    all.extend(flowcontrol());
    all.extend(admission());
    all.push(
        Decl::new(
            crate::apiregistration::GROUP,
            "apiservices",
            "APIService",
            Arc::new(crate::apiregistration::ApiServiceStrategy),
        )
        .cluster_scoped()
        .categories(&["api-extensions"])
        .sub(vec![Subresource::Status])
        .key("/apiregistration.k8s.io/apiservices")
        .stored_as_json(),
    );
    all
}

fn admission() -> Vec<Decl> {
    use crate::admissionregistration::{
        PolicyBindingStrategy, PolicyStrategy, WebhookConfigurationStrategy, GROUP,
    };
    let ext: &'static [&'static str] = &["api-extensions"];
    vec![
        Decl::new(
            GROUP,
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            Arc::new(WebhookConfigurationStrategy { mutating: true }),
        )
        .cluster_scoped()
        .categories(ext),
        Decl::new(
            GROUP,
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            Arc::new(PolicyStrategy),
        )
        .cluster_scoped()
        .categories(ext)
        .sub(vec![Subresource::Status]),
        Decl::new(
            GROUP,
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            Arc::new(PolicyBindingStrategy),
        )
        .cluster_scoped()
        .categories(ext),
        Decl::new(
            GROUP,
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            Arc::new(WebhookConfigurationStrategy { mutating: false }),
        )
        .cluster_scoped()
        .categories(ext),
    ]
}

fn flowcontrol() -> Vec<Decl> {
    use crate::flowcontrol::{FlowSchemaStrategy, PriorityLevelConfigurationStrategy, GROUP};
    let status = || vec![Subresource::Status];
    vec![
        Decl::new(
            GROUP,
            "flowschemas",
            "FlowSchema",
            Arc::new(FlowSchemaStrategy),
        )
        .cluster_scoped()
        .sub(status()),
        Decl::new(
            GROUP,
            "prioritylevelconfigurations",
            "PriorityLevelConfiguration",
            Arc::new(PriorityLevelConfigurationStrategy),
        )
        .cluster_scoped()
        .sub(status()),
    ]
}

/// The create-only virtual resources: storage supports `create` only.
fn reviews() -> Vec<Decl> {
    use crate::reviews::{Review, ReviewStrategy, AUTHENTICATION, AUTHORIZATION};
    let create: &'static [Verb] = &[Verb::Create];
    let decl = |group, plural, kind, review| {
        Decl::new(group, plural, kind, Arc::new(ReviewStrategy(review))).verbs(create)
    };
    vec![
        decl(
            AUTHENTICATION,
            "selfsubjectreviews",
            "SelfSubjectReview",
            Review::SelfSubject,
        )
        .cluster_scoped(),
        // kubectl 1.27 asks v1beta1 for `auth whoami` (upstream serves it with
        // `--runtime-config=authentication.k8s.io/v1beta1=true`).
        decl(
            AUTHENTICATION,
            "selfsubjectreviews",
            "SelfSubjectReview",
            Review::SelfSubject,
        )
        .cluster_scoped()
        .at_version("v1beta1")
        // The protobuf schema (k8s-pb) has no v1beta1 SelfSubjectReview;
        // kubectl 1.27, the client that asks for it, speaks JSON.
        .json_only(),
        decl(AUTHENTICATION, "tokenreviews", "TokenReview", Review::Token).cluster_scoped(),
        decl(
            AUTHORIZATION,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            Review::LocalSubjectAccess,
        ),
        decl(
            AUTHORIZATION,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            Review::SelfSubjectAccess,
        )
        .cluster_scoped(),
        decl(
            AUTHORIZATION,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            Review::SelfSubjectRules,
        )
        .cluster_scoped(),
        decl(
            AUTHORIZATION,
            "subjectaccessreviews",
            "SubjectAccessReview",
            Review::SubjectAccess,
        )
        .cluster_scoped(),
    ]
}

fn storage() -> Vec<Decl> {
    let g = crate::storage::GROUP;
    vec![
        Decl::new(g, "csidrivers", "CSIDriver", Arc::new(CsiDriverStrategy)).cluster_scoped(),
        Decl::new(g, "csinodes", "CSINode", Arc::new(CsiNodeStrategy)).cluster_scoped(),
        Decl::new(
            g,
            "csistoragecapacities",
            "CSIStorageCapacity",
            Arc::new(CsiStorageCapacityStrategy),
        ),
        Decl::new(
            g,
            "storageclasses",
            "StorageClass",
            Arc::new(StorageClassStrategy),
        )
        .cluster_scoped()
        .short(&["sc"]),
        Decl::new(
            g,
            "volumeattachments",
            "VolumeAttachment",
            Arc::new(VolumeAttachmentStrategy),
        )
        .cluster_scoped()
        .sub(vec![Subresource::Status]),
    ]
}

fn scheduling_and_node() -> Vec<Decl> {
    vec![
        Decl::new(
            crate::scheduling::GROUP,
            "priorityclasses",
            "PriorityClass",
            Arc::new(PriorityClassStrategy),
        )
        .cluster_scoped()
        .short(&["pc"]),
        Decl::new(
            crate::node::GROUP,
            "runtimeclasses",
            "RuntimeClass",
            Arc::new(RuntimeClassStrategy),
        )
        .cluster_scoped(),
    ]
}

fn rbac() -> Vec<Decl> {
    let g = crate::rbac::GROUP;
    vec![
        Decl::new(
            g,
            "clusterrolebindings",
            "ClusterRoleBinding",
            Arc::new(ClusterRoleBindingStrategy),
        )
        .cluster_scoped(),
        Decl::new(
            g,
            "clusterroles",
            "ClusterRole",
            Arc::new(ClusterRoleStrategy),
        )
        .cluster_scoped(),
        Decl::new(
            g,
            "rolebindings",
            "RoleBinding",
            Arc::new(RoleBindingStrategy),
        ),
        Decl::new(g, "roles", "Role", Arc::new(RoleStrategy)),
    ]
}
