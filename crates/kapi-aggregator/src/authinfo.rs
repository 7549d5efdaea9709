//! `kube-system/extension-apiserver-authentication`: the ConfigMap
//! kube-apiserver publishes (its `start-cluster-authentication-info-controller`)
//! so extension API servers know which client CA to trust and how a front
//! proxy passes the user — `client-ca-file`, `requestheader-client-ca-file`,
//! and the `requestheader-*` lists as JSON arrays. Kept so: recreated when
//! deleted, rewritten when edited (checked every few seconds).
//!
//! Unlike upstream, the keys are replaced rather than merged with CA bundles
//! other writers put there.

use kapi_registry::store::options::WriteOptions;
use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::status::ApiError;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Map, Value};

use crate::Aggregator;
use kapi_auth::authn::requestheader::RequestHeaderConfig;

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";
const MANAGER: &str = "kube-apiserver";
const EVERY: Duration = Duration::from_secs(5);

/// What is published.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Info {
    /// PEM bundle of the CAs client certificates are checked against.
    pub client_ca: String,
    pub request_header: Option<RequestHeaderConfig>,
}

impl Info {
    /// The ConfigMap's data.
    pub fn data(&self) -> Map<String, Value> {
        let mut data = Map::new();
        if !self.client_ca.is_empty() {
            data.insert("client-ca-file".into(), json!(self.client_ca));
        }
        if let Some(rh) = &self.request_header {
            let list = |v: &[String]| json!(serde_json::to_string(v).expect("strings"));
            data.insert("requestheader-client-ca-file".into(), json!(rh.client_ca));
            data.insert(
                "requestheader-username-headers".into(),
                list(&rh.username_headers),
            );
            data.insert(
                "requestheader-group-headers".into(),
                list(&rh.group_headers),
            );
            data.insert(
                "requestheader-extra-headers-prefix".into(),
                list(&rh.extra_headers_prefix),
            );
            data.insert(
                "requestheader-allowed-names".into(),
                list(&rh.allowed_names),
            );
        }
        data
    }
}

/// Keep the ConfigMap as the server's current [`Info`] says.
pub fn spawn(agg: Arc<Aggregator>) {
    tokio::spawn(async move {
        loop {
            if let Some(info) = agg.authentication_info() {
                if let Err(e) = ensure(&agg, &info).await {
                    tracing::debug!(error = %e, "publishing {NAMESPACE}/{NAME}");
                }
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}

async fn ensure(agg: &Aggregator, info: &Info) -> Result<(), ApiError> {
    let configmaps = agg
        .apis
        .lookup("", "v1", "configmaps")
        .ok_or_else(|| ApiError::internal("configmaps are not served"))?;
    let data = Value::Object(info.data());
    let opts = WriteOptions::for_manager(MANAGER);
    match configmaps.store.get(Some(NAMESPACE), NAME, None).await {
        Ok(cm) if cm.get("data") == Some(&data) => Ok(()),
        Ok(_) => configmaps
            .store
            .update_with(
                Some(NAMESPACE),
                NAME,
                UpdateTarget::Main,
                &opts,
                false,
                |cur| {
                    let mut cm = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                    cm["data"] = data.clone();
                    Ok(cm)
                },
            )
            .await
            .map(|_| ()),
        Err(e) if e.is_not_found() => {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": NAME, "namespace": NAMESPACE}, "data": data});
            match configmaps.store.create(cm, &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.is_already_exists() => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
