//! An in-process server called without a socket (axum's `oneshot`), for the
//! tests of the load and record-keeping filters: requests carry bearer tokens
//! of a static token file, and a request body can be held open ([`held`]) so a
//! request occupies its seat for exactly as long as a test wants.
//!
//! Users: `admin` (system:masters, exempt from APF), `alice`, `bob`, `noisy`,
//! `quiet` (system:authenticated).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use axum::Router;
use http_body_util::BodyExt as _;
use kapi_auth::authn::{Authenticator, TokenFile};
use kapi_server::{ChainOptions, Cidr, ServerConfig};
use kapi_storage::embedded::EmbeddedConfig;
use kapi_storage::factory::{self, StorageConfig};
use serde_json::Value;
use tokio::sync::mpsc;
use tower::ServiceExt as _;

const TOKENS: &str = "admin-token,admin,1,\"system:masters\"
alice-token,alice,2
bob-token,bob,3
noisy-token,noisy,4
quiet-token,quiet,5
";

pub struct Chain {
    app: Router,
    _dir: tempfile::TempDir,
}

pub async fn start(opts: ChainOptions) -> Chain {
    let dir = tempfile::tempdir().expect("tempdir");
    start_in(dir, opts).await
}

/// Start with a directory the caller prepared (audit policy files).
pub async fn start_in(dir: tempfile::TempDir, opts: ChainOptions) -> Chain {
    let slot = factory::open(StorageConfig::Embedded(EmbeddedConfig::new(
        dir.path().join("store"),
    )))
    .expect("open embedded store");
    slot.wait_ready(Duration::from_secs(10))
        .await
        .expect("store ready");
    let config = ServerConfig::new(
        "127.0.0.1:6443".into(),
        6443,
        Cidr::parse("10.0.0.0/24").expect("cidr"),
    );
    let built = kapi::build(kapi::Options::new(config), slot);
    let server = built.server.clone();
    let controllers = kapi_controllers::Options {
        controllers: kapi_controllers::Selection::parse(&["namespace".into()])
            .expect("controllers"),
        ..Default::default()
    };
    built.start(&controllers).await.expect("bootstrap");
    let tokens = TokenFile::parse(TOKENS).expect("tokens");
    let auth = Arc::new(Authenticator::new(Some(tokens), true));
    let app = server.router_with(auth, &opts).expect("router");
    let chain = Chain { app, _dir: dir };
    // The test users may do everything (what RBAC's cluster-admin grants).
    let subjects: Vec<Value> = ["alice", "bob", "noisy", "quiet"]
        .iter()
        .map(|u| serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u}))
        .collect();
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "test-users"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": subjects,
    });
    let uri = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    let (code, body) = chain
        .send("admin", "POST", uri, Body::from(binding.to_string()))
        .await;
    assert_eq!(code, 201, "{body}");
    chain
}

/// A request body that stays open until the sender sends the rest and is dropped.
pub fn held() -> (mpsc::Sender<Result<Bytes, std::io::Error>>, Body) {
    let (tx, rx) = mpsc::channel(4);
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    (tx, Body::from_stream(stream))
}

pub fn request(user: &str, method: &str, uri: &str, body: Body) -> Request<Body> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if user != "anonymous" {
        b = b.header("authorization", format!("Bearer {user}-token"));
    }
    b.body(body).expect("request")
}

pub fn configmap(name: &str) -> Body {
    Body::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#
    ))
}

impl Chain {
    pub async fn call(&self, req: Request<Body>) -> Response<Body> {
        self.app.clone().oneshot(req).await.expect("infallible")
    }

    /// Send a request in the background.
    pub fn spawn(&self, req: Request<Body>) -> tokio::task::JoinHandle<Response<Body>> {
        let app = self.app.clone();
        tokio::spawn(async move { app.oneshot(req).await.expect("infallible") })
    }

    /// Status code and body as JSON (`Null` when not JSON).
    pub async fn send(&self, user: &str, method: &str, uri: &str, body: Body) -> (u16, Value) {
        json(self.call(request(user, method, uri, body)).await).await
    }

    /// `/metrics` as the admin.
    pub async fn metrics(&self) -> String {
        let resp = self
            .call(request("admin", "GET", "/metrics", Body::empty()))
            .await;
        assert_eq!(resp.status(), 200);
        text(resp).await
    }

    /// Wait until `/metrics` has `line` (a series and its value).
    pub async fn wait_metric(&self, line: &str) {
        for _ in 0..500 {
            if self.metrics().await.lines().any(|l| l == line) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "metric line never appeared: {line}\n{}",
            self.metrics().await
        );
    }
}

pub async fn text(resp: Response<Body>) -> String {
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub async fn json(resp: Response<Body>) -> (u16, Value) {
    let code = resp.status().as_u16();
    let t = text(resp).await;
    (code, serde_json::from_str(&t).unwrap_or(Value::Null))
}

/// The value of a metric series in a `/metrics` text, 0 when absent.
pub fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}
