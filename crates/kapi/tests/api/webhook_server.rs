//! A test admission webhook: HTTPS on `127.0.0.1:0` with its own self-signed
//! certificate (names `127.0.0.1`, `localhost`, `hook.default.svc`), answering
//! AdmissionReviews by path: `/allow`, `/deny` (403 Forbidden "no way"),
//! `/mutate` (a JSON Patch adding `data.mutated`), `/replicas-3` (setting
//! `spec.replicas` to 3), `/audience` (setting `spec.audiences` to
//! `["mutated"]`), `/warn` (allowed with a warning), `/annotate` (allowed with
//! audit annotations `decision: fine` and one with an invalid key), `/slow`
//! (answers after 5 s), `/bad-uid` (a response for another
//! request), `/gather` (allows once another `/gather` call is in flight, or
//! after 1 s alone; [`Hook::max_concurrent`] is the most seen at once). Every
//! review received is recorded with its path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

pub struct Hook {
    pub port: u16,
    /// The CA bundle to put in `clientConfig.caBundle` (base64 of the PEM).
    pub ca_bundle: String,
    /// (path, AdmissionReview request) of every call, in order.
    pub seen: Arc<Mutex<Vec<(String, Value)>>>,
    gather: Arc<Gather>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

/// `/gather` calls in flight, and the most at once.
#[derive(Default)]
struct Gather {
    now: AtomicUsize,
    max: AtomicUsize,
    arrived: tokio::sync::Notify,
}

impl Gather {
    async fn call(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        self.arrived.notify_waiters();
        let others = async {
            loop {
                let arrived = self.arrived.notified();
                if self.max.load(Ordering::SeqCst) >= 2 {
                    return;
                }
                arrived.await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), others).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Hook {
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The paths called so far.
    pub fn calls(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// The most `/gather` calls in flight at once.
    pub fn max_concurrent(&self) -> usize {
        self.gather.max.load(Ordering::SeqCst)
    }

    pub fn last(&self) -> Value {
        self.seen.lock().unwrap().last().expect("a call").1.clone()
    }
}

fn json_patch(uid: Value, patch: Value) -> Value {
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
}

fn answer(path: &str, req: &Value) -> Value {
    let uid = req.get("uid").cloned().unwrap_or(Value::Null);
    let response = match path {
        "/deny" => json!({"uid": uid, "allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": "no way"}}),
        "/mutate" => {
            let patch = json!([{"op": "add", "path": "/data/mutated", "value": "yes"}]);
            let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
            json!({"uid": uid, "allowed": true, "patchType": "JSONPatch", "patch": patch})
        }
        "/replicas-3" => json_patch(
            uid,
            json!([{"op": "add", "path": "/spec/replicas", "value": 3}]),
        ),
        "/audience" => json_patch(
            uid,
            json!([{"op": "add", "path": "/spec/audiences", "value": ["mutated"]}]),
        ),
        "/warn" => json!({"uid": uid, "allowed": true, "warnings": ["careful now"]}),
        "/annotate" => json!({"uid": uid, "allowed": true,
            "auditAnnotations": {"decision": "fine", "bad key!": "x"}}),
        "/bad-uid" => json!({"uid": "not-the-request", "allowed": true}),
        _ => json!({"uid": uid, "allowed": true}),
    };
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

pub async fn start() -> Hook {
    start_with(false).await
}

/// A webhook whose self-signed certificate is also a CA (`CA:TRUE`, as
/// `openssl req -x509` makes by default), given as its own `caBundle`.
pub async fn start_ca_self_signed() -> Hook {
    start_with(true).await
}

async fn start_with(is_ca: bool) -> Hook {
    let names = ["127.0.0.1", "localhost", "hook.default.svc"].map(String::from);
    let mut params = rcgen::CertificateParams::new(names.to_vec()).expect("names");
    if is_ca {
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    }
    let signing_key = rcgen::KeyPair::generate().expect("key");
    let cert = params.self_signed(&signing_key).expect("certificate");
    let cert_pem = cert.pem();
    let certs = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key_pem = signing_key.serialize_pem();
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .unwrap()
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    let seen2 = seen.clone();
    let gather: Arc<Gather> = Arc::default();
    let gather2 = gather.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                r = listener.accept() => match r { Ok(c) => c, Err(_) => continue },
                _ = &mut rx => return,
            };
            let acceptor = acceptor.clone();
            let seen = seen2.clone();
            let gather = gather2.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    let gather = gather.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        let body = req.into_body().collect().await?.to_bytes();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let request = review.get("request").cloned().unwrap_or(Value::Null);
                        seen.lock().unwrap().push((path.clone(), request.clone()));
                        if path == "/slow" {
                            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                        }
                        if path == "/gather" {
                            gather.call().await;
                        }
                        let out = answer(&path, &request).to_string();
                        Ok::<_, hyper::Error>(hyper::Response::new(Full::new(Bytes::from(out))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    Hook {
        port,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(cert_pem),
        seen,
        gather,
        shutdown: Some(tx),
    }
}
