//! Keeps APF in step with the stored objects, as upstream's APF config
//! controller: informers on FlowSchemas and PriorityLevelConfigurations (read
//! through the watch cache), a new configuration after every burst of changes,
//! and each FlowSchema's `Dangling` condition written when it changes.
//!
//! Also drives the bootstrap ensurer (`ensure.rs`): every bootstrap object
//! the informers see deleted or changed is ensured at once (re-created, or its
//! spec forced back when the ensurer's rules say so), and all of them every
//! minute; and seat borrowing, every [`super::borrow::PERIOD`].

use std::collections::BTreeMap;
use std::sync::Arc;

use kapi_machinery::fields::FieldSelector;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::config::{LevelSpec, Schema};
use super::{borrow, ensure, FlowControl};
use kapi_client::informer::{self, Change};
use kapi_registry::apis::Apis;

const MANAGER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Follow the configuration objects of `apis` while it lives.
pub fn spawn(apis: &Arc<Apis>, fc: FlowControl) {
    use kapi_resources::flowcontrol::GROUP;
    let (Some(levels), Some(schemas)) = (
        apis.lookup(GROUP, "v1", "prioritylevelconfigurations"),
        apis.lookup(GROUP, "v1", "flowschemas"),
    ) else {
        return;
    };
    let weak = Arc::downgrade(apis);
    fc.set_counter(Arc::new(move |info: &kapi_http::request::RequestInfo| {
        let Some(apis) = weak.upgrade() else {
            return (0, 0);
        };
        let (Some(cache), Some(entry)) = (
            apis.cache(),
            apis.lookup(&info.group, &info.version, &info.resource),
        ) else {
            return (0, 0);
        };
        let prefix = entry.def.list_prefix(None);
        (cache.cached_objects(&prefix), cache.watcher_count(&prefix))
    }));
    let (tx, rx) = mpsc::channel(256);
    informer::spawn(levels.clone(), FieldSelector::default(), tx.clone());
    informer::spawn(schemas.clone(), FieldSelector::default(), tx);
    fc.spawn_borrowing(borrow::PERIOD);
    let weak = Arc::downgrade(apis);
    let (l, s) = (levels.clone(), schemas.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(ensure::PERIOD);
        loop {
            tick.tick().await;
            if weak.strong_count() == 0 {
                return;
            }
            ensure::ensure_all(&s).await;
            ensure::ensure_all(&l).await;
        }
    });
    tokio::spawn(run(fc, levels, schemas, rx));
}

async fn run(
    fc: FlowControl,
    levels_entry: Arc<kapi_registry::apis::Entry>,
    schemas_entry: Arc<kapi_registry::apis::Entry>,
    mut rx: mpsc::Receiver<informer::Event>,
) {
    let mut levels: BTreeMap<String, Value> = BTreeMap::new();
    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    let mut synced = 0;
    // Objects seen changed or deleted; kept until both informers have synced.
    let mut touched = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(ev) = rx.try_recv() {
            batch.push(ev);
        }
        for ev in batch {
            let is_schema = ev.entry.def.resource == "flowschemas";
            let map = if is_schema { &mut schemas } else { &mut levels };
            match ev.change {
                Change::Upsert(obj) => {
                    let name = kapi_registry::meta::name(&obj).to_owned();
                    map.insert(name.clone(), obj);
                    touched.push((is_schema, name));
                }
                Change::Deleted(obj) => {
                    let name = kapi_registry::meta::name(&obj).to_owned();
                    map.remove(&name);
                    touched.push((is_schema, name));
                }
                Change::Synced => synced += 1,
            }
        }
        if synced < 2 {
            continue;
        }
        touched.sort();
        touched.dedup();
        for (is_schema, name) in std::mem::take(&mut touched) {
            let entry = if is_schema {
                &schemas_entry
            } else {
                &levels_entry
            };
            ensure::ensure_one(entry, &name).await;
        }
        let level_specs: Vec<LevelSpec> = levels.values().map(LevelSpec::from_object).collect();
        let schema_list: Vec<Schema> = schemas.values().map(Schema::from_object).collect();
        fc.reconfigure(level_specs, schema_list);
        for obj in schemas.values() {
            let level = obj
                .pointer("/spec/priorityLevelConfiguration/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            write_dangling(&schemas_entry, obj, level, levels.contains_key(level)).await;
        }
    }
}

/// The `Dangling` condition upstream's controller reports, written only when
/// its status differs from what the object carries.
async fn write_dangling(
    entry: &kapi_registry::apis::Entry,
    obj: &Value,
    level: &str,
    exists: bool,
) {
    let (status, reason, message) = if exists {
        ("False", "Found", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"))
    } else {
        ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"))
    };
    let current = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Dangling"));
    if current.is_some_and(|c| c["status"] == status && c["message"] == message.as_str()) {
        return;
    }
    let name = kapi_registry::meta::name(obj).to_owned();
    let write = WriteOptions {
        field_manager: Some(MANAGER.into()),
        ..WriteOptions::default()
    };
    let result = entry
        .store
        .update_with(None, &name, UpdateTarget::Status, &write, false, |cur| {
            let mut obj = cur.cloned().unwrap_or_default();
            let cond = json!({
                "type": "Dangling", "status": status, "reason": reason, "message": message,
                "lastTransitionTime": kapi_registry::meta::now_rfc3339(),
            });
            let mut conditions: Vec<Value> = obj
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| c["type"] != "Dangling");
            conditions.push(cond);
            obj["status"] = json!({"conditions": conditions});
            Ok(obj)
        })
        .await;
    if let Err(e) = result {
        tracing::debug!(flowschema = %name, error = %e, "flowschema status not written");
    }
}
