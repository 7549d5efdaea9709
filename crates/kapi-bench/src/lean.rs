//! A lean reader of one watch (`watch`'s default with a client certificate): its own TLS
//! connection (the kubeconfig's CA and client certificate, through kube-rs's
//! rustls configuration), one HTTP/1.1 GET written by hand, and the chunked
//! body decoded in place, in the one task that reads the socket. The default
//! reader, kube-rs's hyper client, runs each connection as two tasks (the
//! connection, and the body's reader behind a channel), so every event wakes
//! two tasks, often on two threads: on cores shared with the server, 1,000 such
//! readers take more CPU than the server they measure.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The body of a watch response being read.
pub type WatchBody = ChunkedBody<TlsStream<TcpStream>>;

/// Whether a lean reader can authenticate as `config` says: a client
/// certificate, and no bearer token, exec plugin or other credential that
/// kube-rs's client would add to each request.
pub fn can_open(config: &kube::Config) -> bool {
    let auth = &config.auth_info;
    let cert = auth.client_certificate.is_some() || auth.client_certificate_data.is_some();
    let other = auth.token.is_some()
        || auth.token_file.is_some()
        || auth.exec.is_some()
        || auth.auth_provider.is_some()
        || auth.username.is_some();
    cert && !other
}

/// GET `path` on a connection of its own; the response must be 200 and chunked.
/// Client certificates only ([`can_open`]).
pub async fn open_watch(config: &kube::Config, path: &str) -> Result<WatchBody, String> {
    use kube::client::ConfigExt as _;
    if !can_open(config) {
        return Err("lean readers authenticate with client certificates only".into());
    }
    let tls = config.rustls_client_config().map_err(|e| e.to_string())?;
    let url = &config.cluster_url;
    let host = url.host().ok_or("the server URL has no host")?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url.port_u16().unwrap_or(443);
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
    let mut io = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: application/json\r\nUser-Agent: kapi-bench\r\n\r\n"
    );
    io.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    io.flush().await.map_err(|e| e.to_string())?;
    // The head, then whatever of the body came with it.
    let mut raw = Vec::with_capacity(16 * 1024);
    let end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut block = [0u8; 8192];
        let n = io.read(&mut block).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before the response head".into());
        }
        raw.extend_from_slice(&block[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200") {
        let line = head.lines().next().unwrap_or_default().to_owned();
        return Err(format!("watch answered {line}"));
    }
    if !head.contains("transfer-encoding: chunked") {
        return Err("the watch response is not chunked".into());
    }
    raw.drain(..end);
    Ok(ChunkedBody::new(io, raw))
}

/// An HTTP/1.1 chunked body, decoded as it is read.
pub struct ChunkedBody<R> {
    io: R,
    /// Read, not yet decoded.
    raw: Vec<u8>,
    /// Data bytes left in the current chunk.
    left: usize,
    /// The CRLF after a chunk's data is still to come.
    crlf: bool,
    done: bool,
}

impl<R: AsyncRead + Unpin> ChunkedBody<R> {
    pub fn new(io: R, raw: Vec<u8>) -> Self {
        ChunkedBody {
            io,
            raw,
            left: 0,
            crlf: false,
            done: false,
        }
    }

    /// Append the body bytes decodable now to `out`, waiting for the socket if
    /// there are none yet; false once the body (or the connection) has ended.
    pub async fn read_into(&mut self, out: &mut Vec<u8>) -> std::io::Result<bool> {
        let before = out.len();
        self.decode(out);
        while out.len() == before && !self.done {
            let mut block = [0u8; 16 * 1024];
            let n = self.io.read(&mut block).await?;
            if n == 0 {
                self.done = true;
                break;
            }
            self.raw.extend_from_slice(&block[..n]);
            self.decode(out);
        }
        Ok(out.len() > before || !self.done)
    }

    fn decode(&mut self, out: &mut Vec<u8>) {
        let mut i = 0;
        while !self.done {
            if self.left > 0 {
                let n = self.left.min(self.raw.len() - i);
                out.extend_from_slice(&self.raw[i..i + n]);
                i += n;
                self.left -= n;
                if self.left > 0 {
                    break;
                }
                self.crlf = true;
            }
            if self.crlf {
                if self.raw.len() - i < 2 {
                    break;
                }
                i += 2;
                self.crlf = false;
            }
            let Some(nl) = self.raw[i..].windows(2).position(|w| w == b"\r\n") else {
                break;
            };
            let line = &self.raw[i..i + nl];
            let hex = line.split(|b| *b == b';').next().unwrap_or_default();
            let size = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| usize::from_str_radix(h.trim(), 16).ok());
            i += nl + 2;
            match size {
                Some(0) | None => self.done = true,
                Some(n) => self.left = n,
            }
        }
        self.raw.drain(..i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of a chunked body into reads decodes to the same bytes.
    #[tokio::test]
    async fn a_chunked_body_decodes_the_same_however_it_is_split() {
        let wire = b"5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld\n\r\n0\r\n\r\n";
        for cut in 0..wire.len() {
            let (a, b) = wire.split_at(cut);
            let (mut tx, rx) = tokio::io::duplex(64);
            let rest = b.to_vec();
            let writer = tokio::spawn(async move {
                for byte in rest {
                    tx.write_all(&[byte]).await.unwrap();
                }
            });
            let mut body = ChunkedBody::new(rx, a.to_vec());
            let mut out = Vec::new();
            while body.read_into(&mut out).await.unwrap() {}
            writer.await.unwrap();
            assert_eq!(out, b"hello world\n", "cut at {cut}");
        }
    }
}
