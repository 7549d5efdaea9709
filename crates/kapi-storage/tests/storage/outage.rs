//! etcd outage: stopping etcd makes the named health check fail with a reason;
//! starting it again recovers through the same slot, without reconnecting by hand.
//! An endpoint that never answers fails start-up with a message naming it.

use std::time::Duration;

use bytes::Bytes;
use kapi_storage::factory::{self, StorageConfig};
use kapi_storage::Backend;
use kapi_testkit::Etcd;

use crate::fixtures::etcd_config;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_outage_and_recovery() {
    let mut etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let slot = factory::open(StorageConfig::Etcd(etcd_config(&etcd))).unwrap();
    slot.wait_ready(Duration::from_secs(20)).await.unwrap();
    slot.check(Duration::from_secs(2)).await.unwrap();
    slot.create("/o/a", Bytes::from("1")).await.unwrap();

    let mut etcd = tokio::task::spawn_blocking(move || {
        etcd.stop();
        etcd
    })
    .await
    .unwrap();
    let err = slot.check(Duration::from_secs(3)).await.unwrap_err();
    assert!(!err.is_empty());
    assert!(slot.create("/o/b", Bytes::from("1")).await.is_err());

    let _etcd = tokio::task::spawn_blocking(move || {
        etcd.restart(true);
        etcd
    })
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while slot.check(Duration::from_secs(2)).await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "no recovery");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    slot.create("/o/b", Bytes::from("1")).await.unwrap();
    assert_eq!(slot.count("/o/").await.unwrap(), 2);
}

#[tokio::test]
async fn unreachable_etcd_fails_start_with_endpoint() {
    let port = kapi_testkit::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let cfg = kapi_storage::etcd::EtcdConfig::new(vec![url.clone()]);
    let slot = factory::open(StorageConfig::Etcd(cfg)).unwrap();
    let err = slot.wait_ready(Duration::from_secs(2)).await.unwrap_err();
    assert!(err.contains(&url), "{err}");
    assert!(slot.check(Duration::from_secs(1)).await.is_err());
}

#[test]
fn bad_configuration_fails_at_start() {
    let cfg = kapi_storage::etcd::EtcdConfig::new(vec!["127.0.0.1:2379".into()]);
    let err = StorageConfig::Etcd(cfg).validate().unwrap_err();
    assert!(err.to_string().contains("--etcd-servers"));
}

/// Two kapi instances on one etcd: writes through one are seen, in order, by a
/// watch through the other, and compare-and-swap holds across them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_etcd() {
    use futures::StreamExt;
    use kapi_storage::etcd::EtcdBackend;
    let etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let a = EtcdBackend::connect(&etcd_config(&etcd)).await.unwrap();
    let b = EtcdBackend::connect(&etcd_config(&etcd)).await.unwrap();
    let start = a.current_revision().await.unwrap();
    let mut watch = b.watch("/shared/", start).await.unwrap();
    let kv = a.create("/shared/x", Bytes::from("1")).await.unwrap();
    let kv2 = b
        .update("/shared/x", Bytes::from("2"), kv.mod_revision)
        .await
        .unwrap();
    let stale = a
        .update("/shared/x", Bytes::from("3"), kv.mod_revision)
        .await;
    assert!(matches!(
        stale,
        Err(kapi_storage::StorageError::Conflict { .. })
    ));
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let msg = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let kapi_storage::WatchMessage::Events(evs) = msg {
            seen.extend(evs.into_iter().map(|e| e.kv.mod_revision));
        }
    }
    assert_eq!(seen, vec![kv.mod_revision, kv2.mod_revision]);
}
