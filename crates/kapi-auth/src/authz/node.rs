//! The Node authorizer (`--authorization-mode=Node`, upstream
//! `plugin/pkg/auth/authorizer/node`): what a kubelet may do.
//!
//! It decides only for node identities (upstream's default node identifier:
//! user `system:node:<name>` in group `system:nodes`) and has no opinion on
//! anyone else, so the next mode (RBAC) decides. For a node:
//! - secrets and config maps: get/list/watch of one named object, persistent
//!   volume claims, persistent volumes, resource claims and volume attachments:
//!   get, and `serviceaccounts/token` create, each only when the object is
//!   related to the node: used by a pod bound to it (`spec.nodeName`), through
//!   pod → claim → volume (→ secret), or a VolumeAttachment naming the node;
//! - its own Node object (read; create/update/patch and `status` writes are
//!   left to NodeRestriction admission, as upstream), its own Lease in
//!   `kube-node-lease`, its own CSINode, pods bound to it;
//! - everything else by the static rules of the `system:node` ClusterRole
//!   (upstream `NodeRules`), e.g. CertificateSigningRequests.
//!
//! Upstream keeps a graph fed by informers. Here the relations are read from
//! the watch cache when asked: the pods of a node through the cache's
//! `spec.nodeName` index, pods, volumes and attachments by key, and — for a
//! secret not used by a pod directly — the volumes whose `spec.claimRef` names
//! a claim of the node's pods (upstream draws volume → claim from `claimRef`,
//! never from the claim's `volumeName`). A relation
//! not found in whatever the cache holds is looked for once more with a
//! consistent read (the cache caught up with the backend), so a pod created
//! just before its kubelet asks is seen; as upstream's graph, a deleted pod's
//! grants go away as soon as the cache has the delete.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use kapi_machinery::fields::FieldSelector;
use kapi_registry::store::options::ListOptions;
use serde_json::Value;

use super::node_refs as refs;
use super::{rbac, Attributes, Authorizer, Decision, ResourceAttrs, RuleSet};
use kapi_http::user::UserInfo;
use kapi_registry::apis::{Apis, Entry};

const NODE_USER_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The node a user is (upstream `NodeIdentity`): `None` for non-nodes,
/// `Some("")` for a node whose name is unknown.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// What a node may be related to (upstream's vertex types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Secret,
    ConfigMap,
    Claim,
    Volume,
    ResourceClaim,
    Attachment,
    ServiceAccount,
    Pod,
}

pub struct Node {
    pods: Option<Arc<Entry>>,
    volumes: Option<Arc<Entry>>,
    attachments: Option<Arc<Entry>>,
    /// The static rules every node holds (the `system:node` ClusterRole).
    rules: Vec<Value>,
}

fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::no_opinion(reason)
}

fn allow() -> Decision {
    Decision::allow("")
}

impl Node {
    pub fn new(apis: &Apis) -> Node {
        let rules = super::roles::cluster_roles()
            .into_iter()
            .find(|r| r.pointer("/metadata/name").and_then(Value::as_str) == Some("system:node"))
            .and_then(|r| r.get("rules").and_then(Value::as_array).cloned())
            .unwrap_or_default();
        Node {
            pods: apis.lookup("", "v1", "pods"),
            volumes: apis.lookup("", "v1", "persistentvolumes"),
            attachments: apis.lookup("storage.k8s.io", "v1", "volumeattachments"),
            rules,
        }
    }

    fn decide(&self, node: &str, attrs: &Attributes, r: &ResourceAttrs) -> Step {
        let verb = attrs.verb.as_str();
        match (r.group.as_str(), r.resource.as_str()) {
            ("", "secrets") => read_namespaced(verb, r, Kind::Secret),
            ("", "configmaps") => read_namespaced(verb, r, Kind::ConfigMap),
            ("", "persistentvolumeclaims") if r.subresource == "status" => match verb {
                "update" | "patch" => Step::Related(Kind::Claim),
                _ => Step::Done(no_opinion("can only get/update/patch this type")),
            },
            ("", "persistentvolumeclaims") => get_only(verb, r, Kind::Claim),
            ("", "persistentvolumes") => get_only(verb, r, Kind::Volume),
            ("resource.k8s.io", "resourceclaims") => get_only(verb, r, Kind::ResourceClaim),
            ("storage.k8s.io", "volumeattachments") => get_only(verb, r, Kind::Attachment),
            ("", "serviceaccounts") => {
                if verb != "create" || r.name.is_empty() {
                    Step::Done(no_opinion(
                        "can only create tokens for individual service accounts",
                    ))
                } else if r.subresource != "token" {
                    Step::Done(no_opinion(
                        "can only create token subresource of serviceaccount",
                    ))
                } else {
                    Step::Related(Kind::ServiceAccount)
                }
            }
            ("coordination.k8s.io", "leases") => Step::Done(own_object(verb, r, node, Own::Lease)),
            ("storage.k8s.io", "csinodes") => Step::Done(own_object(verb, r, node, Own::CsiNode)),
            ("resource.k8s.io", "resourceslices") => Step::Done(resource_slice(verb, r, node)),
            ("", "nodes") => Step::Done(own_node(verb, r, node)),
            ("", "pods") => pod(verb, r),
            _ => Step::Done(self.static_rules(attrs)),
        }
    }

