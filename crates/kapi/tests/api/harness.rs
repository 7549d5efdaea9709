//! The test server: kapi started inside the test process on `127.0.0.1:0`,
//! wired as `kapi serve` wires it (embedded store, generated PKI, admin
//! kubeconfig), and a `kube::Client` built from that kubeconfig.
//!
//! Every test starts its own [`TestServer`]; dropping it stops the server and
//! removes its temporary directory. [`TestServer::backend`] is the storage stack
//! the server reads and writes through (the watch cache over the store), for
//! tests that compact or inspect it directly.

use std::sync::{Arc, Once};
use std::time::Duration;

use kapi::Options;
use kapi_auth::authn::{Authenticator, TokenFile};
use kapi_server::{tls, Cidr, Server, ServerConfig};
use kapi_storage::embedded::EmbeddedConfig;
use kapi_storage::factory::{self, StorageConfig};
use kapi_storage::slot::BackendSlot;
use kapi_storage::Backend;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::Value;

pub struct TestServer {
    pub client: Client,
    pub backend: Arc<dyn Backend>,
    /// The server itself (tests mint service account tokens with its issuer).
    pub server: Arc<Server>,
    /// The storage the server runs on, for a second server over it.
    pub slot: BackendSlot,
    url: String,
    ca_pem: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    _dir: Arc<tempfile::TempDir>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // kapi itself passes ring explicitly; the client side may look for a
        // process default, and ring is the only provider in the graph.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Start a fresh server with its own store and certificates. The controllers
/// that put objects into every namespace (service accounts, root CA) are off, so
/// tests can count what they create; [`start_with_all_controllers`] runs them.
pub async fn start() -> TestServer {
    start_configured(|_| {}).await
}

/// As [`start`], with the server's options changed by `configure` first.
pub async fn start_configured(configure: impl FnOnce(&mut Options)) -> TestServer {
    let items = ["*", "-serviceaccount", "-root-ca-cert-publisher"].map(String::from);
    let selection = kapi_controllers::Selection::parse(&items).expect("controllers");
    start_with(selection, configure).await
}

/// Start a server running every in-process controller.
#[allow(dead_code)]
pub async fn start_with_all_controllers() -> TestServer {
    start_with(kapi_controllers::Selection::default(), |_| {}).await
}

/// Start a server with the controllers `--controllers=<items>` would select.
#[allow(dead_code)]
pub async fn start_with_controllers(items: &[&str]) -> TestServer {
    let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    let selection = kapi_controllers::Selection::parse(&items).expect("controllers");
    start_with(selection, |_| {}).await
}

async fn start_with(
    selection: kapi_controllers::Selection,
    configure: impl FnOnce(&mut Options),
) -> TestServer {
    install_crypto_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    let slot = factory::open(StorageConfig::Embedded(EmbeddedConfig::new(
        dir.path().join("store"),
    )))
    .expect("open embedded store");
    slot.wait_ready(Duration::from_secs(10))
        .await
        .expect("store ready");
    serve(Arc::new(dir), slot, selection, configure).await
}

/// Start a server over `slot`, storage prepared by the test (an etcd, or an
/// embedded store filled beforehand), with its own certificates.
#[allow(dead_code)]
pub async fn start_over(slot: BackendSlot, configure: impl FnOnce(&mut Options)) -> TestServer {
    install_crypto_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    slot.wait_ready(Duration::from_secs(10))
        .await
        .expect("store ready");
    let items = ["*", "-serviceaccount", "-root-ca-cert-publisher"].map(String::from);
    let selection = kapi_controllers::Selection::parse(&items).expect("controllers");
    serve(Arc::new(dir), slot, selection, configure).await
}

impl TestServer {
    /// A second server over this one's storage and certificates, made as
    /// `configure` says (as a restart with other flags would); this one keeps
    /// running.
    #[allow(dead_code)]
    pub async fn another(&self, configure: impl FnOnce(&mut Options)) -> TestServer {
        let items = ["*", "-serviceaccount", "-root-ca-cert-publisher"].map(String::from);
        let selection = kapi_controllers::Selection::parse(&items).expect("controllers");
        serve(self._dir.clone(), self.slot.clone(), selection, configure).await
    }
}

async fn serve(
    dir: Arc<tempfile::TempDir>,
    slot: BackendSlot,
    selection: kapi_controllers::Selection,
    configure: impl FnOnce(&mut Options),
) -> TestServer {
    let backend = slot.current().expect("the store is ready");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    let service_cidr = Cidr::parse("10.0.0.0/24").expect("cidr");
    let sans = vec!["10.0.0.1".to_string(), "127.0.0.1".to_string()];
    let pki = tls::load_or_generate(dir.path(), &sans).expect("pki");
    let tls_config = tls::server_config(
        &pki.serving_cert_pem,
        &pki.serving_key_pem,
        std::slice::from_ref(&pki.ca_cert_pem),
    )
    .expect("tls config");

    let config = ServerConfig::new(format!("127.0.0.1:{port}"), port, service_cidr);
    let mut options = Options::new(config);
    // Nothing routes cluster IPs here (no kube-proxy): services are dialled
    // at their endpoints, as with --enable-aggregator-routing.
    options.aggregator.routing = kapi_client::service_resolver::Routing::Endpoints;
    let tokens = TokenFile::parse(TOKENS).expect("test tokens");
    let client_cas =
        kapi_auth::authn::requestheader::CertVerifier::new(std::slice::from_ref(&pki.ca_cert_pem))
            .expect("client CAs");
    options.authenticator = Authenticator::new(Some(tokens), true).with_client_cas(client_cas);
    if !selection.enabled("serviceaccount") {
        // As upstream's integration tests: without the controller that
        // creates `default`, the ServiceAccount admission plugin is off.
        let off = ["ServiceAccount".to_string()];
        options.admission =
            kapi_admission_plugins::Selection::from_flags(&[], &off).expect("admission");
    }
    configure(&mut options);
    let built = kapi::build(options, slot.clone());
    let server: Arc<Server> = built.server.clone();
    let mut controllers = kapi_controllers::Options::all(pki.ca_cert_pem.clone());
    controllers.controllers = selection;
    built.start(&controllers).await.expect("bootstrap");
    let backend: Arc<dyn Backend> = match server.apis.cache() {
        Some(cache) => Arc::new(cache.clone()),
        None => backend,
    };
    let app = built.router().expect("filter chain");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let stop = async move {
            let _ = rx.await;
        };
        tls::serve_tls(listener, tls_config, app, stop)
            .await
            .expect("serve");
    });

    let url = format!("https://127.0.0.1:{port}");
    let path = dir.path().join("admin.kubeconfig");
    tls::write_kubeconfig(
        &path,
        &url,
        &pki.ca_cert_pem,
        &pki.admin_cert_pem,
        &pki.admin_key_pem,
    )
    .expect("kubeconfig");
    let kubeconfig = Kubeconfig::read_from(&path).expect("read kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kube config");
    // Tests check 429/503 answers themselves; kube would retry them for minutes.
    config.default_retry = false;
    let client = Client::try_from(config).expect("client");
    TestServer {
        client,
        backend,
        server,
        slot,
        url,
        ca_pem: pki.ca_cert_pem.clone(),
        shutdown: Some(tx),
        _dir: dir,
    }
}

