//! Local APIServices for what this server serves itself, as upstream's
//! `autoregister` and `crdregistration` controllers: every built-in
//! group-version upstream lists a priority for gets `<version>.<group>` with
//! label `kube-aggregator.kubernetes.io/automanaged: onstart` (created or
//! corrected once at start; a stale `onstart` one left by an older server is
//! deleted then), and every served version of every CustomResourceDefinition
//! gets one with label `true` (group priority 1000, version priority 100),
//! kept in sync and deleted when no definition serves it any more.
//!
//! Invariants: APIServices without the label are never touched (a user's
//! remote APIService for a built-in group-version wins); nothing is written
//! before both the definitions and the APIServices have been listed once, so
//! the first pass cannot delete the APIService of a definition not yet seen.

use kapi_registry::store::options::WriteOptions;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::DeleteOptions;
use kapi_registry::store::UpdateTarget;
use kapi_registry::Origin;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::discovery::GROUP;
use super::{builtin_priority, AUTOMANAGED_LABEL};
use crate::Aggregator;
use kapi_client::informer::{self, Change};
use kapi_registry::apis::Entry;

const MANAGER: &str = "kube-apiserver";
const ON_START: &str = "onstart";
const SYNC: &str = "true";
const RETRY: Duration = Duration::from_millis(500);

