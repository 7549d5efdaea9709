//! A fake kubelet for tests: the kubelet API paths the API server calls
//! (`/containerLogs`, `/exec`, `/attach`, `/portForward`, and anything else
//! as the node's own HTTP endpoints for `nodes/proxy`) over HTTPS, with a
//! client-CA check when one is given; and [`serve_pod_http`], a plain HTTP
//! endpoint standing in for a pod or Service backend.
//!
//! What the fake "containers" do (`exec.rs`, `logs.rs`, `portforward.rs`):
//! commands run as real processes in the kubelet's work directory (so
//! `kubectl cp`'s `tar` works), attach greets then echoes stdin, a
//! forwarded port echoes what it receives, logs are numbered lines; special
//! container names make the kubelet misbehave (`hang`, `cut`, `missing`).

mod exec;
pub mod logs;
mod portforward;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

pub type Body = BoxBody<Bytes, std::io::Error>;

/// How a fake kubelet serves.
pub struct KubeletOptions {
    pub listen: SocketAddr,
    pub cert_pem: String,
    pub key_pem: String,
    /// Clients must present a certificate signed by this CA.
    pub client_ca_pem: Option<String>,
    /// Where exec'd commands run.
    pub workdir: PathBuf,
}

/// A running fake kubelet; stops when dropped.
pub struct FakeKubelet {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub(crate) struct Shared {
    pub workdir: PathBuf,
}

fn tls_config(o: &KubeletOptions) -> Result<rustls::ServerConfig, String> {
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut o.cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut o.key_pem.as_bytes())
        .map_err(|e| e.to_string())?
        .ok_or("no key")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &o.client_ca_pem {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut ca.as_bytes()) {
                roots
                    .add(c.map_err(|e| e.to_string())?)
                    .map_err(|e| e.to_string())?;
            }
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| e.to_string())?;
            builder.with_client_cert_verifier(v)
        }
        None => builder.with_no_client_auth(),
    };
    builder
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())
}

/// Start a fake kubelet.
pub async fn serve(o: KubeletOptions) -> Result<FakeKubelet, String> {
    let tls = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&o)?));
    let listener = tokio::net::TcpListener::bind(o.listen)
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared { workdir: o.workdir });
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                _ = &mut stopped => return,
                a = listener.accept() => match a { Ok(a) => a, Err(_) => continue },
            };
            let (tls, shared) = (tls.clone(), shared.clone());
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |req| route(shared.clone(), req));
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .with_upgrades();
                let _ = conn.await;
            });
        }
    });
    Ok(FakeKubelet {
        addr,
        stop: Some(stop),
    })
}

pub(crate) fn text(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(
        Full::new(body.into())
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = code;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        "text/plain; charset=utf-8".parse().unwrap(),
    );
    r
}

pub(crate) fn query(req: &Request<Incoming>) -> Vec<(String, String)> {
    form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

async fn route(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let resp = match parts.as_slice() {
        ["containerLogs", _ns, _pod, container] => logs::serve(&req, container).await,
        ["exec", ..] | ["attach", ..] => exec::serve(shared, req).await,
        ["portForward", ..] => portforward::serve(req).await,
        ["healthz"] => text(StatusCode::OK, "ok"),
        ["redirect"] => {
            let mut r = text(StatusCode::FOUND, "");
            r.headers_mut()
                .insert(hyper::header::LOCATION, "/elsewhere".parse().unwrap());
            r
        }
        _ => text(StatusCode::OK, describe(&req)),
    };
    Ok(resp)
}

/// What a request looked like, for proxy tests to check.
fn describe(req: &Request<Incoming>) -> String {
    let mut out = format!("{} {}\n", req.method(), req.uri());
    for (k, v) in req.headers() {
        let k = k.as_str();
        if k.starts_with("x-forwarded")
            || k == "authorization"
            || k == "host"
            || k.starts_with("impersonate")
        {
            out.push_str(&format!("{k}: {}\n", v.to_str().unwrap_or("")));
        }
    }
    out
}

/// A plain HTTP endpoint standing in for a pod or Service backend: it
/// describes each request (method, path, query, forwarding headers), and
/// answers `/redirect` with a redirect. Stops when the handle drops.
pub async fn serve_pod_http(listen: SocketAddr) -> Result<FakeKubelet, String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                _ = &mut stopped => return,
                a = listener.accept() => match a { Ok(a) => a, Err(_) => continue },
            };
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|req: Request<Incoming>| async move {
                    let resp = match req.uri().path() {
                        "/redirect" => {
                            let mut r = text(StatusCode::FOUND, "");
                            r.headers_mut()
                                .insert(hyper::header::LOCATION, "/elsewhere".parse().unwrap());
                            r
                        }
                        _ => text(StatusCode::OK, format!("pod: {}", describe(&req))),
                    };
                    Ok::<_, Infallible>(resp)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    Ok(FakeKubelet {
        addr,
        stop: Some(stop),
    })
}
