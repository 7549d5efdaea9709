//! A linearizability check for compare-and-swap updates and reads through the
//! API. Tasks read a ConfigMap and write it back with its resourceVersion as
//! the precondition, its value one more than what they read, tagged with the
//! writer; others read. Every operation is recorded with its start and end
//! instants (one clock: the test process), then checked:
//!
//! - no lost update: per object, the successful writes ordered by their
//!   resourceVersion form one chain — each builds on the value the previous
//!   one wrote, starting from the initial value;
//! - no stale read: a read that starts after a write was acknowledged sees
//!   that write or a later one (its resourceVersion is not below the write's),
//!   and what it sees is a value some write (or the initial create) produced.
//!
//! With several clients (one per kapi instance) the check spans instances.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::util::Rng;

#[derive(Debug, Clone)]
enum Op {
    Write {
        obj: usize,
        based_on: String,
        wrote: String,
        rv: u64,
    },
    Read {
        obj: usize,
        saw: String,
        rv: u64,
    },
}

#[derive(Debug, Clone)]
struct Record {
    op: Op,
    start: Instant,
    end: Instant,
}

pub struct Report {
    pub writes: usize,
    pub conflicts: usize,
    pub reads: usize,
}

fn cm(name: &str, v: &str, rv: Option<String>) -> ConfigMap {
    let mut c: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"v": v}
    }))
    .unwrap();
    c.metadata.resource_version = rv;
    c
}

fn parts(c: &ConfigMap) -> (String, u64) {
    let v = c
        .data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default();
    let rv = c
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    (v, rv)
}

fn counter(v: &str) -> u64 {
    v.split(':').next().unwrap().parse().unwrap()
}

/// Run `ops_per_task` operations in each of `tasks` tasks spread over
/// `clients`, on `objects` ConfigMaps in `ns`; panics on a violation.
pub async fn run(
    clients: &[kube::Client],
    ns: &str,
    objects: usize,
    tasks: usize,
    ops_per_task: usize,
) -> Report {
    let names: Vec<String> = (0..objects).map(|i| format!("lin-{i}")).collect();
    let first: Api<ConfigMap> = Api::namespaced(clients[0].clone(), ns);
    let mut initial = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        let c = first
            .create(&PostParams::default(), &cm(n, "0:init", None))
            .await
            .expect("create");
        initial.insert(i, parts(&c));
    }
    let log = Arc::new(Mutex::new(Vec::<Record>::new()));
    let conflicts = Arc::new(Mutex::new(0usize));
    let mut handles = Vec::new();
    for t in 0..tasks {
        let api: Api<ConfigMap> = Api::namespaced(clients[t % clients.len()].clone(), ns);
        let names = names.clone();
        let log = log.clone();
        let conflicts = conflicts.clone();
        handles.push(tokio::spawn(async move {
            let mut rng = Rng::new(0x11ea5 + t as u64);
            for seq in 0..ops_per_task {
                let obj = rng.below(names.len() as u64) as usize;
                let start = Instant::now();
                let got = api.get(&names[obj]).await.expect("read");
                let end = Instant::now();
                let (saw, rv) = parts(&got);
                log.lock().unwrap().push(Record {
                    op: Op::Read {
                        obj,
                        saw: saw.clone(),
                        rv,
                    },
                    start,
                    end,
                });
                if rng.below(3) == 0 {
                    continue; // a reader this time
                }
                let wrote = format!("{}:t{t}-{seq}", counter(&saw) + 1);
                let start = Instant::now();
                let res = api
                    .replace(
                        &names[obj],
                        &PostParams::default(),
                        &cm(&names[obj], &wrote, Some(rv.to_string())),
                    )
                    .await;
                let end = Instant::now();
                match res {
                    Ok(c) => {
                        let (v, new_rv) = parts(&c);
                        assert_eq!(v, wrote);
                        log.lock().unwrap().push(Record {
                            op: Op::Write {
                                obj,
                                based_on: saw,
                                wrote,
                                rv: new_rv,
                            },
                            start,
                            end,
                        });
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => *conflicts.lock().unwrap() += 1,
                    Err(e) => panic!("CAS write failed: {e}"),
                }
            }
        }));
    }
    for h in handles {
        h.await.expect("task");
    }
    let log = log.lock().unwrap().clone();
    check(&log, &initial);
    let writes = log
        .iter()
        .filter(|r| matches!(r.op, Op::Write { .. }))
        .count();
    let conflicts = *conflicts.lock().unwrap();
    Report {
        writes,
        conflicts,
        reads: log.len() - writes,
    }
}