/// The static tokens every test server accepts (`--token-auth-file` format):
/// `<name>-token` authenticates `<name>`; the `hook-*` users are the ones the
/// test authorization webhook has opinions on (`authz_webhook.rs`). Only the admin (client certificate,
/// `system:masters`) holds any permission beyond the bootstrap policy.
pub const TOKENS: &str = "alice-token,alice,uid-alice,\"dev\"\n\
    bob-token,bob,uid-bob\n\
    carol-token,carol,uid-carol,\"ops,dev\"\n\
    dave-token,dave,uid-dave\n\
    allowed-token,hook-allowed,u1\n\
    denied-token,hook-denied,u2\n\
    none-token,hook-none,u3,\"team\"\n";

impl TestServer {
    /// The cluster CA certificate (PEM) the server's PKI was generated with.
    #[allow(dead_code)]
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A client authenticating with `Authorization: Bearer <token>`.
    #[allow(dead_code)]
    pub async fn client_with_token(&self, token: &str) -> Client {
        self.client_with_user(&format!("{{token: {token:?}}}"))
            .await
    }

    /// A client presenting the client certificate `cert_pem` / `key_pem`, and
    /// the bearer `token` too when given.
    #[allow(dead_code)]
    pub async fn client_with_cert(
        &self,
        cert_pem: &str,
        key_pem: &str,
        token: Option<&str>,
    ) -> Client {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let token = token.map(|t| format!(", token: {t:?}")).unwrap_or_default();
        let user = format!(
            "{{client-certificate-data: {}, client-key-data: {}{token}}}",
            b64(cert_pem),
            b64(key_pem)
        );
        self.client_with_user(&user).await
    }

    /// A client sending no credentials (anonymous).
    #[allow(dead_code)]
    pub async fn anonymous_client(&self) -> Client {
        self.client_with_user("{}").await
    }

