//! DefaultStorageClass (upstream `plugin/pkg/admission/storage/storageclass/setdefault`):
//! a new PersistentVolumeClaim that names no class (neither
//! `spec.storageClassName` nor the beta annotation) gets the default class:
//! the StorageClass annotated `storageclass.kubernetes.io/is-default-class:
//! "true"` (or the beta annotation); of several, the newest, then by name.

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::ListOptions;
use serde_json::{json, Value};

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

const IS_DEFAULT: &str = "storageclass.kubernetes.io/is-default-class";
const BETA_IS_DEFAULT: &str = "storageclass.beta.kubernetes.io/is-default-class";
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

pub struct DefaultStorageClass {
    pub(crate) cx: Context,
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

fn is_default(class: &Value) -> bool {
    annotation(class, IS_DEFAULT) == Some("true")
        || annotation(class, BETA_IS_DEFAULT) == Some("true")
}

/// The default class's name, if any class is marked default.
pub async fn default_class(cx: &Context) -> Result<Option<String>, ApiError> {
    let Some(entry) = cx.apis.lookup("storage.k8s.io", "v1", "storageclasses") else {
        return Ok(None);
    };
    let list = entry.store.list(None, &ListOptions::default()).await?;
    let mut defaults: Vec<&Value> = list.items.iter().filter(|c| is_default(c)).collect();
    // Newest first (RFC 3339 timestamps sort as text), then by name.
    defaults.sort_by(|a, b| {
        let ts = |o: &Value| {
            meta::meta_str(o, "creationTimestamp")
                .unwrap_or("")
                .to_owned()
        };
        ts(b)
            .cmp(&ts(a))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    Ok(defaults.first().map(|c| meta::name(c).to_owned()))
}

#[async_trait]
impl Plugin for DefaultStorageClass {
    fn name(&self) -> &'static str {
        "DefaultStorageClass"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "persistentvolumeclaims")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        false
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !a.is("", "persistentvolumeclaims") {
            return Ok(());
        }
        let Some(pvc) = a.object.as_ref() else {
            return Ok(());
        };
        let has_class = pvc
            .pointer("/spec/storageClassName")
            .is_some_and(|v| !v.is_null())
            || annotation(pvc, BETA_CLASS).is_some();
        if has_class {
            return Ok(());
        }
        let Some(name) = default_class(cx).await? else {
            return Ok(());
        };
        let pvc = a.object.as_mut().expect("checked");
        if let Some(spec) = pvc.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("storageClassName".into(), json!(name));
        }
        Ok(())
    }
}
