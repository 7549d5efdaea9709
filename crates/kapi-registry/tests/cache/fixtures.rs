//! Backends under test for the conformance suite: a fresh embedded store or etcd
//! with the watch cache in front, caching the prefixes the suite writes under.
//! Each fixture waits until the cache is filled, so reads really come from memory.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_registry::cache::{CacheConfig, CachedBackend};
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::etcd::{EtcdBackend, EtcdConfig};
use kapi_storage::{Backend, KeyValue};
use kapi_testkit::Etcd;

pub struct Fixture {
    pub backend: Arc<dyn Backend>,
    pub cache: CachedBackend,
    _guard: Box<dyn std::any::Any + Send>,
}

impl Fixture {
    /// Create keys `<prefix>0` … `<prefix>{n-1}` (value "v") and wait until the
    /// cache holds them all; the first and the last write.
    pub async fn create_keys(&self, prefix: &str, n: usize) -> (KeyValue, KeyValue) {
        let first = self
            .backend
            .create(&format!("{prefix}0"), Bytes::from_static(b"v"))
            .await
            .unwrap();
        let mut last = first.clone();
        for i in 1..n {
            last = self
                .backend
                .create(&format!("{prefix}{i}"), Bytes::from_static(b"v"))
                .await
                .unwrap();
        }
        assert!(
            self.cache
                .wait_for(last.mod_revision, Duration::from_secs(10))
                .await
        );
        (first, last)
    }
}

pub const PROGRESS: Duration = Duration::from_millis(300);

/// The prefixes the conformance suite uses.
pub const PREFIXES: &[&str] = &["/t/", "/fan/"];

pub async fn cached(
    below: Arc<dyn Backend>,
    config: CacheConfig,
    guard: Box<dyn std::any::Any + Send>,
) -> Fixture {
    // A first write outside the cached prefixes, so the cache can fill.
    below
        .create("/seed", Bytes::from_static(b"x"))
        .await
        .expect("seed");
    let cache = CachedBackend::new(below, PREFIXES.iter().map(|p| p.to_string()), config);
    for _ in 0..200 {
        if PREFIXES.iter().all(|p| cache.is_ready(p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(cache.is_ready("/t/"), "cache filled");
    Fixture {
        backend: Arc::new(cache.clone()),
        cache,
        _guard: guard,
    }
}

pub async fn embedded_with(config: CacheConfig) -> Fixture {
    embedded_store(config, |_| {}).await
}

async fn embedded_store(config: CacheConfig, tune: impl FnOnce(&mut EmbeddedConfig)) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = EmbeddedConfig::new(dir.path());
    cfg.progress_interval = PROGRESS;
    tune(&mut cfg);
    let backend = EmbeddedBackend::open(cfg).expect("open embedded");
    cached(Arc::new(backend), config, Box::new(dir)).await
}

pub async fn embedded() -> Fixture {
    embedded_with(CacheConfig::default()).await
}

/// The cache over an embedded store that keeps no history in memory (reads
/// the cache passes down at old revisions go to the store's disk history).
pub async fn embedded_cold() -> Fixture {
    embedded_store(CacheConfig::default(), |cfg| {
        cfg.memory_history_bytes = 0;
        cfg.segment_bytes = 16 << 10;
    })
    .await
}

pub async fn etcd() -> Fixture {
    let etcd = tokio::task::spawn_blocking(Etcd::start)
        .await
        .expect("etcd start");
    let mut cfg = EtcdConfig::new(vec![etcd.client_url.clone()]);
    cfg.progress_interval = PROGRESS;
    cfg.request_timeout = Duration::from_secs(5);
    let backend = EtcdBackend::connect(&cfg).await.expect("connect etcd");
    cached(Arc::new(backend), CacheConfig::default(), Box::new(etcd)).await
}
