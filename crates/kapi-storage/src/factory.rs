//! The factory: from configuration to a [`BackendSlot`].
//!
//! `--etcd-servers` selects etcd (connected in the background, see `slot.rs`);
//! otherwise the embedded store opens under `--data-dir` right away, so a broken
//! data directory fails start-up with a one-line error.

use std::sync::Arc;

use crate::embedded::{EmbeddedBackend, EmbeddedConfig};
use crate::etcd::{EtcdBackend, EtcdConfig};
use crate::slot::BackendSlot;
use crate::{Backend, Result, StorageError};

#[derive(Debug, Clone)]
pub enum StorageConfig {
    Embedded(EmbeddedConfig),
    Etcd(EtcdConfig),
}

impl StorageConfig {
    /// Check what can be checked before connecting.
    pub fn validate(&self) -> Result<()> {
        let StorageConfig::Etcd(cfg) = self else {
            return Ok(());
        };
        if cfg.endpoints.is_empty() {
            return Err(StorageError::Internal("--etcd-servers is empty".into()));
        }
        for url in &cfg.endpoints {
            let ok = url.starts_with("http://") || url.starts_with("https://");
            if !ok {
                return Err(StorageError::Internal(format!(
                    "--etcd-servers: {url:?} is not an http:// or https:// URL"
                )));
            }
        }
        if cfg.cert_file.is_some() != cfg.key_file.is_some() {
            return Err(StorageError::Internal(
                "--etcd-certfile and --etcd-keyfile must be given together".into(),
            ));
        }
        Ok(())
    }
}

/// Open or start connecting to the configured backend.
pub fn open(config: StorageConfig) -> Result<BackendSlot> {
    config.validate()?;
    match config {
        StorageConfig::Embedded(cfg) => {
            let target = format!("embedded {}", cfg.dir.display());
            let backend: Arc<dyn Backend> = Arc::new(EmbeddedBackend::open(cfg)?);
            Ok(BackendSlot::ready(target, backend))
        }
        StorageConfig::Etcd(cfg) => {
            let target = format!("etcd {}", cfg.endpoints.join(","));
            Ok(BackendSlot::connect_in_background(target, move || {
                let cfg = cfg.clone();
                async move {
                    let backend: Arc<dyn Backend> = Arc::new(EtcdBackend::connect(&cfg).await?);
                    Ok(backend)
                }
            }))
        }
    }
}
