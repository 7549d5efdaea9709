//! The namespace controller, as kube-controller-manager's: a namespace marked
//! for deletion (phase `Terminating`) has all its content deleted (propagation
//! `Background`), its progress reported in `status.conditions` with upstream's
//! five condition types, reasons and messages, and — once nothing is left — the
//! `kubernetes` spec finalizer removed through `finalize`, which lets the store
//! remove the namespace.
//!
//! Driven by a watch on namespaces; a namespace whose content is still going
//! (finalizers, errors) is looked at again after a delay. Each pass is
//! idempotent, so a restart mid-way finishes the job.

use kapi_registry::store::options::WriteOptions;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, ListOptions, Propagation};
use kapi_registry::store::UpdateTarget;
use kapi_registry::Verb;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::CONTROLLER_MANAGER;
use crate::Context;
use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};

/// The spec finalizer this controller owns.
const FINALIZER: &str = "kubernetes";
/// Upstream's wait before looking again at content held by finalizers.
const RECHECK: Duration = Duration::from_secs(1);

/// Condition types in upstream's order, with their "all is well" reason and message.
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

pub fn spawn(cx: Arc<Context>) {
    let Some(namespaces) = cx.apis.lookup("", "v1", "namespaces") else {
        return;
    };
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(namespaces, FieldSelector::everything(), tx);
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let Change::Upsert(ns) = ev.change {
                if meta::is_deleting(&ns) {
                    q.add(meta::name(&ns).to_owned());
                }
            }
        }
    });
    let retry = queue.clone();
    run_workers(queue, 2, move |name: String| {
        let (cx, retry) = (cx.clone(), retry.clone());
        async move {
            match sync(&cx, &name).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    retry.add_after(name, RECHECK);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
    });
}

/// What one pass over the content found.
#[derive(Default)]
struct Pass {
    /// `pods.` / `deployments.apps` → objects left.
    remaining: BTreeMap<String, usize>,
    /// finalizer → objects holding it.
    finalizers: BTreeMap<String, usize>,
    /// Deletion failures, as upstream's messages.
    errors: Vec<String>,
}

/// One pass; `Ok(true)` when the namespace is done with (gone or finalized).
async fn sync(cx: &Context, name: &str) -> Result<bool, ApiError> {
    let namespaces = cx
        .apis
        .lookup("", "v1", "namespaces")
        .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
    let ns = match namespaces.store.get(None, name, None).await {
        Err(e) if e.is_not_found() => return Ok(true),
        other => other?,
    };
    if !meta::is_deleting(&ns) || !has_spec_finalizer(&ns) {
        return Ok(true);
    }
    let pass = delete_content(cx, name).await;
    update_conditions(cx, &ns, &pass).await?;
    if !pass.remaining.is_empty() || !pass.errors.is_empty() {
        return Ok(false);
    }
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let uid = meta::uid(&ns).unwrap_or("").to_owned();
    let finalized = namespaces
        .store
        .update_with(None, name, UpdateTarget::Finalize, &opts, false, |cur| {
            let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
            if meta::uid(&next) != Some(uid.as_str()) {
                return Err(ApiError::conflict(
                    namespaces.def.group_resource(),
                    name,
                    "the namespace was recreated",
                ));
            }
            if let Some(list) = next
                .pointer_mut("/spec/finalizers")
                .and_then(Value::as_array_mut)
            {
                list.retain(|f| f != FINALIZER);
            }
            Ok(next)
        })
        .await;
    match finalized {
        Ok(_) => {
            tracing::info!(namespace = %name, "namespace finalized");
            Ok(true)
        }
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) => Err(e),
    }
}

fn has_spec_finalizer(ns: &Value) -> bool {
    ns.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|f| f == FINALIZER))
}

/// Delete everything in the namespace, then count what is left.
async fn delete_content(cx: &Context, ns: &str) -> Pass {
    let mut pass = Pass::default();
    let verbs = [Verb::List, Verb::Delete];
    for entry in cx
        .apis
        .preferred(&verbs)
        .into_iter()
        .filter(|e| e.def.namespaced)
    {
        let def = &entry.def;
        let gvr = format!("{}/{}, Resource={}", def.group, def.version, def.resource);
        let list = match entry.store.list(Some(ns), &ListOptions::default()).await {
            Ok(l) => l.items,
            Err(e) => {
                pass.errors.push(e.message.clone());
                continue;
            }
        };
        if list.is_empty() {
            continue;
        }
        let opts = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..Default::default()
        };
        let mut left = 0;
        let mut held = false;
        for obj in &list {
            match entry.store.delete(Some(ns), meta::name(obj), &opts).await {
                Ok(kapi_registry::store::DeleteOutcome::Deleted(_)) => {}
                Ok(kapi_registry::store::DeleteOutcome::Pending(o)) => {
                    left += 1;
                    for f in meta::finalizers(&o) {
                        held = true;
                        *pass.finalizers.entry(f).or_default() += 1;
                    }
                    // Graceful termination counts as an estimate, as upstream.
                    held |= o
                        .pointer("/metadata/deletionGracePeriodSeconds")
                        .and_then(Value::as_i64)
                        .is_some_and(|g| g > 0);
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => {
                    left += 1;
                    pass.errors.push(e.message.clone());
                }
            }
        }
        if left > 0 {
            pass.remaining
                .insert(format!("{}.{}", def.resource, def.group), left);
            if !held {
                pass.errors.push(format!(
                    "unexpected items still remain in namespace: {ns} for gvr: {gvr}"
                ));
            }
        }
    }
    pass
}

