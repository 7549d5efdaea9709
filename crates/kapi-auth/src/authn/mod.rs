//! Request authentication, with upstream kube-apiserver's semantics: the front
//! proxy's headers (`requestheader.rs`), then the verified client certificate,
//! then a bearer token, then anonymous.
//!
//! Bearer tokens go to the token authenticators in upstream's order
//! (`token.rs`), the first that accepts the token deciding: static tokens (`--token-auth-file`,
//! `tokenfile.rs`), service account JWTs (`serviceaccount.rs`, signed and
//! verified by `jwt.rs`), bootstrap tokens (`bootstrap.rs`), the JWT
//! authenticators of `--oidc-*` or `--authentication-config` (`oidc/`,
//! reloaded by `structured.rs`), and the token webhook (`webhook.rs`).
//!
//! Owns [`UserInfo`], [`Authenticator`] and the axum middleware
//! [`authenticate_layer`]. Invariants (as upstream's union authenticator +
//! `AuthenticatedGroupAdder` + `FailOnError` anonymous fallback):
//! - a client certificate with a non-empty CN wins; its O values are groups;
//! - otherwise `Authorization: Bearer <token>` is looked up; a token no
//!   authenticator accepts is rejected (401) even when anonymous access is
//!   enabled; a header that is not a bearer token, or an empty token, counts as
//!   no credentials;
//! - authenticators that do not know about audiences (static, bootstrap and
//!   JWT tokens) only vouch for the API audiences (`WrapAudienceAgnosticToken`);
//! - authenticated users get `system:authenticated` unless they are
//!   `system:anonymous` or already carry `system:authenticated` /
//!   `system:unauthenticated`;
//! - with no credentials: `system:anonymous` / `system:unauthenticated` when
//!   anonymous is enabled (for the configured paths only, when the
//!   authentication configuration's `anonymous.conditions` name some),
//!   otherwise 401.
//!
//! The TLS layer (`tls.rs`) supplies `Option<PeerIdentity>` per request; the
//! middleware stores [`UserInfo`] in the request extensions for authorization
//! and handlers, and strips the `Authorization` header once it is consumed.

pub mod bootstrap;
pub mod discovery;
pub mod external_signer;
pub mod jose;
pub mod jwt;
pub mod oidc;
pub mod requestheader;
pub mod serviceaccount;
pub mod structured;
mod token;
mod tokenfile;
pub mod webhook;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use kapi_http::next::Next;

use kapi_http::tls::PeerIdentity;
use kapi_registry::apis::Apis;

use token::bearer_token;

pub use tokenfile::{TokenFile, TokenFileError};

pub use kapi_http::user::{
    UserDetails, UserInfo, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS_USER,
};

/// The reason for a bearer token no authenticator recognises.
pub const UNKNOWN_TOKEN: &str = "invalid bearer token";

/// Outcome of [`Authenticator::authenticate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthResult {
    Authenticated(UserInfo),
    Anonymous(UserInfo),
    /// 401, with a reason for the log (never sent to the client).
    Rejected(String),
}

/// Who may come in without credentials.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Anonymous {
    pub enabled: bool,
    /// With paths, anonymous requests are let in for those paths only (the
    /// authentication configuration's `anonymous.conditions`).
    pub paths: Vec<String>,
}

impl Anonymous {
    fn allows(&self, path: &str) -> bool {
        self.enabled && (self.paths.is_empty() || self.paths.iter().any(|p| p == path))
    }
}

/// The authenticator chain: front proxy, client certificate, the token
/// authenticators, anonymous.
#[derive(Clone, Default)]
pub struct Authenticator {
    /// The static tokens, their users already in `system:authenticated` (as
    /// the group adder would put them on every request).
    tokens: Option<TokenFile>,
    anonymous: Anonymous,
    /// Service account tokens: the issuer that signs and verifies them and the
    /// resource table their accounts, secrets and pods are looked up in.
    service_accounts: Option<(Arc<serviceaccount::Issuer>, Arc<Apis>)>,
    /// Bootstrap tokens (`--enable-bootstrap-token-auth`): the resource
    /// table their Secrets are looked up in.
    bootstrap: Option<Arc<Apis>>,
    /// The JWT authenticators (`--oidc-*`, `--authentication-config`).
    jwt: Option<Arc<structured::Jwt>>,
    /// `--authentication-config`, kept so that its reloading goes on.
    config: Option<Arc<structured::ConfigFile>>,
    /// The token webhook (`--authentication-token-webhook-config-file`).
    webhook: Option<Arc<webhook::TokenWebhook>>,
    /// Front-proxy authentication (`--requestheader-*`), tried first.
    request_header: Option<Arc<requestheader::RequestHeader>>,
    /// The CAs client certificates must chain to for the certificate's own
    /// identity (the cluster CA and `--client-ca-file`); unset: certificates
    /// identify nobody (the TLS layer accepts any chain).
    client_cas: Option<requestheader::CertVerifier>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens.as_ref().map(TokenFile::len))
            .field("anonymous", &self.anonymous)
            .field("service_accounts", &self.service_accounts.is_some())
            .field("bootstrap", &self.bootstrap.is_some())
            .field("jwt", &self.jwt.is_some())
            .field("webhook", &self.webhook.is_some())
            .finish()
    }
}