    async fn client_with_user(&self, user: &str) -> Client {
        use base64::Engine as _;
        let ca = base64::engine::general_purpose::STANDARD.encode(&self.ca_pem);
        let yaml = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: t\n\
             clusters: [{{name: c, cluster: {{server: \"{}\", certificate-authority-data: {ca}}}}}]\n\
             users: [{{name: u, user: {user}}}]\n\
             contexts: [{{name: t, context: {{cluster: c, user: u}}}}]\n",
            self.url
        );
        let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
        let mut config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .expect("kube config");
        config.default_retry = false;
        Client::try_from(config).expect("client")
    }

    pub fn api<K>(&self, ns: &str) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    pub fn cluster<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::ClusterResourceScope>,
        <K as kube::Resource>::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// Send a raw request; returns the status code and the body as JSON
    /// (`Value::Null` when the body is not JSON).
    pub async fn raw(&self, req: http::Request<Vec<u8>>) -> (u16, Value) {
        let (code, text) = self.raw_text(req).await;
        (code, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn raw_text(&self, req: http::Request<Vec<u8>>) -> (u16, String) {
        use http_body_util::BodyExt as _;
        let resp = self.client.send(req.map(kube::client::Body::from)).await;
        let resp = resp.expect("transport");
        let code = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (code, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Send a raw request; returns the whole answer (status, headers, body
    /// bytes), for tests of the wire form itself.
    #[allow(dead_code)]
    pub async fn exchange(&self, req: http::Request<Vec<u8>>) -> Reply {
        use http_body_util::BodyExt as _;
        let resp = self.client.send(req.map(kube::client::Body::from)).await;
        let resp = resp.expect("transport");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        Reply {
            code,
            headers,
            body: body.to_vec(),
        }
    }

    /// GET `path` in Kubernetes protobuf (as Go clients ask); the answer must
    /// be 200, decoded into the JSON model.
    #[allow(dead_code)]
    pub async fn get_protobuf(&self, path: &str) -> Value {
        let req = http::Request::get(path)
            .header("accept", "application/vnd.kubernetes.protobuf")
            .body(Vec::new())
            .unwrap();
        let reply = self.exchange(req).await;
        assert_eq!(
            reply.code,
            200,
            "{path}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        kapi_protobuf::decode_object(&reply.body, None).expect("protobuf body")
    }

    pub async fn get_json(&self, path: &str) -> (u16, Value) {
        self.raw(http::Request::get(path).body(Vec::new()).unwrap())
            .await
    }

    pub async fn send_json(&self, method: &str, path: &str, body: Vec<u8>) -> (u16, Value) {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(body)
            .unwrap();
        self.raw(req).await
    }

    /// Names of the ConfigMaps in `ns`, sorted.
    pub async fn configmap_names(&self, ns: &str) -> Vec<String> {
        let api: Api<k8s_openapi::api::core::v1::ConfigMap> = self.api(ns);
        let mut names: Vec<String> = api
            .list(&ListParams::default())
            .await
            .expect("list configmaps")
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect();
        names.sort();
        names
    }

    /// Create a namespace and return its name.
    pub async fn namespace(&self, name: &str) -> String {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = self.cluster();
        let ns = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
        }))
        .unwrap();
        api.create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        name.to_string()
    }
}

/// A whole answer ([`TestServer::exchange`]).
#[allow(dead_code)]
pub struct Reply {
    pub code: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

#[allow(dead_code)]
impl Reply {
    /// The body as JSON (`Value::Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The texts of the `Warning` headers (`299 - "<text>"`), unquoted.
    pub fn warnings(&self) -> Vec<String> {
        self.headers
            .get_all("warning")
            .iter()
            .map(|v| {
                let v = v.to_str().expect("ASCII warning");
                let text = v.strip_prefix("299 - \"").and_then(|t| t.strip_suffix('"'));
                text.expect("a 299 warning").replace("\\\"", "\"")
            })
            .collect()
    }
}

/// A ConfigMap with `data: {k: v}` and the given labels.
pub fn configmap(name: &str, labels: &[(&str, &str)]) -> k8s_openapi::api::core::v1::ConfigMap {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"}
    }))
    .unwrap()
}

/// The API error of a failed call, panicking on success or a transport error.
pub fn api_error<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// `resourceVersion` as a number.
pub fn rv(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("resourceVersion")
        .parse()
        .expect("numeric resourceVersion")
}

/// A dynamic API for a resource by group/version/kind/plural.
#[allow(dead_code)]
pub fn dynamic(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}
