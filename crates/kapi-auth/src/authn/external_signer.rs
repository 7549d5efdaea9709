//! The external service account token signer (`--service-account-signing-endpoint`,
//! feature gate `ExternalServiceAccountTokenSigner`; upstream
//! `pkg/serviceaccount/externaljwt/plugin`): a process on a unix socket
//! (a path, or `@name` in the abstract namespace) that signs tokens and owns
//! their keys, spoken to over gRPC (`v1alpha1.ExternalJWTSigner`).
//!
//! - Signing: the payload segment goes out, the header and signature segments
//!   come back; the header must hold exactly `alg` (RS256, ES256, ES384 or
//!   ES512), a non-empty `kid` of at most 1024 bytes and `typ: JWT`, and its
//!   key must not be one excluded from OIDC discovery.
//! - Keys: fetched at start (a start fails without them), again when the
//!   signer's refresh hint says (10 s after a failed fetch), and at once when
//!   a token names a key id the cache does not know. Keys excluded from OIDC
//!   discovery verify tokens but are left out of the published key set.
//! - Metadata: the longest token the signer issues, asked once at start.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use hyper_util::rt::TokioIo;
use kapi_egress::unix::UnixSocket;
use serde::Deserialize;
use tonic::transport::{Channel, Endpoint, Uri};

use super::jwt::{self, VerifyKey};

/// The generated gRPC client and server (the server serves tests' signers).
pub mod api {
    tonic::include_proto!("v1alpha1");
}

use api::external_jwt_signer_client::ExternalJwtSignerClient;

/// How long a key fetch may take (upstream's key sync timeout).
const KEY_SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a signing or metadata call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// When keys are fetched again after a failed fetch.
const RETRY_AFTER: Duration = Duration::from_secs(10);
/// The longest key id accepted.
const MAX_KID: usize = 1024;

/// One key the signer trusts.
#[derive(Clone)]
struct Key {
    verify: VerifyKey,
    kid: String,
    exclude_from_oidc: bool,
}

/// The keys last fetched and when to fetch them again.
#[derive(Clone, Default)]
struct Keys {
    keys: Vec<Key>,
    refresh_at: Option<Instant>,
}

/// A connection to an external signer with its key cache.
pub struct ExternalSigner {
    endpoint: String,
    client: ExternalJwtSignerClient<Channel>,
    keys: RwLock<Keys>,
    /// One fetch at a time; callers that waited read what it fetched.
    fetching: tokio::sync::Mutex<()>,
}

/// Upstream's check of the flag's value: an absolute filesystem location, or
/// `@` and a name in the abstract namespace, without spaces (nor another `@`
/// in the name).
pub fn check_endpoint(endpoint: &str) -> Result<(), String> {
    parse_endpoint(endpoint).map(|_| ())
}

fn parse_endpoint(endpoint: &str) -> Result<UnixSocket, String> {
    let invalid = || {
        format!("invalid value {endpoint:?} passed for `--service-account-signing-endpoint`, should be a valid location on the filesystem or must be prefixed with @ to name UDS in abstract namespace")
    };
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if let Some(name) = endpoint.strip_prefix('@') {
        if name.is_empty() || !name.chars().all(name_char) {
            return Err(invalid());
        }
        return Ok(UnixSocket::Abstract(name.to_owned()));
    }
    let segments_ok = endpoint.strip_prefix('/').is_some_and(|rest| {
        rest.split('/')
            .all(|s| s.chars().all(|c| name_char(c) || c == '@'))
    });
    if !segments_ok || endpoint.len() < 2 {
        return Err(invalid());
    }
    Ok(UnixSocket::Path(PathBuf::from(endpoint)))
}

/// A gRPC failure as Go's grpc names it.
fn rpc_error(status: tonic::Status) -> String {
    format!(
        "rpc error: code = {:?} desc = {}",
        status.code(),
        status.message()
    )
}

async fn call<T>(
    timeout: Duration,
    what: &str,
    fut: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, String> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(resp)) => Ok(resp.into_inner()),
        Ok(Err(status)) => Err(rpc_error(status)),
        Err(_) => Err(format!(
            "rpc error: code = DeadlineExceeded desc = {what}: context deadline exceeded"
        )),
    }
}

