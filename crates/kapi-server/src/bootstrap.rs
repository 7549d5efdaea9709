//! First-start objects, as kube-apiserver creates them: the namespaces `default`,
//! `kube-system`, `kube-public`, `kube-node-lease`, and the `default/kubernetes`
//! Service on the first address of the service range (and the service
//! allocations repaired from the services that exist), the two system
//! PriorityClasses, the flow-control configuration (`flowcontrol.rs`), and
//! the bootstrap RBAC policy (`authz/policy.rs`).
//! Idempotent: existing objects are left alone.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::{ListOptions, WriteOptions};
use kapi_resources::scheduling::{GROUP as SCHEDULING, SYSTEM_CLASSES};
use serde_json::json;

use crate::Server;

pub async fn run(srv: &Server) -> Result<(), ApiError> {
    let namespaces = srv
        .apis
        .lookup("", "v1", "namespaces")
        .expect("namespaces served");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        ignore_exists(namespaces.store.create(obj, &WriteOptions::default()).await)?;
    }
    let services = srv
        .apis
        .lookup("", "v1", "services")
        .expect("services served");
    let svc = kapi_controllers::kubernetes_service_object(&srv.controller_context());
    ignore_exists(services.store.create(svc, &WriteOptions::default()).await)?;
    // What existing services hold (the kubernetes one too) is recorded in the
    // allocations before anyone asks for an address.
    let existing = services.store.list(None, &ListOptions::default()).await?;
    srv.services.repair(&existing.items).await?;
    srv.services.spawn_repair(services.store.clone());
    if let Some(classes) = srv.apis.lookup(SCHEDULING, "v1", "priorityclasses") {
        for class in SYSTEM_CLASSES {
            ignore_exists(
                classes
                    .store
                    .create(class.object(), &WriteOptions::default())
                    .await,
            )?;
        }
    }
    flow_control(srv).await?;
    kapi_auth::authz::policy::ensure(&srv.apis).await?;
    Ok(())
}

/// The APF bootstrap configuration, then each FlowSchema's `Dangling`
/// condition (whether its priority level exists), as upstream's config
/// controller reports it.
async fn flow_control(srv: &Server) -> Result<(), ApiError> {
    use kapi_resources::flowcontrol::{bootstrap, GROUP};
    let (Some(levels), Some(schemas)) = (
        srv.apis.lookup(GROUP, "v1", "prioritylevelconfigurations"),
        srv.apis.lookup(GROUP, "v1", "flowschemas"),
    ) else {
        return Ok(());
    };
    let opts = WriteOptions::default();
    for pl in bootstrap::priority_levels() {
        ignore_exists(levels.store.create(pl, &opts).await)?;
    }
    for fs in bootstrap::flow_schemas() {
        ignore_exists(schemas.store.create(fs, &opts).await)?;
    }
    let list = schemas.store.list(None, &Default::default()).await?;
    for fs in &list.items {
        let level = fs
            .pointer("/spec/priorityLevelConfiguration/name")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let exists = levels.store.get(None, level, None).await.is_ok();
        let (status, reason, message) = if exists {
            ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"))
        } else {
            ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"))
        };
        let name = kapi_registry::meta::name(fs).to_owned();
        let write = WriteOptions {
            field_manager: Some("api-priority-and-fairness-config-consumer-v1".into()),
            ..WriteOptions::default()
        };
        let target = kapi_registry::store::UpdateTarget::Status;
        let result = schemas
            .store
            .update_with(None, &name, target, &write, false, |cur| {
                let mut obj = cur.cloned().unwrap_or_default();
                let same = obj
                    .pointer("/status/conditions/0/status")
                    .and_then(|v| v.as_str())
                    == Some(status);
                if !same {
                    obj["status"] = json!({"conditions": [{
                        "type": "Dangling", "status": status, "reason": reason, "message": message,
                        "lastTransitionTime": kapi_registry::meta::now_rfc3339(),
                    }]});
                }
                Ok(obj)
            })
            .await;
        if let Err(e) = result {
            tracing::debug!(flowschema = %name, error = %e, "flowschema status not written");
        }
    }
    Ok(())
}

pub(crate) fn ignore_exists<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}
