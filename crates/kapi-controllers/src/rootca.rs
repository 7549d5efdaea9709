//! The root-CA publisher, as kube-controller-manager's: every active namespace
//! has a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the cluster CA bundle,
//! with upstream's description annotation; edited or deleted, it is put back.

use kapi_registry::store::options::WriteOptions;
use std::sync::Arc;

use kapi_machinery::status::ApiError;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};

use super::{ignore_exists, perns, CONTROLLER_MANAGER};
use crate::Context;

pub const NAME: &str = "kube-root-ca.crt";
const DESCRIPTION_KEY: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

pub fn spawn(cx: Arc<Context>, ca: String) {
    let ca = Arc::new(ca);
    perns::spawn(cx, "configmaps", NAME, move |cx, ns| {
        let ca = ca.clone();
        async move { ensure(cx, ns, &ca).await }
    });
}

/// Whether `cm` already says what it should.
fn in_sync(cm: &Value, ca: &str) -> bool {
    cm.get("data") == Some(&json!({"ca.crt": ca}))
        && cm
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DESCRIPTION_KEY))
            .and_then(Value::as_str)
            .is_some_and(|d| !d.is_empty())
}

async fn ensure(cx: Arc<Context>, ns: String, ca: &str) -> Result<(), ApiError> {
    let configmaps = cx
        .apis
        .lookup("", "v1", "configmaps")
        .ok_or_else(|| ApiError::internal("configmaps are not served"))?;
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    match configmaps.store.get(Some(&ns), NAME, None).await {
        Ok(cm) if in_sync(&cm, ca) => Ok(()),
        Ok(_) => {
            let updated = configmaps
                .store
                .update_with(Some(&ns), NAME, UpdateTarget::Main, &opts, false, |cur| {
                    let mut cm = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                    let root = cm.as_object_mut().expect("objects");
                    root.insert("data".into(), json!({"ca.crt": ca}));
                    let m = kapi_registry::meta::meta_mut(&mut cm);
                    let annotations = m.entry("annotations").or_insert_with(|| json!({}));
                    if !annotations.is_object() {
                        *annotations = json!({});
                    }
                    annotations[DESCRIPTION_KEY] = json!(DESCRIPTION);
                    Ok(cm)
                })
                .await;
            updated.map(|_| ())
        }
        Err(e) if e.is_not_found() => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": ns,
                             "annotations": {DESCRIPTION_KEY: DESCRIPTION}},
                "data": {"ca.crt": ca}});
            ignore_exists(configmaps.store.create(cm, &opts).await)
        }
        Err(e) => Err(e),
    }
}
