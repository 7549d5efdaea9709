//! Request authentication: verified client certificate → static bearer token
//! (`--token-auth-file`) → anonymous, with upstream kube-apiserver semantics.
//!
//! Owns [`UserInfo`], [`TokenFile`], [`Authenticator`] and the axum middleware
//! [`authenticate_layer`]. Invariants (as upstream's union authenticator +
//! `AuthenticatedGroupAdder` + `FailOnError` anonymous fallback):
//! - a client certificate with a non-empty CN wins; its O values are groups;
//! - otherwise `Authorization: Bearer <token>` is looked up; an unknown token
//!   is rejected (401) even when anonymous access is enabled; a header that is
//!   not a bearer token, or an empty token, counts as no credentials;
//! - authenticated users get `system:authenticated` unless they are
//!   `system:anonymous` or already carry `system:authenticated` /
//!   `system:unauthenticated`;
//! - with no credentials: `system:anonymous` / `system:unauthenticated` when
//!   anonymous is enabled, otherwise 401.
//!
//! The TLS layer (`tls.rs`) supplies `Option<PeerIdentity>` per request; the
//! middleware stores [`UserInfo`] in the request extensions for authorization
//! and handlers, and strips the `Authorization` header once it is consumed.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::tls::PeerIdentity;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";

/// An authenticated (or anonymous) user, as in `k8s.io/apiserver/pkg/authentication/user`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user: `system:anonymous`, groups `[system:unauthenticated]`.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }
}

/// Outcome of [`Authenticator::authenticate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthResult {
    Authenticated(UserInfo),
    Anonymous(UserInfo),
    /// 401, with a reason for the log (never sent to the client).
    Rejected(String),
}

/// Error reading a token file.
#[derive(Debug, thiserror::Error)]
#[error("token file '{path}': {message}")]
pub struct TokenFileError {
    pub path: String,
    pub message: String,
}

/// Static tokens, upstream's `--token-auth-file` format: CSV rows
/// `token,user,uid[,"group1,group2"]`. Blank lines are skipped; rows with
/// fewer than 3 columns are an error; rows with an empty token are skipped;
/// for duplicate tokens the last row wins; empty group names are dropped.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Read and parse the file at `path`.
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokenFileError {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text).map_err(|mut e| {
            e.path = path.display().to_string();
            e
        })
    }

    /// Parse token file contents (the error's `path` is empty).
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        let err = |message: String| TokenFileError {
            path: String::new(),
            message,
        };
        let mut tokens = HashMap::new();
        for (line, record) in csv_records(text).map_err(err)? {
            if record.len() < 3 {
                return Err(err(format!(
                    "line {line}: must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                )));
            }
            if record[0].is_empty() {
                tracing::warn!(line, "empty token in token file; row skipped");
                continue;
            }
            let groups = record.get(3).map_or_else(Vec::new, |g| {
                g.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            });
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: BTreeMap::new(),
            };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(line, "duplicate token in token file; the later row wins");
            }
        }
        Ok(TokenFile { tokens })
    }

    /// The user for `token`, if known.
    pub fn lookup(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Parse CSV as Go's `encoding/csv` does with a variable field count:
/// `"`-quoted fields (with `""` escapes and embedded newlines/commas), blank
/// lines skipped, CRLF accepted. Returns `(line number, fields)` per record.
fn csv_records(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start_line = line;
        if let Some(fields) = csv_record(&mut chars, &mut line)? {
            records.push((start_line, fields));
        }
    }
    Ok(records)
}

/// One CSV record (up to and including its newline); `None` for a blank line.
fn csv_record(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: &mut usize,
) -> Result<Option<Vec<String>>, String> {
    let start_line = *line;
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false; // inside a quoted field
    let mut was_quoted = false; // the current field was quoted and closed
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => (quoted, was_quoted) = (false, true),
            (true, c) => {
                *line += usize::from(c == '\n');
                field.push(c);
            }
            (false, '"') if field.is_empty() && !was_quoted => quoted = true,
            (false, '"') => return Err(format!("line {line}: bare \" in non-quoted field")),
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, '\n') => {
                *line += 1;
                break;
            }
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, _) if was_quoted => {
                return Err(format!(
                    "line {line}: extraneous character after closing quote"
                ))
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("line {start_line}: unterminated quoted field"));
    }
    if fields.is_empty() && !was_quoted && field.trim().is_empty() {
        return Ok(None);
    }
    fields.push(field);
    Ok(Some(fields))
}

/// The authenticator chain: client certificate, token file, anonymous.
#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    tokens: Option<TokenFile>,
    anonymous: bool,
}

impl Authenticator {
    pub fn new(tokens: Option<TokenFile>, anonymous: bool) -> Self {
        Authenticator { tokens, anonymous }
    }

