//! ServiceAccount (upstream `plugin/pkg/admission/serviceaccount`): a new pod
//! without `serviceAccountName` runs as `default`; the service account must
//! exist (403 `error looking up service account <ns>/<name>: ...`; the
//! `default` one is looked up again for a while, as the serviceaccounts
//! controller creates it with the namespace); unless the pod or the account
//! says `automountServiceAccountToken: false`, every container mounts the
//! projected `kube-api-access-<random>` volume (a bound token, the cluster CA,
//! the namespace) at `/var/run/secrets/kubernetes.io/serviceaccount`; the
//! account's `imagePullSecrets` become the pod's when it names none. Mirror
//! pods may not reference service accounts or secrets.

use std::time::Duration;

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, GroupResource};
use kapi_registry::meta;
use serde_json::{json, Value};

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};

pub const DEFAULT_ACCOUNT: &str = "default";
const VOLUME_PREFIX: &str = "kube-api-access-";
pub const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Upstream's `WarnOnlyBoundTokenExpirationSeconds`.
const TOKEN_EXPIRATION: i64 = 3607;
/// Lookups of the `default` account before giving up (upstream: 10).
const DEFAULT_ATTEMPTS: usize = 10;

pub struct ServiceAccount {
    pub(crate) cx: Context,
}

fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some()
}

/// The account, looked up as upstream's `getServiceAccount` does.
async fn get_account(cx: &Context, ns: &str, name: &str) -> Result<Value, ApiError> {
    let Some(entry) = cx.apis.lookup("", "v1", "serviceaccounts") else {
        return Err(ApiError::internal("serviceaccounts are not served"));
    };
    let attempts = if name == DEFAULT_ACCOUNT {
        DEFAULT_ATTEMPTS
    } else {
        1
    };
    for i in 0..attempts {
        if i > 0 {
            let jitter = u64::from(rand_ms());
            tokio::time::sleep(Duration::from_millis(100 + jitter)).await;
        }
        match entry.store.get(Some(ns), name, None).await {
            Ok(sa) => return Ok(sa),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::not_found(
        GroupResource::new("", "serviceaccount"),
        name,
    ))
}

fn rand_ms() -> u8 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    (nanos % 100) as u8
}

/// Upstream `TokenVolumeSource`.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_EXPIRATION}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

fn should_automount(sa: &Value, pod: &Value) -> bool {
    pod.pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true)
}

/// Upstream `mountServiceAccountToken`.
fn mount_token(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_owned);
    let has_volume = existing.is_some();
    let volume_name = existing.unwrap_or_else(|| meta::generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut needs_volume = false;
    for list in ["initContainers", "containers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else {
                continue;
            };
            let mounts = c
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH));
            if !taken {
                mounts.push(mount.clone());
                needs_volume = true;
            }
        }
    }
    if needs_volume && !has_volume {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(v) = volumes.as_array_mut() {
            v.push(token_volume(&volume_name));
        }
    }
}

fn references_secrets(pod: &Value) -> bool {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|v| v.get("secret").is_some())
}

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn concerns(&self, a: &Attributes) -> bool {
        a.is("", "pods")
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !a.is("", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) {
            return Ok(());
        }
        let name = match pod
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
        {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => DEFAULT_ACCOUNT.to_owned(),
        };
        let sa = get_account(cx, &a.namespace, &name).await.map_err(|e| {
            a.forbidden(format!(
                "error looking up service account {}/{name}: {}",
                a.namespace, e.message
            ))
        })?;
        let pod = a.object.as_mut().expect("checked");
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("serviceAccountName".into(), json!(name));
        }
        if should_automount(&sa, pod) {
            mount_token(pod);
        }
        let pull_secrets: Vec<Value> = sa
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("name").and_then(Value::as_str))
            .map(|n| json!({"name": n}))
            .collect();
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            let has = spec
                .get("imagePullSecrets")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty());
            if !has && !pull_secrets.is_empty() {
                spec.insert("imagePullSecrets".into(), Value::Array(pull_secrets));
            }
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if !a.is("", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let account = pod
            .pointer("/spec/serviceAccountName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if is_mirror(pod) {
            if !account.is_empty() {
                return Err(a.forbidden("a mirror pod may not reference service accounts"));
            }
            if references_secrets(pod) {
                return Err(a.forbidden("a mirror pod may not reference secrets"));
            }
            return Ok(());
        }
        if account.is_empty() {
            return Err(a.forbidden(format!(
                "no service account specified for pod {}/{}",
                a.namespace,
                a.error_name()
            )));
        }
        get_account(cx, &a.namespace, account).await.map_err(|e| {
            a.forbidden(format!(
                "error looking up service account {}/{account}: {}",
                a.namespace, e.message
            ))
        })?;
        Ok(())
    }
}
