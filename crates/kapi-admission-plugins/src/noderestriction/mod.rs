//! NodeRestriction (upstream `plugin/pkg/admission/noderestriction`): what a
//! kubelet (user `system:node:<name>` in group `system:nodes`) may write,
//! whatever RBAC or the Node authorizer let through:
//!
//! - pods: create only mirror pods bound to itself, owned (as controller,
//!   without `blockOwnerDeletion`) by its own Node of the stored uid, and
//!   referencing no service account, secret, config map, cluster trust
//!   bundle or claim; delete only pods bound to itself, update the status of
//!   those only (not their labels nor resource claim statuses), evict only
//!   those; no other pod subresource;
//! - the rest in `objects.rs`: its own Node only (no taint or configSource
//!   changes, only the kubelet's labels), PVC status, its lease and CSINode,
//!   ResourceSlices of its node;
//! - serviceaccounts/token: only tokens bound to a pod (with its uid) on itself.
//!
//! Refusals are 403 with upstream's messages. As upstream's `Admit`, it runs
//! in the mutating phase (which has the stored object of updates and
//! deletes); the pods, nodes and ResourceSlices it needs are read from the
//! store.

mod objects;

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use serde_json::Value;

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

pub struct NodeRestriction {
    pub(crate) cx: Context,
}

/// The node a request comes from, when it comes from a node.
fn node_identity(a: &Attributes) -> Option<String> {
    let user = a.user.as_ref()?;
    let name = user.name.strip_prefix("system:node:")?;
    user.groups
        .iter()
        .any(|g| g == "system:nodes")
        .then(|| name.to_owned())
}

fn str_at<'a>(v: Option<&'a Value>, pointer: &str) -> &'a str {
    v.and_then(|v| v.pointer(pointer))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        self.check(a).await
    }
}

impl NodeRestriction {
    async fn check(&self, a: &Attributes) -> Result<(), ApiError> {
        let Some(node) = node_identity(a) else {
            return Ok(());
        };
        if node.is_empty() {
            let user = a.user.as_ref().map(|u| u.name.as_str()).unwrap_or("");
            return Err(a.forbidden(format!("could not determine node from user {user:?}")));
        }
        match (a.group.as_str(), a.resource.as_str()) {
            ("", "pods") => self.pod(&node, a).await,
            ("", "nodes") => objects::node(&node, a),
            ("", "persistentvolumeclaims") => objects::pvc_status(&node, a),
            ("", "serviceaccounts") => self.token(&node, a).await,
            ("coordination.k8s.io", "leases") => objects::lease(&node, a),
            ("storage.k8s.io", "csinodes") => objects::csinode(&node, a),
            ("resource.k8s.io", "resourceslices") => objects::resource_slice(&node, a),
            _ => Ok(()),
        }
    }

    async fn pod(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        match (a.subresource.as_str(), a.operation) {
            ("", Operation::Create) => {
                pod_create(node, a)?;
                self.owner_uid(node, a).await?;
                let spec = a.object.as_ref().and_then(|p| p.get("spec"));
                match pod_references(spec.unwrap_or(&Value::Null)) {
                    Some(what) => {
                        Err(a.forbidden(format!("node {node:?} can not create pods that {what}")))
                    }
                    None => Ok(()),
                }
            }
            ("", Operation::Delete) => {
                if str_at(a.old_object.as_ref(), "/spec/nodeName") != node {
                    return Err(a.forbidden(format!(
                        "node {node:?} can only delete pods with spec.nodeName set to itself"
                    )));
                }
                Ok(())
            }
            ("", op) => Err(a.forbidden(format!(
                "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                op.as_str()
            ))),
            ("status", Operation::Update) => pod_status(node, a),
            ("status", op) => Err(a.forbidden(format!("unexpected operation {:?}", op.as_str()))),
            ("eviction", Operation::Create) => self.eviction(node, a).await,
            ("eviction", op) => Err(a.forbidden(format!("unexpected operation {}", op.as_str()))),
            (sub, _) => Err(a.forbidden(format!(
                "unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed"
            ))),
        }
    }

    /// The stored object `name` of core `resource` (a pod of the request's
    /// namespace, or a node): not found as it is, other errors forbidden.
    async fn get(&self, a: &Attributes, resource: &str, name: &str) -> Result<Value, ApiError> {
        let store = self
            .cx
            .apis
            .lookup("", "v1", resource)
            .ok_or_else(|| ApiError::internal(format!("{resource} are not served")))?;
        let ns = (resource == "pods").then_some(a.namespace.as_str());
        match store.store.get(ns, name, None).await {
            Ok(p) => Ok(p),
            Err(e) if e.is_not_found() => Err(e),
            Err(e) => Err(a.forbidden(e.to_string())),
        }
    }

    /// A mirror pod's owner reference names the node's uid as stored.
    async fn owner_uid(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        let owner = str_at(a.object.as_ref(), "/metadata/ownerReferences/0/uid");
        let stored = self.get(a, "nodes", node).await?;
        let uid = str_at(Some(&stored), "/metadata/uid");
        if owner != uid {
            return Err(a.forbidden(format!(
                "node {node} UID mismatch: expected {owner} got {uid}"
            )));
        }
        Ok(())
    }

    async fn eviction(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        let mut name = a.name.clone();
        if name.is_empty() {
            name = str_at(a.object.as_ref(), "/metadata/name").to_owned();
        }
        if name.is_empty() {
            return Err(a.forbidden("could not determine pod from request data"));
        }
        let pod = self.get(a, "pods", &name).await?;
        if str_at(Some(&pod), "/spec/nodeName") != node {
            return Err(a.forbidden(format!(
                "node {node} can only evict pods with spec.nodeName set to itself"
            )));
        }
        Ok(())
    }

