//! The ResourceQuota controller, as kube-controller-manager's: every quota's
//! `status.hard` follows `spec.hard`, and `status.used` is recounted from the
//! objects in its namespace (`kapi_resources::core::quota_usage`) when the quota
//! spec changes, when a counted object goes away (or a pod finishes), and
//! every [`RESYNC`] for everything else. Admission charges creates as they happen;
//! this controller gives usage back.
//!
//! The recount is written with a compare-and-swap on the quota's
//! resourceVersion read before listing: a charge admitted meanwhile makes it
//! start over rather than overwrite the charge.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::{ApiError, Reason};
use kapi_registry::meta;
use kapi_registry::store::options::{ListOptions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use kapi_registry::Verb;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::Context;
use kapi_client::informer::{self, Change, Shape};
use kapi_client::queue::{run_workers, WorkQueue};
use kapi_machinery::quantity::{self, List};
use kapi_resources::core::quota_usage as usage;

/// Full recount period (upstream `--resource-quota-sync-period` is 5 m; kapi
/// watches only the core counted resources, so it recounts more often).
const RESYNC: Duration = Duration::from_secs(30);

/// Resources whose deletions are watched.
const WATCHED: &[&str] = &[
    "pods",
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
];

pub fn spawn(cx: Arc<Context>) {
    let Some(quotas) = cx.apis.lookup("", "v1", "resourcequotas") else {
        return;
    };
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(quotas.clone(), FieldSelector::everything(), tx.clone());
    for r in WATCHED {
        if let Some(e) = cx.apis.lookup("", "v1", r) {
            // Only pods' status matters here; of the others, only deletions.
            match *r {
                "pods" => informer::spawn(e, FieldSelector::everything(), tx.clone()),
                _ => informer::spawn_shaped(
                    e,
                    FieldSelector::everything(),
                    Shape::Deletions,
                    tx.clone(),
                ),
            };
        }
    }
    let q = queue.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            let quota_event = ev.entry.def.resource == "resourcequotas";
            let obj = match &ev.change {
                // Only a quota whose status does not follow its spec needs a
                // recount (as upstream): charges change only `status.used`.
                Change::Upsert(o) if quota_event => {
                    let fresh = o.pointer("/status/used").is_some()
                        && o.pointer("/status/hard") == o.pointer("/spec/hard");
                    if fresh {
                        continue;
                    }
                    o
                }
                Change::Upsert(o) if ev.entry.def.resource == "pods" => {
                    let phase = o.pointer("/status/phase").and_then(Value::as_str);
                    if !matches!(phase, Some("Succeeded") | Some("Failed")) && !meta::is_deleting(o)
                    {
                        continue;
                    }
                    o
                }
                Change::Deleted(o) => o,
                _ => continue,
            };
            if let Some(ns) = meta::namespace(obj) {
                q.add(ns.to_owned());
            }
        }
    });
    let (q, s) = (queue.clone(), cx.clone());
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(RESYNC).await;
            let Some(quotas) = s.apis.lookup("", "v1", "resourcequotas") else {
                return;
            };
            if let Ok(list) = quotas.store.list(None, &ListOptions::default()).await {
                for quota in &list.items {
                    if let Some(ns) = meta::namespace(quota) {
                        q.add(ns.to_owned());
                    }
                }
            }
        }
    });
    run_workers(queue, 1, move |ns: String| {
        let cx = cx.clone();
        async move { recount_namespace(&cx, &ns).await.map_err(|e| e.to_string()) }
    });
}

fn stale() -> ApiError {
    ApiError::new(409, Reason::Conflict, "quota changed during recount")
}

async fn recount_namespace(cx: &Context, ns: &str) -> Result<(), ApiError> {
    let Some(quotas) = cx.apis.lookup("", "v1", "resourcequotas") else {
        return Ok(());
    };
    let list = quotas.store.list(Some(ns), &ListOptions::default()).await?;
    for q in &list.items {
        for _ in 0..10 {
            match recount(cx, ns, meta::name(q)).await {
                Err(e) if e.code == 409 => continue,
                Err(e) if e.is_not_found() => break,
                other => {
                    other?;
                    break;
                }
            }
        }
    }
    Ok(())
}

/// The objects of `group`/`resource` in `ns`.
async fn objects(
    cx: &Context,
    ns: &str,
    group: &str,
    resource: &str,
) -> Result<Vec<Value>, ApiError> {
    let entry = cx
        .apis
        .preferred(&[Verb::List])
        .into_iter()
        .find(|e| e.def.group == group && e.def.resource == resource && e.def.namespaced);
    match entry {
        Some(e) => Ok(e.store.list(Some(ns), &ListOptions::default()).await?.items),
        None => Ok(Vec::new()),
    }
}

/// Recount one quota and write its status if it changed.
async fn recount(cx: &Context, ns: &str, name: &str) -> Result<(), ApiError> {
    let quotas = cx.apis.lookup("", "v1", "resourcequotas").expect("checked");
    let quota = quotas.store.get(Some(ns), name, None).await?;
    let rv = meta::resource_version(&quota).unwrap_or("").to_owned();
    let hard = quantity::list(quota.pointer("/spec/hard"));
    let mut by_resource: HashMap<(String, String), Vec<Value>> = HashMap::new();
    let mut used = List::new();
    for key in hard.keys() {
        used.insert(key.clone(), Default::default());
        let Some(gr) = usage::counted_resource(key) else {
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(e) = by_resource.entry(gr) {
            let (group, resource) = e.key().clone();
            e.insert(objects(cx, ns, &group, &resource).await?);
        }
    }
    for ((group, resource), objs) in &by_resource {
        for o in objs {
            if !usage::quota_matches(&quota, group, resource, o) {
                continue;
            }
            for (k, v) in usage::usage(group, resource, o) {
                if let Some(u) = used.get_mut(&k) {
                    *u = u.plus(v);
                }
            }
        }
    }
    let status = json!({
        "hard": quota.pointer("/spec/hard").cloned().unwrap_or(json!({})),
        "used": quantity::to_json(&used),
    });
    let same = |cur: &Value| {
        let cur_used: BTreeMap<_, _> = quantity::list(cur.pointer("/status/used"))
            .into_iter()
            .collect();
        cur.pointer("/status/hard") == status.get("hard") && cur_used == used
    };
    if same(&quota) {
        return Ok(());
    }
    quotas
        .store
        .update_with(
            Some(ns),
            name,
            UpdateTarget::Status,
            &WriteOptions::default(),
            false,
            |cur| {
                let cur = cur.expect("updates never create");
                if meta::resource_version(cur) != Some(rv.as_str()) {
                    return Err(stale());
                }
                let mut next = cur.clone();
                next["status"] = status.clone();
                Ok(next)
            },
        )
        .await?;
    Ok(())
}
