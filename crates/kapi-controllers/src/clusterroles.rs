//! The clusterrole-aggregation controller (kube-controller-manager's upstream;
//! run in-process here): every ClusterRole with an `aggregationRule` holds the
//! union of the rules of the ClusterRoles its selectors match.
//!
//! It watches clusterroles and, after every change, recomputes every aggregated
//! role (`kapi_resources::rbac::rules::aggregate`) and writes those whose rules
//! differ, as field manager `clusterrole-aggregation-controller`. A write of an
//! aggregated role is itself a change, which finds nothing left to do, so the
//! loop settles. When the watch ends (compaction, storage restart) it starts
//! again from a fresh list.

use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{ListOptions, WatchOptions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use kapi_resources::rbac::rules::{aggregate, same_rules};
use serde_json::Value;

use crate::Context;
use kapi_registry::apis::Entry;

const MANAGER: &str = "clusterrole-aggregation-controller";

pub fn spawn(cx: Arc<Context>) {
    let Some(roles) = cx
        .apis
        .lookup(kapi_resources::rbac::GROUP, "v1", "clusterroles")
    else {
        return;
    };
    tokio::spawn(async move {
        loop {
            if let Err(e) = follow(&roles).await {
                tracing::debug!(error = %e, "clusterrole aggregation restarts");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    });
}

/// Reconcile once, then again after every batch of watch events.
async fn follow(roles: &Entry) -> Result<(), ApiError> {
    let rv = reconcile(roles).await?;
    let opts = WatchOptions {
        resource_version: Some(rv),
        ..Default::default()
    };
    let mut events = roles.store.watch(None, &opts).await?;
    while events.recv().await.is_some() {
        while events.try_recv().is_ok() {}
        reconcile(roles).await?;
    }
    Ok(())
}

/// Bring every aggregated ClusterRole up to date; returns the list's revision.
pub async fn reconcile(roles: &Entry) -> Result<String, ApiError> {
    let list = roles.store.list(None, &ListOptions::default()).await?;
    for role in &list.items {
        let Some(wanted) = aggregate(role, &list.items) else {
            continue;
        };
        let current = role
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if same_rules(&current, &wanted) {
            continue;
        }
        let opts = WriteOptions {
            field_manager: Some(MANAGER.into()),
            ..WriteOptions::default()
        };
        let name = meta::name(role).to_owned();
        let result = roles
            .store
            .update_with(None, &name, UpdateTarget::Main, &opts, false, |cur| {
                let mut obj = cur.cloned().unwrap_or(Value::Null);
                obj["rules"] = Value::Array(wanted.clone());
                Ok(obj)
            })
            .await;
        match result {
            Ok(_) => tracing::debug!(clusterrole = %name, "aggregated rules updated"),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(list.resource_version.clone())
}