    async fn token(&self, node: &str, a: &Attributes) -> Result<(), ApiError> {
        if a.operation != Operation::Create || a.subresource != "token" {
            return Ok(());
        }
        let r = a
            .object
            .as_ref()
            .and_then(|o| o.pointer("/spec/boundObjectRef"));
        let field = |k: &str| str_at(r, &format!("/{k}"));
        if r.is_none()
            || field("apiVersion") != "v1"
            || field("kind") != "Pod"
            || field("name").is_empty()
        {
            return Err(a.forbidden("node requested token not bound to a pod"));
        }
        if field("uid").is_empty() {
            return Err(a.forbidden("node requested token with a pod binding without a uid"));
        }
        let pod = self.get(a, "pods", field("name")).await?;
        if str_at(Some(&pod), "/metadata/uid") != field("uid") {
            return Err(a.forbidden(format!(
                "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                field("uid")
            )));
        }
        if str_at(Some(&pod), "/spec/nodeName") != node {
            return Err(
                a.forbidden("node requested token bound to a pod scheduled on a different node")
            );
        }
        Ok(())
    }
}

/// A mirror pod a kubelet creates: annotated, bound to itself, owned by its
/// Node as controller (the uid is checked against the store next).
fn pod_create(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let pod = a.object.as_ref();
    let annotated = pod
        .and_then(|p| p.pointer("/metadata/annotations"))
        .and_then(|m| m.get(MIRROR_ANNOTATION))
        .is_some();
    if !annotated {
        return Err(a.forbidden(format!(
            "pod does not have \"{MIRROR_ANNOTATION}\" annotation, node {node:?} can only create mirror pods"
        )));
    }
    if str_at(pod, "/spec/nodeName") != node {
        return Err(a.forbidden(format!(
            "node {node:?} can only create pods with spec.nodeName set to itself"
        )));
    }
    let owners = pod
        .and_then(|p| p.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if owners.len() > 1 {
        return Err(a.forbidden(format!(
            "node {node:?} can only create pods with a single owner reference set to itself"
        )));
    }
    let Some(o) = owners.first() else {
        return Err(a.forbidden(format!(
            "node {node:?} can only create pods with an owner reference set to itself"
        )));
    };
    let f = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
    if f("apiVersion") != "v1" || f("kind") != "Node" || f("name") != node {
        return Err(a.forbidden(format!(
            "node {node:?} can only create pods with an owner reference set to itself"
        )));
    }
    if o.get("controller") != Some(&Value::Bool(true)) {
        return Err(a.forbidden(format!(
            "node {node:?} can only create pods with a controller owner reference set to itself"
        )));
    }
    if o.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
        return Err(a.forbidden(format!(
            "node {node:?} must not set blockOwnerDeletion on an owner reference"
        )));
    }
    Ok(())
}

/// What a pod spec references that a kubelet may not put in a mirror pod.
fn pod_references(spec: &Value) -> Option<&'static str> {
    if !str_at(Some(spec), "/serviceAccountName").is_empty() {
        return Some("reference a service account");
    }
    let volumes = spec
        .get("volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let containers: Vec<&Value> = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|l| spec.get(*l).and_then(Value::as_array).into_iter().flatten())
        .collect();
    let any = |keys: &[&str], in_volumes: bool, in_containers: bool| {
        (in_volumes && volumes.iter().any(|v| has_key(v, keys)))
            || (in_containers && containers.iter().any(|c| has_key(c, keys)))
    };
    let pull_secrets = !spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if pull_secrets
        || any(
            &["secret", "secretRef", "secretName", "nodePublishSecretRef"],
            true,
            false,
        )
        || any(&["secretKeyRef", "secretRef"], false, true)
    {
        return Some("reference secrets");
    }
    if any(&["configMap"], true, false) || any(&["configMapKeyRef", "configMapRef"], false, true) {
        return Some("reference configmaps");
    }
    let mut projected = volumes
        .iter()
        .filter_map(|v| v.pointer("/projected/sources"))
        .filter_map(Value::as_array)
        .flatten();
    if projected.any(|s| s.get("clusterTrustBundle").is_some()) {
        return Some("reference clustertrustbundles");
    }
    if volumes
        .iter()
        .any(|v| v.get("persistentVolumeClaim").is_some())
    {
        return Some("reference persistentvolumeclaims");
    }
    None
}

/// Whether `v` has one of `keys` as an object key, at any depth.
fn has_key(v: &Value, keys: &[&str]) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| keys.contains(&k.as_str()) || has_key(v, keys)),
        Value::Array(items) => items.iter().any(|i| has_key(i, keys)),
        _ => false,
    }
}

fn pod_status(node: &str, a: &Attributes) -> Result<(), ApiError> {
    let old = a.old_object.as_ref();
    if str_at(old, "/spec/nodeName") != node {
        return Err(a.forbidden(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        )));
    }
    let labels = |v: Option<&Value>| {
        v.and_then(|v| v.pointer("/metadata/labels"))
            .cloned()
            .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
    };
    if labels(old) != labels(a.object.as_ref()) {
        return Err(a.forbidden(format!(
            "node {node:?} cannot update labels through pod status"
        )));
    }
    // Which claims a pod uses is the scheduler's and controller's word.
    if claim_statuses(old) != claim_statuses(a.object.as_ref()) {
        return Err(a.forbidden(format!(
            "node {node:?} cannot update resource claim statues"
        )));
    }
    Ok(())
}

/// A pod's resource claim statuses as `(name, resourceClaimName)`.
fn claim_statuses(pod: Option<&Value>) -> Vec<(&str, Option<&str>)> {
    pod.and_then(|p| p.pointer("/status/resourceClaimStatuses"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
            (name, s.get("resourceClaimName").and_then(Value::as_str))
        })
        .collect()
}
