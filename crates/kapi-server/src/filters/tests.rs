//! Panic recovery through the whole filter chain: a handler that panics gets a
//! 500 Status, the audit log gets a `Panic` event, and the server keeps serving.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::routing::get;
use axum::Router;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

use kapi_auth::audit::policy::Policy;
use kapi_auth::audit::sink::LogOptions;
use kapi_auth::audit::AuditConfig;
use kapi_auth::authn::{Authenticator, TokenFile};

use super::{Chain, ChainOptions};

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n";

fn get_as_alice(path: &str) -> Request<Body> {
    Request::get(path)
        .header("authorization", "Bearer t")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn a_panicking_handler_gets_500_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let opts = ChainOptions {
        audit: Some(AuditConfig {
            policy: Policy::parse(POLICY).unwrap(),
            log: Some(LogOptions::new(&log)),
            webhook: None,
        }),
        ..ChainOptions::default()
    };
    let chain = Chain::build(&opts).unwrap();
    let routes = Router::new()
        .route(
            "/boom",
            get(|| async { panic!("handler exploded") as &str }),
        )
        .route("/fine", get(|| async { "fine" }));
    let auth = Arc::new(Authenticator::new(
        Some(TokenFile::parse("t,alice,1").unwrap()),
        true,
    ));
    let allow: Arc<dyn kapi_auth::authz::Authorizer> = Arc::new(kapi_auth::authz::AlwaysAllow);
    let app = super::apply(routes, auth, allow, &chain, None);

    let resp = app.clone().oneshot(get_as_alice("/boom")).await.unwrap();
    assert_eq!(resp.status(), 500);
    assert!(resp.headers().contains_key("audit-id"));
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        std::str::from_utf8(&body).unwrap(),
        "This request caused apiserver to panic. Look in the logs for details.\n"
    );

    let resp = app.clone().oneshot(get_as_alice("/fine")).await.unwrap();
    assert_eq!(resp.status(), 200);
    let _ = resp.into_body().collect().await;

    let mut stages = Vec::new();
    for _ in 0..500 {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        stages = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|e| {
                format!(
                    "{} {}",
                    e["requestURI"].as_str().unwrap(),
                    e["stage"].as_str().unwrap()
                )
            })
            .collect();
        if stages.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        stages,
        [
            "/boom RequestReceived",
            "/boom Panic",
            "/fine RequestReceived",
            "/fine ResponseComplete"
        ]
    );
    let m = chain.metrics.render();
    assert!(m.contains("code=\"500\"} 1"), "{m}");
}

/// A server in front that serves one group and hands back the rest.
struct Front;

#[async_trait::async_trait]
impl crate::RemoteApis for Front {
    async fn serve(
        &self,
        req: axum::extract::Request,
    ) -> Result<axum::response::Response, axum::extract::Request> {
        if req.uri().path().starts_with("/apis/remote.example") {
            let user = req.extensions().get::<kapi_http::user::UserInfo>();
            let name = user.map(|u| u.name.clone()).unwrap_or_default();
            Ok(axum::response::Response::new(Body::from(format!(
                "remote for {name}"
            ))))
        } else {
            Err(req)
        }
    }
    fn extend_group_list(&self, _: &mut Vec<serde_json::Value>) {}
    fn extend_aggregated(&self, _: &mut Vec<serde_json::Value>) {}
    fn merged_v2(&self, _: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn extend_v3_index(&self, _: &mut serde_json::Value) {}
    fn v3_document(&self, _: &str) -> Option<(bytes::Bytes, String)> {
        None
    }
}

#[tokio::test]
async fn the_server_in_front_gets_requests_only_after_the_filters() {
    let chain = Chain::build(&ChainOptions::default()).unwrap();
    let routes = Router::new()
        .route("/local", get(|| async { "local" }))
        .fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "no route") });
    let auth = Arc::new(Authenticator::new(
        Some(TokenFile::parse("t,alice,1").unwrap()),
        false,
    ));
    let allow: Arc<dyn kapi_auth::authz::Authorizer> = Arc::new(kapi_auth::authz::AlwaysAllow);
    let front: Arc<dyn crate::RemoteApis> = Arc::new(Front);
    let app = super::apply(routes, auth, allow, &chain, Some(front));
    // The status, whether the filters gave it an audit ID, and the body.
    let call = |req: Request<Body>| {
        let app = app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap();
            let (status, audited) = (resp.status(), resp.headers().contains_key("audit-id"));
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (
                status.as_u16(),
                audited,
                String::from_utf8(body.to_vec()).unwrap(),
            )
        }
    };

    // Served in front, as the authenticated user, with the filters' headers.
    let (status, audited, body) = call(get_as_alice("/apis/remote.example/v1")).await;
    assert_eq!(
        (status, audited, body.as_str()),
        (200, true, "remote for alice")
    );
    // Without credentials the request never reaches it.
    let anonymous = Request::get("/apis/remote.example/v1").body(Body::empty());
    let (status, _, body) = call(anonymous.unwrap()).await;
    assert_eq!(status, 401);
    assert!(body.contains("Unauthorized"), "{body}");
    // What it hands back is served here, routes and fallback alike.
    let (status, _, body) = call(get_as_alice("/local")).await;
    assert_eq!((status, body.as_str()), (200, "local"));
    let (status, _, body) = call(get_as_alice("/apis/other.example/v1")).await;
    assert_eq!((status, body.as_str()), (404, "no route"));
    // Every request was counted by the metrics filter once its answer was
    // sent, the refused one too.
    let m = chain.metrics.render();
    assert!(m.contains("code=\"401\"} 1"), "{m}");
}
