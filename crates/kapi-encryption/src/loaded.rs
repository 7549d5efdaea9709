//! A loaded configuration and [`Encryption`], the handle everything holds.
//!
//! Loading reads the file, decodes and validates it, builds the transformers
//! and primes each KMS provider (one health check inline: `Status`, then
//! `Encrypt` of a new DEK seed; a plugin that is down is not fatal — writes to
//! its resources fail until it answers — as upstream), then polls the plugins
//! in the background for as long as the configuration is in use.
//!
//! [`Encryption`] holds the configuration in force; with automatic reload,
//! `reload.rs` swaps in a new one when the file's content changes and the new
//! configuration's KMS providers are healthy. A request keeps the
//! configuration it started with (an `Arc`), so a swap never changes a
//! transformer under a read or write; the old one's polling stops when its
//! last user lets go.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kapi_machinery::validation;

use crate::config;
use crate::kms::KmsTiming;
use crate::resources::Transformers;
use crate::transformer::Transformer;
use crate::GroupResource;

/// What `kapi serve` was told: `--encryption-provider-config` and
/// `--encryption-provider-config-automatic-reload`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    pub reload: bool,
    /// `--etcd-prefix`: a value's authenticated data is its full etcd key,
    /// this prefix then the key (upstream binds `/registry/secrets/ns/name`).
    pub key_prefix: String,
    /// How often the file is read for changes when reloading (upstream: 1 minute).
    pub reload_interval: Duration,
    pub timing: KmsTiming,
}

impl Settings {
    pub fn new(path: impl Into<PathBuf>, reload: bool) -> Self {
        Settings {
            path: path.into(),
            reload,
            key_prefix: "/registry".into(),
            reload_interval: Duration::from_secs(60),
            timing: KmsTiming::default(),
        }
    }
}

/// One load of the file.
pub(crate) struct Loaded {
    pub transformers: Transformers,
    /// SHA-256 of the file's bytes (reload compares it; keys are not kept).
    pub hash: Vec<u8>,
    polling: Vec<tokio::task::AbortHandle>,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        for task in &self.polling {
            task.abort();
        }
    }
}

pub(crate) fn file_hash(data: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, data)
        .as_ref()
        .to_vec()
}

/// Read the file (its bytes and their hash).
pub(crate) fn read_file(path: &std::path::Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let data = std::fs::read(path).map_err(|e| {
        format!(
            "error reading encryption provider configuration file {:?}: {e}",
            path.display().to_string()
        )
    })?;
    if data.is_empty() {
        return Err(format!(
            "encryption provider configuration file {:?} is empty",
            path.display().to_string()
        ));
    }
    let hash = file_hash(&data);
    Ok((data, hash))
}

impl Loaded {
    /// Decode, validate, build and prime `data` (the file's bytes).
    pub async fn from_bytes(data: &[u8], settings: &Settings) -> Result<Loaded, String> {
        let path = settings.path.display().to_string();
        let parsed = config::decode(data).map_err(|e| {
            format!("error while parsing file: error decoding encryption provider configuration file {path:?}: {e}")
        })?;
        let errs = crate::validate::validate(&parsed, settings.reload);
        if let Some(msg) = validation::aggregate(&errs) {
            return Err(format!("error while parsing file: {msg}"));
        }
        let transformers = Transformers::build(&parsed, settings.timing)
            .map_err(|e| format!("error while building transformers: {e}"))?;
        for probe in &transformers.probes {
            if let Err(e) = probe.check().await {
                tracing::warn!(provider = probe.name(), error = %e, "KMS plugin not ready; writes to its resources fail until it is");
            }
        }
        let polling = transformers
            .probes
            .iter()
            .map(|p| p.spawn_polling())
            .collect();
        Ok(Loaded {
            transformers,
            hash: file_hash(data),
            polling,
        })
    }

    /// The `kms-providers` check over this configuration's providers.
    pub async fn check(&self) -> Result<(), String> {
        let mut errs = Vec::new();
        for (i, probe) in self.transformers.probes.iter().enumerate() {
            if let Err(e) = probe.check().await {
                errs.push(format!("kms-provider-{i}: {e}"));
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(errs.remove(0)),
            _ => Err(format!("[{}]", errs.join(", "))),
        }
    }
}

/// Encryption at rest as configured: the configuration in force, swapped on reload.
pub struct Encryption {
    pub(crate) settings: Settings,
    current: RwLock<Arc<Loaded>>,
    /// Whether a `kms-providers` health check is served (any KMS provider at
    /// start, or reload on: a reload may bring some).
    has_check: bool,
}

impl Encryption {
    /// Load `settings.path`; the error is the message kube-apiserver would stop with.
    pub async fn load(settings: Settings) -> Result<Arc<Encryption>, String> {
        let (data, _) = read_file(&settings.path)?;
        let loaded = Loaded::from_bytes(&data, &settings).await?;
        let has_check = settings.reload || !loaded.transformers.probes.is_empty();
        Ok(Arc::new(Encryption {
            settings,
            current: RwLock::new(Arc::new(loaded)),
            has_check,
        }))
    }

    pub(crate) fn current(&self) -> Arc<Loaded> {
        self.current.read().expect("encryption lock").clone()
    }

    pub(crate) fn replace(&self, loaded: Loaded) {
        *self.current.write().expect("encryption lock") = Arc::new(loaded);
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The transformer of `resource` under the configuration in force;
    /// `None` for plaintext (identity).
    pub fn transformer_for(&self, resource: &GroupResource) -> Option<Arc<dyn Transformer>> {
        self.current().transformers.for_resource(resource)
    }

    /// The name of the health check upstream serves on `/healthz` and
    /// `/readyz` (not `/livez`) for the KMS providers: `kms-providers`, when
    /// there is one.
    pub fn health_check_name(&self) -> Option<&'static str> {
        self.has_check.then_some("kms-providers")
    }

    /// Run that check.
    pub async fn check(&self) -> Result<(), String> {
        self.current().check().await
    }
}