/// The header a signer may answer: these three members and no others.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    #[serde(default)]
    alg: String,
    #[serde(default)]
    kid: String,
    #[serde(default)]
    typ: String,
}

impl ExternalSigner {
    /// Connect to the signer at `endpoint` and fill the key cache; keeps the
    /// keys fresh from then on (a task on the current runtime).
    pub async fn connect(endpoint: &str) -> Result<Arc<ExternalSigner>, String> {
        let socket = parse_endpoint(endpoint)?;
        // The URI only fills the request's authority; the connector dials the socket.
        let channel = Endpoint::from_static("http://localhost").connect_with_connector_lazy(
            tower::service_fn(move |_: Uri| {
                let socket = socket.clone();
                async move { socket.connect().await.map(TokioIo::new) }
            }),
        );
        let signer = Arc::new(ExternalSigner {
            endpoint: endpoint.to_owned(),
            client: ExternalJwtSignerClient::new(channel),
            keys: RwLock::new(Keys::default()),
            fetching: tokio::sync::Mutex::new(()),
        });
        signer
            .fetch_keys()
            .await
            .map_err(|e| format!("while initially filling key cache: {e}"))?;
        let weak = Arc::downgrade(&signer);
        tokio::spawn(async move {
            loop {
                let Some(signer) = weak.upgrade() else { return };
                let wait = signer
                    .keys
                    .read()
                    .expect("keys lock")
                    .refresh_at
                    .map_or(RETRY_AFTER, |at| {
                        at.saturating_duration_since(Instant::now())
                    });
                drop(signer);
                tokio::time::sleep(wait).await;
                let Some(signer) = weak.upgrade() else { return };
                if let Err(e) = signer.fetch_keys().await {
                    tracing::error!(endpoint = %signer.endpoint, error = %e,
                        "when syncing supported public keys (stale set of keys will be supported)");
                    signer.keys.write().expect("keys lock").refresh_at =
                        Some(Instant::now() + RETRY_AFTER);
                }
            }
        });
        Ok(signer)
    }

    /// The longest token lifetime the signer supports, in seconds.
    pub async fn max_token_expiration(&self) -> Result<i64, String> {
        let mut client = self.client.clone();
        let resp = call(
            CALL_TIMEOUT,
            "Metadata",
            client.metadata(api::MetadataRequest {}),
        )
        .await?;
        Ok(resp.max_token_expiration_seconds)
    }

    /// Fetch the keys and replace the cache with them.
    async fn fetch_keys(&self) -> Result<(), String> {
        let _one = self.fetching.lock().await;
        let mut client = self.client.clone();
        let resp = call(
            KEY_SYNC_TIMEOUT,
            "FetchKeys",
            client.fetch_keys(api::FetchKeysRequest {}),
        )
        .await
        .map_err(|e| format!("while getting externally supported jwt signing keys: {e}"))?;
        if resp.refresh_hint_seconds <= 0 {
            return Err(format!(
                "found invalid refresh hint ({}s)",
                resp.refresh_hint_seconds
            ));
        }
        if resp.keys.is_empty() {
            return Err("found no keys".into());
        }
        if resp.data_timestamp.is_none() {
            return Err("invalid data timestamp: invalid nil Timestamp".into());
        }
        let mut keys = Vec::with_capacity(resp.keys.len());
        for k in resp.keys {
            if k.key_id.is_empty() || k.key_id.len() > MAX_KID {
                return Err(format!("found invalid public key id {:?}", k.key_id));
            }
            if k.key.is_empty() {
                return Err("found empty public key".into());
            }
            let verify = jwt::verify_key_from_spki(&k.key, &k.key_id)
                .map_err(|e| format!("while parsing external public keys: {e}"))?;
            keys.push(Key {
                verify,
                kid: k.key_id,
                exclude_from_oidc: k.exclude_from_oidc_discovery,
            });
        }
        let refresh = Duration::from_secs(resp.refresh_hint_seconds.unsigned_abs());
        *self.keys.write().expect("keys lock") = Keys {
            keys,
            refresh_at: Some(Instant::now() + refresh),
        };
        Ok(())
    }

