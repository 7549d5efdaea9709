//! JWT authentication end to end, against the test OIDC issuer
//! (`oidc_issuer.rs`: discovery and keys over HTTPS with its own CA):
//! `--authentication-config` with claim mappings by claim and by CEL
//! expression, claim and user validation rules, `discoveryURL`, the key set
//! fetched again when a key rotates in, the file reloaded when it changes, the
//! anonymous section; the `--oidc-*` flags' authenticator (RS256, the issuer
//! prefix); malformed and unverifiable tokens and an unreachable issuer
//! answered 401.
//!
//! The issuer is initialized in the background, so the first successful
//! request is awaited ([`eventually`]) rather than assumed.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kapi_auth::authn::oidc::config::{JwtAuthenticator, OidcFlags};
use kapi_auth::authn::structured::{ConfigFile, Jwt};
use serde_json::{json, Value};

use super::harness::{self, TestServer};
use super::oidc_issuer::OidcIssuer;

const SA_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// `POST selfsubjectreviews` as `token`: (status code, `status.userInfo`).
pub async fn whoami(s: &TestServer, token: &str) -> (u16, Value) {
    let client = s.client_with_token(token).await;
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("transport");
    let code = resp.status().as_u16();
    use http_body_util::BodyExt as _;
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, v.pointer("/status/userInfo").cloned().unwrap_or(v))
}

/// Retry `f` until it is `Some` (the issuer initializes, a file reloads), for
/// at most a minute.
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The user `token` authenticates as, once the issuer is ready.
async fn user_of(s: &TestServer, token: &str) -> Value {
    eventually("token accepted", || async {
        let (code, user) = whoami(s, token).await;
        (code == 201).then_some(user)
    })
    .await
}

fn config(issuer: &OidcIssuer, rest: &str) -> String {
    let ca: String = issuer
        .server
        .ca_pem
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect();
    format!(
        "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: {}\n    audiences: [kapi]\n    certificateAuthority: |\n{ca}{rest}",
        issuer.url
    )
}