    fn static_rules(&self, attrs: &Attributes) -> Decision {
        if self.rules.iter().any(|rule| rbac::rule_allows(attrs, rule)) {
            allow()
        } else {
            no_opinion("")
        }
    }

    /// Pods bound to `node`, in `namespace` or everywhere.
    async fn pods_of(&self, node: &str, namespace: Option<&str>, fresh: bool) -> Vec<Value> {
        let Some(pods) = &self.pods else {
            return Vec::new();
        };
        let opts = ListOptions {
            field: FieldSelector::one_term_equal("spec.nodeName", node),
            resource_version: (!fresh).then(|| "0".to_string()),
            ..Default::default()
        };
        match pods.store.list(namespace, &opts).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(error = %e, node, "node authorizer: pods unreadable");
                Vec::new()
            }
        }
    }

    async fn get(
        entry: &Option<Arc<Entry>>,
        ns: Option<&str>,
        name: &str,
        fresh: bool,
    ) -> Option<Value> {
        let rv = (!fresh).then_some("0");
        entry.as_ref()?.store.get(ns, name, rv).await.ok()
    }

    /// The claims (namespace, name) of `pods`.
    fn claims_of(pods: &[Value]) -> HashSet<(String, String)> {
        let mut out = HashSet::new();
        for pod in pods {
            let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str);
            for claim in refs::pod_claims(pod) {
                out.insert((ns.unwrap_or("").to_owned(), claim));
            }
        }
        out
    }

    /// The PersistentVolumes whose `spec.claimRef` is one of `claims` (upstream
    /// draws the edge volume → claim from `claimRef`, not from the claim).
    async fn volumes_of(&self, claims: &HashSet<(String, String)>, fresh: bool) -> Vec<Value> {
        let Some(volumes) = self.volumes.as_ref().filter(|_| !claims.is_empty()) else {
            return Vec::new();
        };
        let opts = ListOptions {
            resource_version: (!fresh).then(|| "0".to_string()),
            ..Default::default()
        };
        match volumes.store.list(None, &opts).await {
            Ok(list) => list
                .items
                .into_iter()
                .filter(|pv| claims.contains(&claim_ref(pv)))
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "node authorizer: persistent volumes unreadable");
                Vec::new()
            }
        }
    }

    /// Is there a path from the object to `node` (upstream `hasPathFrom`)?
    async fn has_path(&self, node: &str, kind: Kind, ns: &str, name: &str, fresh: bool) -> bool {
        let in_ns = |pods: &[Value], f: fn(&Value, &str) -> bool| pods.iter().any(|p| f(p, name));
        match kind {
            Kind::Pod => Self::get(&self.pods, Some(ns), name, fresh)
                .await
                .is_some_and(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node)),
            Kind::Attachment => Self::get(&self.attachments, None, name, fresh)
                .await
                .is_some_and(|a| a.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node)),
            Kind::ConfigMap => in_ns(
                &self.pods_of(node, Some(ns), fresh).await,
                refs::pod_uses_config_map,
            ),
            Kind::ResourceClaim => in_ns(
                &self.pods_of(node, Some(ns), fresh).await,
                refs::pod_uses_resource_claim,
            ),
            Kind::ServiceAccount => in_ns(
                &self.pods_of(node, Some(ns), fresh).await,
                refs::pod_uses_service_account,
            ),
            Kind::Claim => self
                .pods_of(node, Some(ns), fresh)
                .await
                .iter()
                .any(|p| refs::pod_claims(p).iter().any(|c| c == name)),
            Kind::Volume => {
                let Some(pv) = Self::get(&self.volumes, None, name, fresh).await else {
                    return false;
                };
                let (claim_ns, claim) = claim_ref(&pv);
                !claim.is_empty()
                    && self
                        .pods_of(node, Some(&claim_ns), fresh)
                        .await
                        .iter()
                        .any(|p| refs::pod_claims(p).contains(&claim))
            }
            Kind::Secret => {
                let pods = self.pods_of(node, None, fresh).await;
                let same_ns = |p: &&Value| {
                    p.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
                };
                if pods
                    .iter()
                    .filter(same_ns)
                    .any(|p| refs::pod_uses_secret(p, name))
                {
                    return true;
                }
                let claims = Self::claims_of(&pods);
                self.volumes_of(&claims, fresh)
                    .await
                    .iter()
                    .any(|pv| refs::pv_uses_secret(pv, ns, name))
            }
        }
    }

    async fn relation(&self, node: &str, kind: Kind, r: &ResourceAttrs) -> Decision {
        if r.name.is_empty() {
            return no_opinion("No Object name found");
        }
        for fresh in [false, true] {
            if self
                .has_path(node, kind, &r.namespace, &r.name, fresh)
                .await
            {
                return allow();
            }
        }
        no_opinion(format!(
            "no relationship found between node '{node}' and this object"
        ))
    }
}

