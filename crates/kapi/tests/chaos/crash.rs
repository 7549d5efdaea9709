//! Crash safety through the HTTP API: `kapi serve` (embedded store) is killed
//! with SIGKILL at a random moment while clients create, update and delete
//! ConfigMaps, then restarted on the same data directory, round after round.
//!
//! Each client owns its own names, so it knows every key's state exactly: after
//! an acknowledged write the new value and resourceVersion; after a write whose
//! answer was lost in the crash, "before or after" (never anything else). After
//! each restart: every key holds the acknowledged state (or, for the one
//! unanswered write, exactly its intended outcome), the list's revision is not
//! below any revision seen before, and one watch — started before the first
//! round and resumed from its last seen resourceVersion after every restart —
//! has seen each acknowledged write exactly once, in increasing revision order,
//! and replays to exactly the listed state (or got 410 and relisted).
//!
//! Rounds: 5, or 50 with `KAPI_LONG_TESTS=1`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::json;

use crate::proc::Kapi;
use crate::util::{long, namespace, Rng};

/// What a client knows of one key.
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    Absent,
    Present { value: String, rv: u64 },
}

#[derive(Default)]
struct Tracker {
    /// name → acknowledged state.
    known: BTreeMap<String, Known>,
    /// name → intended value (None: delete) of a write whose answer was lost.
    pending: HashMap<String, Option<String>>,
    /// (name, revision) of every acknowledged create/update/delete.
    acked: Vec<(String, u64)>,
    /// Acknowledged deletions (their revision is not in the answer).
    deletes: usize,
    max_rv: u64,
}

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"v": value}
    }))
    .unwrap()
}

fn value_of(c: &ConfigMap) -> String {
    c.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default()
}

fn rv_of(c: &ConfigMap) -> u64 {
    c.metadata
        .resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .expect("numeric resourceVersion")
}

/// One client: writes to its own names until the server stops answering.
async fn client_loop(api: Api<ConfigMap>, id: usize, seed: u64, t: Arc<Mutex<Tracker>>) {
    let mut rng = Rng::new(seed);
    let names: Vec<String> = (0..4).map(|j| format!("c{id}-{j}")).collect();
    for seq in 0.. {
        let name = &names[rng.below(names.len() as u64) as usize];
        let value = format!("{id}-{seed}-{seq}");
        let known = t.lock().unwrap().known.get(name).cloned();
        let known = known.unwrap_or(Known::Absent);
        let (intent, result) = match &known {
            Known::Absent => (
                Some(value.clone()),
                api.create(&PostParams::default(), &cm(name, &value))
                    .await
                    .map(|c| Some((rv_of(&c), value_of(&c)))),
            ),
            Known::Present { rv, .. } if rng.below(4) == 0 => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(rv.to_string()),
                        uid: None,
                    }),
                    ..Default::default()
                };
                // The deletion's revision is not in the answer; the watch check
                // finds it.
                (None, api.delete(name, &dp).await.map(|_| None))
            }
            Known::Present { rv, .. } => {
                let mut obj = cm(name, &value);
                obj.metadata.resource_version = Some(rv.to_string());
                (
                    Some(value.clone()),
                    api.replace(name, &PostParams::default(), &obj)
                        .await
                        .map(|c| Some((rv_of(&c), value_of(&c)))),
                )
            }
        };
        let mut t = t.lock().unwrap();
        match result {
            Ok(Some((rv, v))) => {
                assert_eq!(v, value, "{name}: the answer carries the written value");
                t.max_rv = t.max_rv.max(rv);
                t.acked.push((name.clone(), rv));
                t.known
                    .insert(name.clone(), Known::Present { value: v, rv });
            }
            Ok(None) => {
                t.deletes += 1;
                t.known.insert(name.clone(), Known::Absent);
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {
                panic!("{name}: a client that owns its keys got {s:?}")
            }
            Err(_) => {
                // The server died with the write in flight: either outcome is fine.
                t.pending.insert(name.clone(), intent);
                return;
            }
        }
    }
}

