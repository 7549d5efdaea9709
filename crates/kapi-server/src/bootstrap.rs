//! First-start objects, as kube-apiserver creates them: the namespaces `default`,
//! `kube-system`, `kube-public`, `kube-node-lease`, the two system
//! PriorityClasses, the flow-control configuration, and the bootstrap RBAC
//! policy (`kapi_auth::authz::policy`). The `default/kubernetes` Service is the
//! endpoint reconciler's (`kapi_controllers::bootstrap`).
//! Idempotent: existing objects are left alone.

use kapi_machinery::status::ApiError;
use kapi_registry::store::options::WriteOptions;
use kapi_resources::scheduling::{GROUP as SCHEDULING, SYSTEM_CLASSES};
use serde_json::json;

use kapi_registry::apis::Apis;

pub async fn run(apis: &Apis) -> Result<(), ApiError> {
    let namespaces = apis
        .lookup("", "v1", "namespaces")
        .expect("namespaces served");
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        ignore_exists(namespaces.store.create(obj, &WriteOptions::default()).await)?;
    }
    if let Some(classes) = apis.lookup(SCHEDULING, "v1", "priorityclasses") {
        for class in SYSTEM_CLASSES {
            ignore_exists(
                classes
                    .store
                    .create(class.object(), &WriteOptions::default())
                    .await,
            )?;
        }
    }
    flow_control(apis).await?;
    kapi_auth::authz::policy::ensure(apis).await?;
    Ok(())
}

/// The APF bootstrap configuration, then each FlowSchema's `Dangling`
/// condition (whether its priority level exists), as upstream's config
/// controller reports it.
async fn flow_control(apis: &Apis) -> Result<(), ApiError> {
    use kapi_resources::flowcontrol::{bootstrap, GROUP};
    let (Some(levels), Some(schemas)) = (
        apis.lookup(GROUP, "v1", "prioritylevelconfigurations"),
        apis.lookup(GROUP, "v1", "flowschemas"),
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
