//! The HTTPS client webhooks are called with: admission webhooks (one POST of a
//! JSON body to a webhook's `clientConfig` — a `url`, or a `service` resolved to
//! an endpoint address by `service_resolver.rs` — the server certificate
//! verified against the `caBundle`, the system roots without one), and the
//! webhooks and issuers of authentication and authorization, whose connection
//! a kubeconfig file (`kubeconfig.rs`) or a CA describes ([`ClientTls`], with a
//! client certificate and a bearer token when given). Every exchange is bounded
//! by its timeout. One connection per call: webhooks are rare next to the
//! requests they serve (their answers are cached by the callers), and a fresh
//! connection never carries a stale TLS session into a changed CA.
//!
//! Every connection is opened by the call's [`Target::dialer`]: direct unless
//! the egress selector says otherwise (a `service` reached through the
//! `cluster` selection, a `url` through `controlplane`, as upstream's
//! webhook client configuration does).
//!
//! Errors are worded as Go's HTTP client reports them (`Post "<url>": ...`),
//! because upstream's `failed calling webhook` messages embed them.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use kapi_egress::{Dialer, Egress, TcpDialer};
use kapi_registry::apis::Apis;

use crate::service_resolver::Routing;

/// The largest webhook response read (upstream reads at most 3 MiB + slack).
const MAX_RESPONSE: usize = 8 << 20;

/// Where a call goes: the address to connect to, the name the certificate must
/// carry, the URL as Go would print it, and what opens the connection.
#[derive(Clone)]
pub struct Target {
    pub connect: (String, u16),
    pub server_name: String,
    pub path: String,
    pub url: String,
    pub dialer: Arc<dyn Dialer>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("connect", &self.connect)
            .field("server_name", &self.server_name)
            .field("path", &self.path)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// Resolve a `clientConfig` (a `url`, dialled through the `controlplane`
/// egress selection; or a `service` through `apis`, dialled as `routing`
/// says through the `cluster` selection) into a call target.
pub async fn target(
    apis: &Apis,
    routing: Routing,
    egress: &Egress,
    cc: &Value,
) -> Result<Target, String> {
    if let Some(url) = cc.get("url").and_then(Value::as_str) {
        return Ok(parse_url(url)?.via(egress.control_plane()));
    }
    let svc = cc
        .get("service")
        .ok_or("clientConfig has neither url nor service")?;
    let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
    let (ns, name) = (s("namespace"), s("name"));
    let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
    let port = u16::try_from(port).map_err(|_| format!("invalid port {port}"))?;
    let path = match s("path") {
        "" => "/".to_string(),
        p => p.to_string(),
    };
    let host = format!("{name}.{ns}.svc");
    let url = format!("https://{host}:{port}{path}");
    let ep = crate::service_resolver::resolve_with(apis, routing, ns, name, i64::from(port))
        .await
        .map_err(|e| format!("Post \"{url}\": {e}"))?;
    let (ip, target_port) = (ep.host, ep.port);
    Ok(Target {
        connect: (ip, target_port),
        server_name: host,
        path,
        url,
        dialer: egress.cluster(),
    })
}

impl Target {
    /// The target of an `https://` URL (a kubeconfig's `server`, an issuer's
    /// discovery or key set URL).
    pub fn from_url(url: &str) -> Result<Target, String> {
        parse_url(url)
    }

    /// This target with its connections opened by `dialer`.
    pub fn via(mut self, dialer: Arc<dyn Dialer>) -> Target {
        self.dialer = dialer;
        self
    }

    /// This target with the certificate checked for `name` instead of the
    /// URL's host (a kubeconfig's `tls-server-name`).
    pub fn with_server_name(mut self, name: &str) -> Target {
        if !name.is_empty() {
            self.server_name = name.to_string();
        }
        self
    }
}

fn parse_url(url: &str) -> Result<Target, String> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| format!("Post \"{url}\": unsupported protocol scheme"))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let split = authority
        .rsplit_once(':')
        .filter(|_| !authority.ends_with(']'));
    let (host, port) = match split {
        Some((h, p)) => {
            let port = p
                .parse()
                .map_err(|_| format!("parse \"{url}\": invalid port \":{p}\""))?;
            (h, port)
        }
        None => (authority, 443),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    Ok(Target {
        connect: (host.to_string(), port),
        server_name: host.to_string(),
        path,
        url: url.to_string(),
        dialer: Arc::new(TcpDialer),
    })
}

