//! An HTTPS server for the authentication and authorization tests, standing
//! in for an OIDC issuer or a TokenReview / SubjectAccessReview webhook: on
//! `127.0.0.1:0`, with its own CA (the leaf names `127.0.0.1` and
//! `localhost`), answering every request with what its handler (swappable
//! while it runs) says. Every request is recorded (method, path,
//! `Authorization` header, JSON body). [`HttpsServer::kubeconfig`] writes the
//! webhook kubeconfig that reaches it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use serde_json::Value;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// What the server answers: status and body.
pub type Handler = Arc<dyn Fn(&Recorded) -> (u16, String) + Send + Sync>;

pub struct HttpsServer {
    pub port: u16,
    /// The CA that signed the server's certificate (PEM).
    pub ca_pem: String,
    pub seen: Arc<Mutex<Vec<Recorded>>>,
    handler: Arc<Mutex<Handler>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A CA and a leaf for `127.0.0.1`/`localhost` signed by it: (ca, cert, key).
pub fn pki() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let leaf = CertificateParams::new(names)
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    (ca.pem(), leaf.pem(), leaf_key.serialize_pem())
}

impl HttpsServer {
    pub async fn start(handler: Handler) -> HttpsServer {
        let (ca_pem, cert_pem, key_pem) = pki();
        let certs = rustls_pemfile::certs(&mut cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
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
        let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let handler = Arc::new(Mutex::new(handler));
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let (seen2, handler2) = (seen.clone(), handler.clone());
        tokio::spawn(async move {
            loop {
                let (tcp, _) = tokio::select! {
                    r = listener.accept() => match r { Ok(c) => c, Err(_) => continue },
                    _ = &mut rx => return,
                };
                let (acceptor, seen, handler) = (acceptor.clone(), seen2.clone(), handler2.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (seen, handler) = (seen.clone(), handler.clone());
                        async move { serve(req, &seen, &handler).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        HttpsServer {
            port,
            ca_pem,
            seen,
            handler,
            shutdown: Some(tx),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Answer from now on with `handler`.
    pub fn set_handler(&self, handler: Handler) {
        *self.handler.lock().unwrap() = handler;
    }

    /// The requests so far to `path`.
    pub fn calls_to(&self, path: &str) -> Vec<Recorded> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Write a webhook kubeconfig reaching `path` on this server into `dir`,
    /// the CA in its own file, with `token` as the user's bearer token.
    pub fn kubeconfig(&self, dir: &Path, name: &str, path: &str, token: Option<&str>) -> PathBuf {
        let ca = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&ca, &self.ca_pem).unwrap();
        let user = match token {
            Some(t) => format!("{{token: {t}}}"),
            None => "{}".into(),
        };
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: hook\nclusters:\n- name: hook\n  cluster:\n    server: {}\n    certificate-authority: {name}-ca.pem\nusers:\n- name: apiserver\n  user: {user}\ncontexts:\n- name: hook\n  context: {{cluster: hook, user: apiserver}}\n",
            self.url(path)
        );
        let file = dir.join(format!("{name}.kubeconfig"));
        std::fs::write(&file, text).unwrap();
        file
    }
}

async fn serve(
    req: hyper::Request<hyper::body::Incoming>,
    seen: &Mutex<Vec<Recorded>>,
    handler: &Mutex<Handler>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = req.into_body().collect().await?.to_bytes();
    let rec = Recorded {
        method,
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    seen.lock().unwrap().push(rec.clone());
    let h = handler.lock().unwrap().clone();
    let (status, out) = h(&rec);
    let mut resp = hyper::Response::new(Full::new(Bytes::from(out)));
    *resp.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    resp.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    Ok(resp)
}
