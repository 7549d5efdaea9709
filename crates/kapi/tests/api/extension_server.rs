//! The stand-in extension API server the aggregation tests run on loopback
//! (HTTPS, its own CA, accepting the front-proxy client certificate), serving
//! `wardle.example.com/v1` flunders and recording what reached it; and the
//! helpers that register it with kapi (APIService, Service, Endpoints) and
//! wait for its `Available` condition.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use kapi_server::tls::{self, PeerIdentity};
use kube::api::{Api, DynamicObject};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::harness::{self, TestServer};

pub const GROUP: &str = "wardle.example.com";

/// A CA and a certificate it signed (PEM).
pub struct Certs {
    pub ca: String,
    pub cert: String,
    pub key: String,
}

/// A fresh CA and one leaf: a server certificate for `dns` or a client
/// certificate with CN `cn`.
pub fn certs(dns: Option<&str>, cn: &str) -> Certs {
    leaves(dns, &[cn]).remove(0)
}

/// A fresh CA and one leaf per CN, all signed by it.
pub fn leaves(dns: Option<&str>, cns: &[&str]) -> Vec<Certs> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{}-ca", cns[0]));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);
    cns.iter()
        .map(|cn| {
            let key = KeyPair::generate().unwrap();
            let sans = dns.map(|d| vec![d.to_owned()]).unwrap_or_default();
            let mut params = CertificateParams::new(sans).unwrap();
            params.distinguished_name.push(DnType::CommonName, *cn);
            params.extended_key_usages = vec![if dns.is_some() {
                ExtendedKeyUsagePurpose::ServerAuth
            } else {
                ExtendedKeyUsagePurpose::ClientAuth
            }];
            let cert = params.signed_by(&key, &issuer).unwrap();
            Certs {
                ca: ca.pem(),
                cert: cert.pem(),
                key: key.serialize_pem(),
            }
        })
        .collect()
}

/// What the extension server saw of the last request.
#[derive(Default, Clone, Debug)]
pub struct Seen {
    pub client_cn: Option<String>,
    pub user: Option<String>,
    pub groups: Vec<String>,
    pub extra: Vec<(String, String)>,
}

#[derive(Clone)]
struct Remote {
    seen: Arc<Mutex<Seen>>,
    /// The watch sends its second event once this is notified.
    pub go_on: Arc<Notify>,
}

fn record(remote: &Remote, req: &Request) {
    let h = req.headers();
    let all = |name: &str| -> Vec<String> {
        h.get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    };
    let extra = h
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-remote-extra-"))
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let peer = req
        .extensions()
        .get::<Option<PeerIdentity>>()
        .cloned()
        .flatten();
    *remote.seen.lock().unwrap() = Seen {
        client_cn: peer.map(|p| p.user),
        user: all("x-remote-user").first().cloned(),
        groups: all("x-remote-group"),
        extra,
    };
}

fn flunder(ns: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Flunder",
           "metadata": {"name": name, "namespace": ns, "resourceVersion": "7"}, "spec": {}})
}

fn json_response(v: Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}

/// Not recorded: the availability checks call it all the time.
async fn resource_list() -> Response {
    json_response(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/v1"),
        "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
             "verbs": ["get", "list", "watch"], "shortNames": ["fl"]},
            {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
             "verbs": ["get"]}]}),
    )
}

async fn flunders(State(r): State<Remote>, Path(ns): Path<String>, req: Request) -> Response {
    record(&r, &req);
    if req.uri().query().is_some_and(|q| q.contains("watch=true")) {
        let go_on = r.go_on.clone();
        let first = json!({"type": "ADDED", "object": flunder(&ns, "one")}).to_string() + "\n";
        let second = json!({"type": "ADDED", "object": flunder(&ns, "two")}).to_string() + "\n";
        let stream = futures::stream::unfold(0, move |step| {
            let (go_on, first, second) = (go_on.clone(), first.clone(), second.clone());
            async move {
                match step {
                    0 => Some((Ok::<_, std::io::Error>(first), 1)),
                    1 => {
                        go_on.notified().await;
                        Some((Ok(second), 2))
                    }
                    _ => None,
                }
            }
        });
        return (
            [("content-type", "application/json")],
            axum::body::Body::from_stream(stream),
        )
            .into_response();
    }
    json_response(
        json!({"apiVersion": format!("{GROUP}/v1"), "kind": "FlunderList",
        "metadata": {"resourceVersion": "7"}, "items": [flunder(&ns, "one")]}),
    )
}

async fn one_flunder(
    State(r): State<Remote>,
    Path((ns, name)): Path<(String, String)>,
    req: Request,
) -> Response {
    record(&r, &req);
    if name == "moved" {
        // An extension server that redirects (the aggregator refuses to pass it on).
        let mut resp = Response::new(axum::body::Body::empty());
        *resp.status_mut() = http::StatusCode::FOUND;
        resp.headers_mut().insert(
            http::header::LOCATION,
            http::HeaderValue::from_static("https://elsewhere.example/"),
        );
        return resp;
    }
    json_response(flunder(&ns, &name))
}

