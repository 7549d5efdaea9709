//! The shape the ServiceAccounts controller and the root-CA publisher share: one
//! named object kept in every active namespace. A watch on namespaces and one on
//! the object's resource (only that name) queue the namespace; the worker makes
//! the object right with `ensure`. Terminating namespaces are left alone, so the
//! namespace controller can empty them.

use std::future::Future;
use std::sync::Arc;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use tokio::sync::mpsc;

use crate::Context;
use kapi_client::informer;
use kapi_client::queue::{run_workers, WorkQueue};

/// Whether `ns` exists and is not being deleted.
pub async fn active(cx: &Context, ns: &str) -> Result<bool, ApiError> {
    let Some(namespaces) = cx.apis.lookup("", "v1", "namespaces") else {
        return Ok(false);
    };
    match namespaces.store.get(None, ns, None).await {
        Ok(obj) => Ok(!meta::is_deleting(&obj)
            && obj.pointer("/status/phase").and_then(|p| p.as_str()) != Some("Terminating")),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Keep `name` of `resource` (core/v1) in every active namespace with `ensure`.
pub fn spawn<F, Fut>(cx: Arc<Context>, resource: &str, name: &'static str, ensure: F)
where
    F: Fn(Arc<Context>, String) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ApiError>> + Send,
{
    let (Some(namespaces), Some(objects)) = (
        cx.apis.lookup("", "v1", "namespaces"),
        cx.apis.lookup("", "v1", resource),
    ) else {
        return;
    };
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(namespaces, FieldSelector::everything(), tx.clone());
    informer::spawn(
        objects,
        FieldSelector::one_term_equal("metadata.name", name),
        tx,
    );
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let Some(obj) = ev.change.object() else {
                continue;
            };
            let ns = if ev.entry.def.resource == "namespaces" {
                meta::name(obj)
            } else {
                meta::namespace(obj).unwrap_or("")
            };
            if !ns.is_empty() {
                q.add(ns.to_owned());
            }
        }
    });
    run_workers(queue, 2, move |ns: String| {
        let (cx, ensure) = (cx.clone(), ensure.clone());
        async move {
            match active(&cx, &ns).await {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => return Err(e.to_string()),
            }
            match ensure(cx, ns).await {
                Ok(()) => Ok(()),
                // The namespace went away or started terminating meanwhile.
                Err(e) if e.is_not_found() || e.code == 403 => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        }
    });
}
