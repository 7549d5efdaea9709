//! The token cleaner, as kube-controller-manager's `token-cleaner-controller`
//! (`pkg/controller/bootstrap/tokencleaner.go`): a bootstrap token Secret of
//! kube-system whose `expiration` has passed (or cannot be parsed) is deleted,
//! with its uid as the precondition, so a Secret recreated under the same
//! name is left alone. A Secret not expired yet is looked at again when it
//! expires.

use std::sync::Arc;
use std::time::Duration;

use kapi_auth::authn::bootstrap::{self, SECRET_TYPE};
use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};
use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, Preconditions};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::Context;

pub fn spawn(cx: Arc<Context>) {
    let Some(secrets) = cx.apis.lookup("", "v1", "secrets") else {
        return;
    };
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(
        secrets,
        FieldSelector::one_term_equal("type", SECRET_TYPE),
        tx,
    );
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let Change::Upsert(obj) = &ev.change {
                if meta::namespace(obj) == Some(bootstrap::NAMESPACE) {
                    q.add(meta::name(obj).to_string());
                }
            }
        }
    });
    let q = queue.clone();
    run_workers(queue, 1, move |name: String| {
        let (cx, q) = (cx.clone(), q.clone());
        async move { clean(&cx, &q, &name).await.map_err(|e| e.to_string()) }
    });
}

async fn clean(cx: &Context, queue: &Arc<WorkQueue<String>>, name: &str) -> Result<(), ApiError> {
    let Some(secrets) = cx.apis.lookup("", "v1", "secrets") else {
        return Ok(());
    };
    let ns = bootstrap::NAMESPACE;
    let secret = match secrets.store.get(Some(ns), name, None).await {
        Ok(s) => s,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e),
    };
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return Ok(());
    }
    match bootstrap::seconds_left(&secret, kapi_auth::authn::serviceaccount::now()) {
        None => Ok(()),
        Some(0) => {
            let uid = meta::uid(&secret).map(str::to_owned);
            tracing::info!(
                namespace = ns,
                name,
                "deleting expired bootstrap token secret"
            );
            let opts = DeleteOptions {
                preconditions: Preconditions {
                    uid,
                    resource_version: None,
                },
                ..DeleteOptions::default()
            };
            match secrets.store.delete(Some(ns), name, &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.is_not_found() || e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Some(left) => {
            queue.add_after(name.to_string(), Duration::from_secs(left as u64));
            Ok(())
        }
    }
}
