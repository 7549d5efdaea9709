//! A token's check: its signature, issuer, expiry and audiences, then the
//! account and the bound object it names, read again (see the parent module),
//! and for a legacy token its secret, whose last use is recorded.

use std::collections::BTreeMap;

use kapi_registry::store::options::WriteOptions;
use serde_json::{json, Value};

use super::super::jwt;
use super::super::{UserDetails, UserInfo};
use super::*;

impl Issuer {
    /// The user of `token` when it is a valid service account token for one of
    /// `audiences`, with the audiences it matched.
    pub async fn authenticate(
        &self,
        apis: &Apis,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let claims = jwt::peek_claims(token).ok_or(super::super::UNKNOWN_TOKEN)?;
        let iss = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        if iss == LEGACY_ISSUER {
            if !self.legacy {
                return Err("legacy service account tokens are not accepted".into());
            }
            let claims = self.verified(token).await?;
            return self.legacy_user(apis, token, &claims).await;
        }
        if !self.issuers.iter().any(|i| i == iss) {
            return Err(super::super::UNKNOWN_TOKEN.into());
        }
        let claims = self.verified(token).await?;
        let num = |k: &str| claims.get(k).and_then(Value::as_i64);
        let now = now();
        match num("exp") {
            Some(exp) if now > exp + LEEWAY => {
                return Err("service account token has expired".into())
            }
            Some(_) => {}
            None => return Err("service account token has no expiry".into()),
        }
        if num("nbf").is_some_and(|nbf| now + LEEWAY < nbf) {
            return Err("service account token is not valid yet".into());
        }
        let token_aud: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        let matched: Vec<String> = audiences
            .iter()
            .filter(|a| token_aud.contains(a))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(format!(
                "token audiences {token_aud:?} is invalid for the target audiences {audiences:?}"
            ));
        }
        let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
        let s = |p: &str| {
            k8s.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let ns = s("/namespace");
        let (sa_name, sa_uid) = (s("/serviceaccount/name"), s("/serviceaccount/uid"));
        expect_uid(apis, "serviceaccounts", &ns, &sa_name, &sa_uid).await?;
        let mut extra = BTreeMap::new();
        for kind in ["pod", "secret", "node"] {
            let (name, uid) = (s(&format!("/{kind}/name")), s(&format!("/{kind}/uid")));
            if name.is_empty() {
                continue;
            }
            let scope = if kind == "node" { "" } else { ns.as_str() };
            expect_uid(apis, &format!("{kind}s"), scope, &name, &uid).await?;
            if kind != "secret" {
                extra.insert(
                    format!("authentication.kubernetes.io/{kind}-name"),
                    vec![name],
                );
                extra.insert(
                    format!("authentication.kubernetes.io/{kind}-uid"),
                    vec![uid],
                );
            }
        }
        if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![format!("JTI={jti}")],
            );
        }
        Ok((account_user(&ns, &sa_name, &sa_uid, extra), matched))
    }

    async fn legacy_user(
        &self,
        apis: &Apis,
        token: &str,
        claims: &Value,
    ) -> Result<(UserInfo, Vec<String>), String> {
        let c = |k: &str| {
            claims
                .get(format!("kubernetes.io/serviceaccount/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let (ns, secret, sa, uid) = (
            c("namespace"),
            c("secret.name"),
            c("service-account.name"),
            c("service-account.uid"),
        );
        if ns.is_empty() || secret.is_empty() || sa.is_empty() || uid.is_empty() {
            return Err("legacy service account token is missing claims".into());
        }
        if !self.lookup {
            return Ok((
                account_user(&ns, &sa, &uid, BTreeMap::new()),
                self.audiences.clone(),
            ));
        }
        expect_uid(apis, "serviceaccounts", &ns, &sa, &uid).await?;
        let account = lookup(apis, "serviceaccounts", &ns, &sa).await;
        if account.is_some_and(|a| a.pointer("/metadata/deletionTimestamp").is_some()) {
            return Err("service account has been deleted".into());
        }
        let obj = lookup(apis, "secrets", &ns, &secret)
            .await
            .ok_or("the token's secret no longer exists")?;
        // Upstream: a secret being deleted, or labelled invalid by the legacy
        // token cleaner, no longer authenticates.
        let invalidated = obj
            .pointer("/metadata/labels/kubernetes.io~1legacy-token-invalid-since")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if obj.pointer("/metadata/deletionTimestamp").is_some() || invalidated {
            return Err("token has been invalidated".into());
        }
        let stored = obj
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok());
        let owner = obj
            .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
            .and_then(Value::as_str);
        if stored.as_deref() != Some(token.as_bytes()) || owner != Some(sa.as_str()) {
            return Err("the token does not match its secret".into());
        }
        track_last_used(apis, &ns, &secret, &obj).await;
        Ok((
            account_user(&ns, &sa, &uid, BTreeMap::new()),
            self.audiences.clone(),
        ))
    }
}

