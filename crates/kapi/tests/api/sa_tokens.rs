//! Legacy service account token secrets (`controllers/tokens.rs` fills them,
//! `authn/serviceaccount.rs` checks them): a `kubernetes.io/service-account-token`
//! Secret gets a token, the CA and the namespace; the token authenticates only
//! with `--service-account-legacy-tokens` and only while its secret holds it;
//! secrets of missing or deleted accounts are deleted.

use base64::Engine as _;
use kapi_auth::authn::serviceaccount::Issuer;
use serde_json::{json, Value};

use crate::authorization::{admin_create, call};
use crate::harness::{self, TestServer};

const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const ACCOUNTS: &str = "/api/v1/namespaces/default/serviceaccounts";
const SSR: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn token_secret(name: &str, account: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}},
        "type": "kubernetes.io/service-account-token"})
}

/// Create the account `name` in `default`; its uid.
async fn account(s: &TestServer, name: &str, extra: Value) -> String {
    let mut sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    if let (Some(sa), Some(extra)) = (sa.as_object_mut(), extra.as_object()) {
        sa.extend(extra.clone());
    }
    admin_create(s, ACCOUNTS, sa).await;
    let (_, sa) = call(&s.client, "GET", &format!("{ACCOUNTS}/{name}"), None).await;
    sa["metadata"]["uid"].as_str().unwrap().to_owned()
}

