//! The storage-object-in-use protection controllers, as kube-controller-manager's
//! `persistentvolumeclaim-protection-controller` and
//! `persistentvolume-protection-controller`: the StorageObjectInUseProtection
//! admission plugin puts `kubernetes.io/pvc-protection` on every created claim
//! and `kubernetes.io/pv-protection` on every created volume; these
//! controllers take the finalizer off an object being deleted once nothing
//! uses it, so its delete finishes, and put it on an object that lacks it
//! (one created before the plugin was on).
//!
//! - A claim is used while a pod scheduled to a node (`spec.nodeName` set)
//!   names it in a `persistentVolumeClaim` volume, or has a generic ephemeral
//!   volume whose claim it is (`<pod>-<volume>`, controlled by that pod) and
//!   is not shut down (deleted with no grace period left).
//! - A volume is used while it is bound (`status.phase: Bound`).
//!
//! Claims are queued by their own changes and by the changes of pods that
//! name them; volumes by their own changes.

use std::sync::Arc;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{ListOptions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use kapi_resources::core::volume::{
    PVC_PROTECTION_FINALIZER as PVC_FINALIZER, PV_PROTECTION_FINALIZER as PV_FINALIZER,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::CONTROLLER_MANAGER;
use crate::Context;
use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};

/// What the object needs of its protection finalizer, if anything.
#[derive(Debug, PartialEq, Eq)]
enum Need {
    /// Not being deleted and without it: add it.
    Add,
    /// Being deleted with it: remove it once unused.
    RemoveIfUnused,
}

fn need(obj: &Value, finalizer: &str) -> Option<Need> {
    let has = meta::finalizers(obj).iter().any(|f| f == finalizer);
    match (meta::is_deleting(obj), has) {
        (false, false) => Some(Need::Add),
        (true, true) => Some(Need::RemoveIfUnused),
        _ => None,
    }
}

/// Claims `pod` may be using in its namespace: the claims of its
/// `persistentVolumeClaim` volumes and of its generic ephemeral volumes.
fn claims_of(pod: &Value) -> Vec<String> {
    volumes(pod)
        .filter_map(|v| match v.pointer("/persistentVolumeClaim/claimName") {
            Some(claim) => claim.as_str().map(str::to_owned),
            None => ephemeral_claim(pod, v),
        })
        .collect()
}

/// The claim of `pod`'s generic ephemeral volume `v`: `<pod>-<volume>`.
fn ephemeral_claim(pod: &Value, v: &Value) -> Option<String> {
    v.get("ephemeral")?;
    Some(format!("{}-{}", meta::name(pod), v.get("name")?.as_str()?))
}

fn volumes(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Upstream's `podUsesPVC`.
fn pod_uses_claim(pod: &Value, claim: &Value) -> bool {
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return false;
    }
    let claim_name = meta::name(claim);
    volumes(pod).any(|v| {
        let named = v
            .pointer("/persistentVolumeClaim/claimName")
            .and_then(Value::as_str)
            == Some(claim_name);
        let ephemeral = !shut_down(pod)
            && ephemeral_claim(pod, v).as_deref() == Some(claim_name)
            && controlled_by(claim, pod);
        named || ephemeral
    })
}

/// Deleted with no grace period left: the kubelet is done with it, or it
/// was force-deleted (upstream's `podIsShutDown`).
fn shut_down(pod: &Value) -> bool {
    meta::is_deleting(pod)
        && pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            == Some(0)
}

/// Whether `pod` is the controller owner of `claim` (an ephemeral volume's
/// claim is the pod's own only then).
fn controlled_by(claim: &Value, pod: &Value) -> bool {
    let Some(uid) = meta::meta_str(pod, "uid") else {
        return false;
    };
    claim
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("uid").and_then(Value::as_str) == Some(uid)
        })
}

/// Start the claim protection controller.
pub fn spawn_claims(cx: Arc<Context>) {
    let (Some(claims), Some(pods)) = (
        cx.apis.lookup("", "v1", "persistentvolumeclaims"),
        cx.apis.lookup("", "v1", "pods"),
    ) else {
        return;
    };
    let queue = WorkQueue::<(String, String)>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(claims, FieldSelector::everything(), tx.clone());
    informer::spawn(pods, FieldSelector::everything(), tx);
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let Some(obj) = ev.change.object() else {
                continue;
            };
            let ns = meta::namespace(obj).unwrap_or("").to_owned();
            if ev.entry.def.resource == "pods" {
                for claim in claims_of(obj) {
                    q.add((ns.clone(), claim));
                }
            } else if matches!(ev.change, Change::Upsert(_)) && need(obj, PVC_FINALIZER).is_some() {
                q.add((ns, meta::name(obj).to_owned()));
            }
        }
    });
    run_workers(queue, 2, move |(ns, name): (String, String)| {
        let cx = cx.clone();
        async move { sync_claim(&cx, &ns, &name).await.map_err(|e| e.to_string()) }
    });
}

