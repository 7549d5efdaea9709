//! The probe of one KMS v2 provider: the health check (`Status`: healthz `ok`,
//! API version `v2` — or `v2beta1` — unchanged since the first answer, a
//! non-empty key ID) and the write state it keeps (see `mod.rs`).
//!
//! Each successful check either extends the state's life (the key ID is
//! unchanged) or replaces it: a new random seed, wrapped by `Encrypt`, kept
//! only if `Encrypt` used the key ID `Status` reported. On failure the old
//! state stays usable until it expires. A check's result is reused for
//! `healthy_ttl` / `unhealthy_ttl`, and checks run one at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use super::api::EncryptedDekSourceType;
use super::{key_id_hash, KmsClient, KmsTiming};
use crate::aes::{SeedGcm, SEED_SIZE};
use crate::transformer::{random, TransformError, Transformer};

/// What writes use: the seed's transformer and how to name the wrapped seed.
#[derive(Clone)]
pub struct State {
    pub transformer: Arc<dyn Transformer>,
    pub key_id: String,
    pub encrypted_dek_source: Vec<u8>,
    pub annotations: HashMap<String, Vec<u8>>,
    pub source_type: EncryptedDekSourceType,
    /// Writes are refused after this.
    pub expires: SystemTime,
    /// The seed's entry in the envelope's DEK cache.
    pub cache_key: Vec<u8>,
}

pub struct Probe {
    client: KmsClient,
    timing: KmsTiming,
    state: RwLock<Option<Arc<State>>>,
    /// The last check's result and when it was made; held across the check,
    /// so checks run one at a time.
    last: tokio::sync::Mutex<Option<(Instant, Result<(), String>)>>,
    /// The API version of the first `Status` answer.
    version: Mutex<String>,
}

impl Probe {
    pub fn new(client: KmsClient, timing: KmsTiming) -> Self {
        Probe {
            client,
            timing,
            state: RwLock::new(None),
            last: tokio::sync::Mutex::new(None),
            version: Mutex::new(String::new()),
        }
    }

    pub fn name(&self) -> &str {
        self.client.name()
    }

    pub fn client(&self) -> &KmsClient {
        &self.client
    }

    pub fn timing(&self) -> &KmsTiming {
        &self.timing
    }

    /// The write state; an error until the plugin has answered once.
    pub fn state(&self) -> Result<Arc<State>, TransformError> {
        self.state.read().expect("state lock").clone().ok_or_else(|| {
            TransformError(format!(
                "KMS provider {:?} has no data encryption key yet: its plugin has not answered Status and Encrypt since the server started",
                self.name()
            ))
        })
    }

    /// The health check (`kms-providers` runs it for every provider).
    pub async fn check(&self) -> Result<(), String> {
        let mut last = self.last.lock().await;
        if let Some((at, result)) = last.as_ref() {
            let ttl = match result {
                Ok(()) => self.timing.healthy_ttl,
                Err(_) => self.timing.unhealthy_ttl,
            };
            if at.elapsed() < ttl {
                return result.clone();
            }
        }
        let result = self.check_now().await;
        *last = Some((Instant::now(), result.clone()));
        result
    }

    async fn check_now(&self) -> Result<(), String> {
        let status = self.client.status().await.map_err(|e| {
            format!(
                "failed to perform status section of the healthz check for KMS Provider {}, error: {e}",
                self.name()
            )
        })?;
        let mut errs = Vec::new();
        if status.healthz != "ok" {
            errs.push(format!("got unexpected healthz status: {}", status.healthz));
        }
        if status.version != "v2" && status.version != "v2beta1" {
            errs.push(format!(
                "expected KMSv2 API version v2, got {}",
                status.version
            ));
        } else {
            let mut first = self.version.lock().expect("version lock");
            if first.is_empty() {
                *first = status.version.clone();
            }
            if *first != status.version {
                errs.push(format!("KMSv2 API version should not change after the initial status response version {first}, got {}", status.version));
            }
        }
        match validate_key_id(&status.key_id) {
            Err(e) => errs.push(format!(
                "got invalid KMSv2 KeyID hash {:?}: {e}",
                key_id_hash(&status.key_id)
            )),
            Ok(()) => {
                if let Err(e) = self.rotate_on_key_id_change(&status.key_id).await {
                    errs.push(e);
                }
            }
        }
        match errs.len() {
            0 => Ok(()),
            1 => Err(format!(
                "kmsv2 Provider {} is not healthy, error: {}",
                self.name(),
                errs[0]
            )),
            _ => Err(format!(
                "kmsv2 Provider {} is not healthy, error: [{}]",
                self.name(),
                errs.join(", ")
            )),
        }
    }

