//! The bootstrap signer, as kube-controller-manager's `bootstrap-signer-controller`
//! (`pkg/controller/bootstrap/bootstrapsigner.go`): the ConfigMap
//! `kube-public/cluster-info` carries, for every bootstrap token that may sign
//! (`usage-bootstrap-signing: "true"`, not expired, its Secret named
//! `bootstrap-token-<id>` with the same `token-id`), the detached JWS of its
//! `kubeconfig` key under `jws-kubeconfig-<id>` — what `kubeadm join
//! --discovery-token` checks before trusting the cluster CA. Signatures of
//! tokens gone are removed; nothing is written when every signature is
//! already right.
//!
//! One informer on the bootstrap token Secrets (kept as this controller's
//! lister) and one on ConfigMaps named `cluster-info` queue the one key; the
//! worker reads the ConfigMap and rewrites it under compare-and-swap.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kapi_auth::authn::bootstrap::{self, SECRET_TYPE};
use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};
use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::{Context, CONTROLLER_MANAGER};

const NAMESPACE: &str = "kube-public";
const NAME: &str = "cluster-info";
const KUBECONFIG_KEY: &str = "kubeconfig";

/// The bootstrap token Secrets of kube-system, by name.
type Tokens = Arc<Mutex<HashMap<String, Value>>>;

pub fn spawn(cx: Arc<Context>) {
    let (Some(secrets), Some(configmaps)) = (
        cx.apis.lookup("", "v1", "secrets"),
        cx.apis.lookup("", "v1", "configmaps"),
    ) else {
        return;
    };
    let tokens: Tokens = Arc::default();
    let queue = WorkQueue::<()>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(
        secrets,
        FieldSelector::one_term_equal("type", SECRET_TYPE),
        tx.clone(),
    );
    informer::spawn(
        configmaps,
        FieldSelector::one_term_equal("metadata.name", NAME),
        tx,
    );
    let (q, t) = (queue.clone(), tokens.clone());
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let (obj, gone) = match &ev.change {
                Change::Upsert(o) => (o, false),
                Change::Deleted(o) => (o, true),
                Change::Synced => {
                    q.add(());
                    continue;
                }
            };
            if ev.entry.def.resource == "secrets" {
                if meta::namespace(obj) != Some(bootstrap::NAMESPACE) {
                    continue;
                }
                let name = meta::name(obj).to_string();
                let mut tokens = t.lock().expect("tokens lock");
                if gone {
                    tokens.remove(&name);
                } else {
                    tokens.insert(name, obj.clone());
                }
            } else if meta::namespace(obj) != Some(NAMESPACE) {
                continue;
            }
            q.add(());
        }
    });
    run_workers(queue, 1, move |()| {
        let (cx, tokens) = (cx.clone(), tokens.clone());
        async move { sign(&cx, &tokens).await.map_err(|e| e.to_string()) }
    });
}

/// `id → secret` of the tokens that may sign now.
fn signing_tokens(tokens: &Tokens) -> BTreeMap<String, String> {
    let now = kapi_auth::authn::serviceaccount::now();
    let tokens = tokens.lock().expect("tokens lock");
    let mut out = BTreeMap::new();
    for (name, secret) in tokens.iter() {
        let Some(id) = bootstrap::id_of_secret_name(name) else {
            continue;
        };
        let secret_part = bootstrap::data(secret, "token-secret");
        let ok = bootstrap::data(secret, "token-id") == id
            && !secret_part.is_empty()
            && bootstrap::seconds_left(secret, now) != Some(0)
            && bootstrap::data(secret, "usage-bootstrap-signing") == "true";
        if ok {
            out.insert(id.to_string(), secret_part);
        }
    }
    out
}

/// `cm` with exactly the signatures `tokens` make of its kubeconfig, or
/// `None` when it has no kubeconfig or nothing would change.
pub fn signed(cm: &Value, tokens: &BTreeMap<String, String>) -> Option<Value> {
    let data = cm.get("data").and_then(Value::as_object)?;
    let content = data.get(KUBECONFIG_KEY).and_then(Value::as_str)?;
    let mut new_data: serde_json::Map<String, Value> = data
        .iter()
        .filter(|(k, _)| !k.starts_with(bootstrap::SIGNATURE_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (id, secret) in tokens {
        let sig = bootstrap::detached_signature(content, id, secret);
        new_data.insert(format!("{}{id}", bootstrap::SIGNATURE_PREFIX), json!(sig));
    }
    if &new_data == data {
        return None;
    }
    let mut out = cm.clone();
    out["data"] = Value::Object(new_data);
    Some(out)
}

async fn sign(cx: &Context, tokens: &Tokens) -> Result<(), ApiError> {
    let Some(configmaps) = cx.apis.lookup("", "v1", "configmaps") else {
        return Ok(());
    };
    let wanted = signing_tokens(tokens);
    let cm = match configmaps.store.get(Some(NAMESPACE), NAME, None).await {
        Ok(cm) => cm,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    if signed(&cm, &wanted).is_none() {
        return Ok(());
    }
    let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
    let updated = configmaps
        .store
        .update_with(
            Some(NAMESPACE),
            NAME,
            UpdateTarget::Main,
            &opts,
            false,
            |cur| {
                let cur = cur.ok_or_else(|| ApiError::internal("cluster-info is gone"))?;
                Ok(signed(cur, &wanted).unwrap_or_else(|| cur.clone()))
            },
        )
        .await;
    match updated {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_added_replaced_and_removed() {
        let cm =
            json!({"data": {"kubeconfig": "k", "jws-kubeconfig-old123": "stale", "other": "x"}});
        let mut tokens = BTreeMap::new();
        tokens.insert("abcdef".to_string(), "0123456789abcdef".to_string());
        let out = signed(&cm, &tokens).unwrap();
        let data = out["data"].as_object().unwrap();
        assert_eq!(data.len(), 3);
        assert_eq!(
            data["jws-kubeconfig-abcdef"],
            json!(bootstrap::detached_signature(
                "k",
                "abcdef",
                "0123456789abcdef"
            ))
        );
        assert_eq!(signed(&out, &tokens), None);
        let cleared = signed(&out, &BTreeMap::new()).unwrap();
        assert_eq!(cleared["data"], json!({"kubeconfig": "k", "other": "x"}));
        assert_eq!(signed(&json!({"data": {"x": "y"}}), &tokens), None);
    }
}