/// A volume's `spec.claimRef` as (namespace, name).
fn claim_ref(pv: &Value) -> (String, String) {
    let at = |ptr: &str| {
        pv.pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    (at("/spec/claimRef/namespace"), at("/spec/claimRef/name"))
}

/// What [`Node::decide`] found without reading: a decision, or a relation to look up.
enum Step {
    Done(Decision),
    Related(Kind),
}

/// Upstream `authorizeReadNamespacedObject`.
fn read_namespaced(verb: &str, r: &ResourceAttrs, kind: Kind) -> Step {
    if !matches!(verb, "get" | "list" | "watch") {
        return Step::Done(no_opinion("can only read resources of this type"));
    }
    if !r.subresource.is_empty() {
        return Step::Done(no_opinion("cannot read subresource"));
    }
    if r.namespace.is_empty() {
        return Step::Done(no_opinion("can only read namespaced object of this type"));
    }
    Step::Related(kind)
}

/// Upstream `authorizeGet`.
fn get_only(verb: &str, r: &ResourceAttrs, kind: Kind) -> Step {
    if verb != "get" {
        return Step::Done(no_opinion("can only get individual resources of this type"));
    }
    if !r.subresource.is_empty() {
        return Step::Done(no_opinion("cannot get subresource"));
    }
    Step::Related(kind)
}

/// Objects a node owns by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Own {
    Lease,
    CsiNode,
}

/// Upstream `authorizeLease` / `authorizeCSINode`: get/create/update/patch/delete
/// of the object named after the node (create is left to NodeRestriction).
fn own_object(verb: &str, r: &ResourceAttrs, node: &str, own: Own) -> Decision {
    let what = match own {
        Own::Lease => "node lease",
        Own::CsiNode => "CSINode",
    };
    if !matches!(verb, "get" | "create" | "update" | "patch" | "delete") {
        return no_opinion(format!(
            "can only get, create, update, patch, or delete a {what}"
        ));
    }
    if own == Own::CsiNode && !r.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if own == Own::Lease && r.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if verb != "create" && r.name != node {
        return no_opinion(format!(
            "can only access {what} with the same name as the requesting node"
        ));
    }
    allow()
}

/// Upstream `authorizeNode` (AuthorizeNodeWithSelectors, on by default in 1.33).
fn own_node(verb: &str, r: &ResourceAttrs, node: &str) -> Decision {
    match (r.subresource.as_str(), verb) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => allow(),
        ("", "get" | "list" | "watch") if r.name == node => allow(),
        ("", "get" | "list" | "watch") if r.name.is_empty() => no_opinion(format!(
            "node '{node}' cannot read all nodes, only its own Node object"
        )),
        ("", "get" | "list" | "watch") => no_opinion(format!(
            "node '{node}' cannot read '{}', only its own Node object",
            r.name
        )),
        _ => no_opinion(""),
    }
}

/// Upstream `authorizePod`. A list or watch without a name is allowed: the
/// request attributes here carry no field selector, so the
/// `spec.nodeName=<node>` scoping of AuthorizeNodeWithSelectors cannot be
/// checked (upstream's behaviour with that gate off).
fn pod(verb: &str, r: &ResourceAttrs) -> Step {
    match (r.subresource.as_str(), verb) {
        ("", "get") => get_only(verb, r, Kind::Pod),
        ("", "list" | "watch") if !r.name.is_empty() => Step::Related(Kind::Pod),
        ("", "list" | "watch") => Step::Done(allow()),
        ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
            Step::Done(allow())
        }
        _ => Step::Done(no_opinion("")),
    }
}