impl Authenticator {
    pub fn new(tokens: Option<TokenFile>, anonymous: bool) -> Self {
        Authenticator {
            tokens: tokens.map(|t| t.map_users(with_authenticated_group)),
            anonymous: Anonymous {
                enabled: anonymous,
                paths: Vec::new(),
            },
            ..Default::default()
        }
    }

    /// Who may come in without credentials (replacing `new`'s flag).
    pub fn with_anonymous(mut self, anonymous: Anonymous) -> Self {
        self.anonymous = anonymous;
        self
    }

    /// Client certificates identify their subject when they chain to `client_cas`.
    pub fn with_client_cas(mut self, client_cas: requestheader::CertVerifier) -> Self {
        self.client_cas = Some(client_cas);
        self
    }

    /// Also accept the tokens of the JWT authenticators `jwt` holds.
    pub fn with_jwt(mut self, jwt: Arc<structured::Jwt>) -> Self {
        self.jwt = Some(jwt);
        self
    }

    /// `--authentication-config`: its JWT authenticators (reloaded with the
    /// file, which is watched from now on) and its anonymous section, when it
    /// has one.
    pub fn with_authentication_config(mut self, file: Arc<structured::ConfigFile>) -> Self {
        if let Some(a) = file.anonymous() {
            self.anonymous = Anonymous {
                enabled: a.enabled,
                paths: a.conditions.iter().map(|c| c.path.clone()).collect(),
            };
        }
        self.jwt = Some(file.jwt().clone());
        file.watch();
        self.config = Some(file);
        self
    }

    /// Ask `webhook` about tokens nothing else accepts.
    pub fn with_token_webhook(mut self, webhook: Arc<webhook::TokenWebhook>) -> Self {
        self.webhook = Some(webhook);
        self
    }

    /// Accept bootstrap tokens, their Secrets looked up in `apis`.
    pub fn with_bootstrap_tokens(mut self, apis: Arc<Apis>) -> Self {
        self.bootstrap = Some(apis);
        self
    }

    /// Accept users named in headers by a front proxy (`requestheader.rs`);
    /// client certificates then identify their subject only when they chain
    /// to `client_cas` (the TLS layer also trusts the front-proxy CA).
    pub fn with_request_header(
        mut self,
        request_header: requestheader::RequestHeader,
        client_cas: requestheader::CertVerifier,
    ) -> Self {
        self.request_header = Some(Arc::new(request_header));
        self.client_cas = Some(client_cas);
        self
    }

    /// The front-proxy settings, if any.
    pub fn request_header(&self) -> Option<&requestheader::RequestHeaderConfig> {
        self.request_header.as_deref().map(|r| &r.config)
    }

    /// Front-proxy authentication of a request: the user, with the headers removed.
    fn authenticate_front_proxy(
        &self,
        peer: Option<&PeerIdentity>,
        req: &mut Request,
    ) -> Option<UserInfo> {
        let rh = self.request_header.as_ref()?;
        match rh.authenticate(peer?, req.headers())? {
            Ok(user) => {
                rh.clear_headers(req.headers_mut());
                Some(with_authenticated_group(user))
            }
            Err(reason) => {
                tracing::debug!(%reason, "request header authentication");
                None
            }
        }
    }

    /// Also accept service account tokens `issuer` verifies, whose accounts
    /// (and bound secrets and pods) are looked up in `apis`.
    pub fn with_service_accounts(
        mut self,
        issuer: Arc<serviceaccount::Issuer>,
        apis: Arc<Apis>,
    ) -> Self {
        self.service_accounts = Some((issuer, apis));
        self
    }

