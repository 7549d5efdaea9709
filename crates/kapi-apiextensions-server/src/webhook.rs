//! The client of a definition's conversion webhook: `spec.conversion.webhook.
//! clientConfig` (`url`, or `service` resolved through its endpoints by
//! `service_resolver.rs`), TLS verified against `caBundle` (the system roots
//! without one), one HTTPS POST of a `ConversionReview` per conversion, 30 s
//! at most (upstream's client timeout, also sent as `?timeout=30s`). A `url`
//! is dialled through the `controlplane` egress selection, a `service`
//! through `cluster`, as upstream's webhook client configuration does.
//!
//! The store converts synchronously (`kapi_registry::Conversion`), so a post
//! blocks its caller: on the multi-threaded runtime through `block_in_place`
//! (the worker's other tasks move to another thread), elsewhere on a helper
//! thread with its own runtime.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use kapi_apiextensions::crd::ReviewClient;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use crate::Context;

/// Upstream's webhook client timeout.
const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response accepted.
const MAX_RESPONSE: usize = 64 << 20;

/// What opens the connection, and the host and port it is asked for.
type Dial = (Arc<dyn kapi_egress::Dialer>, String, u16);

/// Where the webhook is.
enum Target {
    Url(String),
    Service {
        namespace: String,
        name: String,
        port: i64,
        path: String,
    },
}

pub struct WebhookClient {
    target: Target,
    tls: Result<Arc<rustls::ClientConfig>, String>,
    /// For service references (weak: the server owns the resources that own
    /// this client).
    cx: Weak<Context>,
}

impl WebhookClient {
    /// The client of `webhook` (`spec.conversion.webhook`), `None` when it
    /// names no endpoint (validation rejects such definitions).
    pub fn new(webhook: &Value, cx: &Arc<Context>) -> Option<WebhookClient> {
        let cc = webhook.get("clientConfig")?;
        let target = if let Some(url) = cc.get("url").and_then(Value::as_str) {
            Target::Url(url.to_owned())
        } else {
            let svc = cc.get("service")?;
            let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            Target::Service {
                namespace: s("namespace"),
                name: s("name"),
                port: svc.get("port").and_then(Value::as_i64).unwrap_or(443),
                path: s("path"),
            }
        };
        let ca = cc.get("caBundle").and_then(Value::as_str).unwrap_or("");
        Some(WebhookClient {
            target,
            tls: tls_config(ca),
            cx: Arc::downgrade(cx),
        })
    }

    async fn post_async(&self, body: Vec<u8>) -> Result<Value, String> {
        let (url, host, port, path, dial) = self.endpoint().await?;
        let fail = |e: &dyn std::fmt::Display| format!("Post {url:?}: {e}");
        let tls = self.tls.clone().map_err(|e| fail(&e))?;
        let (dialer, dial_host, dial_port) = dial;
        let dial = if dial_host.contains(':') {
            format!("[{dial_host}]:{dial_port}")
        } else {
            format!("{dial_host}:{dial_port}")
        };
        let exchange = async {
            let tcp = dialer
                .dial(&dial_host, dial_port)
                .await
                .map_err(|e| fail(&format!("dial tcp {dial}: connect: {}", io_error(&e))))?;
            let name = ServerName::try_from(host.clone()).map_err(|e| fail(&e))?;
            let stream = tokio_rustls::TlsConnector::from(tls)
                .connect(name, tcp)
                .await
                .map_err(|e| fail(&format!("tls: {e}")))?;
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|e| fail(&e))?;
            tokio::spawn(conn);
            let authority = if port == 443 {
                host.clone()
            } else {
                format!("{host}:{port}")
            };
            let req = hyper::Request::post(path)
                .header("host", authority)
                .header("content-type", "application/json")
                .header("accept", "application/json, */*")
                .header("user-agent", "kapi")
                .body(Full::new(Bytes::from(body)))
                .map_err(|e| fail(&e))?;
            let resp = sender.send_request(req).await.map_err(|e| fail(&e))?;
            let status = resp.status();
            let bytes = Limited::new(resp.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| fail(&e))?
                .to_bytes();
            if !status.is_success() {
                let text = String::from_utf8_lossy(&bytes);
                return Err(format!(
                    "an error on the server ({:?}) has prevented the request from succeeding",
                    text.trim()
                ));
            }
            serde_json::from_slice(&bytes).map_err(|e| fail(&e))
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| fail(&"context deadline exceeded"))?
    }

    /// (URL as upstream prints it, TLS host, port, request path, what to dial).
    async fn endpoint(&self) -> Result<(String, String, u16, String, Dial), String> {
        let cx = self.cx.upgrade().ok_or("the server is shutting down")?;
        match &self.target {
            Target::Url(url) => {
                let rest = url
                    .strip_prefix("https://")
                    .ok_or_else(|| format!("invalid URL {url:?}: must use https"))?;
                let (authority, path) = match rest.find('/') {
                    Some(i) => rest.split_at(i),
                    None => (rest, "/"),
                };
                let (host, port) = split_authority(authority)?;
                let path = with_timeout(path);
                let printed = format!("https://{authority}{path}");
                let dial = (cx.egress.control_plane(), host.clone(), port);
                Ok((printed, host, port, path, dial))
            }
            Target::Service {
                namespace,
                name,
                port,
                path,
            } => {
                let host = format!("{name}.{namespace}.svc");
                let path = with_timeout(if path.is_empty() { "/" } else { path });
                let printed = format!("https://{host}:{port}{path}");
                let resolve = kapi_client::service_resolver::resolve_with;
                let ep = resolve(&cx.apis, cx.routing, namespace, name, *port)
                    .await
                    .map_err(|e| format!("Post {printed:?}: {e}"))?;
                let port = u16::try_from(*port).map_err(|e| e.to_string())?;
                let dial = (cx.egress.cluster(), ep.host, ep.port);
                Ok((printed, host, port, path, dial))
            }
        }
    }
}

impl ReviewClient for WebhookClient {
    fn post(&self, review: &Value) -> Result<Value, String> {
        let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
        block_on(self.post_async(body))
    }
}

/// Run `fut` to completion from synchronous code inside (or outside) a runtime.
fn block_on<F>(fut: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(fut))
        }
        _ => std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime for the webhook call")
                    .block_on(fut)
            })
            .join()
            .expect("the webhook call does not panic")
        }),
    }
}

/// `path` with upstream's `timeout` query parameter.
fn with_timeout(path: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}timeout={}s", TIMEOUT.as_secs())
}

fn split_authority(authority: &str) -> Result<(String, u16), String> {
    let bad = || format!("invalid host in URL: {authority:?}");
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None => 443,
        };
        return Ok((host.to_owned(), port));
    }
    match authority.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_owned(), p.parse().map_err(|_| bad())?)),
        None => Ok((authority.to_owned(), 443)),
    }
}

fn io_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        _ => e.to_string(),
    }
}

/// A verifying client config trusting `ca_bundle` (base64 PEM, as the
/// definition carries it), or the system roots when it is empty.
fn tls_config(ca_bundle: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
    } else {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca_bundle)
            .map_err(|e| format!("caBundle: {e}"))?;
        let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut pem.as_slice())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("caBundle: {e}"))?;
        for cert in certs {
            roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