/// The watch that runs across every restart.
#[derive(Default)]
struct WatchLog {
    /// Revision the model is at.
    last_rv: u64,
    /// name → (value, revision); replayed from events.
    model: BTreeMap<String, (String, u64)>,
    /// (name, revision) of every event seen.
    seen: Vec<(String, u64)>,
    relists: usize,
    events: usize,
    /// Revision of the last relist: the watch must have seen every write after it.
    floor: u64,
}

impl WatchLog {
    fn apply(&mut self, ev: WatchEvent<ConfigMap>) -> Result<(), u16> {
        let (obj, deleted) = match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => (o, false),
            WatchEvent::Deleted(o) => (o, true),
            WatchEvent::Bookmark(b) => {
                let rv: u64 = b.metadata.resource_version.parse().unwrap_or(0);
                assert!(
                    rv >= self.last_rv,
                    "bookmark went back: {rv} < {}",
                    self.last_rv
                );
                self.last_rv = rv;
                return Ok(());
            }
            WatchEvent::Error(e) => return Err(e.code),
        };
        let rv = rv_of(&obj);
        assert!(
            rv > self.last_rv,
            "watch event at {rv} after {}: duplicate or out of order",
            self.last_rv
        );
        self.last_rv = rv;
        self.events += 1;
        let name = obj.metadata.name.clone().expect("name");
        self.seen.push((name.clone(), rv));
        if deleted {
            self.model.remove(&name);
        } else {
            self.model.insert(name, (value_of(&obj), rv));
        }
        Ok(())
    }

    async fn relist(&mut self, api: &Api<ConfigMap>) {
        let list = api.list(&ListParams::default()).await.expect("relist");
        self.relists += 1;
        self.model = list
            .items
            .iter()
            .map(|c| (c.metadata.name.clone().unwrap(), (value_of(c), rv_of(c))))
            .collect();
        self.last_rv = list.metadata.resource_version.unwrap().parse().unwrap();
        self.floor = self.last_rv;
        self.seen.clear();
    }
}

/// Follow the watch until the server dies (or `until` is seen).
async fn follow(api: Api<ConfigMap>, log: Arc<Mutex<WatchLog>>, until: Option<String>) {
    loop {
        let from = log.lock().unwrap().last_rv.to_string();
        let params = WatchParams::default().timeout(290);
        let Ok(stream) = api.watch(&params, &from).await else {
            return;
        };
        let mut stream = stream.boxed();
        let mut gone = false;
        while let Some(ev) = stream.next().await {
            let Ok(ev) = ev else { return };
            let name = match &ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => o.metadata.name.clone(),
                _ => None,
            };
            let applied = log.lock().unwrap().apply(ev);
            match applied {
                Ok(()) => {}
                Err(410) => {
                    eprintln!("crash: watch from {from} got 410");
                    gone = true;
                    break;
                }
                Err(code) => panic!("watch error {code}"),
            }
            if until.is_some() && name == until {
                return;
            }
        }
        if gone {
            let mut l = std::mem::take(&mut *log.lock().unwrap());
            l.relist(&api).await;
            *log.lock().unwrap() = l;
        } else if until.is_none() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_load_loses_no_acknowledged_write() {
    let rounds = if long() { 50 } else { 5 };
    let dir = tempfile::tempdir().unwrap();
    let mut kapi = Kapi::start(dir.path(), &[]).await;
    let ns = namespace(&kapi.client, "crash").await;
    let tracker = Arc::new(Mutex::new(Tracker::default()));
    let wlog = Arc::new(Mutex::new(WatchLog::default()));
    let mut first = WatchLog::default();
    first
        .relist(&Api::namespaced(kapi.client.clone(), &ns))
        .await;
    *wlog.lock().unwrap() = first;
    let mut rng = Rng::new(0x6b617069);
    for round in 0..rounds {
        let api: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), &ns);
        let watcher = tokio::spawn(follow(api.clone(), wlog.clone(), None));
        let clients: Vec<_> = (0..6)
            .map(|id| {
                let seed = rng.next() ^ round;
                tokio::spawn(client_loop(api.clone(), id, seed, tracker.clone()))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150 + rng.below(900))).await;
        kapi.kill();
        for c in clients {
            c.await.expect("client task");
        }
        watcher.await.expect("watch task");

        kapi = Kapi::start(dir.path(), &[]).await;
        let api: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), &ns);
        check_state(&api, &tracker, round).await;
        // Resume the watch and follow it up to a fence write after the restart.
        let fence = format!("fence-{round}");
        let watcher = tokio::spawn(follow(api.clone(), wlog.clone(), Some(fence.clone())));
        api.create(&PostParams::default(), &cm(&fence, "f"))
            .await
            .expect("fence write after restart");
        tokio::time::timeout(Duration::from_secs(60), watcher)
            .await
            .expect("watch reaches the fence")
            .expect("watch task");
        check_watch(&api, &tracker, &wlog).await;
    }
    let w = wlog.lock().unwrap();
    let t = tracker.lock().unwrap();
    eprintln!(
        "crash: {rounds} SIGKILLs survived, {} acknowledged writes checked ({} deletes), \
         {} watch events, {} relists after 410",
        t.acked.len() + t.deletes,
        t.deletes,
        w.events,
        w.relists - 1
    );
}

