//! JWT (OpenID Connect ID token) authentication, as upstream's OIDC
//! authenticator: one [`JwtAuthenticator`] per configured issuer, from the
//! `--oidc-*` flags or an `AuthenticationConfiguration` (`config.rs`,
//! validated and compiled by `validate.rs`), its keys from the issuer
//! (`provider.rs`).
//!
//! A token is this authenticator's when its (unverified) `iss` is the issuer
//! URL; otherwise the next authenticator is asked. Then, in upstream's order:
//! the `alg` must be an accepted one, `iss` must match, one audience must be
//! configured (`MatchAny`), `exp` must be in the future and `nbf` not more
//! than 5 minutes ahead, and the signature must verify (fetching the key set
//! again once when no cached key does); then the claim mappings give the user
//! (`username` by claim — `email` only when `email_verified` is not false —
//! or expression, `groups` a string or a list, `uid`, `extra`), the required
//! claims and claim validation expressions must hold, and finally the user
//! validation expressions. Any failure is the token's rejection (401), the
//! reason for the log.
//!
//! Not done: distributed claims (`_claim_names` / `_claim_sources`).

pub mod config;
pub mod provider;
pub mod validate;

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::cel::Value as Cel;
use serde_json::{json, Value};

use super::jose::{self, Parsed};
use crate::cel::{as_string, as_string_list, to_cel};
use kapi_http::user::{UserDetails, UserInfo};
use provider::Provider;
use validate::Compiled;

/// go-oidc's allowance for clocks ahead of the issuer on `nbf`.
const NBF_LEEWAY: i64 = 5 * 60;

/// One issuer's authenticator.
#[derive(Debug)]
pub struct JwtAuthenticator {
    config: config::JwtAuthenticator,
    compiled: Compiled,
    algorithms: Vec<String>,
    provider: Arc<Provider>,
}