/// The APIService name of a group-version (`v1.` for the core group).
pub fn name_of(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

fn spec(group: &str, version: &str, group_priority: i64, version_priority: i64) -> Value {
    json!({"group": group, "version": version,
           "groupPriorityMinimum": group_priority, "versionPriority": version_priority})
}

struct Controller {
    agg: Arc<Aggregator>,
    apiservices: Arc<Entry>,
    /// Built-in APIServices: name → spec.
    on_start: HashMap<String, Value>,
    /// Definition name → the group-versions it serves.
    crds: HashMap<String, Vec<(String, String)>>,
    /// `onstart` APIServices already brought in line once.
    synced_once: HashSet<String>,
}

pub fn spawn(agg: Arc<Aggregator>) {
    let Some(apiservices) = agg.apis.lookup(GROUP, "v1", "apiservices") else {
        return;
    };
    let mut on_start = HashMap::new();
    for ((group, version), entries) in agg.apis.by_group_version() {
        if entries.iter().all(|e| e.def.origin == Origin::Custom) {
            continue;
        }
        match builtin_priority(&group, &version) {
            Some((g, v)) => {
                on_start.insert(name_of(&group, &version), spec(&group, &version, g, v));
            }
            None => tracing::info!(%group, %version, "skipping APIService creation"),
        }
    }
    let ctl = Controller {
        agg: agg.clone(),
        apiservices: apiservices.clone(),
        on_start,
        crds: HashMap::new(),
        synced_once: HashSet::new(),
    };
    tokio::spawn(ctl.run());
}

impl Controller {
    async fn run(mut self) {
        let (tx, mut rx) = mpsc::channel(256);
        informer::spawn(
            self.apiservices.clone(),
            FieldSelector::everything(),
            tx.clone(),
        );
        let crds = self
            .agg
            .apis
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        let mut crds_synced = crds.is_none();
        if let Some(crds) = crds {
            informer::spawn(crds, FieldSelector::everything(), tx);
        } else {
            drop(tx);
        }
        let mut apiservices_synced = false;
        let mut known: HashSet<String> = HashSet::new();
        let mut pending: BTreeSet<String> = self.on_start.keys().cloned().collect();
        loop {
            let ready = crds_synced && apiservices_synced;
            let ev = if ready && !pending.is_empty() {
                match tokio::time::timeout(RETRY, rx.recv()).await {
                    Ok(Some(ev)) => Some(ev),
                    Ok(None) => return,
                    Err(_) => None,
                }
            } else {
                match rx.recv().await {
                    Some(ev) => Some(ev),
                    None => return,
                }
            };
            if let Some(ev) = ev {
                let is_crd = ev.entry.def.resource == "customresourcedefinitions";
                match (ev.change, is_crd) {
                    (Change::Synced, true) => crds_synced = true,
                    (Change::Synced, false) => {
                        apiservices_synced = true;
                        pending.extend(known.iter().cloned());
                    }
                    (Change::Upsert(obj), true) => {
                        let gvs = served_group_versions(&obj);
                        pending.extend(gvs.iter().map(|(g, v)| name_of(g, v)));
                        if let Some(old) = self.crds.insert(meta::name(&obj).to_owned(), gvs) {
                            pending.extend(old.iter().map(|(g, v)| name_of(g, v)));
                        }
                    }
                    (Change::Deleted(obj), true) => {
                        if let Some(old) = self.crds.remove(meta::name(&obj)) {
                            pending.extend(old.iter().map(|(g, v)| name_of(g, v)));
                        }
                    }
                    (Change::Upsert(obj), false) => {
                        known.insert(meta::name(&obj).to_owned());
                        pending.insert(meta::name(&obj).to_owned());
                    }
                    (Change::Deleted(obj), false) => {
                        known.remove(meta::name(&obj));
                        pending.insert(meta::name(&obj).to_owned());
                    }
                }
                if !rx.is_empty() {
                    continue;
                }
            }
            if !(crds_synced && apiservices_synced) {
                continue;
            }
            let mut failed = BTreeSet::new();
            for name in std::mem::take(&mut pending) {
                if let Err(e) = self.check(&name).await {
                    tracing::debug!(apiservice = %name, error = %e, "autoregister retries");
                    failed.insert(name);
                }
            }
            pending = failed;
        }
    }

    /// What `name` should be: its spec and label value.
    fn desired(&self, name: &str) -> Option<(Value, &'static str)> {
        if let Some(spec) = self.on_start.get(name) {
            return Some((spec.clone(), ON_START));
        }
        self.crds
            .values()
            .flatten()
            .find(|(g, v)| name_of(g, v) == name)
            .map(|(g, v)| (spec(g, v, 1000, 100), SYNC))
    }

    async fn check(&mut self, name: &str) -> Result<(), ApiError> {
        let desired = self.desired(name);
        let store = &self.apiservices.store;
        let opts = WriteOptions::for_manager(MANAGER);
        let current = match store.get(None, name, None).await {
            Ok(obj) => Some(obj),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let label = |obj: &Value| {
            obj.pointer("/metadata/labels")
                .and_then(|l| l.get(AUTOMANAGED_LABEL))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        match (current, desired) {
            (None, None) => Ok(()),
            (None, Some((_, ON_START))) if self.synced_once.contains(name) => Ok(()),
            (None, Some((spec, mode))) => {
                let obj = json!({"apiVersion": format!("{GROUP}/v1"), "kind": "APIService",
                    "metadata": {"name": name, "labels": {AUTOMANAGED_LABEL: mode}}, "spec": spec});
                match store.create(obj, &opts).await {
                    Ok(_) => {}
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => return Err(e),
                }
                self.mark(name, mode);
                Ok(())
            }
            (Some(cur), desired) => {
                let Some(managed) = label(&cur) else {
                    return Ok(());
                };
                if managed == ON_START && self.synced_once.contains(name) {
                    return Ok(());
                }
                let Some((spec, mode)) = desired else {
                    if managed == ON_START || managed == SYNC {
                        let opts = DeleteOptions::default();
                        match store.delete(None, name, &opts).await {
                            Ok(_) => {}
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(e),
                        }
                    }
                    return Ok(());
                };
                if !same_spec(&cur, &spec) || managed != mode {
                    store
                        .update_with(None, name, UpdateTarget::Main, &opts, false, |cur| {
                            let mut obj = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                            let s = obj
                                .as_object_mut()
                                .expect("objects")
                                .entry("spec")
                                .or_insert_with(|| json!({}));
                            if let Some(s) = s.as_object_mut() {
                                for (k, v) in spec.as_object().expect("built above") {
                                    s.insert(k.clone(), v.clone());
                                }
                                for k in ["service", "caBundle", "insecureSkipTLSVerify"] {
                                    s.remove(k);
                                }
                            }
                            let m = meta::meta_mut(&mut obj);
                            let labels = m.entry("labels").or_insert_with(|| json!({}));
                            if !labels.is_object() {
                                *labels = json!({});
                            }
                            labels[AUTOMANAGED_LABEL] = json!(mode);
                            Ok(obj)
                        })
                        .await?;
                }
                self.mark(name, mode);
                Ok(())
            }
        }
    }

    fn mark(&mut self, name: &str, mode: &str) {
        if mode == ON_START {
            self.synced_once.insert(name.to_owned());
        }
    }
}

fn same_spec(cur: &Value, spec: &Value) -> bool {
    let s = cur.get("spec").cloned().unwrap_or_default();
    spec.as_object()
        .expect("built by spec()")
        .iter()
        .all(|(k, v)| s.get(k) == Some(v))
        && s.get("service").is_none_or(Value::is_null)
}

/// The served group-versions of a definition.
fn served_group_versions(crd: &Value) -> Vec<(String, String)> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|v| (group.to_owned(), v.to_owned()))
        .collect()
}