/// Upstream's `updateConditions`: every type present, the failing ones `True`.
fn conditions(old: &[Value], pass: &Pass, now: &str) -> Vec<Value> {
    let failing = |ty: &str| -> Option<(String, String)> {
        match ty {
            "NamespaceDeletionContentFailure" if !pass.errors.is_empty() => {
                let mut msgs = pass.errors.clone();
                msgs.sort();
                Some((
                    "ContentDeletionFailed".into(),
                    format!(
                        "Failed to delete all resource types, {} remaining: {}",
                        msgs.len(),
                        msgs.join(", ")
                    ),
                ))
            }
            "NamespaceContentRemaining" if !pass.remaining.is_empty() => {
                let items: Vec<String> = pass
                    .remaining
                    .iter()
                    .map(|(gr, n)| format!("{gr} has {n} resource instances"))
                    .collect();
                Some((
                    "SomeResourcesRemain".into(),
                    format!("Some resources are remaining: {}", items.join(", ")),
                ))
            }
            "NamespaceFinalizersRemaining" if !pass.finalizers.is_empty() => {
                let items: Vec<String> = pass
                    .finalizers
                    .iter()
                    .map(|(f, n)| format!("{f} in {n} resource instances"))
                    .collect();
                Some((
                    "SomeFinalizersRemain".into(),
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        items.join(", ")
                    ),
                ))
            }
            _ => None,
        }
    };
    let mut out: Vec<Value> = old.to_vec();
    for (ty, ok_reason, ok_message) in CONDITIONS {
        let (status, reason, message) = match failing(ty) {
            Some((r, m)) => ("True", r, m),
            None => ("False", ok_reason.to_owned(), ok_message.to_owned()),
        };
        let new = json!({"type": ty, "status": status, "lastTransitionTime": now,
                         "reason": reason, "message": message});
        match out.iter_mut().find(|c| c["type"] == ty) {
            None => out.push(new),
            Some(c) => {
                let transition = if c["status"] == status {
                    c["lastTransitionTime"].clone()
                } else {
                    json!(now)
                };
                *c = new;
                c["lastTransitionTime"] = transition;
            }
        }
    }
    out
}

async fn update_conditions(cx: &Context, ns: &Value, pass: &Pass) -> Result<(), ApiError> {
    let old: Vec<Value> = ns
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let new = conditions(&old, pass, &meta::now_rfc3339());
    if new == old {
        return Ok(());
    }
    let namespaces = cx.apis.lookup("", "v1", "namespaces").expect("served");
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let result = namespaces
        .store
        .update_with(
            None,
            meta::name(ns),
            UpdateTarget::Status,
            &opts,
            false,
            |cur| {
                let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                let status = next
                    .as_object_mut()
                    .expect("objects")
                    .entry("status")
                    .or_insert_with(|| json!({}));
                status["conditions"] = json!(new);
                Ok(next)
            },
        )
        .await;
    match result {
        Err(e) if e.is_not_found() => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_report_progress_as_upstream() {
        let mut pass = Pass::default();
        pass.remaining.insert("configmaps.".into(), 2);
        pass.finalizers.insert("example.com/hold".into(), 2);
        let c = conditions(&[], &pass, "T1");
        assert_eq!(c.len(), 5);
        assert_eq!(c[0]["reason"], "ResourcesDiscovered");
        assert_eq!(c[2]["status"], "False");
        assert_eq!(c[3]["status"], "True");
        assert_eq!(
            c[3]["message"],
            "Some resources are remaining: configmaps. has 2 resource instances"
        );
        assert_eq!(c[4]["reason"], "SomeFinalizersRemain");
        assert_eq!(
            c[4]["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"
        );
        // Done: statuses flip, transition times move only for those.
        let done = conditions(&c, &Pass::default(), "T2");
        assert_eq!(done[3]["status"], "False");
        assert_eq!(done[3]["lastTransitionTime"], "T2");
        assert_eq!(done[0]["lastTransitionTime"], "T1");
        assert_eq!(
            done[4]["message"],
            "All content-preserving finalizers finished"
        );
    }
}
