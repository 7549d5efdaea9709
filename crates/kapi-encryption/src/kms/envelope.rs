//! The KMS v2 transformer: what follows `k8s:enc:kms:v2:<name>:` is the
//! protobuf `EncryptedObject` — the value encrypted under the DEK (or a key
//! derived from the DEK seed), the key ID, the plugin-wrapped DEK source, its
//! type and the plugin's annotations.
//!
//! Writes use the probe's write state (no plugin call) and fail once it has
//! expired. Reads unwrap the DEK source through the plugin on the first sight
//! of it and keep the result for `dek_cache_ttl`. A value is stale when its key
//! ID or DEK source type is not the current write state's, so a rewrite moves
//! it to the plugin's current key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use prost::Message;

use super::api::{EncryptedDekSourceType, EncryptedObject};
use super::probe::{cache_key, validate_annotations, validate_dek_source, validate_key_id};
use super::{key_id_hash, Probe};
use crate::aes::{Gcm, SeedGcm};
use crate::transformer::{Read, TransformError, Transformer};

type Cached = (Arc<dyn Transformer>, Instant);

pub struct Envelope {
    probe: Arc<Probe>,
    /// Unwrapped DEK sources by [`cache_key`], with when they were added.
    cache: Mutex<HashMap<Vec<u8>, Cached>>,
}

impl Envelope {
    pub fn new(probe: Arc<Probe>) -> Self {
        Envelope {
            probe,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn cached(&self, key: &[u8]) -> Option<Arc<dyn Transformer>> {
        let ttl = self.probe.timing().dek_cache_ttl;
        let cache = self.cache.lock().expect("DEK cache lock");
        cache
            .get(key)
            .filter(|(_, at)| at.elapsed() < ttl)
            .map(|(t, _)| t.clone())
    }

    fn remember(&self, key: Vec<u8>, transformer: Arc<dyn Transformer>) {
        let ttl = self.probe.timing().dek_cache_ttl;
        let mut cache = self.cache.lock().expect("DEK cache lock");
        cache.retain(|_, (_, at)| at.elapsed() < ttl);
        cache.insert(key, (transformer, Instant::now()));
    }

    /// The transformer of `obj`'s DEK source, unwrapped by the plugin if unseen.
    async fn read_transformer(
        &self,
        obj: &EncryptedObject,
    ) -> Result<Arc<dyn Transformer>, TransformError> {
        let key = cache_key(
            obj.encrypted_dek_source_type,
            &obj.encrypted_dek_source,
            &obj.key_id,
            &obj.annotations,
        );
        if let Some(t) = self.cached(&key) {
            return Ok(t);
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let client = self.probe.client();
        let plain = client
            .decrypt(
                &uid,
                &obj.encrypted_dek_source,
                &obj.key_id,
                &obj.annotations,
            )
            .await
            .map_err(|e| TransformError(format!("failed to decrypt DEK, error: {e}")))?;
        let seeded = obj.encrypted_dek_source_type
            == EncryptedDekSourceType::HkdfSha256XnonceAesGcmSeed as i32;
        let transformer: Arc<dyn Transformer> = if seeded {
            Arc::new(SeedGcm::new(&plain)?)
        } else {
            Arc::new(Gcm::new(&plain)?)
        };
        self.remember(key, transformer.clone());
        Ok(transformer)
    }
}

fn validate(obj: &EncryptedObject) -> Result<(), TransformError> {
    if EncryptedDekSourceType::try_from(obj.encrypted_dek_source_type).is_err() {
        return Err(TransformError(format!(
            "unknown encryptedDEKSourceType: {}",
            obj.encrypted_dek_source_type
        )));
    }
    if obj.encrypted_data.is_empty() {
        return Err(TransformError::new("encrypted data is empty"));
    }
    validate_dek_source(&obj.encrypted_dek_source)
        .and_then(|()| {
            validate_key_id(&obj.key_id).map_err(|e| format!("failed to validate key id: {e}"))
        })
        .and_then(|()| validate_annotations(&obj.annotations))
        .map_err(TransformError)
}

#[async_trait]
impl Transformer for Envelope {
    async fn transform_from_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Read, TransformError> {
        let obj = EncryptedObject::decode(data)
            .map_err(|e| TransformError(format!("decoding EncryptedObject: {e}")))?;
        validate(&obj)?;
        // As upstream: reads too need the provider to have reached its plugin once.
        let state = self.probe.state()?;
        let transformer = self.read_transformer(&obj).await?;
        let read = transformer
            .transform_from_storage(&obj.encrypted_data, key)
            .await?;
        let stale = read.stale
            || obj.key_id != state.key_id
            || obj.encrypted_dek_source_type != state.source_type as i32;
        Ok(Read {
            data: read.data,
            stale,
        })
    }

    async fn transform_to_storage(
        &self,
        data: &[u8],
        key: &[u8],
    ) -> Result<Vec<u8>, TransformError> {
        let state = self.probe.state()?;
        let now = SystemTime::now();
        if now > state.expires {
            return Err(TransformError(format!(
                "encryptedDEKSource with keyID hash {:?} expired at {} (current time is {}): the KMS plugin {:?} has not answered its health check since",
                key_id_hash(&state.key_id),
                rfc3339(state.expires),
                rfc3339(now),
                self.probe.name()
            )));
        }
        // Reads of what is written now need no plugin call.
        if self.cached(&state.cache_key).is_none() {
            self.remember(state.cache_key.clone(), state.transformer.clone());
        }
        let encrypted_data = state.transformer.transform_to_storage(data, key).await?;
        let obj = EncryptedObject {
            encrypted_data,
            key_id: state.key_id.clone(),
            encrypted_dek_source: state.encrypted_dek_source.clone(),
            annotations: state.annotations.clone(),
            encrypted_dek_source_type: state.source_type as i32,
        };
        validate(&obj)?;
        Ok(obj.encode_to_vec())
    }
}

/// `2006-01-02T15:04:05Z` of a time (UTC).
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + std::time::Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
    }
}
