//! The objects of the bootstrap RBAC policy as data (upstream
//! `bootstrappolicy/policy.go` and `namespace_policy.go`; the controller roles
//! are in `controller_roles.rs`): ClusterRoles, ClusterRoleBindings, and the
//! Roles/RoleBindings of `kube-system` and `kube-public`.
//!
//! Rules are written compactly: verbs and resources as space-separated words,
//! API groups separated by `|` (`"|events.k8s.io"` is the core group and
//! events.k8s.io). As upstream's rule builder, verbs, resources, resource
//! names and non-resource URLs are sorted; API groups keep their order.

use serde_json::{json, Map, Value};

pub(super) const GROUP: &str = "rbac.authorization.k8s.io";
pub(super) const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

pub(super) const READ: &str = "get list watch";
const WRITE: &str = "create delete deletecollection patch update";
const READ_WRITE: &str = "create delete deletecollection get list patch update watch";

fn words(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.split_whitespace().map(str::to_owned).collect();
    v.sort();
    v
}

/// A resource rule. Every list sorted, as upstream's `PolicyRuleBuilder.Rule`
/// sorts them (the groups too: `apps` before `extensions`).
pub(super) fn r(verbs: &str, groups: &str, resources: &str) -> Value {
    let mut groups: Vec<&str> = groups.split('|').collect();
    groups.sort_unstable();
    json!({"verbs": words(verbs), "apiGroups": groups, "resources": words(resources)})
}

/// A resource rule limited to `names`.
pub(super) fn rn(verbs: &str, groups: &str, resources: &str, names: &str) -> Value {
    let mut rule = r(verbs, groups, resources);
    rule["resourceNames"] = json!(words(names));
    rule
}

/// A non-resource rule.
fn u(verbs: &str, urls: &str) -> Value {
    json!({"verbs": words(verbs), "nonResourceURLs": words(urls)})
}

/// Upstream's `eventsRule()`.
pub(super) fn events() -> Value {
    r("create update patch", "|events.k8s.io", "events")
}

pub(super) fn meta(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut l = Map::new();
    l.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    for (k, v) in labels {
        l.insert((*k).into(), (*v).into());
    }
    let mut m = json!({"name": name, "labels": l, "annotations": {AUTOUPDATE: "true"}});
    if let Some(ns) = namespace {
        m["namespace"] = ns.into();
    }
    m
}

pub(super) fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": meta(name, None, &[]), "rules": rules})
}

fn labelled(name: &str, label: &str, rules: Vec<Value>) -> Value {
    let mut role = cluster_role(name, rules);
    role["metadata"] = meta(name, None, &[(label, "true")]);
    role
}

fn aggregated(name: &str, selector: &str, label: Option<&str>) -> Value {
    let labels: Vec<(&str, &str)> = label.map(|l| (l, "true")).into_iter().collect();
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": meta(name, None, &labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selector: "true"}}]},
        "rules": []})
}

fn edit_rules() -> Vec<Value> {
    vec![
        r(
            READ,
            "",
            "pods/attach pods/proxy pods/exec pods/portforward secrets services/proxy",
        ),
        r("impersonate", "", "serviceaccounts"),
        r(
            WRITE,
            "",
            "pods pods/attach pods/proxy pods/exec pods/portforward",
        ),
        r("create", "", "pods/eviction"),
        r(
            WRITE,
            "",
            "replicationcontrollers replicationcontrollers/scale serviceaccounts services \
             services/proxy persistentvolumeclaims configmaps secrets events",
        ),
        r("create", "", "serviceaccounts/token"),
        r(
            WRITE,
            "apps",
            "statefulsets statefulsets/scale daemonsets deployments deployments/scale \
             deployments/rollback replicasets replicasets/scale",
        ),
        r(WRITE, "autoscaling", "horizontalpodautoscalers"),
        r(WRITE, "batch", "jobs cronjobs"),
        r(
            WRITE,
            "extensions",
            "daemonsets deployments deployments/scale deployments/rollback ingresses \
             replicasets replicasets/scale replicationcontrollers/scale networkpolicies",
        ),
        r(WRITE, "policy", "poddisruptionbudgets"),
        r(WRITE, "networking.k8s.io", "networkpolicies ingresses"),
        r(READ_WRITE, "coordination.k8s.io", "leases"),
    ]
}

