//! `HTTPConnect`: every dial opens a new connection to the proxy (TCP, TLS
//! with the configured client certificate, or a unix socket), asks it for
//! `CONNECT host:port HTTP/1.1` (with upstream's `Host: 127.0.0.1`), and
//! hands the connection on once the proxy answers 200; from then on it
//! carries the tunnelled bytes.
//!
//! Invariants: the proxy's header is read at most 1 MiB (Go's
//! `DefaultMaxHeaderBytes`, which upstream applies); bytes the proxy sent
//! after its header are the tunnel's first bytes and are delivered first
//! ([`Prefixed`]) — upstream refuses such a connection instead, which is
//! safe only because TLS clients speak first. An `http://` proxy URL is
//! dialled without TLS (upstream validates such a file, then fails at start
//! for want of a TLS configuration).

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::config::TcpTransport;
use crate::{BoxIo, Dialer};

/// The most of the proxy's answer read before its end.
const MAX_HEADER: usize = 1 << 20;

/// Where the proxy listens.
#[derive(Clone)]
enum Proxy {
    Tcp {
        host: String,
        port: u16,
        tls: Option<Arc<rustls::ClientConfig>>,
    },
    Uds(PathBuf),
}

/// An HTTP CONNECT proxy as a [`Dialer`].
#[derive(Clone)]
pub struct HttpConnect {
    proxy: Proxy,
}

impl HttpConnect {
    /// A proxy on the unix socket `path`.
    pub fn uds(path: &str) -> HttpConnect {
        HttpConnect {
            proxy: Proxy::Uds(PathBuf::from(path)),
        }
    }

    /// A proxy at a `tcp` transport's `url` (TLS for `https://`, with its
    /// `tlsConfig`: the CA bundle, else the system roots, and the client
    /// certificate); the files are read now.
    pub fn tcp(tcp: &TcpTransport) -> Result<HttpConnect, String> {
        let (rest, https) = match tcp.url.strip_prefix("https://") {
            Some(rest) => (rest, true),
            None => (tcp.url.strip_prefix("http://").unwrap_or(&tcp.url), false),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = split_host_port(authority, if https { 443 } else { 80 })
            .ok_or_else(|| format!("invalid proxy server url {:?}", tcp.url))?;
        let tls = match (&tcp.tls_config, https) {
            (Some(t), true) => Some(client_tls(&t.ca_bundle, &t.client_cert, &t.client_key)?),
            (None, true) => return Err("TLSConfig must be present when using HTTPS".into()),
            (_, false) => None,
        };
        Ok(HttpConnect {
            proxy: Proxy::Tcp { host, port, tls },
        })
    }

    /// The proxy's address as upstream's messages name it.
    fn address(&self) -> String {
        match &self.proxy {
            Proxy::Tcp { host, port, .. } => join_host_port(host, *port),
            Proxy::Uds(p) => p.display().to_string(),
        }
    }

    async fn open(&self) -> io::Result<BoxIo> {
        match &self.proxy {
            Proxy::Uds(path) => {
                let s = tokio::net::UnixStream::connect(path).await.map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("dial unix {}: connect: {e}", path.display()),
                    )
                })?;
                Ok(Box::new(s))
            }
            Proxy::Tcp { host, port, tls } => {
                let addr = join_host_port(host, *port);
                let tcp = tokio::net::TcpStream::connect((host.as_str(), *port))
                    .await
                    .map_err(|e| {
                        io::Error::new(e.kind(), format!("dial tcp {addr}: connect: {e}"))
                    })?;
                let _ = tcp.set_nodelay(true);
                let Some(tls) = tls else {
                    return Ok(Box::new(tcp));
                };
                let name = ServerName::try_from(host.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let s = tokio_rustls::TlsConnector::from(tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| io::Error::new(e.kind(), format!("tls: {e}")))?;
                Ok(Box::new(s))
            }
        }
    }
}

