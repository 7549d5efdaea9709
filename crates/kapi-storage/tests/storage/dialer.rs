//! The etcd backend through a caller's dialer (`etcd_dial.rs`, the `etcd`
//! egress selection): every connection is the dialer's, and a member the
//! dialer cannot reach costs retries, not failed requests.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::etcd_dial::{DialedIo, EtcdDial, EtcdDialer};
use kapi_storage::Backend;
use kapi_testkit::Etcd;

/// Plain TCP, recording every `host:port` asked for.
#[derive(Default)]
struct Recording(Mutex<Vec<String>>);

#[async_trait::async_trait]
impl EtcdDial for Recording {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<Box<dyn DialedIo>> {
        self.0.lock().unwrap().push(format!("{host}:{port}"));
        Ok(Box::new(
            tokio::net::TcpStream::connect((host, port)).await?,
        ))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_is_dialled_and_a_dead_member_is_skipped() {
    let etcd = tokio::task::spawn_blocking(Etcd::start).await.unwrap();
    let dead = format!("http://127.0.0.1:{}", kapi_testkit::free_port());
    let mut cfg = EtcdConfig::new(vec![dead.clone(), etcd.client_url.clone()]);
    let dialer = Arc::new(Recording::default());
    cfg.dialer = Some(EtcdDialer(dialer.clone()));
    let backend = EtcdBackend::connect(&cfg).await.unwrap();
    for i in 0..10 {
        let key = format!("/dialled/{i}");
        backend.create(&key, Bytes::from("v")).await.unwrap();
        assert_eq!(backend.get(&key, None).await.unwrap().unwrap().value, "v");
    }
    let live = etcd.client_url.trim_start_matches("http://").to_owned();
    let seen = dialer.0.lock().unwrap().clone();
    assert!(seen.contains(&live), "{seen:?}");
    let dead = dead.trim_start_matches("http://").to_owned();
    assert!(
        seen.contains(&dead),
        "requests go to each member in turn: {seen:?}"
    );
    assert!(seen.iter().all(|a| *a == live || *a == dead), "{seen:?}");
}