    /// Authenticate from the verified peer certificate and the raw
    /// `Authorization` header value.
    pub fn authenticate(
        &self,
        peer: Option<&PeerIdentity>,
        authorization_header: Option<&str>,
    ) -> AuthResult {
        if let Some(peer) = peer.filter(|p| !p.user.is_empty()) {
            return AuthResult::Authenticated(with_authenticated_group(UserInfo {
                name: peer.user.clone(),
                groups: peer.groups.clone(),
                ..Default::default()
            }));
        }
        if let Some(token) = authorization_header.and_then(bearer_token) {
            return match self.tokens.as_ref().and_then(|t| t.lookup(token)) {
                Some(user) => AuthResult::Authenticated(with_authenticated_group(user.clone())),
                None => AuthResult::Rejected("invalid bearer token".into()),
            };
        }
        if self.anonymous {
            AuthResult::Anonymous(UserInfo::anonymous())
        } else {
            AuthResult::Rejected("no credentials provided".into())
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme
/// case-insensitive), or `None` when the header is not a non-empty bearer token.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
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
pub async fn authenticate_layer(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let peer = req
        .extensions()
        .get::<Option<PeerIdentity>>()
        .cloned()
        .flatten();
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth.authenticate(peer.as_ref(), header) {
        AuthResult::Authenticated(user) => {
            req.headers_mut().remove(header::AUTHORIZATION);
            req.extensions_mut().insert(user);
            req.extensions_mut().insert(auth.clone());
            next.run(req).await
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
    (StatusCode::UNAUTHORIZED, content_type, body.to_string()).into_response()
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

    #[test]
    fn token_file_parses_upstream_format() {
        let t = tokens();
        assert_eq!(t.len(), 3);
        let alice = t.lookup("tok1").unwrap();
        assert_eq!(
            (alice.name.as_str(), alice.uid.as_str()),
            ("alice", "uid-1")
        );
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        assert!(t.lookup("tok2").unwrap().groups.is_empty());
        assert_eq!(t.lookup("tok3").unwrap().groups, vec!["system:masters"]);
        assert!(t.lookup("").is_none());
    }

    #[test]
    fn token_file_errors_and_edge_cases() {
        let short = TokenFile::parse("tok,alice\n").unwrap_err();
        assert!(short.message.contains("at least 3 columns"), "{short}");
        assert!(TokenFile::parse("tok,\"alice,uid\n").is_err());
        assert!(TokenFile::parse("to\"k,alice,uid\n").is_err());
        assert!(TokenFile::parse("tok,\"al\"x,uid\n").is_err());
        let dup = TokenFile::parse("t,a,1\nt,b,2").unwrap();
        assert_eq!(dup.lookup("t").unwrap().name, "b");
        let escaped = TokenFile::parse("t,\"a\"\"b\",1,\"g1,,g2\"\n").unwrap();
        let user = escaped.lookup("t").unwrap();
        assert_eq!(user.name, "a\"b");
        assert_eq!(user.groups, vec!["g1", "g2"]);
        assert!(TokenFile::parse("").unwrap().is_empty());
    }

    #[test]
    fn client_cert_wins_and_gets_authenticated_group() {
        let auth = Authenticator::new(Some(tokens()), false);
        let peer = PeerIdentity {
            user: "kubernetes-admin".into(),
            groups: vec!["system:masters".into()],
        };
        let res = auth.authenticate(Some(&peer), Some("Bearer bogus"));
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.name, "kubernetes-admin");
        assert_eq!(user.groups, vec!["system:masters", ALL_AUTHENTICATED]);
    }

    #[test]
    fn empty_cn_falls_through_to_token() {
        let auth = Authenticator::new(Some(tokens()), false);
        let peer = PeerIdentity {
            user: String::new(),
            groups: vec!["x".into()],
        };
        let res = auth.authenticate(Some(&peer), Some("bearer tok2"));
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.name, "bob");
        assert_eq!(user.uid, "uid-2");
        assert_eq!(user.groups, vec![ALL_AUTHENTICATED]);
    }

    #[test]
    fn bearer_tokens() {
        let auth = Authenticator::new(Some(tokens()), true);
        let res = auth.authenticate(None, Some("Bearer tok1"));
        let AuthResult::Authenticated(user) = res else {
            panic!("{res:?}")
        };
        assert_eq!(user.groups, vec!["dev", "ops", ALL_AUTHENTICATED]);
        // Invalid token: rejected even though anonymous is enabled.
        assert!(matches!(
            auth.authenticate(None, Some("Bearer nope")),
            AuthResult::Rejected(_)
        ));
        // Not a bearer token / empty token: treated as no credentials.
        for header in ["Basic abc", "Bearer", "Bearer ", "tok1"] {
            let res = auth.authenticate(None, Some(header));
            assert_eq!(
                res,
                AuthResult::Anonymous(UserInfo::anonymous()),
                "{header}"
            );
        }
        // Token authenticator disabled: any bearer token is invalid.
        let none = Authenticator::new(None, true);
        assert!(matches!(
            none.authenticate(None, Some("Bearer tok1")),
            AuthResult::Rejected(_)
        ));
    }

    #[test]
    fn anonymous_and_group_adder_rules() {
        let anon = Authenticator::new(None, true).authenticate(None, None);
        let AuthResult::Anonymous(user) = anon else {
            panic!("{anon:?}")
        };
        assert_eq!(user.name, ANONYMOUS_USER);
        assert_eq!(user.groups, vec![ALL_UNAUTHENTICATED]);
        let closed = Authenticator::new(None, false).authenticate(None, None);
        assert!(matches!(closed, AuthResult::Rejected(_)));

        let t = TokenFile::parse("a,system:anonymous,1\nb,u,2,system:unauthenticated\n").unwrap();
        let auth = Authenticator::new(Some(t), false);
        for (header, groups) in [
            ("Bearer a", vec![]),
            ("Bearer b", vec![ALL_UNAUTHENTICATED]),
        ] {
            let AuthResult::Authenticated(user) = auth.authenticate(None, Some(header)) else {
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
                get(|Extension(u): Extension<UserInfo>| async move { u.name }),
            )
            .layer(axum::middleware::from_fn_with_state(
                auth,
                authenticate_layer,
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