/// How a client verifies the server and, optionally, identifies itself.
#[derive(Clone)]
pub struct ClientTls(Arc<rustls::ClientConfig>);

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Trust the certificates of `ca_pem` (the system's roots when `None`);
    /// present `client` (certificate chain PEM, private key PEM) when given;
    /// with `insecure`, accept any server certificate (a kubeconfig's
    /// `insecure-skip-tls-verify`).
    pub fn new(
        ca_pem: Option<&[u8]>,
        client: Option<(&[u8], &[u8])>,
        insecure: bool,
    ) -> Result<ClientTls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(crate::accept_any::AcceptAnyCert::new(provider))
        } else {
            crate::trust::GoTrust::config(builder, roots(ca_pem)?)?
        };
        let config = match client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = rustls_pemfile::certs(&mut &cert[..])
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("invalid client certificate: {e}"))?;
                if chain.is_empty() {
                    return Err("no client certificate found".into());
                }
                let key = rustls_pemfile::private_key(&mut &key[..])
                    .map_err(|e| format!("invalid client key: {e}"))?
                    .ok_or("no client key found")?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("invalid client certificate: {e}"))?
            }
        };
        Ok(ClientTls(Arc::new(config)))
    }

    /// Trust `ca_bundle` (base64 of PEM, as stored in admission and
    /// conversion webhook configurations), or the system's roots when empty.
    pub fn from_ca_bundle(ca_bundle: &str) -> Result<ClientTls, String> {
        if ca_bundle.is_empty() {
            return ClientTls::new(None, None, false);
        }
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca_bundle)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
        ClientTls::new(Some(&pem), None, false).map_err(|e| format!("invalid caBundle: {e}"))
    }
}

/// The roots in `ca_pem`, or the system's.
fn roots(ca_pem: Option<&[u8]>) -> Result<Vec<CertificateDer<'static>>, String> {
    match ca_pem {
        None => Ok(rustls_native_certs::load_native_certs().certs),
        Some(pem) => {
            let roots = rustls_pemfile::certs(&mut &pem[..])
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("invalid CA certificate: {e}"))?;
            if roots.is_empty() {
                return Err("no valid certificate authority data seen".into());
            }
            Ok(roots)
        }
    }
}

/// POST `body` to `t` (an admission or conversion webhook); the response
/// body on 2xx. `timeout` bounds the call and is passed on as `?timeout=`.
pub async fn post(
    t: &Target,
    ca_bundle: &str,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let secs = timeout.as_secs();
    let sep = if t.path.contains('?') { '&' } else { '?' };
    let path = format!("{}{sep}timeout={secs}s", t.path);
    let shown = format!("{}{sep}timeout={secs}s", t.url);
    let tls = ClientTls::from_ca_bundle(ca_bundle).map_err(|e| format!("Post \"{shown}\": {e}"))?;
    let req = Call {
        method: "POST",
        path: &path,
        body: Some(body),
        bearer: None,
    };
    match tokio::time::timeout(timeout, exchange(t, &tls, req)).await {
        Ok(Ok((status, bytes))) => {
            success(status, bytes).map_err(|e| format!("Post \"{shown}\": {e}"))
        }
        Ok(Err(e)) => Err(format!("Post \"{shown}\": {e}")),
        Err(_) => Err(format!("Post \"{shown}\": context deadline exceeded")),
    }
}

/// One request: the method, the path and query sent, the JSON body, a bearer token.
pub struct Call<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub body: Option<Vec<u8>>,
    pub bearer: Option<&'a str>,
}

/// Send `call` to `t` over `tls`, bounded by `timeout`: the status code and
/// the body, whatever the status. Errors are worded `<Method> "<url>": ...`.
pub async fn send(
    t: &Target,
    tls: &ClientTls,
    call: Call<'_>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let method = call.method.to_ascii_lowercase();
    let shown = match method.as_str() {
        "get" => "Get",
        "put" => "Put",
        _ => "Post",
    };
    let url = &t.url;
    match tokio::time::timeout(timeout, exchange(t, tls, call)).await {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(format!("{shown} \"{url}\": {e}")),
        Err(_) => Err(format!(
            "{shown} \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// The body of a 2xx answer; otherwise Go's message for a status without a Status body.
fn success(status: u16, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if (200..300).contains(&status) {
        return Ok(bytes);
    }
    let text = String::from_utf8_lossy(&bytes);
    Err(format!(
        "the server responded with the status code {status} but did not return more information: {}",
        text.trim()
    ))
}

async fn exchange(t: &Target, tls: &ClientTls, call: Call<'_>) -> Result<(u16, Vec<u8>), String> {
    let name = ServerName::try_from(t.server_name.clone()).map_err(|e| e.to_string())?;
    let tcp = t
        .dialer
        .dial(&t.connect.0, t.connect.1)
        .await
        .map_err(|e| format!("dial tcp {}:{}: {e}", t.connect.0, t.connect.1))?;
    let tls = tokio_rustls::TlsConnector::from(tls.0.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let host = match t.connect.1 {
        443 => t.server_name.clone(),
        p => format!("{}:{p}", t.server_name),
    };
    let mut req = hyper::Request::builder()
        .method(call.method)
        .uri(call.path)
        .header(hyper::header::HOST, host)
        .header(hyper::header::ACCEPT, "application/json, */*");
    if call.body.is_some() {
        req = req.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    if let Some(token) = call.bearer {
        req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = Full::new(Bytes::from(call.body.unwrap_or_default()));
    let req = req.body(body).map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let bytes = Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, bytes.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("https://127.0.0.1:8443/hook?x=1").unwrap();
        assert_eq!(t.connect, ("127.0.0.1".to_string(), 8443));
        assert_eq!(t.path, "/hook?x=1");
        let t = parse_url("https://example.com").unwrap();
        assert_eq!(t.connect, ("example.com".to_string(), 443));
        assert_eq!(t.path, "/");
        let t = parse_url("https://[::1]:9443/a").unwrap();
        assert_eq!(t.connect, ("::1".to_string(), 9443));
        assert!(parse_url("http://example.com").is_err());
    }
}
