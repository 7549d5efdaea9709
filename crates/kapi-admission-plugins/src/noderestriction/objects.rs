//! NodeRestriction's rules for what a kubelet writes besides pods and
//! tokens: its own Node (no taint changes, no new non-nil `configSource`,
//! no labels under `kubernetes.io`/`k8s.io` but the kubelet's own set, none
//! under `node-restriction.kubernetes.io`), only the status of PVCs
//! (`status.capacity`, `status.conditions`, the allocated resources), its own
//! lease in `kube-node-lease` and its own CSINode, and ResourceSlices of its
//! node only (create and delete).

use kapi_machinery::status::ApiError;
use serde_json::Value;

use super::{str_at, NODE_LEASE_NAMESPACE};
use kapi_admission::{Attributes, Operation};

/// The labels added, removed or changed between `old` and `new`.
fn modified_labels(new: Option<&Value>, old: Option<&Value>) -> Vec<String> {
    let map = |v: Option<&Value>| {
        v.and_then(|v| v.pointer("/metadata/labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let (new, old) = (map(new), map(old));
    let mut out: Vec<String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .chain(old.keys().filter(|k| !new.contains_key(*k)).cloned())
        .collect();
    out.sort();
    out.dedup();
    out
}

const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

fn in_namespace(ns: &str, domain: &str) -> bool {
    ns == domain || ns.ends_with(&format!(".{domain}"))
}

/// Labels a kubelet may not set, change or remove on its Node.
fn forbidden_labels(labels: &[String]) -> Vec<String> {
    labels
        .iter()
        .filter(|l| {
            let ns = l.split_once('/').map_or("", |(ns, _)| ns);
            let restricted = in_namespace(ns, "node-restriction.kubernetes.io");
            let kubernetes = in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io");
            let kubelet = KUBELET_LABELS.contains(&l.as_str())
                || in_namespace(ns, "kubelet.kubernetes.io")
                || in_namespace(ns, "node.kubernetes.io");
            restricted || (kubernetes && !kubelet)
        })
        .cloned()
        .collect()
}

pub(super) fn node(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let requested = if a.operation == Operation::Create && a.name.is_empty() {
        str_at(a.object.as_ref(), "/metadata/name").to_owned()
    } else {
        a.name.clone()
    };
    if requested != node {
        return Err(a.forbidden(format!(
            "node {node:?} is not allowed to modify node {requested:?}"
        )));
    }
    match a.operation {
        Operation::Create => {
            if config_source(a.object.as_ref()).is_some() {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to create pods with a non-nil configSource"
                )));
            }
            let bad = forbidden_labels(&modified_labels(a.object.as_ref(), None));
            if !bad.is_empty() {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    bad.join(", ")
                )));
            }
        }
        Operation::Update => {
            let taints = |v: Option<&Value>| {
                v.and_then(|v| v.pointer("/spec/taints"))
                    .cloned()
                    .filter(|t| t.as_array().is_some_and(|t| !t.is_empty()))
            };
            let source = config_source(a.object.as_ref());
            if source.is_some() && source != config_source(a.old_object.as_ref()) {
                return Err(a.forbidden(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                )));
            }
            if taints(a.object.as_ref()) != taints(a.old_object.as_ref()) {
                return Err(a.forbidden(format!("node {node:?} is not allowed to modify taints")));
            }
            let bad = forbidden_labels(&modified_labels(a.object.as_ref(), a.old_object.as_ref()));
            if !bad.is_empty() {
                return Err(a.forbidden(format!(
                    "is not allowed to modify labels: {}",
                    bad.join(", ")
                )));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A Node's `spec.configSource`, when set.
fn config_source(node: Option<&Value>) -> Option<&Value> {
    node.and_then(|n| n.pointer("/spec/configSource"))
        .filter(|c| !c.is_null())
}

pub(super) fn pvc_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.subresource != "status" {
        return Err(a.forbidden("may only update PVC status"));
    }
    if a.operation != Operation::Update {
        return Err(a.forbidden(format!("unexpected operation {:?}", a.operation.as_str())));
    }
    let strip = |v: Option<&Value>| {
        let mut v = v.cloned().unwrap_or(Value::Null);
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        if let Some(s) = v.get_mut("status").and_then(Value::as_object_mut) {
            for f in [
                "capacity",
                "conditions",
                "allocatedResources",
                "allocatedResourceStatuses",
            ] {
                s.remove(f);
            }
        }
        v
    };
    if strip(a.object.as_ref()) != strip(a.old_object.as_ref()) {
        return Err(a.forbidden(format!(
            "node {node:?} is not allowed to update fields other than status.capacity and status.conditions"
        )));
    }
    Ok(())
}

/// The name a create asks for (the attributes carry none for creates) or the
/// name in the URL.
fn target_name(a: &Attributes) -> String {
    if a.operation == Operation::Create {
        str_at(a.object.as_ref(), "/metadata/name").to_owned()
    } else {
        a.name.clone()
    }
}

pub(super) fn lease(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if a.namespace != NODE_LEASE_NAMESPACE {
        return Err(a.forbidden(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        )));
    }
    if target_name(a) != node {
        return Err(
            a.forbidden("can only access node lease with the same name as the requesting node")
        );
    }
    Ok(())
}

pub(super) fn csinode(node: &str, a: &Attributes) -> Result<(), ApiError> {
    if target_name(a) != node {
        return Err(
            a.forbidden("can only access CSINode with the same name as the requesting node")
        );
    }
    Ok(())
}

/// ResourceSlices: a node creates and deletes only those of its own node
/// (the Node authorizer cannot see a create's body nor each object of a
/// collection delete).
pub(super) fn resource_slice(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let (slice, verb) = match a.operation {
        Operation::Create => (a.object.as_ref(), "create"),
        Operation::Delete => (a.old_object.as_ref(), "delete"),
        _ => return Ok(()),
    };
    if str_at(slice, "/spec/nodeName") != node {
        return Err(a.forbidden(format!(
            "can only {verb} ResourceSlice with the same NodeName as the requesting node"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_labels_are_allowed_others_under_kubernetes_io_are_not() {
        let labels: Vec<String> = [
            "kubernetes.io/hostname",
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "node-role.kubernetes.io/control-plane",
            "node-restriction.kubernetes.io/pool",
            "example.com/team",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            forbidden_labels(&labels),
            [
                "node-role.kubernetes.io/control-plane",
                "node-restriction.kubernetes.io/pool"
            ]
        );
    }
}
