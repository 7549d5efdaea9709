//! The namespace controller kapi runs in-process (kube-controller-manager's job
//! upstream; a single-binary control plane must do it itself): when a namespace is
//! terminating, delete everything in it, then remove the namespace.
//!
//! It polls terminating namespaces once a second (cheap: namespaces are few) and
//! finishes each one idempotently, so a crash mid-way is finished after restart.

use std::sync::Arc;
use std::time::Duration;

use kapi_registry::meta;
use kapi_registry::store::options::{DeleteOptions, ListOptions};
use serde_json::Value;

use crate::Server;

pub fn spawn(srv: Arc<Server>) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if let Err(e) = sweep(&srv).await {
                tracing::debug!(error = %e, "namespace controller pass failed");
            }
        }
    });
}

async fn sweep(srv: &Server) -> Result<(), kapi_machinery::status::ApiError> {
    let Some(namespaces) = srv.apis.lookup("", "v1", "namespaces") else {
        return Ok(());
    };
    let all = namespaces.store.list(None, &ListOptions::default()).await?;
    for ns in all.items.iter().filter(|n| meta::is_deleting(n)) {
        finish(srv, ns).await?;
    }
    Ok(())
}

/// Delete the namespace's content, then the namespace itself.
async fn finish(srv: &Server, ns_obj: &Value) -> Result<(), kapi_machinery::status::ApiError> {
    let ns = meta::name(ns_obj).to_owned();
    let mut remaining = 0;
    for entry in srv.apis.all().iter().filter(|e| e.def.namespaced) {
        let items = entry.store.list(Some(&ns), &ListOptions::default()).await?;
        for obj in items.items {
            remaining += 1;
            let name = meta::name(&obj).to_owned();
            let opts = DeleteOptions::default();
            match entry.store.delete(Some(&ns), &name, &opts).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
    }
    if remaining > 0 {
        return Ok(()); // Look again on the next pass: finalizers may still be running.
    }
    let namespaces = srv
        .apis
        .lookup("", "v1", "namespaces")
        .expect("namespaces served");
    let key = namespaces.def.key(None, &ns);
    let rv = meta::resource_version(ns_obj).and_then(|r| r.parse().ok());
    match namespaces.store.backend().delete(&key, rv).await {
        Ok(_) => tracing::info!(namespace = %ns, "namespace deleted"),
        Err(e) => tracing::debug!(namespace = %ns, error = %e, "namespace removal retried later"),
    }
    Ok(())
}
