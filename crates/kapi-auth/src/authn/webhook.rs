//! Webhook token authentication (`--authentication-token-webhook-config-file`,
//! upstream's `plugin/pkg/authenticator/token/webhook`): a bearer token no
//! other authenticator knows is sent to the webhook the kubeconfig file names
//! as a `TokenReview` (`authentication.k8s.io`, `v1beta1` by default or `v1`
//! with `--authentication-token-webhook-version`), with the audiences the
//! request is for in `spec.audiences`.
//!
//! The answer's `status.authenticated` decides; `status.user` is the user;
//! `status.error` is the reason of a refusal (for the log). A webhook that
//! answers with no audiences is taken to mean the API's own
//! (`--api-audiences`); otherwise one of the wanted audiences must be among
//! those it returns.
//!
//! Answers are cached for `--authentication-token-webhook-cache-ttl` (2m),
//! keyed by a hash of the token and the audiences: acceptances and plain
//! refusals alike; failures to call the webhook and refusals carrying an error
//! are not cached (upstream's token cache with `cacheErrs=false`). At most
//! [`CACHE_ENTRIES`] answers are kept; the oldest go first.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kapi_client::kubeconfig::WebhookConnection;
use serde_json::{json, Value};

use kapi_http::user::{UserDetails, UserInfo};

/// Cached answers kept at most.
pub const CACHE_ENTRIES: usize = 4096;
/// How long one review may take, retries included (upstream's webhook client timeout).
const TIMEOUT: Duration = Duration::from_secs(30);

/// A webhook's verdict on a token.
#[derive(Debug, Clone, PartialEq)]
pub enum Review {
    /// The user and the audiences the token is good for.
    Authenticated(UserInfo, Vec<String>),
    /// Not authenticated; the webhook's `status.error`, if any.
    Refused(Option<String>),
}

pub struct TokenWebhook {
    conn: WebhookConnection,
    version: &'static str,
    ttl: Duration,
    /// `--api-audiences`: what a webhook without audience support vouches for.
    api_audiences: Vec<String>,
    cache: Mutex<HashMap<Vec<u8>, (Instant, Review)>>,
}

impl std::fmt::Debug for TokenWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenWebhook")
            .field("version", &self.version)
            .finish()
    }
}

impl TokenWebhook {
    /// The webhook `conn` reaches, speaking TokenReview `version` (`v1` or
    /// `v1beta1`), caching answers for `ttl`.
    pub fn new(
        conn: WebhookConnection,
        version: &str,
        ttl: Duration,
        api_audiences: Vec<String>,
    ) -> Result<TokenWebhook, String> {
        let version = match version {
            "v1" => "v1",
            "v1beta1" => "v1beta1",
            other => {
                return Err(format!(
                    "unsupported authentication webhook version {other:?}, supported versions are \"v1\", \"v1beta1\""
                ))
            }
        };
        Ok(TokenWebhook {
            conn,
            version,
            ttl,
            api_audiences,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The verdict on `token` for `audiences` (empty: the API audiences).
    pub async fn review(&self, token: &str, audiences: &[String]) -> Result<Review, String> {
        let wanted = if audiences.is_empty() {
            self.api_audiences.clone()
        } else {
            audiences.to_vec()
        };
        let key = cache_key(token, &wanted);
        if let Some(hit) = self.cached(&key) {
            return Ok(hit);
        }
        let review = self.call(token, &wanted).await?;
        let cacheable = !matches!(review, Review::Refused(Some(_)));
        if cacheable && !self.ttl.is_zero() {
            self.store(key, review.clone());
        }
        Ok(review)
    }

    fn cached(&self, key: &[u8]) -> Option<Review> {
        let cache = self.cache.lock().expect("webhook cache lock");
        let (at, review) = cache.get(key)?;
        (at.elapsed() < self.ttl).then(|| review.clone())
    }

    fn store(&self, key: Vec<u8>, review: Review) {
        let mut cache = self.cache.lock().expect("webhook cache lock");
        if cache.len() >= CACHE_ENTRIES {
            let ttl = self.ttl;
            cache.retain(|_, (at, _)| at.elapsed() < ttl);
            while cache.len() >= CACHE_ENTRIES {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, (at, _))| *at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => cache.remove(&k),
                    None => break,
                };
            }
        }
        cache.insert(key, (Instant::now(), review));
    }

    async fn call(&self, token: &str, wanted: &[String]) -> Result<Review, String> {
        let mut spec = json!({"token": token});
        if !wanted.is_empty() {
            spec["audiences"] = json!(wanted);
        }
        let body = json!({
            "apiVersion": format!("authentication.k8s.io/{}", self.version),
            "kind": "TokenReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
        });
        let answer = self.conn.post_json(&body, TIMEOUT).await?;
        let status = answer.get("status").cloned().unwrap_or(Value::Null);
        if status.get("authenticated").and_then(Value::as_bool) != Some(true) {
            let err = status
                .get("error")
                .and_then(Value::as_str)
                .filter(|e| !e.is_empty())
                .map(str::to_owned);
            return Ok(Review::Refused(err));
        }
        let mut got: Vec<String> = strings(status.get("audiences"));
        if got.is_empty() {
            got = self.api_audiences.clone();
        }
        let matched: Vec<String> = if wanted.is_empty() {
            got
        } else {
            wanted.iter().filter(|a| got.contains(a)).cloned().collect()
        };
        if !wanted.is_empty() && matched.is_empty() {
            return Ok(Review::Refused(None));
        }
        Ok(Review::Authenticated(user(&status), matched))
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `status.user` as a [`UserInfo`].
fn user(status: &Value) -> UserInfo {
    let u = status.get("user").cloned().unwrap_or(Value::Null);
    let s = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let extra: BTreeMap<String, Vec<String>> = u
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo::from(UserDetails {
        name: s("username"),
        uid: s("uid"),
        groups: strings(u.get("groups")),
        extra,
    })
}

/// SHA-256 of the token and the audiences (tokens are not kept in memory as such).
fn cache_key(token: &str, audiences: &[String]) -> Vec<u8> {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(token.as_bytes());
    for a in audiences {
        ctx.update(&[0]);
        ctx.update(a.as_bytes());
    }
    ctx.finish().as_ref().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_and_keys() {
        let status = json!({"authenticated": true, "user": {"username": "jane", "uid": "42",
            "groups": ["dev"], "extra": {"scopes.example.com/s": ["a", "b"]}}});
        let u = user(&status);
        assert_eq!((u.name.as_str(), u.uid.as_str()), ("jane", "42"));
        assert_eq!(u.groups, vec!["dev"]);
        assert_eq!(u.extra["scopes.example.com/s"], vec!["a", "b"]);
        assert_ne!(cache_key("t", &[]), cache_key("t", &["a".into()]));
        assert_eq!(cache_key("t", &["a".into()]), cache_key("t", &["a".into()]));
    }
}
