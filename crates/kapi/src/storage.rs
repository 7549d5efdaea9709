//! Storage as the flags describe it: the embedded store under `--data-dir`,
//! or etcd at `--etcd-servers` (`--etcd-prefix`, the TLS files), plus the
//! backends of `--etcd-servers-overrides` (same prefix and TLS files, other
//! servers), each waited for within `--storage-ready-timeout`, every etcd
//! connection dialled through the `etcd` egress selection unless it is
//! `Direct` (then `etcd-client` dials by itself, as without a file); and the
//! resource table's storage options (`--watch-cache`, `--watch-cache-sizes`,
//! `--enable-garbage-collector`, `--runtime-config`, the
//! `ConsistentListFromCache` gate, `--storage-media-type`).

use std::sync::Arc;

use kapi_egress::{Dialer, Egress, Protocol};
use kapi_registry::apis::StorageOptions;
use kapi_storage::embedded::EmbeddedConfig;
use kapi_storage::etcd::EtcdConfig;
use kapi_storage::etcd_dial::{DialedIo, EtcdDial, EtcdDialer};
use kapi_storage::factory::{self, StorageConfig};
use kapi_storage::slot::BackendSlot;

use crate::serve::ServeArgs;

/// The `etcd` egress selection as the storage's dialer.
struct ViaEgress(Arc<dyn Dialer>);

#[async_trait::async_trait]
impl EtcdDial for ViaEgress {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<Box<dyn DialedIo>> {
        let io = self.0.dial(host, port).await?;
        Ok(Box::new(io))
    }
}

fn etcd_dialer(egress: &Egress) -> Option<EtcdDialer> {
    (egress.etcd_protocol() != Protocol::Direct)
        .then(|| EtcdDialer(Arc::new(ViaEgress(egress.etcd()))))
}

fn etcd_config(a: &ServeArgs, egress: &Egress, servers: Vec<String>) -> StorageConfig {
    let mut cfg = EtcdConfig::new(servers);
    cfg.dialer = etcd_dialer(egress);
    cfg.prefix = a.etcd_prefix.clone();
    cfg.ca_file = a.etcd_cafile.clone();
    cfg.cert_file = a.etcd_certfile.clone();
    cfg.key_file = a.etcd_keyfile.clone();
    cfg.lease_reuse = a.lease_reuse_duration;
    StorageConfig::Etcd(cfg)
}

fn storage_config(a: &ServeArgs, egress: &Egress) -> StorageConfig {
    if a.etcd_servers.is_empty() {
        return StorageConfig::Embedded(EmbeddedConfig::new(a.data_dir.join("store")));
    }
    etcd_config(a, egress, a.etcd_servers.clone())
}

/// The main storage, ready.
pub async fn open_main(a: &ServeArgs, egress: &Egress) -> Result<BackendSlot, String> {
    let slot = factory::open(storage_config(a, egress)).map_err(|e| e.to_string())?;
    slot.wait_ready(a.storage_ready_timeout).await?;
    if let Some(backend) = slot.current() {
        kapi_storage::compactor::spawn(backend, a.etcd_compaction_interval);
    }
    Ok(slot)
}

/// The resource table's storage options, opening (and waiting for) the
/// backends of `--etcd-servers-overrides`.
pub async fn options(a: &ServeArgs, egress: &Egress) -> Result<StorageOptions, String> {
    let mut overrides = Vec::new();
    for ((group, resource), servers) in &a.etcd_servers_overrides {
        let slot =
            factory::open(etcd_config(a, egress, servers.clone())).map_err(|e| e.to_string())?;
        slot.wait_ready(a.storage_ready_timeout)
            .await
            .map_err(|e| format!("--etcd-servers-overrides {group}/{resource}: {e}"))?;
        if let Some(backend) = slot.current() {
            kapi_storage::compactor::spawn(backend, a.etcd_compaction_interval);
        }
        let backend: Arc<dyn kapi_storage::Backend> = Arc::new(slot);
        overrides.push(((group.clone(), resource.clone()), backend));
    }
    let cache = kapi_registry::cache::CacheConfig {
        consistent_reads: a.feature_gates.enabled("ConsistentListFromCache"),
        ..Default::default()
    };
    Ok(StorageOptions {
        watch_cache: a.watch_cache,
        uncached: a.watch_cache_off.clone(),
        overrides,
        garbage_collection: a.enable_garbage_collector,
        hidden: a.runtime_config_off.clone(),
        cache,
        codec: kapi_registry::StorageCodec::new(a.storage_media_type),
    })
}