fn view_rules() -> Vec<Value> {
    vec![
        r(
            READ,
            "",
            "pods replicationcontrollers replicationcontrollers/scale serviceaccounts services \
             services/status endpoints persistentvolumeclaims persistentvolumeclaims/status \
             configmaps",
        ),
        r(
            READ,
            "",
            "limitranges resourcequotas bindings events pods/status resourcequotas/status \
             namespaces/status replicationcontrollers/status pods/log",
        ),
        r(READ, "", "namespaces"),
        r(READ, "discovery.k8s.io", "endpointslices"),
        r(
            READ,
            "apps",
            "controllerrevisions statefulsets statefulsets/status statefulsets/scale daemonsets \
             daemonsets/status deployments deployments/status deployments/scale replicasets \
             replicasets/status replicasets/scale",
        ),
        r(
            READ,
            "autoscaling",
            "horizontalpodautoscalers horizontalpodautoscalers/status",
        ),
        r(READ, "batch", "jobs cronjobs cronjobs/status jobs/status"),
        r(
            READ,
            "extensions",
            "daemonsets daemonsets/status deployments deployments/scale deployments/status \
             ingresses ingresses/status replicasets replicasets/scale replicasets/status \
             replicationcontrollers/scale networkpolicies",
        ),
        r(
            READ,
            "policy",
            "poddisruptionbudgets poddisruptionbudgets/status",
        ),
        r(
            READ,
            "networking.k8s.io",
            "networkpolicies ingresses ingresses/status",
        ),
    ]
}

const HEALTH: &str = "/livez /readyz /healthz /version /version/";

fn signer_approver(signer: &str) -> Value {
    rn("approve", "certificates.k8s.io", "signers", signer)
}

fn component_leases(name: &str) -> [Value; 2] {
    [
        r("create", "coordination.k8s.io", "leases"),
        rn("get update", "coordination.k8s.io", "leases", name),
    ]
}

