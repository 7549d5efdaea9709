//! The HTTPS client admission webhooks are called with: one POST of a JSON body
//! to a webhook's `clientConfig` (a `url`, or a `service` resolved to an endpoint
//! address by `service_resolver.rs`), the server certificate verified against the
//! `caBundle` (the system roots without one), the whole exchange bounded by the
//! webhook's timeout. One connection per call: webhooks are rare next to the
//! requests they admit, and a fresh connection never carries a stale TLS session
//! into a changed `caBundle`.
//!
//! Errors are worded as Go's HTTP client reports them (`Post "<url>": ...`),
//! because upstream's `failed calling webhook` messages embed them.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;

use kapi_registry::apis::Apis;

use crate::service_resolver::Routing;

/// The largest webhook response read (upstream reads at most 3 MiB + slack).
const MAX_RESPONSE: usize = 8 << 20;

/// Where a call goes: the address to connect to, the name the certificate must
/// carry, and the URL as Go would print it.
pub struct Target {
    pub connect: (String, u16),
    pub server_name: String,
    pub path: String,
    pub url: String,
}

/// Resolve a `clientConfig` (a `url`, or a `service` through `apis`, dialled
/// as `routing` says) into a call target.
pub async fn target(apis: &Apis, routing: Routing, cc: &Value) -> Result<Target, String> {
    if let Some(url) = cc.get("url").and_then(Value::as_str) {
        return parse_url(url);
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
    })
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
    })
}

/// TLS settings trusting `ca_bundle` (base64 of PEM, as stored), or the
/// system's roots when it is empty.
fn tls_config(ca_bundle: &str) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
    } else {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(ca_bundle)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
        for c in rustls_pemfile::certs(&mut pem.as_slice()) {
            let c = c.map_err(|e| format!("invalid caBundle: {e}"))?;
            roots.add(c).map_err(|e| format!("invalid caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// POST `body` to `t`; the response body on 2xx. `timeout` bounds the call.
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
    let call = call(t, ca_bundle, &path, body);
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => Err(format!("Post \"{shown}\": {e}")),
        Err(_) => Err(format!("Post \"{shown}\": context deadline exceeded")),
    }
}

async fn call(t: &Target, ca_bundle: &str, path: &str, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let config = tls_config(ca_bundle)?;
    let name = ServerName::try_from(t.server_name.clone()).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::connect((t.connect.0.as_str(), t.connect.1))
        .await
        .map_err(|e| format!("dial tcp {}:{}: {e}", t.connect.0, t.connect.1))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
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
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, host)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        return Err(format!(
            "the server responded with the status code {} but did not return more information: {}",
            status.as_u16(),
            text.trim()
        ));
    }
    Ok(bytes.to_vec())
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