    /// Keep the state (later expiry) when the key ID is unchanged, else make
    /// a new one under `key_id`.
    async fn rotate_on_key_id_change(&self, key_id: &str) -> Result<(), String> {
        let expires = SystemTime::now() + self.timing.write_ttl;
        let current = self.state.read().expect("state lock").clone();
        if let Some(state) = current.as_ref().filter(|s| s.key_id == key_id) {
            let mut renewed = State::clone(state);
            renewed.expires = expires;
            *self.state.write().expect("state lock") = Some(Arc::new(renewed));
            return Ok(());
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let generated = self.generate(&uid, key_id, expires).await;
        match generated {
            Ok(state) => {
                tracing::info!(provider = self.name(), key_id_hash = %key_id_hash(key_id), "KMS v2: new DEK seed");
                *self.state.write().expect("state lock") = Some(Arc::new(state));
                Ok(())
            }
            Err(e) => Err(format!(
                "failed to rotate DEK uid={uid:?}, statusKeyIDHash={:?}, stateKeyIDHash={:?}: {e}",
                key_id_hash(key_id),
                key_id_hash(current.as_ref().map_or("", |s| s.key_id.as_str()))
            )),
        }
    }

    async fn generate(
        &self,
        uid: &str,
        key_id: &str,
        expires: SystemTime,
    ) -> Result<State, String> {
        let mut seed = [0u8; SEED_SIZE];
        random(&mut seed).map_err(|e| e.0)?;
        let transformer = SeedGcm::new(&seed).map_err(|e| e.0)?;
        let resp = self
            .client
            .encrypt(uid, &seed)
            .await
            .map_err(|e| format!("failed to encrypt DEK, error: {e}"))?;
        validate_key_id(&resp.key_id)?;
        validate_dek_source(&resp.ciphertext)?;
        validate_annotations(&resp.annotations)?;
        if resp.key_id != key_id {
            return Err(format!(
                "Encrypt used key ID hash {:?}, Status reported {:?}",
                key_id_hash(&resp.key_id),
                key_id_hash(key_id)
            ));
        }
        let source_type = EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed;
        Ok(State {
            cache_key: cache_key(
                source_type as i32,
                &resp.ciphertext,
                &resp.key_id,
                &resp.annotations,
            ),
            transformer: Arc::new(transformer),
            key_id: resp.key_id,
            encrypted_dek_source: resp.ciphertext,
            annotations: resp.annotations,
            source_type,
            expires,
        })
    }

    /// Poll the plugin for as long as the returned task runs: every `poll`
    /// while healthy, every `poll_failing` while not.
    pub fn spawn_polling(self: &Arc<Self>) -> tokio::task::AbortHandle {
        let probe = self.clone();
        tokio::spawn(async move {
            loop {
                let wait = match probe.check().await {
                    Ok(()) => probe.timing.poll,
                    Err(e) => {
                        tracing::warn!(provider = probe.name(), error = %e, "KMS plugin failed its health check");
                        probe.timing.poll_failing
                    }
                };
                tokio::time::sleep(wait.max(Duration::from_millis(10))).await;
            }
        })
        .abort_handle()
    }
}

pub fn validate_key_id(key_id: &str) -> Result<(), String> {
    match key_id.len() {
        0 => Err("keyID is empty".into()),
        n if n > 1024 => Err(format!(
            "keyID is {n} bytes, which exceeds the max size of 1024"
        )),
        _ => Ok(()),
    }
}

pub fn validate_dek_source(source: &[u8]) -> Result<(), String> {
    match source.len() {
        0 => Err("failed to validate encrypted DEK source: encrypted DEK source is empty".into()),
        n if n > 1024 => Err(format!("failed to validate encrypted DEK source: encrypted DEK source is {n} bytes, which exceeds the max size of 1024")),
        _ => Ok(()),
    }
}

/// Keys are DNS subdomains; keys and values together at most 32 KiB.
pub fn validate_annotations(annotations: &HashMap<String, Vec<u8>>) -> Result<(), String> {
    let mut total = 0usize;
    for (k, v) in annotations {
        if !is_dns_subdomain(k) {
            return Err(format!(
                "failed to validate annotations: annotations: Invalid value: {k:?}: should be a domain with at least two segments separated by dots"
            ));
        }
        total += k.len() + v.len();
    }
    if total > 32 * 1024 {
        return Err(format!("failed to validate annotations: total size of annotations is {total}, which exceeds the max size of 32768"));
    }
    Ok(())
}

fn is_dns_subdomain(s: &str) -> bool {
    let labels: Vec<&str> = s.split('.').collect();
    s.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

/// What identifies a wrapped seed in the DEK cache: its type, the wrapped
/// bytes, the key ID and the annotations (sorted), each length-prefixed.
pub fn cache_key(
    source_type: i32,
    source: &[u8],
    key_id: &str,
    annotations: &HashMap<String, Vec<u8>>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + source.len() + key_id.len());
    let mut field = |b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_be_bytes());
        out.extend_from_slice(b);
    };
    field(&source_type.to_be_bytes());
    field(source);
    field(key_id.as_bytes());
    let mut keys: Vec<&String> = annotations.keys().collect();
    keys.sort();
    for k in keys {
        field(k.as_bytes());
        field(&annotations[k]);
    }
    out
}
