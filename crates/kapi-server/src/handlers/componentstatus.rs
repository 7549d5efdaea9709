//! `componentstatuses`: computed on each read by probing the control plane, as
//! upstream's componentstatus REST: the scheduler and the controller manager on
//! their secure ports (`/healthz`, certificates not verified), and each etcd
//! server (`/health`, which must say `"health": "true"`). With the embedded store
//! there is no etcd; the store's own health check stands in as `embedded-store`.
//! A probe that cannot connect or gets a bad status is `False` with the reason
//! as its message (Go's HTTP prober reports no error then); an etcd answer that
//! does not say healthy is `False` with the body as message and the reason as
//! error.
//! The API is deprecated upstream; every answer carries upstream's warning.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::response::Response;
use kapi_machinery::status::ApiError;
use rustls::pki_types::ServerName;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use kapi_client::accept_any::AcceptAnyCert;

use crate::handlers::Ctx;
use crate::server::Server;

const WARNING: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";
const TIMEOUT: Duration = Duration::from_secs(2);
/// Answers longer than this are cut (a health body is a few bytes).
const MAX_BODY: usize = 64 * 1024;

/// Whether `ctx` addresses componentstatuses.
pub fn is_componentstatus(ctx: &Ctx) -> bool {
    ctx.entry.def.group.is_empty() && ctx.entry.def.resource == "componentstatuses"
}

/// The components to probe: name and URL (`None`: the embedded store).
fn components(srv: &Server) -> Vec<(String, Option<String>)> {
    let mut out = vec![
        (
            "controller-manager".to_owned(),
            Some("https://127.0.0.1:10257/healthz".to_owned()),
        ),
        (
            "scheduler".to_owned(),
            Some("https://127.0.0.1:10259/healthz".to_owned()),
        ),
    ];
    match srv.slot.target().strip_prefix("etcd ") {
        Some(servers) => {
            for (i, url) in servers.split(',').filter(|s| !s.is_empty()).enumerate() {
                let url = format!("{}/health", url.trim_end_matches('/'));
                out.push((format!("etcd-{i}"), Some(url)));
            }
        }
        None => out.push(("embedded-store".to_owned(), None)),
    }
    out.sort();
    out
}

/// One ComponentStatus.
async fn status(srv: &Server, name: &str, url: Option<&str>) -> Value {
    let (state, message, error) = match url {
        None => match srv.slot.check(TIMEOUT).await {
            Ok(()) => ("True", "ok".to_owned(), String::new()),
            Err(e) => ("False", String::new(), e),
        },
        // Go's HTTP prober turns a failed request and a bad status into a
        // failure whose message says why, with no error.
        Some(url) => match probe(url).await {
            Err(e) => ("False", e, String::new()),
            Ok((code, _)) if !(200..400).contains(&code) => (
                "False",
                format!("HTTP probe failed with statuscode: {code}"),
                String::new(),
            ),
            Ok((_, body)) if name.starts_with("etcd-") => match etcd_healthy(&body) {
                Ok(()) => ("True", body, String::new()),
                Err(e) => ("False", body, e),
            },
            Ok((_, body)) => ("True", body, String::new()),
        },
    };
    let mut condition = json!({"type": "Healthy", "status": state});
    if !message.is_empty() {
        condition["message"] = message.into();
    }
    if !error.is_empty() {
        condition["error"] = error.into();
    }
    json!({"kind": "ComponentStatus", "apiVersion": "v1",
           "metadata": {"name": name, "creationTimestamp": null},
           "conditions": [condition]})
}

/// etcd's `/health` answer must say it is healthy.
fn etcd_healthy(body: &str) -> Result<(), String> {
    let parsed: Value = serde_json::from_str(body)
        .map_err(|e| format!("Health response was not valid JSON: {e}"))?;
    match parsed.get("health").and_then(Value::as_str) {
        Some("true") => Ok(()),
        _ => Err(format!("Unhealthy health check status: {body}")),
    }
}