/// Poll `GET path` as the admin until `done` holds for (code, body); at most
/// 30 s, so a controller that never acts fails the test.
async fn wait_for(s: &TestServer, path: &str, done: impl Fn(u16, &Value) -> bool) -> Value {
    for _ in 0..600 {
        let (code, body) = call(&s.client, "GET", path, None).await;
        if done(code, &body) {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{path} never reached the expected state");
}

/// The secret `name` once the controller has filled its token; the token.
async fn filled(s: &TestServer, name: &str) -> (Value, String) {
    let path = format!("{SECRETS}/{name}");
    let secret = wait_for(s, &path, |c, b| c == 200 && b["data"]["token"].is_string()).await;
    let raw = secret["data"]["token"].as_str().unwrap();
    let token = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .unwrap();
    (secret, String::from_utf8(token).unwrap())
}

async fn whoami(s: &TestServer, token: &str) -> (u16, Value) {
    let client = s.client_with_token(token).await;
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    call(&client, "POST", SSR, Some(body)).await
}

fn legacy_issuer(pem: &str, enabled: bool) -> Issuer {
    Issuer::new(pem, &[], vec![], vec![], enabled).unwrap()
}

#[tokio::test]
async fn token_secret_is_filled_and_authenticates_only_with_legacy_tokens() {
    // Every server below signs with one key: the token controllers of the
    // earlier servers keep running and may fill the later secrets.
    let pem = kapi_auth::authn::jwt::generate_ec_pem();
    assert!(!Issuer::ephemeral().legacy_tokens(), "off by default");
    let s = harness::start_configured(|o| o.service_accounts = legacy_issuer(&pem, false)).await;
    let uid = account(&s, "robot", json!({})).await;

    // Filled with legacy tokens off: refused.
    admin_create(&s, SECRETS, token_secret("robot-token", "robot")).await;
    let (_, token) = filled(&s, "robot-token").await;
    assert_eq!(
        whoami(&s, &token).await.0,
        401,
        "legacy tokens are off by default"
    );

    let s = s
        .another(|o| o.service_accounts = legacy_issuer(&pem, true))
        .await;
    admin_create(&s, SECRETS, token_secret("robot-token-2", "robot")).await;
    let (secret, token) = filled(&s, "robot-token-2").await;
    assert_eq!(secret["data"]["ca.crt"], b64(s.ca_pem()));
    assert_eq!(secret["data"]["namespace"], b64("default"));
    let annotations = &secret["metadata"]["annotations"];
    assert_eq!(
        annotations["kubernetes.io/service-account.uid"],
        uid.as_str()
    );
    assert_eq!(annotations["kubernetes.io/service-account.name"], "robot");
    // Upstream's legacy claims, signed with the server's key, no expiry.
    let claims = kapi_auth::authn::jwt::verify(&token, &s.server.service_accounts.verify_keys())
        .expect("signed by the server");
    assert_eq!(
        claims,
        json!({"iss": "kubernetes/serviceaccount",
            "sub": "system:serviceaccount:default:robot",
            "kubernetes.io/serviceaccount/namespace": "default",
            "kubernetes.io/serviceaccount/secret.name": "robot-token-2",
            "kubernetes.io/serviceaccount/service-account.name": "robot",
            "kubernetes.io/serviceaccount/service-account.uid": uid})
    );

    let (code, me) = whoami(&s, &token).await;
    assert_eq!(code, 201, "{me}");
    let user = &me["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(user["uid"], uid.as_str());
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );

    // Upstream's legacy token tracking labels the secret with the day of use.
    let today: String =
        kapi_auth::authn::serviceaccount::rfc3339(kapi_auth::authn::serviceaccount::now())
            .chars()
            .take(10)
            .collect();
    let (_, used) = call(&s.client, "GET", &format!("{SECRETS}/robot-token-2"), None).await;
    assert_eq!(
        used["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"],
        today.as_str()
    );
    assert_eq!(used["data"], secret["data"], "the token is kept");

    // A token signed with the right key but not held by the secret is refused.
    let forged = s
        .server
        .service_accounts
        .sign_claims(&json!({
        "iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:default:robot",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "robot-token-2",
        "kubernetes.io/serviceaccount/service-account.name": "robot",
        "kubernetes.io/serviceaccount/service-account.uid": uid, "extra": 1}))
        .await
        .unwrap();
    assert_eq!(whoami(&s, &forged).await.0, 401);

    // Same key, legacy tokens turned off: refused, with upstream's Status.
    let s = s
        .another(|o| o.service_accounts = legacy_issuer(&pem, false))
        .await;
    let (code, status) = whoami(&s, &token).await;
    assert_eq!(code, 401);
    assert_eq!(status["reason"], "Unauthorized");
    let s = s
        .another(|o| o.service_accounts = legacy_issuer(&pem, true))
        .await;
    assert_eq!(whoami(&s, &token).await.0, 201);

    // Once the secret is deleted, the token no longer authenticates.
    let path = format!("{SECRETS}/robot-token-2");
    assert_eq!(call(&s.client, "DELETE", &path, None).await.0, 200);
    wait_for(&s, &path, |c, _| c == 404).await;
    assert_eq!(whoami(&s, &token).await.0, 401);
}

#[tokio::test]
async fn token_secrets_follow_their_service_account() {
    let s = harness::start().await;
    // A secret naming an account that does not exist is deleted.
    admin_create(&s, SECRETS, token_secret("ghost-token", "ghost")).await;
    // The account lists a secret; once that secret is gone, it no longer does.
    account(
        &s,
        "robot",
        json!({"secrets": [{"name": "robot-token"}, {"name": "other"}]}),
    )
    .await;
    account(&s, "keeper", json!({})).await;
    admin_create(&s, SECRETS, token_secret("robot-token", "robot")).await;
    admin_create(&s, SECRETS, token_secret("keeper-token", "keeper")).await;
    let opaque = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "plain", "annotations": {"kubernetes.io/service-account.name": "robot"}},
        "data": {"a": b64("b")}});
    admin_create(&s, SECRETS, opaque).await;
    filled(&s, "robot-token").await;
    filled(&s, "keeper-token").await;
    wait_for(&s, &format!("{SECRETS}/ghost-token"), |c, _| c == 404).await;

    let robot = format!("{ACCOUNTS}/robot");
    assert_eq!(
        call(&s.client, "DELETE", &format!("{SECRETS}/robot-token"), None)
            .await
            .0,
        200
    );
    wait_for(&s, &robot, |_, sa| {
        sa["secrets"] == json!([{"name": "other"}])
    })
    .await;

    // Deleting the account deletes its token secrets, not other secrets.
    admin_create(&s, SECRETS, token_secret("robot-token-3", "robot")).await;
    filled(&s, "robot-token-3").await;
    assert_eq!(call(&s.client, "DELETE", &robot, None).await.0, 200);
    wait_for(&s, &format!("{SECRETS}/robot-token-3"), |c, _| c == 404).await;
    assert_eq!(
        call(&s.client, "GET", &format!("{SECRETS}/plain"), None)
            .await
            .0,
        200
    );
    let (code, keeper) = call(&s.client, "GET", &format!("{SECRETS}/keeper-token"), None).await;
    assert_eq!(code, 200, "{keeper}");
}
