//! The `system:controller:*` ClusterRoles of upstream's
//! `bootstrappolicy/controller_policy.go`, each bound to the kube-system
//! service account of the same name — what kube-controller-manager's
//! controllers run as with `--use-service-account-credentials`.
//!
//! Feature-gated roles follow 1.33's default gates: the service CIDR
//! controller (MultiCIDRServiceAllocator, GA), the ValidatingAdmissionPolicy
//! status controller (GA), StatefulSet PVC deletion (GA) and the SELinux
//! warning controller (SELinuxChangePolicy, beta on) are in; DRA's
//! resource claim controller, VolumeAttributesClass protection, storage version
//! GC and migration (beta-off / alpha) are out.

use serde_json::Value;

use super::roles::{cluster_binding, cluster_role, events, r, rn, sa, READ};

const PREFIX: &str = "system:controller:";

fn controllers() -> Vec<(&'static str, Vec<Value>)> {
    let ev = events;
    vec![
        (
            "attachdetach-controller",
            vec![
                r("list watch", "", "persistentvolumes persistentvolumeclaims"),
                r(READ, "", "nodes"),
                r("patch update", "", "nodes/status"),
                r("list watch", "", "pods"),
                ev(),
                r(
                    "get create delete list watch",
                    "storage.k8s.io",
                    "volumeattachments",
                ),
                r(READ, "storage.k8s.io", "csidrivers"),
                r(READ, "storage.k8s.io", "csinodes"),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![r(
                "escalate get list watch update patch",
                "rbac.authorization.k8s.io",
                "clusterroles",
            )],
        ),
        (
            "cronjob-controller",
            vec![
                r("get list watch update", "batch", "cronjobs"),
                r("get list watch create update delete patch", "batch", "jobs"),
                r("update", "batch", "cronjobs/status"),
                r("update", "batch", "cronjobs/finalizers"),
                r("list watch delete", "", "pods"),
                ev(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                r(READ, "extensions|apps", "daemonsets"),
                r("update", "extensions|apps", "daemonsets/status"),
                r("update", "extensions|apps", "daemonsets/finalizers"),
                r("list watch", "", "nodes"),
                r("list watch create delete patch", "", "pods"),
                r("create", "", "pods/binding"),
                r(
                    "get list watch create delete update patch",
                    "apps",
                    "controllerrevisions",
                ),
                ev(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                r("get list watch update", "extensions|apps", "deployments"),
                r("update", "extensions|apps", "deployments/status"),
                r("update", "extensions|apps", "deployments/finalizers"),
                r(
                    "get list watch create update patch delete",
                    "apps|extensions",
                    "replicasets",
                ),
                r("get list watch update", "", "pods"),
                ev(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                r(READ, "extensions|apps", "deployments"),
                r(READ, "apps|extensions", "replicasets"),
                r(READ, "", "replicationcontrollers"),
                r(READ, "policy", "poddisruptionbudgets"),
                r(READ, "apps", "statefulsets"),
                r("update", "policy", "poddisruptionbudgets/status"),
                r("patch update", "", "pods/status"),
                r("get", "*", "*/scale"),
                ev(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                r(READ, "", "services pods"),
                r("get list watch create update delete", "", "endpoints"),
                r("create", "", "endpoints/restricted"),
                ev(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                r(READ, "", "services pods nodes"),
                r("update", "", "services/finalizers"),
                r(
                    "get list watch create update delete",
                    "discovery.k8s.io",
                    "endpointslices",
                ),
                ev(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                r(READ, "", "services endpoints"),
                r("update", "", "services/finalizers"),
                r("update", "", "endpoints/finalizers"),
                r(
                    "get list watch create update delete",
                    "discovery.k8s.io",
                    "endpointslices",
                ),
                ev(),
            ],
        ),
        (
            "expand-controller",
            vec![
                r("get list watch update patch", "", "persistentvolumes"),
                r("update patch", "", "persistentvolumeclaims/status"),
                r(READ, "", "persistentvolumeclaims"),
                ev(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                r(READ, "", "pods"),
                r("update", "", "pods/finalizers"),
                r("get list watch create", "", "persistentvolumeclaims"),
                ev(),
            ],
        ),
        (
            "generic-garbage-collector",
            vec![r("get list watch patch update delete", "*", "*"), ev()],
        ),
        (
            "horizontal-pod-autoscaler",
            vec![
                r(READ, "autoscaling", "horizontalpodautoscalers"),
                r("update", "autoscaling", "horizontalpodautoscalers/status"),
                r("get update", "*", "*/scale"),
                r("list watch", "", "pods"),
                r("list watch", "metrics.k8s.io", "pods"),
                r(READ, "custom.metrics.k8s.io", "*"),
                r(READ, "external.metrics.k8s.io", "*"),
                ev(),
            ],
        ),
        (
            "job-controller",
            vec![
                r("get list watch update patch", "batch", "jobs"),
                r("update", "batch", "jobs/status"),
                r("update", "batch", "jobs/finalizers"),
                r("list watch create delete patch", "", "pods"),
                ev(),
            ],
        ),
        (
            "namespace-controller",
            vec![
                r("get list watch delete", "", "namespaces"),
                r("update", "", "namespaces/finalize namespaces/status"),
                r("get list watch delete deletecollection", "*", "*"),
            ],
        ),
        (
            "node-controller",
            vec![
                r("get list watch update delete patch", "", "nodes"),
                r("patch update", "", "nodes/status"),
                r("patch update", "", "pods/status"),
                r("list watch get delete", "", "pods"),
                ev(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                r(
                    "get list watch update create delete",
                    "",
                    "persistentvolumes",
                ),
                r("update", "", "persistentvolumes/status"),
                r("get list watch update", "", "persistentvolumeclaims"),
                r("update", "", "persistentvolumeclaims/status"),
                r("list watch get create delete", "", "pods"),
                r(READ, "storage.k8s.io", "storageclasses"),
                r("watch", "", "events"),
                ev(),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![
                r("list watch delete", "", "pods"),
                r(READ, "", "nodes"),
                r("patch", "", "pods/status"),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                r("get list watch update", "apps|extensions", "replicasets"),
                r("update", "apps|extensions", "replicasets/status"),
                r("update", "apps|extensions", "replicasets/finalizers"),
                r("list watch patch create delete", "", "pods"),
                ev(),
            ],
        ),
        (
            "replication-controller",
            vec![
                r("get list watch update", "", "replicationcontrollers"),
                r("update", "", "replicationcontrollers/status"),
                r("update", "", "replicationcontrollers/finalizers"),
                r("list watch patch create delete", "", "pods"),
                ev(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![
                r("list watch", "*", "*"),
                r("update", "", "resourcequotas/status"),
                ev(),
            ],
        ),
        (
            "route-controller",
            vec![
                r("list watch", "", "nodes"),
                r("patch", "", "nodes/status"),
                ev(),
            ],
        ),
        (
            "service-account-controller",
            vec![r("create", "", "serviceaccounts"), ev()],
        ),
        (
            "service-controller",
            vec![
                r(READ, "", "services"),
                r("patch update", "", "services/status"),
                r("list watch", "", "nodes"),
                ev(),
            ],
        ),
        (
            "selinux-warning-controller",
            vec![
                ev(),
                r(READ, "", "persistentvolumes"),
                r(READ, "", "persistentvolumeclaims"),
                r(READ, "", "pods"),
                r(READ, "storage.k8s.io", "csidrivers"),
            ],
        ),
        (
            "service-cidrs-controller",
            vec![
                r(
                    "get list watch patch update",
                    "networking.k8s.io",
                    "servicecidrs",
                ),
                r(
                    "patch update",
                    "networking.k8s.io",
                    "servicecidrs/finalizers",
                ),
                r("patch update", "networking.k8s.io", "servicecidrs/status"),
                r(READ, "networking.k8s.io", "ipaddresses"),
                ev(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                r("list watch", "", "pods"),
                r(READ, "apps", "statefulsets"),
                r("update", "apps", "statefulsets/status"),
                r("update", "apps", "statefulsets/finalizers"),
                r("get create delete update patch", "", "pods"),
                r(
                    "get create delete update patch list watch",
                    "apps",
                    "controllerrevisions",
                ),
                r("get create", "", "persistentvolumeclaims"),
                ev(),
                r("update delete", "", "persistentvolumeclaims"),
            ],
        ),
        (
            "ttl-controller",
            vec![r("update patch list watch", "", "nodes"), ev()],
        ),
        (
            "certificate-controller",
            vec![
                r(
                    "get list watch delete",
                    "certificates.k8s.io",
                    "certificatesigningrequests",
                ),
                r(
                    "update",
                    "certificates.k8s.io",
                    "certificatesigningrequests/status certificatesigningrequests/approval",
                ),
                rn(
                    "approve",
                    "certificates.k8s.io",
                    "signers",
                    "kubernetes.io/kube-apiserver-client-kubelet",
                ),
                rn(
                    "sign",
                    "certificates.k8s.io",
                    "signers",
                    "kubernetes.io/legacy-unknown kubernetes.io/kube-apiserver-client \
                     kubernetes.io/kube-apiserver-client-kubelet kubernetes.io/kubelet-serving",
                ),
                r("create", "authorization.k8s.io", "subjectaccessreviews"),
                ev(),
            ],
        ),
        (
            "pvc-protection-controller",
            vec![
                r("get list watch update", "", "persistentvolumeclaims"),
                r("list watch get", "", "pods"),
                ev(),
            ],
        ),
        (
            "pv-protection-controller",
            vec![r("get list watch update", "", "persistentvolumes"), ev()],
        ),
        (
            "ttl-after-finished-controller",
            vec![r("get list watch delete", "batch", "jobs"), ev()],
        ),
        (
            "root-ca-cert-publisher",
            vec![r("create update", "", "configmaps"), ev()],
        ),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                r(
                    READ,
                    "admissionregistration.k8s.io",
                    "validatingadmissionpolicies",
                ),
                r(
                    "get patch update",
                    "admissionregistration.k8s.io",
                    "validatingadmissionpolicies/status",
                ),
                ev(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                rn(
                    "get",
                    "",
                    "configmaps",
                    "kube-apiserver-legacy-service-account-token-tracking",
                ),
                r("patch delete", "", "secrets"),
            ],
        ),
    ]
}

/// The controller ClusterRoles.
pub fn roles() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, rules)| cluster_role(&format!("{PREFIX}{name}"), rules))
        .collect()
}

/// Their ClusterRoleBindings (to `kube-system/<controller>`).
pub fn bindings() -> Vec<Value> {
    controllers()
        .into_iter()
        .map(|(name, _)| cluster_binding(&format!("{PREFIX}{name}"), vec![sa("kube-system", name)]))
        .collect()
}