/// Every key holds its acknowledged state, or the intended outcome of the one
/// write whose answer was lost; the revision did not go back.
async fn check_state(api: &Api<ConfigMap>, tracker: &Arc<Mutex<Tracker>>, round: u64) {
    let list = api
        .list(&ListParams::default())
        .await
        .expect("list after restart");
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    let actual: HashMap<String, (String, u64)> = list
        .items
        .iter()
        .map(|c| (c.metadata.name.clone().unwrap(), (value_of(c), rv_of(c))))
        .collect();
    let mut t = tracker.lock().unwrap();
    assert!(
        list_rv >= t.max_rv,
        "round {round}: revision went back from {} to {list_rv}",
        t.max_rv
    );
    let pending = std::mem::take(&mut t.pending);
    let names: Vec<String> = t.known.keys().chain(pending.keys()).cloned().collect();
    for name in names {
        let known = t.known.get(&name).cloned().unwrap_or(Known::Absent);
        let now = match actual.get(&name) {
            Some((v, rv)) => Known::Present {
                value: v.clone(),
                rv: *rv,
            },
            None => Known::Absent,
        };
        let matches_intent = match (pending.get(&name), &now) {
            (Some(Some(v)), Known::Present { value, rv }) => value == v && *rv > known_rv(&known),
            (Some(None), Known::Absent) => true,
            _ => false,
        };
        assert!(
            now == known || matches_intent,
            "round {round}: {name} is {now:?}, acknowledged {known:?}, in flight {:?}",
            pending.get(&name)
        );
        if let Known::Present { rv, .. } = &now {
            if *rv > known_rv(&known) {
                let rv = *rv;
                t.acked.push((name.clone(), rv));
            }
        }
        t.known.insert(name, now);
    }
    t.max_rv = t.max_rv.max(list_rv);
}

fn known_rv(k: &Known) -> u64 {
    match k {
        Known::Present { rv, .. } => *rv,
        Known::Absent => 0,
    }
}

/// The watch saw every acknowledged write after its last relist, and replays
/// to the listed state.
async fn check_watch(
    api: &Api<ConfigMap>,
    tracker: &Arc<Mutex<Tracker>>,
    wlog: &Arc<Mutex<WatchLog>>,
) {
    let list = api.list(&ListParams::default()).await.expect("list");
    let w = wlog.lock().unwrap();
    let listed: BTreeMap<String, (String, u64)> = list
        .items
        .iter()
        .map(|c| (c.metadata.name.clone().unwrap(), (value_of(c), rv_of(c))))
        .collect();
    assert_eq!(w.model, listed, "the watch replays to the listed state");
    let seen: std::collections::HashSet<&(String, u64)> = w.seen.iter().collect();
    let t = tracker.lock().unwrap();
    for a in t.acked.iter().filter(|a| a.1 > w.floor) {
        assert!(
            seen.contains(a),
            "acknowledged write {a:?} missing from the watch"
        );
    }
}