    /// Authenticate a request for `path` from the verified peer certificate
    /// and the raw `Authorization` header value.
    pub async fn authenticate(
        &self,
        peer: Option<&PeerIdentity>,
        authorization_header: Option<&str>,
        path: &str,
    ) -> AuthResult {
        if let Some(peer) = peer.filter(|p| !p.user.is_empty()) {
            return AuthResult::Authenticated(with_authenticated_group(UserInfo::from(
                UserDetails {
                    name: peer.user.clone(),
                    groups: peer.groups.clone(),
                    ..Default::default()
                },
            )));
        }
        if let Some(token) = authorization_header.and_then(bearer_token) {
            return match self.authenticate_token(token, &[]).await {
                Ok((user, _)) => AuthResult::Authenticated(user),
                Err(reason) => AuthResult::Rejected(reason),
            };
        }
        if self.anonymous.allows(path) {
            AuthResult::Anonymous(UserInfo::anonymous())
        } else {
            AuthResult::Rejected("no credentials provided".into())
        }
    }
}

/// Upstream's `AuthenticatedGroupAdder`.
fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    let has_all_group = user
        .groups
        .iter()
        .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED);
    if user.name != ANONYMOUS_USER && !has_all_group {
        user.groups.push(ALL_AUTHENTICATED.into());
    }
    user
}

/// axum middleware (`axum::middleware::from_fn_with_state`): authenticate the
/// request, store the [`UserInfo`] in its extensions and drop the consumed
/// `Authorization` header, or answer 401 with a `metav1.Status` body.
pub async fn authenticate_layer<N: Next>(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: N,
) -> Response {
    let peer = req
        .extensions()
        .get::<Option<PeerIdentity>>()
        .cloned()
        .flatten();
    if let Some(user) = auth.authenticate_front_proxy(peer.as_ref(), &mut req) {
        req.headers_mut().remove(header::AUTHORIZATION);
        req.extensions_mut().insert(user);
        req.extensions_mut().insert(auth.clone());
        return next.run(req).await;
    }
    // A certificate identifies its subject only when its chain verifies against
    // the client CAs (checked once per connection). One that does not (expired,
    // another CA) is an authentication error, as upstream's x509 authenticator:
    // 401 unless a bearer token authenticates the request — never anonymous.
    let mut bad_certificate = false;
    let peer = match peer {
        Some(p) => {
            let ok = *p.verified.get_or_init(|| {
                auth.client_cas
                    .as_ref()
                    .is_some_and(|cas| cas.verifies(&p.chain))
            });
            bad_certificate = !ok;
            ok.then_some(p)
        }
        None => None,
    };
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let path = req.uri().path().to_owned();
    match auth.authenticate(peer.as_ref(), header, &path).await {
        AuthResult::Authenticated(user) => {
            req.headers_mut().remove(header::AUTHORIZATION);
            req.extensions_mut().insert(user);
            req.extensions_mut().insert(auth.clone());
            next.run(req).await
        }
        AuthResult::Anonymous(_) if bad_certificate => {
            tracing::debug!(path = %req.uri().path(), "unauthorized: client certificate does not verify");
            unauthorized()
        }
        AuthResult::Anonymous(user) => {
            req.extensions_mut().insert(user);
            req.extensions_mut().insert(auth.clone());
            next.run(req).await
        }
        AuthResult::Rejected(reason) => {
            tracing::debug!(%reason, path = %req.uri().path(), "unauthorized");
            unauthorized()
        }
    }
}

