//! `kapi migrate` both ways between a data directory and a real etcd, each
//! killed with SIGKILL part-way and run again to the end: every key arrives
//! with its value (verified by the command, and checked here), kapi serves
//! the objects from the target, an event keeps its TTL, and a directory
//! target keeps the resourceVersions etcd gave the objects.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::api::core::v1::ConfigMap;
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::{Backend, ListOptions};
use kapi_testkit::Etcd;
use kube::api::{Api, ListParams};

use crate::backup::kapi_command;
use crate::proc::Kapi;

const OBJECTS: usize = 6000;
/// The ConfigMaps and one event written with a TTL.
const KEYS: usize = OBJECTS + 1;
const EVENT: &str = "/events/default/ev-1";

fn configmap_json(i: usize) -> Bytes {
    let v = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i:05}"), "namespace": "default",
                     "uid": format!("00000000-0000-0000-0000-{i:012}"),
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "data": {"payload": "x".repeat(200)}
    });
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

/// A data directory whose store holds OBJECTS ConfigMaps in `default`.
async fn filled_data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(EmbeddedBackend::open(EmbeddedConfig::new(dir.path().join("store"))).unwrap());
    let tasks: Vec<_> = (0..32)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in (t..OBJECTS).step_by(32) {
                    let key = format!("/configmaps/default/cm-{i:05}");
                    store.create(&key, configmap_json(i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let event = serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "ev-1", "namespace": "default",
                     "uid": "00000000-0000-0000-0001-000000000000",
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "cm-00000"},
        "reason": "Test", "message": "m", "type": "Normal"
    });
    let hour = Some(Duration::from_secs(3600));
    let value = Bytes::from(serde_json::to_vec(&event).unwrap());
    store.create_with_ttl(EVENT, value, hour).await.unwrap();
    dir
}

/// Run `kapi migrate` with `args`, SIGKILL it once the progress file has
/// recorded at least a tenth of the keys; returns how many it had recorded.
fn migrate_and_kill(args: &[String], progress: &Path) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let keys = loop {
        let text = std::fs::read_to_string(progress).unwrap_or_default();
        let keys = text
            .lines()
            .find_map(|l| l.strip_prefix("keys ")?.parse::<u64>().ok())
            .unwrap_or(0);
        if keys >= KEYS as u64 / 10 {
            break keys;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("migrate ended before the kill ({status}): {:?}", log.join());
        }
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = log.join();
    assert!(keys < KEYS as u64, "killed before the end");
    keys
}

fn etcd_config(url: &str) -> EtcdConfig {
    EtcdConfig::new(vec![url.to_owned()])
}

fn args(from: &str, to: &str, progress: &Path) -> Vec<String> {
    [
        "migrate",
        "--from",
        from,
        "--to",
        to,
        "--page",
        "25",
        "--progress-file",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([progress.display().to_string()])
    .collect()
}

async fn served_configmaps(kapi: &Kapi) -> Vec<(String, String)> {
    let api: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    list.items
        .into_iter()
        .filter(|cm| cm.metadata.name.as_deref().unwrap().starts_with("cm-"))
        .map(|cm| {
            (
                cm.metadata.name.unwrap(),
                cm.metadata.resource_version.unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_both_ways_resumes_after_sigkill() {
    let source = filled_data_dir().await;
    let etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let progress = work.path().join("to-etcd.progress");
    let from = source.path().display().to_string();
    let run = args(&from, &etcd.client_url, &progress);
    let at_kill = tokio::task::spawn_blocking({
        let (run, progress) = (run.clone(), progress.clone());
        move || migrate_and_kill(&run, &progress)
    })
    .await
    .unwrap();
    let out = run_to_end(run).await;
    assert!(
        out.contains(&format!("({at_kill} before a resume)")),
        "{out}"
    );
    assert!(out.contains(&format!("source {KEYS} keys")), "{out}");
    assert!(!progress.exists(), "the progress file goes once verified");
    let etcd_store = EtcdBackend::connect(&etcd_config(&etcd.client_url))
        .await
        .unwrap();
    assert_eq!(
        etcd_store.count("/configmaps/").await.unwrap(),
        OBJECTS as i64
    );

    // kapi on the etcd copy serves every object.
    let served_dir = tempfile::tempdir().unwrap();
    let url = format!("--etcd-servers={}", etcd.client_url);
    let kapi = Kapi::start(served_dir.path(), &[&url]).await;
    let on_etcd = served_configmaps(&kapi).await;
    assert_eq!(on_etcd.len(), OBJECTS);
    drop(kapi);

    // And back into a new data directory, killed part-way too.
    let back = tempfile::tempdir().unwrap();
    let back_progress = work.path().join("to-dir.progress");
    let run = args(
        &etcd.client_url,
        &back.path().display().to_string(),
        &back_progress,
    );
    let (run2, bp) = (run.clone(), back_progress.clone());
    tokio::task::spawn_blocking(move || migrate_and_kill(&run2, &bp))
        .await
        .unwrap();
    let out = run_to_end(run).await;
    assert!(out.contains("before a resume)"), "{out}");
    check_dir_copy(back.path(), &etcd_store).await;
    let kapi = Kapi::start(back.path(), &[]).await;
    let on_dir = served_configmaps(&kapi).await;
    // A directory target keeps etcd's revisions: the same resourceVersions.
    assert_eq!(on_dir, on_etcd);
}

async fn run_to_end(args: Vec<String>) -> String {
    tokio::task::spawn_blocking(move || {
        kapi_command(&args.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap()
}

/// Every key of etcd's copy is in the directory's store with its value and
/// its revisions; the event still expires about an hour after it was written.
async fn check_dir_copy(data_dir: &Path, etcd: &EtcdBackend) {
    let store =
        EmbeddedBackend::open(EmbeddedConfig::new(PathBuf::from(data_dir).join("store"))).unwrap();
    for prefix in ["/configmaps/", "/events/"] {
        let theirs = etcd.list(prefix, ListOptions::default()).await.unwrap();
        let ours = store.list(prefix, ListOptions::default()).await.unwrap();
        assert_eq!(ours.kvs, theirs.kvs, "{prefix}");
    }
    let left =
        store.expiry(EVENT).expect("the event has an expiry") - kapi_storage::embedded::unix_ms();
    assert!(left > 3000 * 1000 && left <= 3661 * 1000, "{left} ms left");
}
