//! Service account tokens (upstream `pkg/serviceaccount`): the [`Issuer`]
//! signs bound tokens for TokenRequest (`handlers/token.rs`) and authenticates
//! them.
//!
//! A bound token is a JWT with `iss` (the first `--service-account-issuer`),
//! `aud`, `exp`/`iat`/`nbf`, `jti`, `sub` (`system:serviceaccount:<ns>:<name>`)
//! and a private `kubernetes.io` claim naming the namespace, the account and
//! the bound pod, secret or node with their uids. It authenticates while its
//! signature verifies, its issuer is accepted, it has not expired (60 s leeway,
//! as go-jose), one of its audiences is wanted, and the account and bound
//! object still exist with the same uids — read from the watch cache, and from
//! the backend when the cache does not have them (yet).
//!
//! Legacy secret-based tokens (`iss: kubernetes/serviceaccount`, filled into
//! `kubernetes.io/service-account-token` secrets by `controllers/tokens.rs`)
//! are refused unless `--service-account-legacy-tokens` is set; then, with
//! `--service-account-lookup` (the default), the secret must still exist (not being deleted nor labelled
//! `kubernetes.io/legacy-token-invalid-since`), hold this token, and belong to
//! the account, which must exist with the token's uid and not be deleting. The
//! secret's `kubernetes.io/legacy-token-last-used` label records the day.

use kapi_registry::store::options::WriteOptions;
use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use std::sync::Arc;

use super::external_signer::ExternalSigner;
use super::jwt::{self, SigningKey, VerifyKey};
use super::{UserDetails, UserInfo};
use kapi_registry::apis::Apis;

/// kubeadm's (and kapi's default) issuer.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
const LEEWAY: i64 = 60;

/// What signs tokens: a key of ours, or an external signer that also owns
/// the keys tokens verify with.
enum Signer {
    Local(Box<SigningKey>),
    External(Arc<ExternalSigner>),
}

/// Keys and names service account tokens are issued and checked with.
pub struct Issuer {
    signer: Signer,
    /// The local keys tokens verify with (an external signer keeps its own).
    verify: Vec<VerifyKey>,
    issuers: Vec<String>,
    audiences: Vec<String>,
    legacy: bool,
    /// `--service-account-lookup`: legacy tokens' secrets and accounts are checked.
    lookup: bool,
    jwks_uri: Option<String>,
    max_expiration: Option<i64>,
    extend_expiration: bool,
    /// The longest an extended token may live (an external signer's maximum).
    extended_cap: Option<i64>,
}

/// The expiration kubelet asks for projected tokens; such pod-bound tokens get
/// [`EXTENDED_EXPIRATION`] and a `warnafter` claim instead (upstream
/// `WarnOnlyBoundTokenExpirationSeconds`).
pub const WARN_ONLY_EXPIRATION: i64 = 3607;
/// One year (upstream `ExpirationExtensionSeconds`).
pub const EXTENDED_EXPIRATION: i64 = 24 * 365 * 60 * 60;

/// What [`Issuer::issue`] binds a token to.
pub struct Binding<'a> {
    pub namespace: &'a str,
    pub account: (&'a str, &'a str),
    /// `("Pod" | "Secret" | "Node", name, uid)`.
    pub object: Option<(&'a str, &'a str, &'a str)>,
    pub audiences: &'a [String],
    pub expiration_seconds: i64,
    /// Seconds after which using the token is warned about (0: none).
    pub warn_after_seconds: i64,
}

impl Issuer {
    /// A fresh in-memory key and the default issuer (tests, embedders).
    pub fn ephemeral() -> Issuer {
        Issuer::new(&jwt::generate_ec_pem(), &[], Vec::new(), Vec::new(), false)
            .expect("generated key is valid")
    }

    /// `signing_pem` signs; it and every `verify_pems` entry verify. Empty
    /// `issuers` means [`DEFAULT_ISSUER`]; empty `audiences` means the first issuer.
    pub fn new(
        signing_pem: &str,
        verify_pems: &[String],
        issuers: Vec<String>,
        audiences: Vec<String>,
        legacy: bool,
    ) -> Result<Issuer, String> {
        let signer = jwt::parse_signing_key(signing_pem)?;
        let mut verify = vec![signer.verify_key()];
        for pem in verify_pems {
            verify.extend(jwt::parse_verify_keys(pem)?);
        }
        Ok(Issuer::with_signer(
            Signer::Local(Box::new(signer)),
            verify,
            issuers,
            audiences,
            legacy,
        ))
    }

