//! StorageObjectInUseProtection (upstream
//! `plugin/pkg/admission/storage/storageobjectinuseprotection`): a created
//! PersistentVolumeClaim gets the `kubernetes.io/pvc-protection` finalizer and
//! a created PersistentVolume `kubernetes.io/pv-protection`, so neither goes
//! while a pod still uses it (the controllers that drop the finalizers are
//! kube-controller-manager's). Creates of the main resource only.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_resources::core::volume::{PVC_PROTECTION_FINALIZER, PV_PROTECTION_FINALIZER};

use kapi_admission::{Attributes, Operation, Plugin};

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
            PVC_PROTECTION_FINALIZER
        } else if a.is("", "persistentvolumes") {
            PV_PROTECTION_FINALIZER
        } else {
            return Ok(());
        };
        if let Some(obj) = a.object.as_mut() {
            meta::add_finalizer(obj, finalizer);
        }
        Ok(())
    }
}