/// Upstream `authorizeResourceSlice` (list/watch/deletecollection as with the
/// selector gate off, for the reason given at [`pod`]).
fn resource_slice(verb: &str, r: &ResourceAttrs, node: &str) -> Decision {
    if !r.subresource.is_empty() {
        return no_opinion("cannot authorize ResourceSlice subresources");
    }
    match verb {
        "create" | "watch" | "list" | "deletecollection" => allow(),
        // Upstream relates a slice to the node named in it; kapi serves no
        // ResourceSlices, so there is never such a relation.
        "get" | "update" | "patch" | "delete" => no_opinion(format!(
            "no relationship found between node '{node}' and this object"
        )),
        _ => no_opinion(
            "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection",
        ),
    }
}

#[async_trait]
impl Authorizer for Node {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let Some(node) = node_identity(&attrs.user) else {
            return no_opinion("");
        };
        if node.is_empty() {
            return no_opinion(format!("unknown node for user {:?}", attrs.user.name));
        }
        let Some(r) = &attrs.resource else {
            return self.static_rules(attrs);
        };
        match self.decide(node, attrs, r) {
            Step::Done(d) => d,
            Step::Related(kind) => self.relation(node, kind, r).await,
        }
    }

    async fn rules_for(&self, user: &UserInfo, _: &str) -> RuleSet {
        if node_identity(user).is_none() {
            return RuleSet::default();
        }
        RuleSet {
            incomplete: true,
            errors: vec!["node authorizer does not support user rule resolution".into()],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::named(name, groups)
    }

    #[test]
    fn only_users_in_the_nodes_group_are_nodes() {
        assert_eq!(
            node_identity(&user("system:node:n1", &[NODES_GROUP])),
            Some("n1")
        );
        assert_eq!(
            node_identity(&user("system:node:", &[NODES_GROUP])),
            Some("")
        );
        assert_eq!(
            node_identity(&user("system:node:n1", &["system:authenticated"])),
            None
        );
        assert_eq!(node_identity(&user("n1", &[NODES_GROUP])), None);
    }

    #[test]
    fn leases_nodes_and_slices_follow_upstream() {
        let lease = |ns: &str, name: &str| ResourceAttrs {
            group: "coordination.k8s.io".into(),
            resource: "leases".into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        };
        let own = |verb, r: &ResourceAttrs| own_object(verb, r, "n1", Own::Lease);
        assert!(own("update", &lease(NODE_LEASE_NAMESPACE, "n1")).allowed());
        assert!(own("create", &lease(NODE_LEASE_NAMESPACE, "")).allowed());
        assert_eq!(
            own("update", &lease(NODE_LEASE_NAMESPACE, "n2")).reason,
            "can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            own("get", &lease("default", "n1")).reason,
            "can only access leases in the \"kube-node-lease\" system namespace"
        );
        assert_eq!(
            own("list", &lease(NODE_LEASE_NAMESPACE, "")).reason,
            "can only get, create, update, patch, or delete a node lease"
        );
        let node = |name: &str, sub: &str| ResourceAttrs {
            resource: "nodes".into(),
            name: name.into(),
            subresource: sub.into(),
            ..Default::default()
        };
        assert!(own_node("get", &node("n1", ""), "n1").allowed());
        assert!(own_node("patch", &node("n2", "status"), "n1").allowed());
        assert_eq!(
            own_node("get", &node("n2", ""), "n1").reason,
            "node 'n1' cannot read 'n2', only its own Node object"
        );
        assert_eq!(
            own_node("list", &node("", ""), "n1").reason,
            "node 'n1' cannot read all nodes, only its own Node object"
        );
        assert!(!own_node("delete", &node("n1", ""), "n1").allowed());
        let secret = ResourceAttrs {
            resource: "secrets".into(),
            namespace: "ns".into(),
            name: "s".into(),
            ..Default::default()
        };
        match read_namespaced("delete", &secret, Kind::Secret) {
            Step::Done(d) => assert_eq!(d.reason, "can only read resources of this type"),
            Step::Related(_) => panic!("delete of a secret needs no lookup"),
        }
        assert!(matches!(
            read_namespaced("watch", &secret, Kind::Secret),
            Step::Related(Kind::Secret)
        ));
    }
}
