//! One issuer's signing keys, as go-oidc's provider and remote key set hold
//! them: the discovery document (`<issuer>/.well-known/openid-configuration`,
//! or the configured `discoveryURL`) is fetched over HTTPS trusting the
//! configured CA (the system roots without one); its `issuer` must be the
//! configured issuer URL; the key set at its `jwks_uri` is fetched next.
//!
//! Lifecycle (a [`Provider`] is shared by the authenticator and one
//! background task):
//! - `Uninitialized` — discovery has not succeeded yet. A background task
//!   tries at once and every 10 s (upstream's poll), and a token arriving
//!   meanwhile tries once more itself; until one succeeds tokens fail with
//!   `oidc: authenticator not initialized`.
//! - `Ready(keys)` — tokens verify against the cached keys. A token no cached
//!   key verifies (a key rotated in, an unknown `kid`) fetches the key set
//!   again, once for all the requests waiting at that moment
//!   (the generation counter), and is verified against the new keys.
//!
//! The background task holds a weak reference: it ends when the authenticator
//! is dropped (a reloaded configuration replaced it).

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use kapi_client::webhook::{self, Call, ClientTls, Target};
use serde_json::Value;

use crate::authn::jose::Jwk;

const WELL_KNOWN: &str = "/.well-known/openid-configuration";
/// upstream's HTTP client timeout for the issuer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// upstream's retry interval until discovery succeeds.
const INIT_RETRY: Duration = Duration::from_secs(10);

/// The keys known now and how often they were fetched.
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    pub keys: Arc<Vec<Jwk>>,
    /// Bumped on every fetch; a waiter whose generation is stale takes the
    /// keys another request fetched instead of fetching again.
    pub generation: u64,
}

pub struct Provider {
    issuer: String,
    discovery_url: String,
    tls: ClientTls,
    /// `None` until discovery succeeded: the key set URL.
    jwks_uri: RwLock<Option<String>>,
    keys: RwLock<KeySet>,
    /// Serialises fetches (held across the HTTP calls).
    fetching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl Provider {
    /// A provider for `issuer` trusting `ca_pem` (system roots when empty),
    /// with discovery at `discovery_url` when given; starts initializing in the
    /// background when a runtime is there.
    pub fn new(issuer: &str, discovery_url: &str, ca_pem: &str) -> Result<Arc<Provider>, String> {
        let ca = (!ca_pem.is_empty()).then_some(ca_pem.as_bytes());
        let tls = ClientTls::new(ca, None, false)?;
        let discovery_url = if discovery_url.is_empty() {
            format!("{}{WELL_KNOWN}", issuer.trim_end_matches('/'))
        } else {
            discovery_url.to_string()
        };
        let p = Arc::new(Provider {
            issuer: issuer.to_string(),
            discovery_url,
            tls,
            jwks_uri: RwLock::new(None),
            keys: RwLock::new(KeySet::default()),
            fetching: tokio::sync::Mutex::new(()),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(init_loop(Arc::downgrade(&p)));
        }
        Ok(p)
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A provider that already has `keys` (unit tests of the authenticator).
    #[cfg(test)]
    pub fn with_keys(issuer: &str, keys: Vec<Jwk>) -> Arc<Provider> {
        Arc::new(Provider {
            issuer: issuer.to_string(),
            discovery_url: String::new(),
            tls: ClientTls::new(None, None, true).expect("tls"),
            jwks_uri: RwLock::new(Some("https://127.0.0.1:1/keys".into())),
            keys: RwLock::new(KeySet {
                keys: Arc::new(keys),
                generation: 1,
            }),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether discovery has succeeded.
    pub fn initialized(&self) -> bool {
        self.jwks_uri.read().expect("jwks lock").is_some()
    }

    /// The cached keys, initializing first when needed (unless discovery is
    /// under way already: a request never waits for a slow issuer).
    pub async fn keys(&self) -> Result<KeySet, String> {
        if !self.initialized() {
            let not_yet = || "oidc: authenticator not initialized".to_string();
            let _guard = self.fetching.try_lock().map_err(|_| not_yet())?;
            if !self.initialized() {
                self.discover().await.map_err(|e| {
                    tracing::debug!(issuer = %self.issuer, error = %e, "oidc: initializing");
                    not_yet()
                })?;
            }
        }
        Ok(self.keys.read().expect("keys lock").clone())
    }

    /// Fetch the key set again unless another request already did since
    /// `seen` (its generation).
    pub async fn refresh(&self, seen: u64) -> Result<KeySet, String> {
        let _guard = self.fetching.lock().await;
        let current = self.keys.read().expect("keys lock").clone();
        if current.generation != seen {
            return Ok(current);
        }
        let uri = self.jwks_uri.read().expect("jwks lock").clone();
        let uri = uri.ok_or("oidc: authenticator not initialized")?;
        self.fetch_keys(&uri).await
    }

    /// Discovery, then the key set (once for concurrent callers).
    pub async fn init(&self) -> Result<(), String> {
        let _guard = self.fetching.lock().await;
        if self.initialized() {
            return Ok(());
        }
        self.discover().await
    }

    /// Discovery and the first key set; the caller holds `fetching`.
    async fn discover(&self) -> Result<(), String> {
        let doc = self.get_json(&self.discovery_url).await?;
        let found = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if found != self.issuer {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {found:?}",
                self.issuer
            ));
        }
        let uri = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .ok_or("oidc: discovery document has no jwks_uri")?
            .to_string();
        self.fetch_keys(&uri).await?;
        *self.jwks_uri.write().expect("jwks lock") = Some(uri);
        tracing::info!(issuer = %self.issuer, "oidc: issuer initialized");
        Ok(())
    }

    async fn fetch_keys(&self, uri: &str) -> Result<KeySet, String> {
        let doc = self
            .get_json(uri)
            .await
            .map_err(|e| format!("oidc: get keys failed: {e}"))?;
        let keys = Jwk::parse_set(&doc).map_err(|e| format!("oidc: failed to decode keys: {e}"))?;
        let mut slot = self.keys.write().expect("keys lock");
        slot.keys = Arc::new(keys);
        slot.generation += 1;
        Ok(slot.clone())
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let target = Target::from_url(url)?;
        let call = Call {
            method: "GET",
            path: &target.path,
            body: None,
            bearer: None,
        };
        let (status, body) = webhook::send(&target, &self.tls, call, FETCH_TIMEOUT).await?;
        if status != 200 {
            let text = String::from_utf8_lossy(&body);
            return Err(format!("{status}: {}", text.trim()));
        }
        serde_json::from_slice(&body).map_err(|e| format!("failed to decode {url}: {e}"))
    }
}

/// Try discovery until it succeeds or the provider is gone.
async fn init_loop(p: Weak<Provider>) {
    loop {
        let Some(provider) = p.upgrade() else { return };
        match provider.init().await {
            Ok(()) => return,
            Err(e) => {
                tracing::error!(issuer = %provider.issuer, error = %e, "oidc authenticator: initializing plugin")
            }
        }
        drop(provider);
        tokio::time::sleep(INIT_RETRY).await;
    }
}