fn write(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("authn.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

async fn server_with_file(path: &Path) -> TestServer {
    let file = ConfigFile::load(path, &[SA_ISSUER.to_string()]).expect("valid configuration");
    harness::start_configured(|o| {
        o.authenticator = o.authenticator.clone().with_authentication_config(file);
    })
    .await
}

const MAPPINGS: &str = "  claimMappings:
    username: {claim: email, prefix: \"oidc:\"}
    groups: {claim: groups, prefix: \"g:\"}
    uid: {expression: \"'uid-' + claims.sub\"}
    extra:
    - {key: example.com/tenant, valueExpression: claims.tenant}
  claimValidationRules:
  - {claim: hd, requiredValue: example.com}
  - {expression: \"claims.exp - claims.iat <= 3600\", message: token lives too long}
  userValidationRules:
  - {expression: \"!user.username.startsWith('oidc:system')\", message: reserved name}
";

#[tokio::test]
async fn structured_claim_mappings_and_validation() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let s = server_with_file(&write(dir.path(), &config(&issuer, MAPPINGS))).await;
    let good = json!({"email": "jane@example.com", "email_verified": true, "hd": "example.com",
        "groups": ["dev", "ops"], "tenant": "t1"});
    let user = user_of(&s, &issuer.token("kapi", good.clone())).await;
    assert_eq!(user["username"], "oidc:jane@example.com");
    assert_eq!(user["uid"], "uid-subject-1");
    assert_eq!(
        user["groups"],
        json!(["g:dev", "g:ops", "system:authenticated"])
    );
    assert_eq!(user["extra"], json!({"example.com/tenant": ["t1"]}));
    // A single string is one group.
    let mut one = good.clone();
    one["groups"] = json!("solo");
    let user = user_of(&s, &issuer.token("kapi", one)).await;
    assert_eq!(user["groups"], json!(["g:solo", "system:authenticated"]));
    // Each rule refuses its token: 401, as any bad token.
    let refused = [
        json!({"hd": "other.com"}),
        json!({"hd": null}),
        json!({"email_verified": false}),
        json!({"email": "system@x"}),
        json!({"iat": 0}),
        json!({"email": 42}),
    ];
    for change in refused {
        let mut claims = good.clone();
        for (k, v) in change.as_object().unwrap() {
            if v.is_null() {
                claims.as_object_mut().unwrap().remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        if claims["email"] == "system@x" {
            claims["email"] = json!("system:x@example.com");
        }
        let (code, body) = whoami(&s, &issuer.token("kapi", claims.clone())).await;
        assert_eq!(code, 401, "{claims}: {body}");
        assert_eq!(body["reason"], "Unauthorized");
    }
}

#[tokio::test]
async fn expression_mappings_and_discovery_url() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rest = format!(
        "    discoveryURL: {}\n  claimMappings:\n    username: {{expression: \"claims.preferred_username + '@corp'\"}}\n    groups: {{expression: \"claims.roles.filter(r, r.startsWith('k8s-')).map(r, r.substring(4))\"}}\n",
        issuer.server.url("/custom/discovery")
    );
    let s = server_with_file(&write(dir.path(), &config(&issuer, &rest))).await;
    let t = issuer.token(
        "kapi",
        json!({"preferred_username": "bob", "roles": ["k8s-admins", "other"]}),
    );
    let user = user_of(&s, &t).await;
    assert_eq!(user["username"], "bob@corp");
    assert_eq!(user["groups"], json!(["admins", "system:authenticated"]));
    assert!(!issuer.server.calls_to("/custom/discovery").is_empty());
    assert!(issuer
        .server
        .calls_to("/.well-known/openid-configuration")
        .is_empty());
}

#[tokio::test]
async fn bad_tokens_are_unauthorized() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rest = "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n";
    let s = server_with_file(&write(dir.path(), &config(&issuer, rest))).await;
    user_of(&s, &issuer.token("kapi", json!({}))).await;
    let other = OidcIssuer::start().await;
    let kid = issuer.newest_ec();
    let expired = issuer.claims("kapi", json!({"exp": 1000}));
    let mut foreign_key = issuer.claims("kapi", json!({}));
    foreign_key["iss"] = json!(issuer.url);
    let bad = [
        "not-a-jwt".to_string(),
        "a.b.c".to_string(),
        "eyJhbGciOiJub25lIn0.e30.".to_string(),
        issuer.token("someone-else", json!({})),
        issuer.sign_with(&kid, &expired),
        other.sign_with(&other.newest_ec(), &foreign_key),
        issuer.token("kapi", json!({"sub": 7})),
        format!("{}x", issuer.token("kapi", json!({}))),
    ];
    for token in bad {
        let (code, body) = whoami(&s, &token).await;
        assert_eq!(code, 401, "{token}: {body}");
    }
    // Static tokens still work next to the JWT authenticator.
    assert_eq!(whoami(&s, "alice-token").await.0, 201);
}

#[tokio::test]
async fn keys_rotate_without_restart() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rest = "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n";
    let s = server_with_file(&write(dir.path(), &config(&issuer, rest))).await;
    let first = issuer.newest_ec();
    let old_token = issuer.token("kapi", json!({}));
    user_of(&s, &old_token).await;
    let fetches = issuer.key_fetches();
    // A new key: its tokens make kapi fetch the key set again.
    let second = issuer.add_key();
    assert_ne!(first, second);
    let user = user_of(&s, &issuer.token("kapi", json!({"sub": "rotated"}))).await;
    assert_eq!(user["username"], "rotated");
    assert!(issuer.key_fetches() > fetches);
    // Tokens of a key the issuer no longer serves stop working once the
    // key set is fetched again (here: by a token of yet another new key).
    issuer.remove_key(&first);
    issuer.add_key();
    user_of(&s, &issuer.token("kapi", json!({"sub": "third"}))).await;
    let fresh_old = issuer.sign_with(&second, &issuer.claims("kapi", json!({})));
    assert_eq!(whoami(&s, &fresh_old).await.0, 201);
    assert_eq!(whoami(&s, &old_token).await.0, 401);
}

#[tokio::test]
async fn configuration_file_reloads() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let rest = "  claimMappings:\n    username: {claim: sub, prefix: \"v1:\"}\n";
    let path = write(dir.path(), &config(&issuer, rest));
    let s = server_with_file(&path).await;
    let token = issuer.token("kapi", json!({}));
    assert_eq!(user_of(&s, &token).await["username"], "v1:subject-1");
    let for_new = issuer.token("kapi-2", json!({}));
    assert_eq!(whoami(&s, &for_new).await.0, 401);
    // A changed audience and prefix take effect without a restart.
    let changed = config(
        &issuer,
        "  claimMappings:\n    username: {claim: sub, prefix: \"v2:\"}\n",
    )
    .replace("audiences: [kapi]", "audiences: [kapi-2]");
    std::fs::write(&path, changed).unwrap();
    let user = user_of(&s, &for_new).await;
    assert_eq!(user["username"], "v2:subject-1");
    assert_eq!(whoami(&s, &token).await.0, 401);
    // An invalid file is refused; the running configuration stays.
    std::fs::write(&path, config(&issuer, "  claimMappings: {}\n")).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(whoami(&s, &for_new).await.0, 201);
}

#[tokio::test]
async fn unreachable_issuer_is_unauthorized() {
    let issuer = OidcIssuer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let text = config(
        &issuer,
        "  claimMappings:\n    username: {claim: sub, prefix: \"\"}\n",
    )
    .replace(&issuer.url, "https://127.0.0.1:1");
    let s = server_with_file(&write(dir.path(), &text)).await;
    let mut claims = issuer.claims("kapi", json!({}));
    claims["iss"] = json!("https://127.0.0.1:1");
    let token = issuer.sign_with(&issuer.newest_ec(), &claims);
    let (code, body) = whoami(&s, &token).await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(whoami(&s, "bob-token").await.0, 201);
}

#[tokio::test]
async fn anonymous_section_limits_paths() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n  conditions: [{path: /livez}, {path: /readyz}]\n";
    let s = server_with_file(&write(dir.path(), text)).await;
    let anon = s.anonymous_client().await;
    let get = |p: &'static str| {
        let anon = anon.clone();
        async move {
            let req = http::Request::get(p).body(Vec::new()).unwrap();
            let resp = anon.send(req.map(kube::client::Body::from)).await.unwrap();
            resp.status().as_u16()
        }
    };
    assert_eq!(get("/livez").await, 200);
    assert_eq!(get("/readyz").await, 200);
    assert_eq!(get("/version").await, 401);
    assert_eq!(get("/api").await, 401);
    let off = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous: {enabled: false}\n";
    let s = server_with_file(&write(dir.path(), off)).await;
    let anon = s.anonymous_client().await;
    let req = http::Request::get("/livez").body(Vec::new()).unwrap();
    let resp = anon.send(req.map(kube::client::Body::from)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn oidc_flags_authenticator() {
    let issuer = OidcIssuer::start().await;
    let flags = OidcFlags {
        issuer_url: issuer.url.clone(),
        client_id: "kapi-cli".into(),
        ca: issuer.server.ca_pem.clone(),
        username_claim: "sub".into(),
        groups_claim: "groups".into(),
        groups_prefix: "oidc:".into(),
        required_claims: [("tenant".to_string(), "acme".to_string())].into(),
        ..Default::default()
    };
    let jwt = Jwt::build(
        &[JwtAuthenticator::from_oidc_flags(&flags)],
        &[SA_ISSUER.to_string()],
        &["RS256".to_string()],
    )
    .unwrap();
    let jwt = Jwt::fixed(jwt);
    let s = harness::start_configured(|o| {
        o.authenticator = o.authenticator.clone().with_jwt(Arc::clone(&jwt));
    })
    .await;
    let claims = issuer.claims("kapi-cli", json!({"groups": "admins", "tenant": "acme"}));
    let user = user_of(&s, &issuer.sign_with("rsa-1", &claims)).await;
    // Without --oidc-username-prefix, claims other than email get `<issuer>#`.
    assert_eq!(user["username"], format!("{}#subject-1", issuer.url));
    assert_eq!(
        user["groups"],
        json!(["oidc:admins", "system:authenticated"])
    );
    // Only the --oidc-signing-algs (RS256 by default) are accepted.
    let es = issuer.sign_with(&issuer.newest_ec(), &claims);
    assert_eq!(whoami(&s, &es).await.0, 401);
    let missing = issuer.claims("kapi-cli", json!({"groups": "admins"}));
    assert_eq!(
        whoami(&s, &issuer.sign_with("rsa-1", &missing)).await.0,
        401
    );
}
