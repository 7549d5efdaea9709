//! The webhook authorizer (upstream's `plugin/pkg/authorizer/webhook`): the
//! request's attributes go to a remote service as a `SubjectAccessReview`
//! (`authorization.k8s.io` `v1`, or `v1beta1`, whose user groups field is
//! `group`), whose `status` decides: `allowed` allows, `denied` denies (a
//! webhook saying both denies, with an error), neither has no opinion; the
//! `reason` goes into the 403 message.
//!
//! The same authorizer serves `--authorization-mode=...,Webhook` (with the
//! `--authorization-webhook-*` flags: failures have no opinion, no match
//! conditions) and each `type: Webhook` entry of an `AuthorizationConfiguration`
//! (`config.rs`: a name, a timeout, a failure policy, match conditions, cache
//! settings).
//!
//! - Match conditions (CEL over `request`, the v1 `SubjectAccessReviewSpec`):
//!   any `false` skips the webhook (no opinion); otherwise an evaluation error
//!   is a failure.
//! - Answers are cached by the review's spec: allowed ones for
//!   `authorizedTTL`, others for `unauthorizedTTL` (unless the configuration
//!   turns either cache off), at most [`CACHE_ENTRIES`]; requests whose
//!   requester-controlled attributes are 10000 bytes or more are not cached.
//! - A failure (unreachable, timeout, bad answer, 429/5xx after upstream's
//!   retries) is the failure policy's decision — `NoOpinion` (the next
//!   authorizer decides) or `Deny` — carrying the error; a request no
//!   authorizer allows that met an error is answered 500, as upstream.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use kapi_client::kubeconfig::WebhookConnection;
use kube_cel::cel::Value as Cel;
use serde_json::{json, Map, Value};

use super::{Attributes, Authorizer, Decision, RuleSet, Verdict};
use crate::cel::{to_cel, Expression};
use kapi_http::user::UserInfo;

/// Cached answers kept at most per webhook (upstream's LRU holds 8192).
pub const CACHE_ENTRIES: usize = 8192;
/// Requester-controlled attribute bytes beyond which nothing is cached.
const MAX_CACHED_ATTRIBUTES: usize = 10_000;

/// How one webhook is called and what its failures mean.
#[derive(Debug, Clone)]
pub struct Settings {
    /// For the log (the configuration's `name`, or `webhook` for the flags).
    pub name: String,
    /// `v1` or `v1beta1`.
    pub version: String,
    pub timeout: Duration,
    pub authorized_ttl: Duration,
    pub unauthorized_ttl: Duration,
    pub cache_authorized: bool,
    pub cache_unauthorized: bool,
    /// `NoOpinion` or `Deny`.
    pub failure: Verdict,
    pub match_conditions: Vec<Expression>,
}

impl Settings {
    /// The `--authorization-webhook-*` flags' webhook.
    pub fn from_flags(
        version: &str,
        authorized_ttl: Duration,
        unauthorized_ttl: Duration,
    ) -> Settings {
        Settings {
            name: "webhook".into(),
            version: version.into(),
            timeout: Duration::from_secs(30),
            authorized_ttl,
            unauthorized_ttl,
            cache_authorized: true,
            cache_unauthorized: true,
            failure: Verdict::NoOpinion,
            match_conditions: Vec::new(),
        }
    }
}

type Status = (bool, bool, String);

pub struct Webhook {
    conn: WebhookConnection,
    settings: Settings,
    cache: Mutex<HashMap<String, (Instant, Duration, Status)>>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("name", &self.settings.name)
            .finish()
    }
}

