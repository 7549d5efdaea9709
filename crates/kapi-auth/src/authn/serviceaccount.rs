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

use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use std::sync::Arc;

use super::external_signer::ExternalSigner;
use super::jwt::{self, SigningKey, VerifyKey};
use kapi_registry::apis::Apis;

mod verify;

pub(crate) use verify::lookup;

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
