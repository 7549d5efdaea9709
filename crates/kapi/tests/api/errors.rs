//! Failures reach the client as a `Status` with the upstream code and reason,
//! bad requests leave the store unchanged, and the server keeps serving.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;

use crate::harness::{self, api_error, configmap, TestServer};

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

async fn seeded() -> TestServer {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    api.create(&PostParams::default(), &configmap("keep", &[]))
        .await
        .unwrap();
    s
}

/// The store still holds exactly the seeded object and answers requests.
async fn assert_unchanged(s: &TestServer) {
    assert_eq!(s.configmap_names("default").await, vec!["keep"]);
    let (code, _) = s.get_json("/healthz").await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn get_missing_is_not_found_with_details() {
    let s = harness::start().await;
    let api: Api<ConfigMap> = s.api("default");
    let err = api_error(api.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, r#"configmaps "x" not found"#);
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
}

#[tokio::test]
async fn create_duplicate_is_already_exists() {
    let s = seeded().await;
    let api: Api<ConfigMap> = s.api("default");
    let err = api_error(
        api.create(&PostParams::default(), &configmap("keep", &[]))
            .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "AlreadyExists");
    assert_eq!(err.message, r#"configmaps "keep" already exists"#);
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn invalid_name_is_unprocessable_with_causes() {
    let s = seeded().await;
    let api: Api<ConfigMap> = s.api("default");
    let err = api_error(
        api.create(&PostParams::default(), &configmap("Bad_Name", &[]))
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert!(
        err.message
            .starts_with(r#"ConfigMap "Bad_Name" is invalid"#),
        "{}",
        err.message
    );
    let causes = err.details.expect("details").causes;
    assert!(
        causes.iter().any(|c| c.field == "metadata.name"),
        "{causes:?}"
    );
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn wrong_kind_in_body_is_bad_request() {
    let s = seeded().await;
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "wrong"}
    });
    let (code, status) = s
        .send_json("POST", CM_PATH, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn body_over_three_mebibytes_is_too_large() {
    let s = seeded().await;
    let big = "x".repeat(3 * 1024 * 1024 + 16);
    let body = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
        "data": {"k": big}
    });
    let (code, status) = s
        .send_json("POST", CM_PATH, serde_json::to_vec(&body).unwrap())
        .await;
    assert_eq!(code, 413, "{status}");
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn malformed_json_is_bad_request() {
    let s = seeded().await;
    let (code, status) = s
        .send_json(
            "POST",
            CM_PATH,
            b"{\"apiVersion\": \"v1\", \"kind\":".to_vec(),
        )
        .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "BadRequest");
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn deeply_nested_json_is_bad_request() {
    let s = seeded().await;
    let depth = 10_000;
    let mut body =
        String::from(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":"#);
    body.push_str(&"[".repeat(depth));
    body.push_str(&"]".repeat(depth));
    body.push('}');
    let (code, status) = s.send_json("POST", CM_PATH, body.into_bytes()).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_unchanged(&s).await;
}

#[tokio::test]
async fn undeclared_verb_is_method_not_allowed() {
    let s = seeded().await;
    // Namespaces have no deletecollection; upstream answers 405.
    let req = http::Request::delete("/api/v1/namespaces")
        .body(Vec::new())
        .unwrap();
    let (code, status) = s.raw(req).await;
    assert_eq!(code, 405, "{status}");
    assert_eq!(status["reason"], "MethodNotAllowed");
    assert_unchanged(&s).await;
}
