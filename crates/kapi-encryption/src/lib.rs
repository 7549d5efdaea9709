//! kapi-encryption: encryption at rest, as kube-apiserver's
//! `--encryption-provider-config` does it — the same `EncryptionConfiguration`
//! file, the same stored bytes, so an etcd written by one is read by the other.
//!
//! The layers, bottom up:
//! - `transformer.rs`: upstream's value transformer (bytes in, bytes out, with
//!   the value's storage key as authenticated data) and the prefix list a
//!   resource's providers form: the first writes, every one reads, a value read
//!   through any but the first is *stale*;
//! - the providers: `aes.rs` (`aescbc`, `aesgcm`, and the HKDF extended-nonce
//!   GCM KMS v2 uses), `secretbox.rs`, and `kms/` (KMS v2: the gRPC client, the
//!   plugin probe that keeps the DEK seed, the envelope transformer with its
//!   DEK cache);
//! - `config.rs` + `validate.rs`: the file, decoded strictly and validated with
//!   upstream's field errors; `resources.rs` turns it into one transformer per
//!   group-resource (exact, `*.group`, `*.*`, else identity);
//! - `loaded.rs`: a loaded configuration (transformers, the `kms-providers`
//!   health check, the tasks polling the plugins) and [`Encryption`], the
//!   swappable handle `reload.rs` replaces when the file changes;
//! - `backend.rs`: [`EncryptedBackend`], the [`kapi_storage::Backend`]
//!   decorator that applies them by key (`keys.rs` maps a key to its
//!   group-resource). It sits below the watch cache, so everything above —
//!   cache, fast LIST paths, the store — sees plaintext, and only the backend
//!   holds ciphertext.
//!
//! Invariant: nothing configured for encryption is ever written in plaintext;
//! a transformer that cannot encrypt fails the write.

mod aes;
mod backend;
pub mod config;
mod keys;
pub mod kms;
mod loaded;
mod reload;
mod resources;
mod secretbox;
#[cfg(feature = "testing")]
pub mod testing;
mod transformer;
mod validate;

pub use backend::EncryptedBackend;
pub use keys::KeyMap;
pub use kms::KmsTiming;
pub use loaded::{Encryption, Settings};
pub use transformer::{Read, TransformError, Transformer};

/// A resource as the configuration names it (`secrets`, `deployments.apps`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// Upstream's `ParseGroupResource`: the resource up to the first dot, the
    /// group after it (`*.` is every resource of the core group).
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", s),
        }
    }
}

impl std::fmt::Display for GroupResource {
    /// As the configuration writes it: `secrets`, `*.`, `*.apps`, `*.*`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.group.as_str(), self.resource.as_str()) {
            ("", "*") => f.write_str("*."),
            ("", r) => f.write_str(r),
            (g, r) => write!(f, "{r}.{g}"),
        }
    }
}