impl Webhook {
    pub fn new(conn: WebhookConnection, settings: Settings) -> Result<Webhook, String> {
        if !matches!(settings.version.as_str(), "v1" | "v1beta1") {
            return Err(format!(
                "unsupported webhook authorizer version {:?}, supported versions are \"v1\", \"v1beta1\"",
                settings.version
            ));
        }
        Ok(Webhook {
            conn,
            settings,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn fail(&self, error: String) -> Decision {
        tracing::warn!(webhook = %self.settings.name, %error, "failed to make webhook authorizer request");
        Decision {
            verdict: self.settings.failure,
            reason: String::new(),
            error: Some(error),
        }
    }

    /// The match conditions' verdict: `Ok(false)` when one is false.
    fn matches(&self, spec: &Value) -> Result<bool, String> {
        if self.settings.match_conditions.is_empty() {
            return Ok(true);
        }
        let request = to_cel(spec);
        let mut error = None;
        for c in &self.settings.match_conditions {
            match c.eval(&[("request", request.clone())]) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => return Ok(false),
                Ok(_) => {
                    error = Some(format!(
                        "matchCondition {:?} did not evaluate to a boolean",
                        c.source
                    ))
                }
                Err(e) => error = Some(format!("matchCondition {:?}: {e}", c.source)),
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    fn cached(&self, key: &str) -> Option<Status> {
        let cache = self.cache.lock().expect("webhook cache lock");
        let (at, ttl, status) = cache.get(key)?;
        (at.elapsed() < *ttl).then(|| status.clone())
    }

    fn store(&self, key: String, status: &Status) {
        let s = &self.settings;
        let (ttl, on) = if status.0 {
            (s.authorized_ttl, s.cache_authorized)
        } else {
            (s.unauthorized_ttl, s.cache_unauthorized)
        };
        if !on || ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().expect("webhook cache lock");
        if cache.len() >= CACHE_ENTRIES {
            cache.retain(|_, (at, ttl, _)| at.elapsed() < *ttl);
            while cache.len() >= CACHE_ENTRIES {
                let oldest = cache
                    .iter()
                    .min_by_key(|(_, (at, _, _))| *at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(k) => cache.remove(&k),
                    None => break,
                };
            }
        }
        cache.insert(key, (Instant::now(), ttl, status.clone()));
    }

    async fn review(&self, spec: &Value) -> Result<Status, String> {
        let mut spec = spec.clone();
        if self.settings.version == "v1beta1" {
            if let Some(groups) = spec.as_object_mut().and_then(|m| m.remove("groups")) {
                spec["group"] = groups;
            }
        }
        let body = json!({
            "apiVersion": format!("authorization.k8s.io/{}", self.settings.version),
            "kind": "SubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"allowed": false},
        });
        let answer = self.conn.post_json(&body, self.settings.timeout).await?;
        let status = answer.get("status").cloned().unwrap_or(Value::Null);
        let flag = |k: &str| status.get(k).and_then(Value::as_bool).unwrap_or(false);
        let reason = status
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Ok((flag("allowed"), flag("denied"), reason))
    }
}

/// The v1 `SubjectAccessReviewSpec` of `attrs` (empty fields left out).
pub fn review_spec(attrs: &Attributes) -> Value {
    let mut spec = Map::new();
    let u = &attrs.user;
    let put = |m: &mut Map<String, Value>, k: &str, v: &str| {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    };
    match &attrs.resource {
        Some(r) => {
            let mut ra = Map::new();
            put(&mut ra, "namespace", &r.namespace);
            put(&mut ra, "verb", &attrs.verb);
            put(&mut ra, "group", &r.group);
            put(&mut ra, "version", &r.version);
            put(&mut ra, "resource", &r.resource);
            put(&mut ra, "subresource", &r.subresource);
            put(&mut ra, "name", &r.name);
            spec.insert("resourceAttributes".into(), Value::Object(ra));
        }
        None => {
            let mut na = Map::new();
            put(&mut na, "path", attrs.path.as_deref().unwrap_or(""));
            put(&mut na, "verb", &attrs.verb);
            spec.insert("nonResourceAttributes".into(), Value::Object(na));
        }
    }
    put(&mut spec, "user", &u.name);
    if !u.groups.is_empty() {
        spec.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        spec.insert("extra".into(), json!(u.extra));
    }
    put(&mut spec, "uid", &u.uid);
    Value::Object(spec)
}

/// The bytes of the attributes a requester controls (upstream's `shouldCache`).
fn controlled_size(attrs: &Attributes) -> usize {
    let r = attrs.resource.clone().unwrap_or_default();
    [
        &r.namespace,
        &attrs.verb,
        &r.group,
        &r.resource,
        &r.subresource,
        &r.name,
    ]
    .iter()
    .map(|s| s.len())
    .sum::<usize>()
        + attrs.path.as_deref().map_or(0, str::len)
}

#[async_trait]
impl Authorizer for Webhook {
    async fn authorize(&self, attrs: &Attributes) -> Decision {
        let spec = review_spec(attrs);
        match self.matches(&spec) {
            Ok(true) => {}
            Ok(false) => return Decision::no_opinion(""),
            Err(e) => return self.fail(e),
        }
        let key = spec.to_string();
        let status = match self.cached(&key) {
            Some(s) => s,
            None => match self.review(&spec).await {
                Ok(s) => {
                    if controlled_size(attrs) < MAX_CACHED_ATTRIBUTES {
                        self.store(key, &s);
                    }
                    s
                }
                Err(e) => return self.fail(e),
            },
        };
        match status {
            (true, true, reason) => Decision {
                verdict: Verdict::Deny,
                reason,
                error: Some(
                    "webhook subject access review returned both allow and deny response".into(),
                ),
            },
            (_, true, reason) => Decision::deny(reason),
            (true, _, reason) => Decision::allow(reason),
            (_, _, reason) => Decision::no_opinion(reason),
        }
    }

    async fn rules_for(&self, _: &UserInfo, _: &str) -> RuleSet {
        RuleSet {
            incomplete: true,
            errors: vec!["webhook authorizer does not support user rule resolution".into()],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::ResourceAttrs;

    #[test]
    fn specs_as_upstream_sends_them() {
        let mut user = UserInfo::named("jane", &["dev"]);
        user.uid = "42".into();
        let attrs = Attributes::resource(
            &user,
            "list",
            ResourceAttrs {
                resource: "pods".into(),
                namespace: "ns".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            review_spec(&attrs),
            json!({"resourceAttributes": {"namespace": "ns", "verb": "list", "resource": "pods"},
                "user": "jane", "groups": ["dev"], "uid": "42"})
        );
        let path = Attributes {
            user: UserInfo::named("bob", &[]),
            verb: "get".into(),
            resource: None,
            path: Some("/healthz".into()),
        };
        assert_eq!(
            review_spec(&path),
            json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "bob"})
        );
        assert_eq!(controlled_size(&path), "get".len() + "/healthz".len());
    }
}