fn check(log: &[Record], initial: &HashMap<usize, (String, u64)>) {
    for (&obj, (init_v, init_rv)) in initial {
        let mut writes: Vec<&Record> = log
            .iter()
            .filter(|r| matches!(&r.op, Op::Write { obj: o, .. } if *o == obj))
            .collect();
        writes.sort_by_key(|r| match &r.op {
            Op::Write { rv, .. } => *rv,
            _ => 0,
        });
        // No lost update: one chain from the initial value.
        let mut prev = init_v.clone();
        let mut prev_rv = *init_rv;
        let mut produced: HashMap<u64, String> = HashMap::from([(*init_rv, init_v.clone())]);
        for w in &writes {
            let Op::Write {
                based_on,
                wrote,
                rv,
                ..
            } = &w.op
            else {
                unreachable!()
            };
            assert_eq!(based_on, &prev, "object {obj}: write {wrote} at {rv} did not build on the previous acknowledged value (lost update)");
            assert!(*rv > prev_rv, "object {obj}: two writes at revision {rv}");
            produced.insert(*rv, wrote.clone());
            prev = wrote.clone();
            prev_rv = *rv;
        }
        // No stale read, and every value read was written.
        for r in log.iter() {
            let Op::Read { obj: o, saw, rv } = &r.op else {
                continue;
            };
            if *o != obj {
                continue;
            }
            assert_eq!(
                produced.get(rv),
                Some(saw),
                "object {obj}: read {saw} at {rv}, which no write produced"
            );
            for w in &writes {
                let Op::Write { rv: wrv, wrote, .. } = &w.op else {
                    unreachable!()
                };
                if w.end < r.start {
                    assert!(rv >= wrv, "object {obj}: stale read of {saw} at {rv} after {wrote} at {wrv} was acknowledged");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_updates_and_reads_are_linearizable() {
    let dir = tempfile::tempdir().unwrap();
    let kapi = crate::proc::Kapi::start(dir.path(), &[]).await;
    let ns = crate::util::namespace(&kapi.client, "linear").await;
    let ops = if crate::util::long() { 400 } else { 60 };
    let r = run(&[kapi.client.clone(), kapi.client.clone()], &ns, 3, 6, ops).await;
    assert!(
        r.writes > 0 && r.conflicts > 0,
        "the check needs contention"
    );
    eprintln!(
        "linear (embedded): {} CAS writes, {} conflicts, {} reads checked",
        r.writes, r.conflicts, r.reads
    );
}

/// The checker itself: a synthetic history with a lost update, and one with a
/// stale read, must both be rejected.
fn synthetic(second_based_on: &str, read_rv: u64, read_value: &str) {
    let t0 = Instant::now();
    let t = |ms: u64| t0 + std::time::Duration::from_millis(ms);
    let log = vec![
        Record {
            op: Op::Write {
                obj: 0,
                based_on: "0:init".into(),
                wrote: "1:a".into(),
                rv: 11,
            },
            start: t(0),
            end: t(1),
        },
        Record {
            op: Op::Write {
                obj: 0,
                based_on: second_based_on.into(),
                wrote: "2:b".into(),
                rv: 12,
            },
            start: t(2),
            end: t(3),
        },
        Record {
            op: Op::Read {
                obj: 0,
                saw: read_value.into(),
                rv: read_rv,
            },
            start: t(4),
            end: t(5),
        },
    ];
    check(&log, &HashMap::from([(0, ("0:init".to_string(), 10))]));
}

#[test]
fn checker_accepts_a_linear_history() {
    synthetic("1:a", 12, "2:b");
}

#[test]
#[should_panic(expected = "lost update")]
fn checker_catches_a_lost_update() {
    synthetic("0:init", 12, "2:b");
}

#[test]
#[should_panic(expected = "stale read")]
fn checker_catches_a_stale_read() {
    synthetic("1:a", 11, "1:a");
}