impl JwtAuthenticator {
    /// The authenticator `config` (validated into `compiled`) describes,
    /// accepting tokens signed with `algorithms`.
    pub fn new(
        config: config::JwtAuthenticator,
        compiled: Compiled,
        algorithms: Vec<String>,
    ) -> Result<JwtAuthenticator, String> {
        for alg in &algorithms {
            if !jose::ALL_ALGORITHMS.contains(&alg.as_str()) {
                return Err(format!("oidc: unsupported signing alg: {alg:?}"));
            }
        }
        let i = &config.issuer;
        let provider = Provider::new(&i.url, &i.discovery_url, &i.certificate_authority)?;
        Ok(JwtAuthenticator {
            config,
            compiled,
            algorithms,
            provider,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.config.issuer.url
    }

    /// As [`JwtAuthenticator::new`] with the keys already known.
    #[cfg(test)]
    fn with_provider(
        config: config::JwtAuthenticator,
        compiled: Compiled,
        algorithms: Vec<String>,
        provider: Arc<Provider>,
    ) -> JwtAuthenticator {
        JwtAuthenticator {
            config,
            compiled,
            algorithms,
            provider,
        }
    }

    /// The issuer's keys, fetched (a reload waits for this before switching).
    pub async fn initialize(&self) -> Result<(), String> {
        self.provider.init().await
    }

    /// Whether `token` claims to come from this issuer.
    pub fn claims_issuer(&self, token: &Parsed) -> bool {
        token.claims.get("iss").and_then(Value::as_str) == Some(self.issuer())
    }

    /// The user of `token` (already parsed, claiming this issuer).
    pub async fn authenticate(&self, token: &Parsed) -> Result<UserInfo, String> {
        self.verify(token)
            .await
            .map_err(|e| format!("oidc: verify token: {e}"))?;
        let claims = &token.claims;
        let cel_claims = to_cel(claims);
        let mut user = UserInfo::from(UserDetails {
            name: self.username(claims, &cel_claims)?,
            groups: self.groups(claims, &cel_claims)?,
            uid: self.uid(claims, &cel_claims)?,
            extra: self.extra(&cel_claims)?,
        });
        self.check_claims(claims, &cel_claims)?;
        self.check_user(&user)?;
        user.groups.retain(|g| !g.is_empty());
        Ok(user)
    }

    async fn verify(&self, token: &Parsed) -> Result<(), String> {
        if !self.algorithms.contains(&token.alg) {
            return Err(format!(
                "oidc: id token signed with unsupported algorithm, expected {:?} got {:?}",
                self.algorithms, token.alg
            ));
        }
        let audiences = &self.config.issuer.audiences;
        let token_aud = strings(token.claims.get("aud"));
        if !token_aud.iter().any(|a| audiences.contains(a)) {
            return Err(format!(
                "oidc: expected audience in {audiences:?} got {token_aud:?}"
            ));
        }
        let now = super::serviceaccount::now();
        let num = |k: &str| {
            token
                .claims
                .get(k)
                .and_then(Value::as_f64)
                .map(|f| f as i64)
        };
        match num("exp") {
            Some(exp) if exp > now => {}
            exp => {
                return Err(format!(
                    "oidc: token is expired (Token Expiry: {})",
                    super::serviceaccount::rfc3339(exp.unwrap_or(0))
                ))
            }
        }
        if let Some(nbf) = num("nbf").filter(|nbf| now + NBF_LEEWAY < *nbf) {
            return Err(format!(
                "oidc: current time {} before the nbf (not before) time: {}",
                super::serviceaccount::rfc3339(now),
                super::serviceaccount::rfc3339(nbf)
            ));
        }
        let keys = self.provider.keys().await?;
        if token.verified_by(&keys.keys) {
            return Ok(());
        }
        let fresh = self
            .provider
            .refresh(keys.generation)
            .await
            .map_err(|e| format!("failed to verify signature: fetching keys {e}"))?;
        if token.verified_by(&fresh.keys) {
            return Ok(());
        }
        Err("failed to verify signature: failed to verify id token signature".into())
    }

    fn username(&self, claims: &Value, c: &Cel) -> Result<String, String> {
        if let Some(e) = &self.compiled.username {
            let v = e
                .eval(&[("claims", c.clone())])
                .map_err(|e| format!("oidc: error evaluating username claim expression: {e}"))?;
            return as_string(&v).ok_or_else(|| {
                "oidc: error evaluating username claim expression: username claim expression must return a string".to_string()
            });
        }
        let m = &self.config.claim_mappings.username;
        let name = string_claim(claims, &m.claim)
            .map_err(|e| format!("oidc: parse username claims {:?}: {e}", m.claim))?;
        if m.claim == "email" {
            match claims.get("email_verified") {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Bool(false)) => return Err("oidc: email not verified".into()),
                Some(other) => {
                    return Err(format!(
                        "oidc: parse 'email_verified' claim: cannot unmarshal {other} into bool"
                    ))
                }
            }
        }
        Ok(format!("{}{name}", m.prefix.as_deref().unwrap_or("")))
    }

    fn groups(&self, claims: &Value, c: &Cel) -> Result<Vec<String>, String> {
        let m = &self.config.claim_mappings.groups;
        if !m.claim.is_empty() {
            if let Some(v) = claims.get(&m.claim) {
                let groups = match v {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(a) if a.iter().all(Value::is_string) => {
                        a.iter().filter_map(|g| g.as_str().map(str::to_owned)).collect()
                    }
                    Value::Null => Vec::new(),
                    other => {
                        return Err(format!(
                            "oidc: parse groups claim {:?}: cannot unmarshal {other} into a string or a list of strings",
                            m.claim
                        ))
                    }
                };
                let prefix = m.prefix.as_deref().unwrap_or("");
                return Ok(groups.into_iter().map(|g| format!("{prefix}{g}")).collect());
            }
        }
        let Some(e) = &self.compiled.groups else {
            return Ok(Vec::new());
        };
        let err = |e: String| format!("oidc: error evaluating group claim expression: {e}");
        let v = e.eval(&[("claims", c.clone())]).map_err(err)?;
        as_string_list(&v).map_err(err)
    }

    fn uid(&self, claims: &Value, c: &Cel) -> Result<String, String> {
        let m = &self.config.claim_mappings.uid;
        if !m.claim.is_empty() {
            return string_claim(claims, &m.claim)
                .map_err(|e| format!("oidc: parse uid claim {:?}: {e}", m.claim));
        }
        let Some(e) = &self.compiled.uid else {
            return Ok(String::new());
        };
        let err = |e: String| format!("oidc: error evaluating uid claim expression: {e}");
        let v = e.eval(&[("claims", c.clone())]).map_err(err)?;
        as_string(&v).ok_or_else(|| err("uid claim expression must return a string".into()))
    }

    fn extra(&self, c: &Cel) -> Result<BTreeMap<String, Vec<String>>, String> {
        let mut out = BTreeMap::new();
        for (key, e) in &self.compiled.extra {
            let v = e
                .eval(&[("claims", c.clone())])
                .map_err(|err| format!("oidc: error evaluating extra claim expression: {err}"))?;
            let values = as_string_list(&v).map_err(|err| {
                format!(
                    "oidc: error evaluating extra claim expression: {}: {err}",
                    e.source
                )
            })?;
            if !values.is_empty() {
                out.insert(key.clone(), values);
            }
        }
        Ok(out)
    }

    fn check_claims(&self, claims: &Value, c: &Cel) -> Result<(), String> {
        for r in &self.config.claim_validation_rules {
            if r.claim.is_empty() {
                continue;
            }
            let Some(v) = claims.get(&r.claim) else {
                return Err(format!(
                    "oidc: required claim {} not present in ID token",
                    r.claim
                ));
            };
            let got = v
                .as_str()
                .ok_or_else(|| format!("oidc: parse claim {}: not a string", r.claim))?;
            if got != r.required_value {
                return Err(format!(
                    "oidc: required claim {} value does not match. Got = {got}, want = {}",
                    r.claim, r.required_value
                ));
            }
        }
        let prefix = "oidc: error evaluating claim validation expression";
        check_rules(&self.compiled.claim_rules, "claims", c).map_err(|e| format!("{prefix}: {e}"))
    }

    fn check_user(&self, user: &UserInfo) -> Result<(), String> {
        if self.compiled.user_rules.is_empty() {
            return Ok(());
        }
        let u = to_cel(&json!({"username": user.name, "uid": user.uid,
            "groups": user.groups, "extra": user.extra}));
        check_rules(&self.compiled.user_rules, "user", &u)
            .map_err(|e| format!("oidc: error evaluating user info validation rule: {e}"))
    }
}

/// Every rule must evaluate to `true` (upstream's `checkValidationRulesEvaluation`).
fn check_rules(
    rules: &[(crate::cel::Expression, String)],
    var: &'static str,
    value: &Cel,
) -> Result<(), String> {
    for (e, message) in rules {
        match e.eval(&[(var, value.clone())])? {
            Cel::Bool(true) => {}
            Cel::Bool(false) => {
                return Err(format!(
                    "validation expression '{}' failed: {message}",
                    e.source
                ))
            }
            _ => return Err("validation expression must return a boolean".into()),
        }
    }
    Ok(())
}

/// A claim that must be a string.
fn string_claim(claims: &Value, name: &str) -> Result<String, String> {
    match claims.get(name) {
        None => Err("claim not present".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("cannot unmarshal {other} into a string")),
    }
}

/// A string-or-list claim (`aud`).
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
