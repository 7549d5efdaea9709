//! The garbage collector, as kube-controller-manager's: a *monitor* (informer)
//! on every resource that can be listed, watched and deleted (events excepted,
//! as upstream) feeds the ownership graph (`graph.rs`); the graph's work goes to
//! two queues, `attemptToDelete` and `attemptToOrphan`, whose workers act
//! through the stores (`collect.rs`).
//!
//! Workers start once every monitor has delivered its first list, so the graph
//! knows all dependents before anything is orphaned or collected. Resources
//! served later (custom resources) get a monitor on the next resync, every 10 s.

mod collect;
mod graph;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_registry::store::ObjectIdentity;
use kapi_registry::Verb;
use tokio::sync::mpsc;

use self::graph::{Graph, Identity, Observed, OwnerRef, Work};
use crate::Context;
use kapi_client::informer::{self, Change, Event};
use kapi_client::queue::{run_workers, WorkQueue};

const RESYNC: Duration = Duration::from_secs(10);
const WORKERS: usize = 4;

/// What the graph task and the workers share.
pub(super) struct Collector {
    cx: Arc<Context>,
    graph: Mutex<Graph>,
    to_delete: Arc<WorkQueue<String>>,
    to_orphan: Arc<WorkQueue<String>>,
}

impl Collector {
    fn schedule(&self, work: Vec<Work>) {
        for w in work {
            match w {
                Work::Delete(uid) => self.to_delete.add(uid),
                Work::Orphan(uid) => self.to_orphan.add(uid),
            }
        }
    }

    fn apply(&self, ev: &Event<ObjectIdentity>) {
        let (obj, deleted) = match &ev.change {
            Change::Upsert(o) => (o, false),
            Change::Deleted(o) => (o, true),
            Change::Synced => return,
        };
        let Some(uid) = obj.uid.as_deref() else {
            return;
        };
        let mut g = self.graph.lock().expect("graph lock");
        let work = if deleted {
            g.delete(uid)
        } else {
            g.upsert(observe(ev.entry.def.api_version(), &ev.entry.def.kind, obj))
        };
        drop(g);
        self.schedule(work);
    }
}

fn observe(api_version: String, kind: &str, obj: &ObjectIdentity) -> Observed {
    Observed {
        id: Identity {
            api_version,
            kind: kind.to_owned(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
            uid: obj.uid.clone().unwrap_or_default(),
        },
        owners: OwnerRef::parse(obj.owner_references()),
        deleting: obj.is_deleting(),
        finalizers: obj.finalizers(),
    }
}

/// The resources the collector watches: deletable, listable, watchable, not events.
fn monitored(cx: &Context) -> Vec<Arc<kapi_registry::apis::Entry>> {
    cx.apis
        .preferred(&[Verb::Delete, Verb::List, Verb::Watch])
        .into_iter()
        .filter(|e| {
            e.def.resource != "events" || !matches!(e.def.group.as_str(), "" | "events.k8s.io")
        })
        .collect()
}

pub fn spawn(cx: Arc<Context>) {
    let gc = Arc::new(Collector {
        cx: cx.clone(),
        graph: Mutex::new(Graph::default()),
        to_delete: WorkQueue::new(),
        to_orphan: WorkQueue::new(),
    });
    tokio::spawn(run(gc));
}

async fn run(gc: Arc<Collector>) {
    let (tx, mut rx) = mpsc::channel::<Event<ObjectIdentity>>(1024);
    let mut monitors: HashMap<String, tokio::task::JoinHandle<()>> = HashMap::new();
    let start = |monitors: &mut HashMap<String, tokio::task::JoinHandle<()>>| {
        let current = monitored(&gc.cx);
        let names: Vec<String> = current.iter().map(|e| e.def.gvr()).collect();
        monitors.retain(|gvr, task| {
            let keep = names.contains(gvr);
            if !keep {
                task.abort();
            }
            keep
        });
        let mut added: usize = 0;
        for e in current {
            monitors.entry(e.def.gvr()).or_insert_with(|| {
                added += 1;
                informer::spawn_identities(e, FieldSelector::everything(), tx.clone())
            });
        }
        added
    };
    let mut unsynced = start(&mut monitors);
    let mut workers_started = false;
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    loop {
        tokio::select! {
            ev = rx.recv() => {
                let Some(ev) = ev else { return };
                if matches!(ev.change, Change::Synced) {
                    unsynced = unsynced.saturating_sub(1);
                }
                gc.apply(&ev);
            }
            _ = resync.tick() => {
                unsynced += start(&mut monitors);
            }
        }
        if !workers_started && unsynced == 0 {
            workers_started = true;
            tracing::debug!(
                nodes = gc.graph.lock().expect("graph lock").len(),
                "garbage collector synced"
            );
            let d = gc.clone();
            run_workers(gc.to_delete.clone(), WORKERS, move |uid: String| {
                let gc = d.clone();
                async move { gc.attempt_to_delete(&uid).await.map_err(|e| e.to_string()) }
            });
            let o = gc.clone();
            run_workers(gc.to_orphan.clone(), WORKERS, move |uid: String| {
                let gc = o.clone();
                async move { gc.attempt_to_orphan(&uid).await.map_err(|e| e.to_string()) }
            });
        }
    }
}
