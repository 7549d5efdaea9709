//! `kapi snapshot save` while a server writes, `kapi snapshot restore`, and a
//! server on the restored directory: the backup is consistent at one revision
//! (every write acknowledged at or before it is there, none after it), every
//! write acknowledged before the save began is in it, and the restored
//! server numbers new writes after it (clients' resourceVersions stay
//! monotonic).

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};

use crate::proc::Kapi;
use crate::util::{configmap, namespace};

/// Run the kapi binary with `args`; its stdout, or a panic with its stderr.
pub fn kapi_command(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(args)
        .output()
        .expect("run kapi");
    assert!(
        out.status.success(),
        "kapi {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The number after `word` in `text` (`revision 123,` gives 123).
pub fn number_after(text: &str, word: &str) -> i64 {
    let at = text
        .find(word)
        .unwrap_or_else(|| panic!("{word:?} in {text:?}"))
        + word.len();
    text[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {word:?} in {text:?}"))
}

type Acks = Arc<Mutex<Vec<(String, i64)>>>;

/// Writers creating ConfigMaps until `stop`; every acknowledged create with
/// its resourceVersion goes into the returned list.
fn start_writers(
    client: &kube::Client,
    ns: &str,
    stop: Arc<AtomicBool>,
) -> (Acks, Vec<tokio::task::JoinHandle<()>>) {
    let acks: Acks = Arc::default();
    let tasks = (0..4)
        .map(|t| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
            let (acks, stop) = (acks.clone(), stop.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("w{t}-{i}");
                    i += 1;
                    if let Ok(cm) = api.create(&PostParams::default(), &configmap(&name)).await {
                        let rv = cm.metadata.resource_version.unwrap().parse().unwrap();
                        acks.lock().unwrap().push((name, rv));
                    }
                }
            })
        })
        .collect();
    (acks, tasks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_under_write_load_restores_every_acknowledged_write() {
    let source_dir = tempfile::tempdir().unwrap();
    let kapi = Kapi::start(source_dir.path(), &[]).await;
    let ns = namespace(&kapi.client, "backup").await;
    let stop = Arc::new(AtomicBool::new(false));
    let (acks, writers) = start_writers(&kapi.client, &ns, stop.clone());
    while acks.lock().unwrap().len() < 200 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before: Vec<(String, i64)> = acks.lock().unwrap().clone();
    let file = source_dir.path().join("backup.snap");
    let (file_arg, dir_arg) = (
        file.display().to_string(),
        source_dir.path().display().to_string(),
    );
    let saved = tokio::task::spawn_blocking(move || {
        kapi_command(&["snapshot", "save", &file_arg, "--data-dir", &dir_arg])
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    drop(kapi);
    let revision = number_after(&saved, "revision");
    let all = acks.lock().unwrap().clone();
    assert!(all.len() > before.len(), "writes went on during the save");

    let restored_dir = tempfile::tempdir().unwrap();
    let out = kapi_command(&[
        "snapshot",
        "restore",
        &file.display().to_string(),
        "--data-dir",
        &restored_dir.path().display().to_string(),
    ]);
    assert_eq!(number_after(&out, "revision"), revision);
    let kapi = Kapi::start(restored_dir.path(), &[]).await;
    let api: Api<ConfigMap> = Api::namespaced(kapi.client.clone(), &ns);
    let listed = api.list(&ListParams::default()).await.unwrap();
    let served: std::collections::HashMap<String, i64> = listed
        .items
        .iter()
        .map(|cm| {
            let rv = cm.metadata.resource_version.as_deref().unwrap();
            (cm.metadata.name.clone().unwrap(), rv.parse().unwrap())
        })
        .collect();
    for (name, rv) in &before {
        assert_eq!(
            served.get(name),
            Some(rv),
            "{name}, acknowledged before the save"
        );
    }
    for (name, rv) in &all {
        // Consistent at one revision: exactly the writes at or before it.
        assert_eq!(served.contains_key(name), *rv <= revision, "{name} at {rv}");
    }
    let new = api
        .create(&PostParams::default(), &configmap("after-restore"))
        .await
        .unwrap();
    let new_rv: i64 = new.metadata.resource_version.unwrap().parse().unwrap();
    assert!(
        new_rv > revision,
        "new writes number after the backup: {new_rv} <= {revision}"
    );
}