/// The bootstrap ClusterRoles of `policy.go` (user-facing, component and
/// node roles).
pub fn cluster_roles() -> Vec<Value> {
    let csr = "certificates.k8s.io";
    let mut kcm = vec![events()];
    kcm.extend(component_leases("kube-controller-manager"));
    kcm.extend([
        r("create", "", "secrets serviceaccounts"),
        r("delete", "", "secrets"),
        r("get", "", "namespaces secrets serviceaccounts configmaps"),
        r("update", "", "secrets serviceaccounts"),
        r("create", "authentication.k8s.io", "tokenreviews"),
        r("create", "authorization.k8s.io", "subjectaccessreviews"),
        r("list watch", "*", "*"),
        r("create", "", "serviceaccounts/token"),
    ]);
    let mut scheduler = vec![events()];
    scheduler.extend(component_leases("kube-scheduler"));
    scheduler.extend([
        r(READ, "", "nodes"),
        r("get list watch delete", "", "pods"),
        r("create", "", "bindings pods/binding"),
        r("patch update", "", "pods/status"),
        r(READ, "", "replicationcontrollers services"),
        r(READ, "apps|extensions", "replicasets"),
        r(READ, "apps", "statefulsets"),
        r(READ, "policy", "poddisruptionbudgets"),
        r(READ, "", "persistentvolumeclaims persistentvolumes"),
        r("create", "authentication.k8s.io", "tokenreviews"),
        r("create", "authorization.k8s.io", "subjectaccessreviews"),
        r(READ, "storage.k8s.io", "csinodes"),
        r(READ, "", "namespaces"),
        r(READ, "storage.k8s.io", "csidrivers"),
        r(READ, "storage.k8s.io", "csistoragecapacities"),
    ]);
    vec![
        cluster_role("cluster-admin", vec![r("*", "*", "*"), u("*", "*")]),
        cluster_role(
            "system:discovery",
            vec![u(
                "get",
                &format!("{HEALTH} /openapi /openapi/* /api /api/* /apis /apis/*"),
            )],
        ),
        cluster_role(
            "system:monitoring",
            vec![u(
                "get",
                "/metrics /metrics/slis /livez /readyz /healthz /livez/* /readyz/* /healthz/*",
            )],
        ),
        cluster_role(
            "system:basic-user",
            vec![
                r(
                    "create",
                    "authorization.k8s.io",
                    "selfsubjectaccessreviews selfsubjectrulesreviews",
                ),
                r("create", "authentication.k8s.io", "selfsubjectreviews"),
            ],
        ),
        cluster_role("system:public-info-viewer", vec![u("get", HEALTH)]),
        aggregated("admin", TO_ADMIN, None),
        aggregated("edit", TO_EDIT, Some(TO_ADMIN)),
        aggregated("view", TO_VIEW, Some(TO_EDIT)),
        labelled(
            "system:aggregate-to-admin",
            TO_ADMIN,
            vec![
                r(
                    "create",
                    "authorization.k8s.io",
                    "localsubjectaccessreviews",
                ),
                r(READ_WRITE, GROUP, "roles rolebindings"),
            ],
        ),
        labelled("system:aggregate-to-edit", TO_EDIT, edit_rules()),
        labelled("system:aggregate-to-view", TO_VIEW, view_rules()),
        cluster_role(
            "system:heapster",
            vec![
                r(READ, "", "events pods nodes namespaces"),
                r(READ, "extensions", "deployments"),
            ],
        ),
        cluster_role(
            "system:node",
            vec![
                r("create", "authentication.k8s.io", "tokenreviews"),
                r(
                    "create",
                    "authorization.k8s.io",
                    "subjectaccessreviews localsubjectaccessreviews",
                ),
                r(READ, "", "services"),
                r("create get list watch", "", "nodes"),
                r("update patch", "", "nodes/status"),
                r("update patch", "", "nodes"),
                r("create update patch", "", "events"),
                r(READ, "", "pods"),
                r("create delete", "", "pods"),
                r("update patch", "", "pods/status"),
                r("create", "", "pods/eviction"),
                r(READ, "", "secrets configmaps"),
                r("get", "", "persistentvolumeclaims persistentvolumes"),
                r("get", "", "endpoints"),
                r("create get list watch", csr, "certificatesigningrequests"),
                r(
                    "delete get create update patch",
                    "coordination.k8s.io",
                    "leases",
                ),
                r("get", "storage.k8s.io", "volumeattachments"),
                r("create", "", "serviceaccounts/token"),
                r("get update patch", "", "persistentvolumeclaims/status"),
                r(READ, "storage.k8s.io", "csidrivers"),
                r(
                    "get create update patch delete",
                    "storage.k8s.io",
                    "csinodes",
                ),
                r(READ, "node.k8s.io", "runtimeclasses"),
            ],
        ),
        cluster_role(
            "system:node-problem-detector",
            vec![
                r("get", "", "nodes"),
                r("patch", "", "nodes/status"),
                events(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            vec![
                r(READ, "", "nodes"),
                r("proxy", "", "nodes"),
                r("*", "", "nodes/proxy nodes/metrics nodes/stats nodes/log"),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            vec![r(
                "create get list watch",
                csr,
                "certificatesigningrequests",
            )],
        ),
        cluster_role(
            "system:auth-delegator",
            vec![
                r("create", "authentication.k8s.io", "tokenreviews"),
                r("create", "authorization.k8s.io", "subjectaccessreviews"),
            ],
        ),
        cluster_role(
            "system:kube-aggregator",
            vec![r(READ, "", "services endpoints")],
        ),
        cluster_role("system:kube-controller-manager", kcm),
        cluster_role(
            "system:kube-dns",
            vec![r("list watch", "", "endpoints services")],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            vec![
                r("get list watch create delete", "", "persistentvolumes"),
                r("get list watch update", "", "persistentvolumeclaims"),
                r(READ, "storage.k8s.io", "storageclasses"),
                r("watch", "", "events"),
                events(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![r("create", csr, "certificatesigningrequests/nodeclient")],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![r(
                "create",
                csr,
                "certificatesigningrequests/selfnodeclient",
            )],
        ),
        cluster_role(
            "system:volume-scheduler",
            vec![
                r("get list watch update patch", "", "persistentvolumes"),
                r(READ, "storage.k8s.io", "storageclasses"),
                r("get list watch update patch", "", "persistentvolumeclaims"),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:legacy-unknown-approver",
            vec![signer_approver("kubernetes.io/legacy-unknown")],
        ),
        cluster_role(
            "system:certificates.k8s.io:kubelet-serving-approver",
            vec![signer_approver("kubernetes.io/kubelet-serving")],
        ),
        cluster_role(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            vec![signer_approver("kubernetes.io/kube-apiserver-client")],
        ),
        cluster_role(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            vec![signer_approver(
                "kubernetes.io/kube-apiserver-client-kubelet",
            )],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![u(
                "get",
                "/.well-known/openid-configuration /.well-known/openid-configuration/ /openid/v1/jwks /openid/v1/jwks/",
            )],
        ),
        cluster_role(
            "system:node-proxier",
            vec![
                r("list watch", "", "services endpoints"),
                r(READ, "", "nodes"),
                events(),
                r("list watch", "discovery.k8s.io", "endpointslices"),
            ],
        ),
        cluster_role("system:kube-scheduler", scheduler),
    ]
}

fn subject(kind: &str, name: &str) -> Value {
    json!({"kind": kind, "apiGroup": GROUP, "name": name})
}

/// A ServiceAccount subject (no apiGroup, as upstream).
pub(super) fn sa(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
}

/// A ClusterRoleBinding of the ClusterRole of the same name.
pub(super) fn cluster_binding(name: &str, subjects: Vec<Value>) -> Value {
    let mut b = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": meta(name, None, &[]),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}});
    if !subjects.is_empty() {
        b["subjects"] = json!(subjects);
    }
    b
}

/// The bootstrap ClusterRoleBindings of `policy.go`.
pub fn cluster_role_bindings() -> Vec<Value> {
    let group = |n: &str| subject("Group", n);
    let user = |n: &str| subject("User", n);
    vec![
        cluster_binding("cluster-admin", vec![group("system:masters")]),
        cluster_binding("system:monitoring", vec![group("system:monitoring")]),
        cluster_binding("system:discovery", vec![group("system:authenticated")]),
        cluster_binding("system:basic-user", vec![group("system:authenticated")]),
        cluster_binding(
            "system:public-info-viewer",
            vec![
                group("system:authenticated"),
                group("system:unauthenticated"),
            ],
        ),
        cluster_binding("system:node-proxier", vec![user("system:kube-proxy")]),
        cluster_binding(
            "system:kube-controller-manager",
            vec![user("system:kube-controller-manager")],
        ),
        cluster_binding("system:kube-dns", vec![sa("kube-system", "kube-dns")]),
        cluster_binding("system:kube-scheduler", vec![user("system:kube-scheduler")]),
        cluster_binding(
            "system:volume-scheduler",
            vec![user("system:kube-scheduler")],
        ),
        // Bound to nobody: the Node authorizer grants nodes their rights.
        cluster_binding("system:node", vec![]),
        cluster_binding(
            "system:service-account-issuer-discovery",
            vec![group("system:serviceaccounts")],
        ),
    ]
}

fn role(ns: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": meta(name, Some(ns), &[]), "rules": rules})
}

fn role_binding(ns: &str, name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": meta(name, Some(ns), &[]),
        "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": role},
        "subjects": subjects})
}

/// The bootstrap Roles of `namespace_policy.go` (`kube-system`, `kube-public`).
pub fn namespaced_roles() -> Vec<Value> {
    let locking = || {
        vec![
            r(
                "watch get list create update",
                "coordination.k8s.io",
                "leases",
            ),
            r(
                "watch get list create update",
                "coordination.k8s.io",
                "leasecandidates",
            ),
        ]
    };
    let ks = "kube-system";
    vec![
        role(
            ks,
            "extension-apiserver-authentication-reader",
            vec![rn(
                READ,
                "",
                "configmaps",
                "extension-apiserver-authentication",
            )],
        ),
        role(
            ks,
            "system::leader-locking-kube-controller-manager",
            locking(),
        ),
        role(ks, "system::leader-locking-kube-scheduler", locking()),
        role(
            ks,
            "system:controller:bootstrap-signer",
            vec![r(READ, "", "secrets")],
        ),
        role(
            ks,
            "system:controller:cloud-provider",
            vec![r("create get list watch", "", "configmaps")],
        ),
        role(
            ks,
            "system:controller:token-cleaner",
            vec![r("delete get list watch", "", "secrets"), events()],
        ),
        role(
            "kube-public",
            "system:controller:bootstrap-signer",
            vec![
                r(READ, "", "configmaps"),
                rn("update", "", "configmaps", "cluster-info"),
                events(),
            ],
        ),
    ]
}

/// The bootstrap RoleBindings of `namespace_policy.go`.
pub fn namespaced_role_bindings() -> Vec<Value> {
    let user = |n: &str| subject("User", n);
    let ks = "kube-system";
    let controller = |ns: &str, name: &str| {
        role_binding(
            ns,
            &format!("system:controller:{name}"),
            &format!("system:controller:{name}"),
            vec![sa(ks, name)],
        )
    };
    vec![
        role_binding(
            ks,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![
                user("system:kube-controller-manager"),
                user("system:kube-scheduler"),
            ],
        ),
        role_binding(
            ks,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                user("system:kube-controller-manager"),
                sa(ks, "kube-controller-manager"),
                sa(ks, "leader-election-controller"),
            ],
        ),
        role_binding(
            ks,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![user("system:kube-scheduler"), sa(ks, "kube-scheduler")],
        ),
        controller(ks, "bootstrap-signer"),
        controller(ks, "cloud-provider"),
        controller(ks, "token-cleaner"),
        controller("kube-public", "bootstrap-signer"),
    ]
}