#[async_trait::async_trait]
impl Dialer for HttpConnect {
    async fn dial(&self, host: &str, port: u16) -> io::Result<BoxIo> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let addr = join_host_port(host, port);
        let mut conn = self.open().await?;
        let request = format!("CONNECT {addr} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        conn.write_all(request.as_bytes()).await?;
        let proxy = self.address();
        let (head, rest) = read_head(&mut conn).await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "reading HTTP response from CONNECT to {addr} via proxy {proxy} failed: {e}"
                ),
            )
        })?;
        let (code, status) = status_line(&head).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "reading HTTP response from CONNECT to {addr} via proxy {proxy} failed: {e}"
                ),
            )
        })?;
        if code != 200 {
            return Err(io::Error::other(format!(
                "proxy error from {proxy} while dialing {addr}, code {code}: {status}"
            )));
        }
        tracing::debug!(%addr, %proxy, "tunnelled through HTTP CONNECT");
        if rest.is_empty() {
            return Ok(conn);
        }
        Ok(Box::new(Prefixed {
            prefix: rest,
            at: 0,
            inner: conn,
        }))
    }
}

/// Read the proxy's answer up to its blank line: the header, and what followed it.
async fn read_head(conn: &mut BoxIo) -> io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = find_blank_line(&buf) {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            return Ok((String::from_utf8_lossy(&buf).into_owned(), rest));
        }
        if buf.len() > MAX_HEADER {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "header too long",
            ));
        }
        let n = conn.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "unexpected EOF",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find_blank_line(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// The code and the status text (`200 Connection established`) of `HTTP/1.x <code> <reason>`.
fn status_line(head: &str) -> Result<(u16, String), String> {
    let line = head.lines().next().unwrap_or_default();
    let (proto, status) = line
        .split_once(' ')
        .ok_or_else(|| format!("malformed HTTP response {line:?}"))?;
    if !proto.starts_with("HTTP/") {
        return Err(format!("malformed HTTP response {line:?}"));
    }
    let status = status.trim_start().to_string();
    let code = status
        .get(..3)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("malformed HTTP status code {status:?}"))?;
    Ok((code, status))
}

/// `host:port`, bracketing IPv6 hosts, as Go's `net.JoinHostPort`.
pub(crate) fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn split_host_port(authority: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return Some((host.to_string(), port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() => Some((host.to_string(), port.parse().ok()?)),
        Some(_) => None,
        None if !authority.is_empty() => Some((authority.to_string(), default_port)),
        None => None,
    }
}

/// TLS to the proxy: trust `ca_bundle` (a PEM file; the system roots when
/// empty) and present the client certificate.
fn client_tls(ca_bundle: &str, cert: &str, key: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    let read =
        |p: &str| std::fs::read(p).map_err(|e| format!("failed to read cert file {p}, got {e}"));
    let mut roots = rustls::RootCertStore::empty();
    if ca_bundle.is_empty() {
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
    } else {
        let pem = read(ca_bundle)?;
        for c in rustls_pemfile::certs(&mut &pem[..]) {
            let c = c.map_err(|e| format!("failed to append CA cert to the cert pool: {e}"))?;
            roots
                .add(c)
                .map_err(|e| format!("failed to append CA cert to the cert pool: {e}"))?;
        }
        if roots.is_empty() {
            return Err("failed to append CA cert to the cert pool".into());
        }
    }
    let pair_err = |e: String| format!("failed to read key pair {cert} & {key}, got {e}");
    let cert_pem = std::fs::read(cert).map_err(|e| pair_err(e.to_string()))?;
    let key_pem = std::fs::read(key).map_err(|e| pair_err(e.to_string()))?;
    let chain = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pair_err(e.to_string()))?;
    if chain.is_empty() {
        return Err(pair_err(
            "tls: failed to find any PEM data in certificate input".into(),
        ));
    }
    let key = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| pair_err(e.to_string()))?
        .ok_or_else(|| pair_err("tls: failed to find any PEM data in key input".into()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| pair_err(e.to_string()))?;
    Ok(Arc::new(config))
}

/// A stream whose first bytes were already read from it.
struct Prefixed {
    prefix: Vec<u8>,
    at: usize,
    inner: BoxIo,
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = buf.remaining().min(self.prefix.len() - self.at);
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "connect_tests.rs"]
mod tests;
