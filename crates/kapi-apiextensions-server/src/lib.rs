//! kapi-apiextensions-server — the apiextensions server of the chain (DESIGN point 7): CustomResourceDefinitions
//! turn into served resources while the server runs.
//!
//! One controller, driven by a watch on `customresourcedefinitions`, does what
//! upstream splits over several: naming and establishing (`naming.rs`: accepted
//! names, `NamesAccepted`, `Established`), installing the served versions of an
//! established definition in the resource table (`apis.rs`, which discovery and
//! the handlers read) and rebuilding the OpenAPI documents with its schemas,
//! and the `customresourcecleanup.apiextensions.k8s.io` finalizer
//! (`finalizer.rs`: objects first, then the definition). Definitions present
//! at start are installed before [`start`] returns.
//!
//! Invariants: one worker, so the resource table and the OpenAPI documents
//! change in the order definitions do; a resource is installed before its
//! `Established` condition is written, so a client that waits for the
//! condition finds the resource served, in discovery and in the OpenAPI
//! documents.

mod finalizer;
pub mod legacy;
mod naming;
mod webhook;

use kapi_registry::store::options::WriteOptions;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kapi_apiextensions::crd::{self, Crd};
use kapi_machinery::fields::FieldSelector;
use kapi_machinery::schema::{NoSchema, SchemaNav, TypeRef};
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::ListOptions;
use kapi_registry::store::UpdateTarget;
use kapi_resources::openapi::{defs, OpenApi};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use kapi_client::informer::{self, Change};
use kapi_client::queue::{run_workers, WorkQueue};
use kapi_registry::apis::Apis;
use kapi_registry::apis::Entry;
use kapi_resources::openapi::Published;
use kapi_storage::slot::BackendSlot;

/// The field manager of the controller's writes (upstream's apiextensions
/// controllers write as the API server itself).
const MANAGER: &str = "kube-apiserver";
/// How soon a definition whose objects are still going is looked at again.
const RECHECK: Duration = Duration::from_millis(500);

/// What one definition has installed.
struct Installed {
    /// The definition's spec and accepted names when installed.
    fingerprint: Value,
    /// (group, version, resource) served.
    gvrs: Vec<(String, String, String)>,
    /// OpenAPI definition name → definition.
    defs: Vec<(String, Value)>,
    /// Shared with the strategies: creates are refused once set.
    terminating: Arc<AtomicBool>,
}

/// What one pass did.
struct Pass {
    /// Nothing left to do (false: look again soon).
    done: bool,
    /// What is served changed (the OpenAPI documents need rebuilding).
    installed: bool,
}

impl Pass {
    const DONE: Pass = Pass {
        done: true,
        installed: false,
    };
}

pub(crate) struct Controller {
    cx: Arc<Context>,
    crds: Arc<Entry>,
    installed: Mutex<HashMap<String, Installed>>,
}

/// What the apiextensions server works with: the resource table it installs
/// custom resources into, the storage they live in, the schema of the
/// built-in types (embedded objects in custom schemas refer to them), and the
/// OpenAPI documents it republishes.
pub struct Context {
    pub apis: Arc<Apis>,
    pub slot: BackendSlot,
    pub schema: Arc<dyn SchemaNav>,
    pub openapi: Arc<Published>,
    /// How conversion webhooks' services are dialled
    /// (`--enable-aggregator-routing`).
    pub routing: kapi_client::service_resolver::Routing,
    /// How conversion webhooks are reached (`--egress-selector-config-file`).
    pub egress: kapi_egress::Egress,
}

