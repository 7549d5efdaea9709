//! Webhook token authentication end to end: a TokenReview webhook written for
//! the tests (`https_fixture.rs`) reached through a kubeconfig file with its
//! CA and a bearer token of its own; the review kapi sends (v1 and v1beta1),
//! the user it maps, answers cached for the TTL (acceptances and refusals,
//! never failures), and a webhook that is down or answers garbage refusing
//! only its own tokens.

use std::sync::Arc;
use std::time::Duration;

use kapi_auth::authn::webhook::TokenWebhook;
use serde_json::{json, Value};

use super::authn_jwt::whoami;
use super::harness::{self, TestServer};
use super::https_fixture::{HttpsServer, Recorded};

/// A TokenReview webhook: `good-<name>` is user `<name>` in group `hooked`
/// with an extra value; `deny-...` is refused with an error; anything else is
/// refused plainly.
async fn token_hook() -> HttpsServer {
    HttpsServer::start(Arc::new(|r: &Recorded| {
        let token = r
            .body
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or("");
        let api_version = r.body["apiVersion"].clone();
        let status = if let Some(name) = token.strip_prefix("good-") {
            json!({"authenticated": true, "user": {"username": name, "uid": format!("uid-{name}"),
                "groups": ["hooked"], "extra": {"example.com/scope": ["read"]}}})
        } else if token.starts_with("deny-") {
            json!({"authenticated": false, "error": "token revoked"})
        } else {
            json!({"authenticated": false})
        };
        let out = json!({"apiVersion": api_version, "kind": "TokenReview", "status": status});
        (200, out.to_string())
    }))
    .await
}

async fn server(
    hook: &HttpsServer,
    version: &str,
    ttl: Duration,
) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = hook.kubeconfig(dir.path(), "authn", "/authenticate", Some("hook-secret"));
    let conn = kapi_client::kubeconfig::load(&kubeconfig).unwrap();
    let audiences = vec!["https://kubernetes.default.svc.cluster.local".to_string()];
    let webhook = Arc::new(TokenWebhook::new(conn, version, ttl, audiences).unwrap());
    let s = harness::start_configured(|o| {
        o.authenticator = o.authenticator.clone().with_token_webhook(webhook);
    })
    .await;
    (s, dir)
}

#[tokio::test]
async fn token_reviews_v1_and_cache() {
    let hook = token_hook().await;
    let (s, _dir) = server(&hook, "v1", Duration::from_secs(3600)).await;
    let (code, user) = whoami(&s, "good-jane").await;
    assert_eq!(code, 201, "{user}");
    assert_eq!(user["username"], "jane");
    assert_eq!(user["uid"], "uid-jane");
    assert_eq!(user["groups"], json!(["hooked", "system:authenticated"]));
    assert_eq!(user["extra"], json!({"example.com/scope": ["read"]}));
    let calls = hook.calls_to("/authenticate");
    assert_eq!(calls.len(), 1);
    let review = &calls[0];
    assert_eq!(review.method, "POST");
    assert_eq!(review.authorization.as_deref(), Some("Bearer hook-secret"));
    assert_eq!(review.body["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(review.body["kind"], "TokenReview");
    assert_eq!(review.body["spec"]["token"], "good-jane");
    assert_eq!(
        review.body["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    // Cached: the same token again is not sent; refusals are cached too.
    assert_eq!(whoami(&s, "good-jane").await.0, 201);
    assert_eq!(whoami(&s, "nobody").await.0, 401);
    assert_eq!(whoami(&s, "nobody").await.0, 401);
    assert_eq!(hook.calls_to("/authenticate").len(), 2);
    // Refusals with an error are not cached.
    assert_eq!(whoami(&s, "deny-x").await.0, 401);
    assert_eq!(whoami(&s, "deny-x").await.0, 401);
    assert_eq!(hook.calls_to("/authenticate").len(), 4);
    // Tokens other authenticators know never reach the webhook.
    assert_eq!(whoami(&s, "alice-token").await.0, 201);
    assert_eq!(hook.calls_to("/authenticate").len(), 4);
}

#[tokio::test]
async fn v1beta1_without_cache() {
    let hook = token_hook().await;
    let (s, _dir) = server(&hook, "v1beta1", Duration::ZERO).await;
    assert_eq!(whoami(&s, "good-bob").await.0, 201);
    assert_eq!(whoami(&s, "good-bob").await.0, 201);
    let calls = hook.calls_to("/authenticate");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].body["apiVersion"], "authentication.k8s.io/v1beta1");
}

#[tokio::test]
async fn failing_webhooks_refuse_only_their_tokens() {
    let hook = token_hook().await;
    let (s, _dir) = server(&hook, "v1", Duration::from_secs(3600)).await;
    // Garbage and error statuses: 401, not cached.
    hook.set_handler(Arc::new(|_: &Recorded| (200, "not json".into())));
    assert_eq!(whoami(&s, "good-erin").await.0, 401);
    hook.set_handler(Arc::new(|_: &Recorded| (403, "{}".into())));
    assert_eq!(whoami(&s, "good-erin").await.0, 401);
    hook.set_handler(Arc::new(|_: &Recorded| (200, "{\"status\": {}}".into())));
    assert_eq!(whoami(&s, "good-carol").await.0, 401);
    let refusals = hook.calls_to("/authenticate").len();
    assert_eq!(whoami(&s, "good-carol").await.0, 401);
    assert_eq!(
        hook.calls_to("/authenticate").len(),
        refusals,
        "a plain refusal is cached"
    );
    // Failures were not cached: once the webhook answers, its tokens work.
    hook.set_handler(Arc::new(|r: &Recorded| {
        let token = r.body.pointer("/spec/token").and_then(Value::as_str).unwrap_or("");
        let name = token.trim_start_matches("good-");
        let status = json!({"authenticated": true, "user": {"username": name}});
        (200, json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}).to_string())
    }));
    assert_eq!(whoami(&s, "good-erin").await.1["username"], "erin");
    // A webhook that is gone: its tokens are refused, the others still work.
    drop(hook);
    assert_eq!(whoami(&s, "good-dave").await.0, 401);
    assert_eq!(whoami(&s, "bob-token").await.0, 201);
}