    fn cached(&self, kid: &str) -> Vec<Key> {
        let keys = self.keys.read().expect("keys lock");
        keys.keys
            .iter()
            .filter(|k| kid.is_empty() || k.kid == kid)
            .cloned()
            .collect()
    }

    /// The keys known by `kid` (every key for an empty one), fetching the
    /// keys again once when none is known.
    async fn keys_for(&self, kid: &str) -> Vec<Key> {
        let found = self.cached(kid);
        if !found.is_empty() {
            return found;
        }
        if let Err(e) = self.fetch_keys().await {
            tracing::error!(error = %e, "error while syncing keys");
            return Vec::new();
        }
        let found = self.cached(kid);
        if found.is_empty() {
            tracing::error!("key id {kid:?} not found after refresh");
        }
        found
    }

    /// The keys a token whose header names `kid` may be verified with.
    pub async fn verify_keys(&self, kid: &str) -> Vec<VerifyKey> {
        self.keys_for(kid)
            .await
            .into_iter()
            .map(|k| k.verify)
            .collect()
    }

    /// The keys published in the OIDC key set (not the excluded ones).
    pub fn discovery_keys(&self) -> Vec<VerifyKey> {
        let keys = self.keys.read().expect("keys lock");
        keys.keys
            .iter()
            .filter(|k| !k.exclude_from_oidc)
            .map(|k| k.verify.clone())
            .collect()
    }

    /// Every cached key (verification).
    pub fn all_keys(&self) -> Vec<VerifyKey> {
        let keys = self.keys.read().expect("keys lock");
        keys.keys.iter().map(|k| k.verify.clone()).collect()
    }

    /// A token of `claims`, signed by the signer.
    pub async fn sign(&self, claims: &serde_json::Value) -> Result<String, String> {
        let payload = B64.encode(claims.to_string());
        let mut client = self.client.clone();
        let resp = call(
            CALL_TIMEOUT,
            "Sign",
            client.sign(api::SignJwtRequest {
                claims: payload.clone(),
            }),
        )
        .await
        .map_err(|e| format!("while signing jwt: {e}"))?;
        self.check_header(&resp.header)
            .await
            .map_err(|e| format!("while validating header: {e}"))?;
        if resp.signature.is_empty() {
            return Err("empty signature returned".into());
        }
        Ok(format!("{}.{payload}.{}", resp.header, resp.signature))
    }

    async fn check_header(&self, header: &str) -> Result<(), String> {
        let json = B64
            .decode(header)
            .map_err(|e| format!("while unwrapping header: {e}"))?;
        let h: Header =
            serde_json::from_slice(&json).map_err(|e| format!("while parsing header JSON: {e}"))?;
        if h.typ != "JWT" {
            return Err("bad type".into());
        }
        if h.kid.is_empty() {
            return Err("key id missing".into());
        }
        if h.kid.len() > MAX_KID {
            return Err("key id longer than 1 kb".into());
        }
        if !matches!(h.alg.as_str(), "RS256" | "ES256" | "ES384" | "ES512") {
            return Err(format!("bad signing algorithm {:?}", h.alg));
        }
        if self
            .keys_for(&h.kid)
            .await
            .iter()
            .any(|k| k.exclude_from_oidc)
        {
            return Err(format!(
                "key used for signing JWT (kid: {}) is excluded from OIDC discovery docs",
                h.kid
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_as_upstream_accepts_them() {
        for good in [
            "/e/an_b-d/efg",
            "@ebc.sock",
            "@ebc.eng.hij",
            "/var/run/signer.sock",
        ] {
            assert!(check_endpoint(good).is_ok(), "{good}");
        }
        for bad in [
            "abc",
            "@abc@",
            "@abc.abc  .ae",
            "/@e_adnb/xyz /efg",
            "/e /xyz /efg",
            "@",
            "",
        ] {
            let err = check_endpoint(bad).unwrap_err();
            assert_eq!(
                err,
                format!("invalid value {bad:?} passed for `--service-account-signing-endpoint`, should be a valid location on the filesystem or must be prefixed with @ to name UDS in abstract namespace")
            );
        }
        assert_eq!(
            parse_endpoint("@signer"),
            Ok(UnixSocket::Abstract("signer".into()))
        );
    }
}
