//! The `customresourcecleanup.apiextensions.k8s.io` finalizer, as upstream's
//! `controller/finalizer`: a deleting definition reports `Terminating`
//! (`InstanceDeletionInProgress`), has every object of its resource deleted,
//! is looked at again until none is left (objects held by finalizers keep it
//! waiting), reports `InstanceDeletionCompleted`, and loses the finalizer — at
//! which point the store removes it and the controller stops serving the
//! resource. A definition that was never established has nothing to delete
//! (`NeverEstablished`).

use kapi_apiextensions::crd::{self, Crd, CLEANUP_FINALIZER};
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::options::{DeleteOptions, ListOptions, Propagation};
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};

use super::{Controller, MANAGER};

/// One pass; `Ok(false)` while objects remain.
pub(super) async fn run(ctl: &Controller, obj: &Value) -> Result<bool, ApiError> {
    if !meta::finalizers(obj).iter().any(|f| f == CLEANUP_FINALIZER) {
        return Ok(true);
    }
    let crd = Crd::parse(obj);
    let name = crd.metadata.name.clone();
    ctl.mark_terminating(&name);
    let (reason, message) = if crd.is_true("Established") {
        ctl.write_status(&name, |st| {
            crd::set_condition(
                st,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            )
        })
        .await?;
        match delete_instances(ctl, &crd).await {
            Ok(0) => (
                "InstanceDeletionCompleted",
                "removed all instances".to_owned(),
            ),
            Ok(_) => return Ok(false),
            Err(e) => {
                let msg = format!("could not list instances: {}", e.message);
                ctl.write_status(&name, |st| {
                    crd::set_condition(st, "Terminating", "True", "InstanceDeletionFailed", &msg)
                })
                .await?;
                return Ok(false);
            }
        }
    } else {
        (
            "NeverEstablished",
            "resource was never established".to_owned(),
        )
    };
    ctl.write_status(&name, |st| {
        crd::set_condition(st, "Terminating", "False", reason, &message)
    })
    .await?;
    let opts = WriteOptions::for_manager(MANAGER);
    let uid = crd.metadata.uid.clone();
    let removed = ctl
        .crds
        .store
        .update_with(None, &name, UpdateTarget::Main, &opts, false, |cur| {
            let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
            if meta::uid(&next) != Some(uid.as_str()) {
                return Err(ApiError::conflict(
                    ctl.crds.def.group_resource(),
                    &name,
                    "the definition was recreated",
                ));
            }
            let left: Vec<String> = meta::finalizers(&next)
                .into_iter()
                .filter(|f| f != CLEANUP_FINALIZER)
                .collect();
            meta::meta_mut(&mut next).insert("finalizers".into(), json!(left));
            Ok(next)
        })
        .await;
    match removed {
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    if ctl.crds.store.get(None, &name, None).await.is_err() {
        ctl.uninstall(&name).await;
    }
    Ok(true)
}

/// Delete every object; the number still there afterwards.
async fn delete_instances(ctl: &Controller, crd: &Crd) -> Result<usize, ApiError> {
    let Some(entry) = ctl.entry_of(crd) else {
        return Ok(0);
    };
    let list = entry.store.list(None, &ListOptions::default()).await?;
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        ..Default::default()
    };
    for obj in &list.items {
        let ns = meta::namespace(obj).filter(|_| entry.def.namespaced);
        match entry.store.delete(ns, meta::name(obj), &opts).await {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => tracing::warn!(error = %e, "deleting a custom object"),
        }
    }
    Ok(entry
        .store
        .list(None, &ListOptions::default())
        .await?
        .items
        .len())
}