async fn sync_claim(cx: &Context, ns: &str, name: &str) -> Result<(), ApiError> {
    let (Some(claims), Some(pods)) = (
        cx.apis.lookup("", "v1", "persistentvolumeclaims"),
        cx.apis.lookup("", "v1", "pods"),
    ) else {
        return Ok(());
    };
    let claim = match claims.store.get(Some(ns), name, None).await {
        Ok(c) => c,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    match need(&claim, PVC_FINALIZER) {
        None => Ok(()),
        Some(Need::Add) => set_finalizer(&claims, Some(ns), name, PVC_FINALIZER, true).await,
        Some(Need::RemoveIfUnused) => {
            let listed = pods.store.list(Some(ns), &ListOptions::default()).await?;
            if listed.items.iter().any(|p| pod_uses_claim(p, &claim)) {
                return Ok(());
            }
            set_finalizer(&claims, Some(ns), name, PVC_FINALIZER, false).await
        }
    }
}

/// Start the volume protection controller.
pub fn spawn_volumes(cx: Arc<Context>) {
    let Some(volumes) = cx.apis.lookup("", "v1", "persistentvolumes") else {
        return;
    };
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(volumes, FieldSelector::everything(), tx);
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let Change::Upsert(obj) = &ev.change {
                if need(obj, PV_FINALIZER).is_some() {
                    q.add(meta::name(obj).to_owned());
                }
            }
        }
    });
    run_workers(queue, 1, move |name: String| {
        let cx = cx.clone();
        async move { sync_volume(&cx, &name).await.map_err(|e| e.to_string()) }
    });
}

async fn sync_volume(cx: &Context, name: &str) -> Result<(), ApiError> {
    let Some(volumes) = cx.apis.lookup("", "v1", "persistentvolumes") else {
        return Ok(());
    };
    let volume = match volumes.store.get(None, name, None).await {
        Ok(v) => v,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    match need(&volume, PV_FINALIZER) {
        None => Ok(()),
        Some(Need::Add) => set_finalizer(&volumes, None, name, PV_FINALIZER, true).await,
        Some(Need::RemoveIfUnused) => {
            if volume.pointer("/status/phase").and_then(Value::as_str) == Some("Bound") {
                return Ok(());
            }
            set_finalizer(&volumes, None, name, PV_FINALIZER, false).await
        }
    }
}

/// Add (`on`) or remove `finalizer` on the current object, if that changes it.
async fn set_finalizer(
    entry: &kapi_registry::apis::Entry,
    ns: Option<&str>,
    name: &str,
    finalizer: &str,
    on: bool,
) -> Result<(), ApiError> {
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let written = entry
        .store
        .update_with(ns, name, UpdateTarget::Main, &opts, false, |cur| {
            let mut obj = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
            if on {
                meta::add_finalizer(&mut obj, finalizer);
            } else {
                meta::remove_finalizer(&mut obj, finalizer);
            }
            Ok(obj)
        })
        .await;
    match written {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(node: &str, volumes: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "pod-uid"},
               "spec": {"nodeName": node, "volumes": volumes}})
    }

    #[test]
    fn what_the_finalizer_needs() {
        let plain = json!({"metadata": {"name": "c"}});
        assert_eq!(need(&plain, PVC_FINALIZER), Some(Need::Add));
        let kept = json!({"metadata": {"finalizers": [PVC_FINALIZER]}});
        assert_eq!(need(&kept, PVC_FINALIZER), None);
        let deleting = json!({"metadata": {"finalizers": [PVC_FINALIZER],
                                           "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(need(&deleting, PVC_FINALIZER), Some(Need::RemoveIfUnused));
        let gone =
            json!({"metadata": {"finalizers": ["x"], "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(need(&gone, PVC_FINALIZER), None);
    }

    #[test]
    fn a_claim_is_used_by_scheduled_pods_that_name_it() {
        let claim = json!({"metadata": {"name": "data", "namespace": "ns"}});
        let named = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]);
        assert!(pod_uses_claim(&pod("n1", named.clone()), &claim));
        // Not scheduled: the kubelet never saw it.
        assert!(!pod_uses_claim(&pod("", named.clone()), &claim));
        let other = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "other"}}]);
        assert!(!pod_uses_claim(&pod("n1", other), &claim));
        assert_eq!(claims_of(&pod("n1", named)), ["data"]);
    }

    #[test]
    fn an_ephemeral_claim_is_its_pods_while_the_pod_runs() {
        let eph = json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]);
        let owned = json!({"metadata": {"name": "p-scratch", "namespace": "ns", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid", "controller": true}]}});
        let p = pod("n1", eph.clone());
        assert_eq!(claims_of(&p), ["p-scratch"]);
        assert!(pod_uses_claim(&p, &owned));
        // Another pod's claim of that name is not this pod's.
        let foreign = json!({"metadata": {"name": "p-scratch", "namespace": "ns", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "other", "controller": true}]}});
        assert!(!pod_uses_claim(&p, &foreign));
        // A pod deleted with no grace left no longer holds it.
        let mut done = p.clone();
        done["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        done["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert!(!pod_uses_claim(&done, &owned));
    }
}