/// Install the definitions there are, then follow changes.
pub async fn start(cx: &Arc<Context>) {
    let Some(crds) = cx
        .apis
        .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    if let Some(backend) = cx.slot.current() {
        match legacy::move_custom_objects(backend.as_ref()).await {
            Ok(m) if m.moved + m.kept > 0 => tracing::info!(
                moved = m.moved,
                kept = m.kept,
                "custom objects moved from kapi's old keys to upstream's"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "moving custom objects from kapi's old keys"),
        }
    }
    let ctl = Arc::new(Controller {
        cx: cx.clone(),
        crds: crds.clone(),
        installed: Mutex::new(HashMap::new()),
    });
    if let Ok(list) = crds.store.list(None, &ListOptions::default()).await {
        let mut changed = false;
        for obj in &list.items {
            match ctl.sync_one(meta::name(obj), false).await {
                Ok(pass) => changed |= pass.installed,
                Err(e) => {
                    tracing::warn!(crd = meta::name(obj), error = %e, "installing a custom resource")
                }
            }
        }
        if changed {
            ctl.rebuild_openapi().await;
        }
    }
    let queue = WorkQueue::<String>::new();
    let (tx, mut rx) = mpsc::channel(256);
    informer::spawn(crds, FieldSelector::everything(), tx);
    let q = queue.clone();
    let watcher = ctl.clone();
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            match ev.change {
                Change::Upsert(obj) => q.add(meta::name(&obj).to_owned()),
                Change::Deleted(obj) => {
                    q.add(meta::name(&obj).to_owned());
                    // A name it held may now be free for another definition.
                    for name in watcher.known_names().await {
                        q.add(name);
                    }
                }
                Change::Synced => {}
            }
        }
    });
    let retry = queue.clone();
    run_workers(queue, 1, move |name: String| {
        let (ctl, retry) = (ctl.clone(), retry.clone());
        async move {
            match ctl.sync(&name).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    retry.add_after(name, RECHECK);
                    Ok(())
                }
                Err(e) => Err(e.to_string()),
            }
        }
    });
}

/// The time since an RFC 3339 timestamp, as built-in tables print ages.
fn since(ts: &str) -> Option<String> {
    use kapi_resources::core::table;
    table::parse_rfc3339(ts).map(|t| table::human_duration(table::now_unix() - t))
}

impl Controller {
    async fn all_crds(&self) -> Vec<Crd> {
        match self.crds.store.list(None, &ListOptions::default()).await {
            Ok(list) => list.items.iter().map(Crd::parse).collect(),
            Err(_) => Vec::new(),
        }
    }

    async fn known_names(&self) -> Vec<String> {
        self.all_crds()
            .await
            .into_iter()
            .map(|c| c.metadata.name)
            .collect()
    }

    /// One pass over definition `name`, the OpenAPI documents included;
    /// `Ok(false)` asks to look again soon.
    async fn sync(&self, name: &str) -> Result<bool, ApiError> {
        Ok(self.sync_one(name, true).await?.done)
    }

    /// One pass; with `publish`, the OpenAPI documents are rebuilt when it
    /// changed what is served, before the conditions are written (publishing
    /// is cheap, the documents render when first asked for), so a client that
    /// waits for `Established` finds the schema there too. Start-up installs
    /// every definition first and rebuilds once.
    async fn sync_one(&self, name: &str, publish: bool) -> Result<Pass, ApiError> {
        let obj = match self.crds.store.get(None, name, None).await {
            Err(e) if e.is_not_found() => {
                self.uninstall(name).await;
                return Ok(Pass::DONE);
            }
            other => other?,
        };
        if meta::is_deleting(&obj) {
            let done = finalizer::run(self, &obj).await?;
            return Ok(Pass {
                done,
                installed: false,
            });
        }
        let crd = Crd::parse(&obj);
        let others = self.all_crds().await;
        let decision = naming::decide(&self.cx, &crd, &others);
        let mut next = obj.clone();
        next["status"]["acceptedNames"] =
            serde_json::to_value(&decision.names).expect("names serialize");
        let changed = decision.established.status == "True" && self.install(&next);
        if changed && publish {
            self.rebuild_openapi().await;
        }
        let names = next["status"]["acceptedNames"].clone();
        self.write_status(name, |st| {
            st["status"]["acceptedNames"] = names.clone();
            let a = &decision.accepted;
            crd::set_condition(st, "NamesAccepted", a.status, &a.reason, &a.message);
            let e = &decision.established;
            crd::set_condition(st, "Established", e.status, &e.reason, &e.message);
        })
        .await?;
        Ok(Pass {
            done: true,
            installed: changed,
        })
    }

    /// Change the definition's status through `status`.
    async fn write_status(
        &self,
        name: &str,
        change: impl Fn(&mut Value) + Send + Sync,
    ) -> Result<Value, ApiError> {
        let opts = WriteOptions::for_manager(MANAGER);
        let (out, _) = self
            .crds
            .store
            .update_with(None, name, UpdateTarget::Status, &opts, false, |cur| {
                let mut next = cur.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                if !next.get("status").is_some_and(Value::is_object) {
                    next["status"] = json!({});
                }
                change(&mut next);
                Ok(next)
            })
            .await?;
        Ok(out)
    }

