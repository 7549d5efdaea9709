//! Shared setup: configuration files in a temporary directory, encryption
//! loaded with short KMS timings, and the encrypting backend over a fresh
//! embedded store (or real etcd), with the raw store beside it for reading
//! what is really kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_encryption::{EncryptedBackend, Encryption, KeyMap, KmsTiming, Settings};
use kapi_storage::embedded::{EmbeddedBackend, EmbeddedConfig};
use kapi_storage::Backend;

/// Base64 of 16, 24 and 32 bytes.
pub const KEY16: &str = "MTIzNDU2Nzg5MDEyMzQ1Ng==";
pub const KEY24: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0";
pub const KEY32: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI=";
pub const KEY32B: &str = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY=";

/// A plaintext that must never appear in a stored value.
pub const PLAIN: &[u8] =
    br#"{"kind":"Secret","data":{"password":"aHVudGVyMg=="},"marker":"PLAINTEXT-MARKER"}"#;

pub fn config(resources: &str) -> String {
    format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n{resources}")
}

/// One entry: `resources` kept with `providers` (YAML flow lists).
pub fn entry(resources: &str, providers: &str) -> String {
    format!("- resources: [{resources}]\n  providers: [{providers}]\n")
}

pub fn aescbc(name: &str, secret: &str) -> String {
    format!("{{aescbc: {{keys: [{{name: {name}, secret: '{secret}'}}]}}}}")
}

pub fn kms(name: &str, socket: &Path, timeout: &str) -> String {
    format!(
        "{{kms: {{apiVersion: v2, name: {name}, endpoint: 'unix://{}', timeout: {timeout}}}}}",
        socket.display()
    )
}

/// Timings short enough for tests.
pub fn timing() -> KmsTiming {
    KmsTiming {
        poll: Duration::from_millis(200),
        poll_failing: Duration::from_millis(100),
        write_ttl: Duration::from_secs(60),
        healthy_ttl: Duration::ZERO,
        unhealthy_ttl: Duration::ZERO,
        dek_cache_ttl: Duration::from_secs(3600),
    }
}

pub struct Dir {
    pub dir: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write the configuration file and return its path.
    pub fn write(&self, content: &str) -> PathBuf {
        let path = self.path("encryption.yaml");
        std::fs::write(&path, content).expect("write config");
        path
    }

    pub fn settings(&self, content: &str) -> Settings {
        let mut s = Settings::new(self.write(content), false);
        s.timing = timing();
        s
    }

    pub async fn load(&self, content: &str) -> Arc<Encryption> {
        Encryption::load(self.settings(content))
            .await
            .expect("load")
    }

    /// A fresh embedded store in this directory.
    pub fn store(&self) -> Arc<dyn Backend> {
        let cfg = EmbeddedConfig::new(self.path("store"));
        Arc::new(EmbeddedBackend::open(cfg).expect("open store"))
    }
}

/// Secrets, configmaps and custom resources, as the server maps them.
pub fn keys() -> KeyMap {
    let mut keys = KeyMap::default();
    keys.resource("/secrets/", "", "secrets");
    keys.resource("/configmaps/", "", "configmaps");
    keys.resource("/deployments/", "apps", "deployments");
    keys.tree("/");
    keys
}

pub fn encrypted(raw: &Arc<dyn Backend>, enc: &Arc<Encryption>) -> EncryptedBackend {
    EncryptedBackend::new(raw.clone(), enc.clone(), keys())
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The raw value at `key`.
pub async fn raw(backend: &Arc<dyn Backend>, key: &str) -> Bytes {
    backend
        .get(key, None)
        .await
        .expect("get")
        .expect("exists")
        .value
}