/// GET `componentstatuses/{name}`.
pub async fn get(ctx: &Ctx) -> Result<Response, ApiError> {
    let srv = &ctx.srv;
    let Some((name, url)) = components(srv).into_iter().find(|(n, _)| n == ctx.name()) else {
        return Err(ApiError::not_found(("", "componentstatuses"), ctx.name()));
    };
    let obj = status(srv, &name, url.as_deref()).await;
    let mut resp = crate::handlers::get::respond_object(ctx, axum::http::StatusCode::OK, &obj)?;
    warn(&mut resp);
    Ok(resp)
}

/// LIST `componentstatuses`, probing every component at once.
pub async fn list(ctx: &Ctx) -> Result<Response, ApiError> {
    // Selectors apply as to any list (metadata fields only).
    let opts = crate::handlers::list::list_options(ctx)?;
    let srv = ctx.srv.clone();
    let probes = components(&srv).into_iter().map(|(name, url)| {
        let srv = srv.clone();
        async move { status(&srv, &name, url.as_deref()).await }
    });
    let mut items = futures::future::join_all(probes).await;
    items.retain(|i| ctx.entry.store.matches(i, &opts));
    let mut resp = crate::handlers::list::respond_list(ctx, items, Default::default())?;
    warn(&mut resp);
    Ok(resp)
}

fn warn(resp: &mut Response) {
    resp.headers_mut()
        .append("warning", HeaderValue::from_static(WARNING));
}

/// GET `url` (http or https, certificates not verified): status code and body.
async fn probe(url: &str) -> Result<(u16, String), String> {
    let fail = |e: &dyn std::fmt::Display| format!("Get \"{url}\": {e}");
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(fail(&"unsupported protocol scheme"));
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: kapi\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    let exchange = async {
        let tcp = TcpStream::connect(&addr)
            .await
            .map_err(|e| fail(&format!("dial tcp {addr}: connect: {}", connect_error(&e))))?;
        if !tls {
            return exchange(tcp, &request).await.map_err(|e| fail(&e));
        }
        let config = rustls::ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(AcceptAnyCert::new(Arc::new(
                rustls::crypto::ring::default_provider(),
            )))
            .with_no_client_auth();
        let name = ServerName::try_from(host.to_owned()).map_err(|e| fail(&e))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| fail(&e))?;
        exchange(stream, &request).await.map_err(|e| fail(&e))
    };
    tokio::time::timeout(TIMEOUT, exchange).await.map_err(|_| {
        fail(&"context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
    })?
}

fn connect_error(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        _ => e.to_string(),
    }
}

/// Send one HTTP/1.1 request and read the answer until the peer closes.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &str,
) -> Result<(u16, String), String> {
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                raw.extend_from_slice(&buf[..n]);
                if raw.len() > MAX_BODY {
                    break;
                }
            }
            // A TLS peer closing without close_notify still sent its answer.
            Err(_) if !raw.is_empty() => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    parse_response(&raw)
}

/// Status code and body of a raw HTTP/1.1 answer (plain or chunked).
fn parse_response(raw: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("malformed HTTP response")?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or("malformed HTTP status line")?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Ok((code, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse_plain_and_chunked() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(parse_response(plain).unwrap(), (200, "ok".to_owned()));
        let chunked = b"HTTP/1.1 500 Internal\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n3\r\npe!\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (500, "nope!".to_owned()));
        assert!(parse_response(b"garbage").is_err());
    }

    #[test]
    fn etcd_health_body_must_say_true() {
        assert!(etcd_healthy(r#"{"health":"true","reason":""}"#).is_ok());
        assert!(etcd_healthy(r#"{"health":"false"}"#).is_err());
        assert!(etcd_healthy("nope").is_err());
    }

    #[tokio::test]
    async fn refused_connections_read_as_upstream() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let url = format!("https://127.0.0.1:{port}/healthz");
        let err = probe(&url).await.unwrap_err();
        assert_eq!(
            err,
            format!("Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }

    #[tokio::test]
    async fn plain_http_probe_reads_the_body() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = conn.read(&mut buf).await.unwrap();
            let body = r#"{"health":"true","reason":""}"#;
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            conn.write_all(answer.as_bytes()).await.unwrap();
        });
        let (code, body) = probe(&format!("http://127.0.0.1:{port}/health"))
            .await
            .unwrap();
        assert_eq!(code, 200);
        assert!(etcd_healthy(&body).is_ok(), "{body}");
    }
}
