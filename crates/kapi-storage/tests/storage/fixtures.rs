//! Backends under test. Each test gets a fresh backend: a new embedded store in a
//! temporary directory, or a fresh etcd process (so compaction in one test cannot
//! disturb another). `embedded_cold` keeps no history in memory at all (and
//! starts a WAL segment every 16 KiB): every read of an old revision and every
//! watch replay goes to disk, so the suite checks that path as well.

use std::sync::Arc;
use std::time::Duration;

use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::Backend;
use kapi_testkit::Etcd;

/// A backend plus whatever keeps it alive.
pub struct Fixture {
    pub backend: Arc<dyn Backend>,
    _guard: Box<dyn std::any::Any + Send>,
}

pub const PROGRESS: Duration = Duration::from_millis(300);

pub async fn embedded() -> Fixture {
    embedded_with(|_| {})
}

pub async fn embedded_cold() -> Fixture {
    embedded_with(|cfg| {
        cfg.memory_history_bytes = 0;
        cfg.segment_bytes = 16 << 10;
    })
}

fn embedded_with(tune: impl FnOnce(&mut EmbeddedConfig)) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = EmbeddedConfig::new(dir.path());
    cfg.progress_interval = PROGRESS;
    tune(&mut cfg);
    let backend = EmbeddedBackend::open(cfg).expect("open embedded");
    Fixture {
        backend: Arc::new(backend),
        _guard: Box::new(dir),
    }
}

pub fn etcd_config(etcd: &Etcd) -> EtcdConfig {
    let mut cfg = EtcdConfig::new(vec![etcd.client_url.clone()]);
    cfg.progress_interval = PROGRESS;
    cfg.request_timeout = Duration::from_secs(5);
    cfg
}

pub async fn etcd() -> Fixture {
    let etcd = tokio::task::spawn_blocking(Etcd::start)
        .await
        .expect("etcd start");
    let backend = EtcdBackend::connect(&etcd_config(&etcd))
        .await
        .expect("connect etcd");
    Fixture {
        backend: Arc::new(backend),
        _guard: Box::new(etcd),
    }
}