    /// Serve the versions of `obj` (names as accepted), replacing what it
    /// served before; false when nothing changed. The OpenAPI documents are
    /// the caller's to rebuild.
    fn install(&self, obj: &Value) -> bool {
        let name = meta::name(obj).to_owned();
        let fingerprint = json!([obj.get("spec"), obj.pointer("/status/acceptedNames")]);
        if self
            .lock()
            .get(&name)
            .is_some_and(|i| i.fingerprint == fingerprint)
        {
            return false;
        }
        let terminating = self
            .lock()
            .get(&name)
            .map(|i| i.terminating.clone())
            .unwrap_or_default();
        let backend: Arc<dyn kapi_storage::Backend> = Arc::new(self.cx.slot.clone());
        let mut gvrs = Vec::new();
        let mut openapi_defs = Vec::new();
        for served in crd::served(obj, since, terminating.clone(), self.webhook_client(obj)) {
            let def = served.def;
            let (nav, root): (Arc<dyn SchemaNav>, TypeRef) = match &served.schema {
                Some(s) => s.nav(self.cx.schema.clone()),
                None => (Arc::new(NoSchema), TypeRef::UNKNOWN),
            };
            if let Some(s) = &served.schema {
                let def_name = defs::generic_name(&def.group, &def.version, &def.kind);
                let d = crd::openapi::definition(s.raw(), &def.group, &def.version, &def.kind);
                openapi_defs.push((def_name, d));
            }
            gvrs.push((def.group.clone(), def.version.clone(), def.resource.clone()));
            self.cx.apis.install(def, backend.clone(), nav, root);
        }
        let old = self.lock().insert(
            name,
            Installed {
                fingerprint,
                gvrs: gvrs.clone(),
                defs: openapi_defs,
                terminating,
            },
        );
        for gvr in old.map(|o| o.gvrs).unwrap_or_default() {
            if !gvrs.contains(&gvr) {
                self.cx.apis.remove(&gvr.0, &gvr.1, &gvr.2);
            }
        }
        true
    }

    /// The client of `obj`'s conversion webhook, with `strategy: Webhook`.
    fn webhook_client(&self, obj: &Value) -> Option<Arc<dyn crd::ReviewClient>> {
        let conv = obj.pointer("/spec/conversion")?;
        if conv.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let client = webhook::WebhookClient::new(conv.get("webhook")?, &self.cx)?;
        Some(Arc::new(client))
    }

    /// Refuse creates of definition `name`'s objects from now on.
    fn mark_terminating(&self, name: &str) {
        if let Some(i) = self.lock().get(name) {
            i.terminating.store(true, Ordering::Relaxed);
        }
    }

    /// Stop serving what definition `name` served.
    async fn uninstall(&self, name: &str) {
        let Some(old) = self.lock().remove(name) else {
            return;
        };
        for (g, v, r) in &old.gvrs {
            self.cx.apis.remove(g, v, r);
        }
        self.rebuild_openapi().await;
    }

    /// The entry serving the storage version of `crd` (any served one if the
    /// storage version is not served).
    fn entry_of(&self, crd: &Crd) -> Option<Arc<Entry>> {
        let installed = self.lock();
        let gvrs = &installed.get(&crd.metadata.name)?.gvrs;
        let storage = crd.storage_version().map(|v| v.name.as_str());
        gvrs.iter()
            .find(|(_, v, _)| Some(v.as_str()) == storage)
            .or_else(|| gvrs.first())
            .and_then(|(g, v, r)| self.cx.apis.lookup(g, v, r))
    }

    async fn rebuild_openapi(&self) {
        let started = std::time::Instant::now();
        let custom: defs::Defs = self
            .lock()
            .values()
            .flat_map(|i| i.defs.iter().cloned())
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let resources = self.cx.apis.defs();
        let built =
            tokio::task::spawn_blocking(move || OpenApi::build_with(&resources, &custom)).await;
        match built {
            Ok(api) => {
                self.cx.openapi.publish(api);
                tracing::debug!(took = ?started.elapsed(), "OpenAPI documents rebuilt");
            }
            Err(e) => tracing::error!(error = %e, "rebuilding the OpenAPI documents"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Installed>> {
        self.installed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
