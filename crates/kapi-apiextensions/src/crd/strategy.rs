//! The strategy of `customresourcedefinitions` (apiextensions.k8s.io/v1,
//! cluster-scoped, with a status subresource), as upstream's
//! `registry/customresourcedefinition/strategy.go`: defaults (`singular`,
//! `listKind`, `conversion: None`), a fresh status on create holding the
//! storage version in `storedVersions`, the storage version added to
//! `storedVersions` on every update, generation counting spec changes, and
//! upstream's delete: the first DELETE adds the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer and a `Terminating`
//! condition, so the objects can be removed before the definition goes
//! (`kapi-server/src/apiextensions/`).

use kapi_machinery::validation::ErrorList;
use kapi_registry::{meta, Strategy};
use serde_json::{json, Value};

use super::types::Crd;
use super::validation;

/// The finalizer that holds a definition until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub struct CrdStrategy;

impl Strategy for CrdStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
            let kind = names
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
            if !kind.is_empty() && empty(names.get("singular")) {
                names.insert("singular".into(), kind.to_lowercase().into());
            }
            if !kind.is_empty() && empty(names.get("listKind")) {
                names.insert("listKind".into(), format!("{kind}List").into());
            }
        }
        if spec.get("conversion").is_none_or(Value::is_null) {
            spec.insert("conversion".into(), json!({"strategy": "None"}));
        }
        if let Some(conv) = spec.get_mut("conversion").and_then(Value::as_object_mut) {
            if conv.get("strategy").is_none_or(Value::is_null) {
                conv.insert("strategy".into(), "None".into());
            }
            // v1 defaults a service reference's port to 443.
            if let Some(svc) = conv
                .get_mut("webhook")
                .and_then(|w| w.get_mut("clientConfig"))
                .and_then(|c| c.get_mut("service"))
                .and_then(Value::as_object_mut)
            {
                svc.entry("port").or_insert_with(|| 443.into());
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        let status = json!({"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": []});
        if let Some(root) = obj.as_object_mut() {
            root.insert("status".into(), status);
        }
        add_storage_version(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        add_storage_version(new);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validation::validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        validation::validate_update(new, old)
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, _old: &Value) -> ErrorList {
        validation::validate_status_update(new)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn begin_delete(&self, obj: &mut Value) -> bool {
        if meta::is_deleting(obj) {
            return false;
        }
        let mut finalizers = meta::finalizers(obj);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_owned());
        }
        meta::meta_mut(obj).insert("finalizers".into(), json!(finalizers));
        set_condition(
            obj,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        true
    }
}

/// Record the storage version in `status.storedVersions` (upstream keeps every
/// version objects may still be stored at).
fn add_storage_version(obj: &mut Value) {
    let Some(storage) = Crd::parse(obj).storage_version().map(|v| v.name.clone()) else {
        return;
    };
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = status
        .as_object_mut()
        .expect("made an object")
        .entry("storedVersions")
        .or_insert_with(|| json!([]));
    if !stored.is_array() {
        *stored = json!([]);
    }
    let list = stored.as_array_mut().expect("made an array");
    if !list.iter().any(|v| v.as_str() == Some(storage.as_str())) {
        list.push(storage.into());
    }
}

/// Set condition `type_` in `status.conditions`, keeping its transition time
/// when the status does not change.
pub fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let st = root.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let conds = st
        .as_object_mut()
        .expect("made an object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conds.is_array() {
        *conds = json!([]);
    }
    let list = conds.as_array_mut().expect("made an array");
    let now = meta::now_rfc3339();
    let fresh = json!({"type": type_, "status": status, "reason": reason, "message": message,
                       "lastTransitionTime": now});
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        Some(c) => {
            let same = c.get("status").and_then(Value::as_str) == Some(status);
            let time = c.get("lastTransitionTime").cloned();
            *c = fresh;
            if let (true, Some(t)) = (same, time) {
                c["lastTransitionTime"] = t;
            }
        }
        None => list.push(fresh),
    }
}
