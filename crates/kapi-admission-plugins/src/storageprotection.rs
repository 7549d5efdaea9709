//! StorageObjectInUseProtection (upstream
//! `plugin/pkg/admission/storage/storageobjectinuseprotection`): a created
//! PersistentVolumeClaim gets the `kubernetes.io/pvc-protection` finalizer and
//! a created PersistentVolume `kubernetes.io/pv-protection`, so neither goes
//! while a pod still uses it (the controllers that drop the finalizers are
//! kube-controller-manager's). Creates of the main resource only.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use serde_json::Value;

use kapi_admission::{Attributes, Operation, Plugin};

pub const PVC_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const PV_FINALIZER: &str = "kubernetes.io/pv-protection";

pub struct StorageObjectInUseProtection;

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        "StorageObjectInUseProtection"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "persistentvolumeclaims") || a.is("", "persistentvolumes")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let finalizer = if a.is("", "persistentvolumeclaims") {
            PVC_FINALIZER
        } else if a.is("", "persistentvolumes") {
            PV_FINALIZER
        } else {
            return Ok(());
        };
        if let Some(obj) = a.object.as_mut() {
            add_finalizer(obj, finalizer);
        }
        Ok(())
    }
}

/// Append `finalizer` to the object's finalizers unless it is there.
fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    if let Some(items) = list.as_array_mut() {
        if !items.iter().any(|f| f.as_str() == Some(finalizer)) {
            items.push(Value::from(finalizer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_finalizer_is_added_once_after_the_others() {
        let mut pvc = json!({"metadata": {"name": "c"}});
        add_finalizer(&mut pvc, PVC_FINALIZER);
        assert_eq!(pvc["metadata"]["finalizers"], json!([PVC_FINALIZER]));
        add_finalizer(&mut pvc, PVC_FINALIZER);
        assert_eq!(pvc["metadata"]["finalizers"], json!([PVC_FINALIZER]));
        let mut pv = json!({"metadata": {"name": "v", "finalizers": ["a/b"]}});
        add_finalizer(&mut pv, PV_FINALIZER);
        assert_eq!(pv["metadata"]["finalizers"], json!(["a/b", PV_FINALIZER]));
        let mut null = json!({"metadata": {"finalizers": null}});
        add_finalizer(&mut null, PV_FINALIZER);
        assert_eq!(null["metadata"]["finalizers"], json!([PV_FINALIZER]));
    }
}