/// The 401 response upstream sends: a `metav1.Status`.
pub fn unauthorized() -> Response {
    let body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401
    });
    let content_type = [(header::CONTENT_TYPE, "application/json")];
    (StatusCode::UNAUTHORIZED, content_type, format!("{body}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> TokenFile {
        TokenFile::parse(
            "\n\
             tok1,alice,uid-1,\"dev,ops\"\n\
             \n\
             tok2,bob,uid-2\r\n\
             ,nobody,uid-0\n\
             tok3,carol,uid-3,\"system:masters\",extra-column\n",
        )
        .unwrap()
    }

    #[tokio::test]
    async fn client_cert_wins_and_gets_authenticated_group() {
        let auth = Authenticator::new(Some(tokens()), false);
        let peer = PeerIdentity {
            user: "kubernetes-admin".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        };
        let res = auth
            .authenticate(Some(&peer), Some("Bearer bogus"), "/")
            .await;
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.name, "kubernetes-admin");
        assert_eq!(user.groups, vec!["system:masters", ALL_AUTHENTICATED]);
    }

    #[tokio::test]
    async fn empty_cn_falls_through_to_token() {
        let auth = Authenticator::new(Some(tokens()), false);
        let peer = PeerIdentity {
            user: String::new(),
            groups: vec!["x".into()],
            ..Default::default()
        };
        let res = auth
            .authenticate(Some(&peer), Some("bearer tok2"), "/")
            .await;
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.name, "bob");
        assert_eq!(user.uid, "uid-2");
        assert_eq!(user.groups, vec![ALL_AUTHENTICATED]);
    }

    #[tokio::test]
    async fn bearer_tokens() {
        let auth = Authenticator::new(Some(tokens()), true);
        let res = auth.authenticate(None, Some("Bearer tok1"), "/").await;
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.groups, vec!["dev", "ops", ALL_AUTHENTICATED]);
        // Invalid token: rejected even though anonymous is enabled.
        assert!(matches!(
            auth.authenticate(None, Some("Bearer nope"), "/").await,
            AuthResult::Rejected(_)
        ));
        // Not a bearer token / empty token: treated as no credentials.
        for header in ["Basic abc", "Bearer", "Bearer ", "tok1"] {
            let res = auth.authenticate(None, Some(header), "/").await;
            assert_eq!(
                res,
                AuthResult::Anonymous(UserInfo::anonymous()),
                "{header}"
            );
        }
        // Token authenticator disabled: any bearer token is invalid.
        let none = Authenticator::new(None, true);
        assert!(matches!(
            none.authenticate(None, Some("Bearer tok1"), "/").await,
            AuthResult::Rejected(_)
        ));
    }

    #[tokio::test]
    async fn anonymous_and_group_adder_rules() {
        let anon = Authenticator::new(None, true)
            .authenticate(None, None, "/")
            .await;
        let AuthResult::Anonymous(user) = anon else {
            panic!("{anon:?}")
        };
        assert_eq!(user.name, ANONYMOUS_USER);
        assert_eq!(user.groups, vec![ALL_UNAUTHENTICATED]);
        let closed = Authenticator::new(None, false)
            .authenticate(None, None, "/")
            .await;
        assert!(matches!(closed, AuthResult::Rejected(_)));

        let t = TokenFile::parse("a,system:anonymous,1\nb,u,2,system:unauthenticated\n").unwrap();
        let auth = Authenticator::new(Some(t), false);
        for (header, groups) in [
            ("Bearer a", vec![]),
            ("Bearer b", vec![ALL_UNAUTHENTICATED]),
        ] {
            let AuthResult::Authenticated(user) = auth.authenticate(None, Some(header), "/").await
            else {
                panic!("{header}")
            };
            assert_eq!(user.groups, groups, "{header}");
        }
    }

    #[tokio::test]
    async fn middleware_sets_user_or_answers_401() {
        use axum::{body::Body, routing::get, Extension, Router};
        let auth = Arc::new(Authenticator::new(Some(tokens()), false));
        let app = Router::new()
            .route(
                "/",
                get(|Extension(u): Extension<UserInfo>| async move { u.name.clone() }),
            )
            .layer(axum::middleware::from_fn_with_state(
                auth,
                authenticate_layer::<axum::middleware::Next>,
            ));
        let call = |header: Option<&str>| {
            let mut req = axum::http::Request::builder().uri("/");
            if let Some(h) = header {
                req = req.header("authorization", h);
            }
            let app = app.clone();
            let req = req.body(Body::empty()).unwrap();
            async move {
                let resp = tower::ServiceExt::oneshot(app, req).await.unwrap();
                let status = resp.status();
                let body = axum::body::to_bytes(resp.into_body(), 1 << 16)
                    .await
                    .unwrap();
                (status, String::from_utf8(body.to_vec()).unwrap())
            }
        };
        assert_eq!(
            call(Some("Bearer tok1")).await,
            (StatusCode::OK, "alice".into())
        );
        let (status, body) = call(None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let status_obj: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            status_obj,
            serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},
                "status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401})
        );
        assert_eq!(call(Some("Bearer bad")).await.0, StatusCode::UNAUTHORIZED);
    }
}