    /// Tokens signed by `signer` (`--service-account-signing-endpoint`) and
    /// verified with the keys it publishes; its maximum token lifetime caps
    /// extended tokens.
    pub fn external(
        signer: Arc<ExternalSigner>,
        issuers: Vec<String>,
        audiences: Vec<String>,
        legacy: bool,
        max_token_expiration: i64,
    ) -> Issuer {
        let mut issuer = Issuer::with_signer(
            Signer::External(signer),
            Vec::new(),
            issuers,
            audiences,
            legacy,
        );
        issuer.extended_cap = Some(max_token_expiration);
        issuer
    }

    fn with_signer(
        signer: Signer,
        verify: Vec<VerifyKey>,
        issuers: Vec<String>,
        audiences: Vec<String>,
        legacy: bool,
    ) -> Issuer {
        let issuers = if issuers.is_empty() {
            vec![DEFAULT_ISSUER.to_string()]
        } else {
            issuers
        };
        let audiences = if audiences.is_empty() {
            vec![issuers[0].clone()]
        } else {
            audiences
        };
        Issuer {
            signer,
            verify,
            issuers,
            audiences,
            legacy,
            lookup: true,
            jwks_uri: None,
            max_expiration: None,
            extend_expiration: true,
            extended_cap: None,
        }
    }

    /// `--service-account-lookup` (default true): whether a legacy token's
    /// secret and account must still exist (bound tokens are always checked
    /// against their account and bound object, as upstream).
    pub fn with_lookup(mut self, lookup: bool) -> Self {
        self.lookup = lookup;
        self
    }

    /// `--service-account-jwks-uri` (default: the advertise address).
    pub fn with_jwks_uri(mut self, uri: Option<String>) -> Self {
        self.jwks_uri = uri;
        self
    }

    /// `--service-account-max-token-expiration` (seconds; `None`: no cap) and
    /// `--service-account-extend-token-expiration`.
    pub fn with_expiration(mut self, max: Option<i64>, extend: bool) -> Self {
        self.max_expiration = max.filter(|m| *m > 0);
        self.extend_expiration = extend;
        self
    }

    /// The issuer tokens are signed as (the first `--service-account-issuer`).
    pub fn issuer(&self) -> &str {
        &self.issuers[0]
    }

    /// `--service-account-jwks-uri`.
    /// Whether legacy secret-based tokens authenticate
    /// (`--service-account-legacy-tokens`).
    pub fn legacy_tokens(&self) -> bool {
        self.legacy
    }

    pub fn jwks_uri(&self) -> Option<&str> {
        self.jwks_uri.as_deref()
    }

    /// Every key tokens verify with (the signer's first); an external
    /// signer's as last fetched.
    pub fn verify_keys(&self) -> Vec<VerifyKey> {
        match &self.signer {
            Signer::Local(_) => self.verify.clone(),
            Signer::External(s) => s.all_keys(),
        }
    }

    /// The keys the OIDC key set publishes: [`Issuer::verify_keys`] but an
    /// external signer's keys excluded from discovery.
    pub fn discovery_keys(&self) -> Vec<VerifyKey> {
        match &self.signer {
            Signer::Local(_) => self.verify.clone(),
            Signer::External(s) => s.discovery_keys(),
        }
    }

