//! The `--encryption-provider-config` file: `EncryptionConfiguration` of
//! `apiserver.config.k8s.io/v1`, in YAML or JSON, decoded strictly (an unknown
//! field is an error, as upstream's strict decoder), with upstream's defaults
//! applied (a KMS provider's `apiVersion` is `v1`, its `timeout` 3s, and a v1
//! provider's `cachesize` 1000). `validate.rs` checks the result.

use std::time::Duration;

use serde::Deserialize;

pub const API_VERSION: &str = "apiserver.config.k8s.io/v1";
pub const KIND: &str = "EncryptionConfiguration";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    #[serde(default)]
    pub api_version: Option<String>,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub resources: Option<Vec<ResourceConfiguration>>,
}

/// One entry: resources and the providers they are kept with, writer first.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceConfiguration {
    #[serde(default)]
    pub resources: Option<Vec<String>>,
    #[serde(default)]
    pub providers: Option<Vec<ProviderConfiguration>>,
}

/// Exactly one of the fields is set (validation checks it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfiguration {
    #[serde(default)]
    pub aesgcm: Option<KeysConfiguration>,
    #[serde(default)]
    pub aescbc: Option<KeysConfiguration>,
    #[serde(default)]
    pub secretbox: Option<KeysConfiguration>,
    #[serde(default)]
    pub identity: Option<IdentityConfiguration>,
    #[serde(default)]
    pub kms: Option<KmsConfiguration>,
}

impl ProviderConfiguration {
    /// How many providers the element names (one is valid).
    pub fn count(&self) -> usize {
        [
            self.aesgcm.is_some(),
            self.aescbc.is_some(),
            self.secretbox.is_some(),
            self.identity.is_some(),
            self.kms.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeysConfiguration {
    #[serde(default)]
    pub keys: Option<Vec<Key>>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    #[serde(default)]
    pub name: String,
    /// Base64 of the key bytes.
    #[serde(default)]
    pub secret: String,
}

impl std::fmt::Debug for Key {
    /// Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({:?})", self.name)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityConfiguration {}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KmsConfiguration {
    /// `v1` (refused: KMS v1 is off in 1.33) or `v2`; defaulted to `v1`.
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub name: String,
    /// KMS v1 only; defaulted to 1000 for v1.
    #[serde(default, rename = "cachesize")]
    pub cache_size: Option<i32>,
    /// `unix:///path/to/socket` (or `unix:///@abstract`).
    #[serde(default)]
    pub endpoint: String,
    /// A Go duration; defaulted to `3s`. Kept as nanoseconds: it may be ≤ 0
    /// here, validation refuses that.
    #[serde(default, deserialize_with = "go_duration_opt")]
    pub timeout: Option<i128>,
}

impl KmsConfiguration {
    /// The call timeout (validated positive).
    pub fn timeout(&self) -> Duration {
        let nanos = self.timeout.unwrap_or(3_000_000_000).max(0) as u64;
        Duration::from_nanos(nanos)
    }
}

/// Decode the file's bytes and apply defaults.
pub fn decode(data: &[u8]) -> Result<EncryptionConfiguration, String> {
    let text = std::str::from_utf8(data).map_err(|_| "the file is not valid UTF-8".to_string())?;
    let mut config: EncryptionConfiguration =
        serde_saphyr::from_str(text).map_err(|e| format!("strict decoding error: {e}"))?;
    match (config.api_version.as_deref(), config.kind.as_deref()) {
        (None | Some(""), _) => return Err("Object 'apiVersion' is missing".into()),
        (_, None | Some("")) => return Err("Object 'Kind' is missing".into()),
        (Some(API_VERSION), Some(KIND)) => {}
        (Some(version), Some(kind)) => {
            return Err(format!(
                "no kind {kind:?} is registered for version {version:?} in scheme; \
                 expected {KIND} of {API_VERSION}"
            ))
        }
    }
    for entry in config.resources.iter_mut().flatten() {
        for provider in entry.providers.iter_mut().flatten() {
            if let Some(kms) = provider.kms.as_mut() {
                if kms.api_version.is_empty() {
                    kms.api_version = "v1".into();
                }
                if kms.timeout.is_none() {
                    kms.timeout = Some(3_000_000_000);
                }
                if kms.cache_size.is_none() && kms.api_version == "v1" {
                    kms.cache_size = Some(1000);
                }
            }
        }
    }
    Ok(config)
}

fn go_duration_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i128>, D::Error> {
    let s: Option<String> = Option::deserialize(d)?;
    s.map(|s| parse_go_duration(&s).map_err(serde::de::Error::custom))
        .transpose()
}

/// Go's `time.ParseDuration`, in nanoseconds: `3s`, `1m30s`, `-1.5h`, `0`.
pub fn parse_go_duration(s: &str) -> Result<i128, String> {
    let bad = || format!("time: invalid duration {s:?}");
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("time: missing unit in duration {s:?}"))?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            unit => return Err(format!("time: unknown unit {unit:?} in duration {s:?}")),
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    let nanos = total.round() as i128;
    Ok(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_go_parses_them() {
        assert_eq!(parse_go_duration("3s"), Ok(3_000_000_000));
        assert_eq!(parse_go_duration("1m30s"), Ok(90_000_000_000));
        assert_eq!(parse_go_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_go_duration("-1s"), Ok(-1_000_000_000));
        assert_eq!(parse_go_duration("0"), Ok(0));
        assert!(parse_go_duration("3").is_err());
        assert!(parse_go_duration("3x").is_err());
        assert!(parse_go_duration("").is_err());
    }

    #[test]
    fn decodes_yaml_strictly_with_defaults() {
        let yaml = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n\
                    resources:\n- resources: [secrets]\n  providers:\n  - kms: {name: a, endpoint: unix:///s}\n  - identity: {}\n";
        let c = decode(yaml.as_bytes()).unwrap();
        let kms = c.resources.unwrap()[0].providers.as_ref().unwrap()[0]
            .kms
            .clone()
            .unwrap();
        assert_eq!(
            (kms.api_version.as_str(), kms.cache_size),
            ("v1", Some(1000))
        );
        assert_eq!(kms.timeout(), Duration::from_secs(3));
        let unknown = yaml.replace("identity: {}", "identiti: {}");
        assert!(decode(unknown.as_bytes()).unwrap_err().contains("identiti"));
        let wrong = yaml.replace("kind: EncryptionConfiguration", "kind: EncryptionConfig");
        assert!(decode(wrong.as_bytes())
            .unwrap_err()
            .contains("EncryptionConfig"));
        let json = r#"{"apiVersion":"apiserver.config.k8s.io/v1","kind":"EncryptionConfiguration","resources":[]}"#;
        assert!(decode(json.as_bytes())
            .unwrap()
            .resources
            .unwrap()
            .is_empty());
    }
}