/// Upstream's legacy token tracking: the secret's
/// `kubernetes.io/legacy-token-last-used` label is the day (UTC) its token last
/// authenticated. A failed write is only logged, as upstream.
async fn track_last_used(apis: &Apis, ns: &str, name: &str, secret: &Value) {
    const LABEL: &str = "kubernetes.io/legacy-token-last-used";
    let today = rfc3339(now()).chars().take(10).collect::<String>();
    let labelled = secret
        .pointer("/metadata/labels")
        .and_then(|l| l.get(LABEL))
        .and_then(Value::as_str);
    let Some(entry) = apis.lookup("", "v1", "secrets") else {
        return;
    };
    if labelled == Some(today.as_str()) || today.len() != 10 {
        return;
    }
    let uid = secret.pointer("/metadata/uid").cloned();
    let gr = entry.def.group_resource();
    let opts = WriteOptions::for_manager("kube-apiserver");
    let target = kapi_registry::store::UpdateTarget::Main;
    let updated = entry
        .store
        .update_with(Some(ns), name, target, &opts, false, |cur| {
            let stale =
                || kapi_machinery::status::ApiError::optimistic_lock_conflict(gr.clone(), name);
            let cur = cur.ok_or_else(stale)?;
            if cur.pointer("/metadata/uid") != uid.as_ref() {
                return Err(stale());
            }
            let mut obj = cur.clone();
            let m = kapi_registry::meta::meta_mut(&mut obj);
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if !labels.is_object() {
                *labels = json!({});
            }
            labels[LABEL] = json!(today);
            Ok(obj)
        })
        .await;
    if let Err(e) = updated {
        tracing::warn!(namespace = ns, name, error = %e, "failed to label a legacy service account token secret with last-used");
    }
}

fn account_user(ns: &str, name: &str, uid: &str, extra: BTreeMap<String, Vec<String>>) -> UserInfo {
    UserInfo::from(UserDetails {
        name: format!("system:serviceaccount:{ns}:{name}"),
        uid: uid.to_owned(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
        ],
        extra,
    })
}

/// The object from the watch cache, or from the backend when the cache lacks it.
pub(crate) async fn lookup(apis: &Apis, resource: &str, ns: &str, name: &str) -> Option<Value> {
    let entry = apis.lookup("", "v1", resource)?;
    if name.is_empty() || (entry.def.namespaced && ns.is_empty()) {
        return None;
    }
    let ns = entry.def.namespaced.then_some(ns);
    match entry.store.get(ns, name, Some("0")).await {
        Ok(v) => Some(v),
        Err(_) => entry.store.get(ns, name, None).await.ok(),
    }
}

async fn expect_uid(
    apis: &Apis,
    resource: &str,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    let obj = lookup(apis, resource, ns, name).await;
    let found = obj
        .as_ref()
        .and_then(|o| o.pointer("/metadata/uid"))
        .and_then(Value::as_str);
    match found {
        None => Err(format!("{resource} {ns}/{name} referenced by the token no longer exists")),
        Some(u) if !uid.is_empty() && u != uid => {
            Err(format!("{resource} {ns}/{name} referenced by the token was recreated (uid {u}, token has {uid})"))
        }
        Some(_) => Ok(()),
    }
}