    /// The claims of `token` when a key of ours (or of the external signer:
    /// the keys its header's `kid` names, fetched again when unknown) signed it.
    async fn verified(&self, token: &str) -> Result<Value, String> {
        match &self.signer {
            Signer::Local(_) => jwt::verify(token, &self.verify),
            Signer::External(s) => {
                let kid = jwt::peek_header(token)
                    .and_then(|h| h.get("kid").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_default();
                jwt::verify(token, &s.verify_keys(&kid).await)
            }
        }
    }

    async fn sign(&self, claims: &Value) -> Result<String, String> {
        match &self.signer {
            Signer::Local(key) => Ok(key.sign(claims)),
            Signer::External(s) => s.sign(claims).await,
        }
    }

    /// The requested expiration after the cap, with upstream's warning text
    /// when it was shortened.
    pub fn cap_expiration(&self, requested: i64) -> (i64, Option<String>) {
        match self.max_expiration {
            Some(max) if requested > max => (
                max,
                Some(format!(
                    "requested expiration of {requested} seconds shortened to {max} seconds"
                )),
            ),
            _ => (requested, None),
        }
    }

    /// `(expiration, warnafter)` of a token: pod-bound tokens asking for
    /// [`WARN_ONLY_EXPIRATION`] for API audiences only live a year (or the
    /// max expiration when larger) and warn after the requested time.
    pub fn extended(&self, requested: i64, pod_bound: bool, audiences: &[String]) -> (i64, i64) {
        let kube_only =
            !audiences.is_empty() && audiences.iter().all(|a| self.audiences.contains(a));
        if self.extend_expiration && pod_bound && requested == WARN_ONLY_EXPIRATION && kube_only {
            let max = self.max_expiration.unwrap_or(0).max(EXTENDED_EXPIRATION);
            let max = self.extended_cap.map_or(max, |cap| max.min(cap));
            (max, requested)
        } else {
            (requested, 0)
        }
    }

    /// The signing key PEM at `path`, generated (P-256, mode 0600) when absent.
    pub fn load_or_generate_key(path: &Path) -> Result<String, String> {
        if path.exists() {
            return std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()));
        }
        let pem = jwt::generate_ec_pem();
        kapi_http::tls::write_file_atomic(path, pem.as_bytes(), 0o600)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(pem)
    }

    /// The API audiences (`--api-audiences`, default the issuer).
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// A signed token for `b`; returns it with its expiry (Unix seconds).
    /// Fails only when an external signer does.
    pub async fn issue(&self, b: &Binding<'_>) -> Result<(String, i64), String> {
        let now = now();
        let exp = now + b.expiration_seconds;
        let mut k8s = json!({"namespace": b.namespace,
            "serviceaccount": {"name": b.account.0, "uid": b.account.1}});
        if let Some((kind, name, uid)) = b.object {
            k8s[kind.to_ascii_lowercase()] = json!({"name": name, "uid": uid});
        }
        if b.warn_after_seconds > 0 {
            k8s["warnafter"] = json!(now + b.warn_after_seconds);
        }
        let claims = json!({
            "aud": b.audiences, "exp": exp, "iat": now, "nbf": now,
            "iss": self.issuers[0], "jti": uuid(),
            "sub": format!("system:serviceaccount:{}:{}", b.namespace, b.account.0),
            "kubernetes.io": k8s,
        });
        Ok((self.sign(&claims).await?, exp))
    }

    /// A legacy token for the secret `secret` of the account `(name, uid)` in
    /// `namespace`, as kube-controller-manager's tokens controller signs them
    /// (upstream `LegacyClaims`): issuer `kubernetes/serviceaccount`, the
    /// account's username as subject, no audience and no expiry.
    pub async fn legacy_token(
        &self,
        namespace: &str,
        account: (&str, &str),
        secret: &str,
    ) -> Result<String, String> {
        let claims = json!({
            "iss": LEGACY_ISSUER,
            "sub": format!("system:serviceaccount:{namespace}:{}", account.0),
            "kubernetes.io/serviceaccount/namespace": namespace,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": account.0,
            "kubernetes.io/serviceaccount/service-account.uid": account.1,
        });
        self.sign(&claims).await
    }

    /// Sign arbitrary claims (tests mint expired or odd tokens with this).
    pub async fn sign_claims(&self, claims: &Value) -> Result<String, String> {
        self.sign(claims).await
    }

    /// The user of `token` when it is a valid service account token for one of
    /// `audiences`, with the audiences it matched.
    pub async fn authenticate(
        &self,
        apis: &Apis,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let claims = jwt::peek_claims(token).ok_or(super::UNKNOWN_TOKEN)?;
        let iss = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        if iss == LEGACY_ISSUER {
            if !self.legacy {
                return Err("legacy service account tokens are not accepted".into());
            }
            let claims = self.verified(token).await?;
            return self.legacy_user(apis, token, &claims).await;
        }
        if !self.issuers.iter().any(|i| i == iss) {
            return Err(super::UNKNOWN_TOKEN.into());
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

/// Unix seconds now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn uuid() -> String {
    let mut b = [0u8; 16];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b).expect("random");
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Unix seconds as RFC 3339 (`expirationTimestamp`).
pub fn rfc3339(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}