pub const FLUNDER_DEF: &str = "com.example.wardle.v1.Flunder";

async fn openapi_v2() -> Response {
    json_response(
        json!({"swagger": "2.0", "info": {"title": "wardle", "version": "v1"},
        "paths": {format!("/apis/{GROUP}/v1/namespaces/{{namespace}}/flunders"): {"get": {}}},
        "definitions": {FLUNDER_DEF: {"type": "object"}}}),
    )
}

async fn openapi_v3() -> Response {
    json_response(
        json!({"openapi": "3.0.0", "info": {"title": "wardle", "version": "v1"},
        "paths": {}, "components": {"schemas": {FLUNDER_DEF: {"type": "object"}}}}),
    )
}

/// A running extension server.
pub struct Extension {
    pub port: u16,
    pub ca: String,
    seen: Arc<Mutex<Seen>>,
    pub go_on: Arc<Notify>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl Extension {
    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Stop serving and wait until the listener is closed.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }
}

/// Start the extension server for `dns`, trusting `front_proxy_ca` for client
/// certificates.
pub async fn start_extension(dns: &str, front_proxy_ca: &str) -> Extension {
    let serving = certs(Some(dns), "wardle");
    let config = tls::server_config(
        &serving.cert,
        &serving.key,
        std::slice::from_ref(&front_proxy_ca.to_owned()),
    )
    .unwrap();
    let remote = Remote {
        seen: Arc::default(),
        go_on: Arc::new(Notify::new()),
    };
    let app = Router::new()
        .route(&format!("/apis/{GROUP}/v1"), get(resource_list))
        .route("/openapi/v2", get(openapi_v2))
        .route(&format!("/openapi/v3/apis/{GROUP}/v1"), get(openapi_v3))
        .route(
            &format!("/apis/{GROUP}/v1/namespaces/{{ns}}/flunders"),
            get(flunders),
        )
        .route(
            &format!("/apis/{GROUP}/v1/namespaces/{{ns}}/flunders/{{name}}"),
            get(one_flunder),
        )
        .with_state(remote.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        let stop = async move {
            let _ = rx.await;
        };
        let _ = tls::serve_tls(listener, config, app, stop).await;
    });
    Extension {
        port,
        ca: serving.ca,
        seen: remote.seen,
        go_on: remote.go_on,
        stop: Some(tx),
        done: Some(done),
    }
}

/// The Service `wardle/wardle-api` (port 443 named https) with Endpoints at
/// `127.0.0.1:<port>`, and the APIService `v1.wardle.example.com` using it.
pub async fn register(s: &TestServer, ext: &Extension) {
    s.namespace("wardle").await;
    let (code, body) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/wardle/services",
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "wardle-api"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": ext.port}]}}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = s
        .send_json(
            "POST",
            "/api/v1/namespaces/wardle/endpoints",
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "wardle-api"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                             "ports": [{"name": "https", "port": ext.port}]}]}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
    let ca = base64::engine::general_purpose::STANDARD.encode(&ext.ca);
    let (code, body) = s
        .send_json(
            "POST",
            "/apis/apiregistration.k8s.io/v1/apiservices",
            serde_json::to_vec(&json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": format!("v1.{GROUP}")},
                "spec": {"group": GROUP, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 15,
                         "caBundle": ca, "service": {"namespace": "wardle", "name": "wardle-api", "port": 443}}}))
            .unwrap(),
        )
        .await;
    assert_eq!(code, 201, "{body}");
}

/// Wait until the APIService's `Available` condition has `status`; returns it.
pub async fn wait_available(s: &TestServer, name: &str, status: &str) -> Value {
    let path = format!("/apis/apiregistration.k8s.io/v1/apiservices/{name}");
    let mut last = Value::Null;
    for _ in 0..300 {
        let (code, obj) = s.get_json(&path).await;
        if code == 200 {
            let cond = obj["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
                .cloned();
            if let Some(c) = cond.filter(|c| c["status"] == status) {
                return c;
            }
        }
        last = obj;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never became Available={status}: {last:#}");
}

pub fn flunders_api(s: &TestServer, ns: &str) -> Api<DynamicObject> {
    harness::dynamic(&s.client, GROUP, "v1", "Flunder", "flunders", Some(ns))
}

/// An aggregated discovery document of `/apis`.
pub async fn aggregated(s: &TestServer) -> Value {
    let req = http::Request::get("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(Vec::new())
        .unwrap();
    let (code, body) = s.raw(req).await;
    assert_eq!(code, 200, "{body}");
    body
}

pub fn group_of<'a>(doc: &'a Value, group: &str) -> Option<&'a Value> {
    doc["items"]
        .as_array()?
        .iter()
        .find(|i| i["metadata"]["name"] == group)
}
