//! Lean readers: a TLS connection of their own (the kubeconfig's CA and client
//! certificate, through kube-rs's rustls configuration), HTTP/1.1 requests
//! written by hand, and bodies decoded in place, in the one task that reads
//! the socket. Used by `watch`'s watchers and by `list`'s whole LISTs when the
//! kubeconfig has a client certificate (`--kube-client` opts out).
//!
//! Why: kube-rs's hyper client runs each connection as two tasks (the
//! connection, and the body's reader behind a channel), so every event or body
//! frame wakes two tasks, often on two threads, and copies the plaintext once
//! more. On cores shared with the server, 1,000 such watchers took more CPU
//! than the server they measured, and a 450 MB LIST's client took as much CPU
//! as the server did to send it.

use std::sync::Arc;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
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

/// One kept-alive HTTP/1.1 connection to the server.
pub struct Conn {
    io: TlsStream<TcpStream>,
    authority: String,
    /// What the connection was opened from, to open it again.
    config: kube::Config,
    /// A response has been read on this connection (it is being reused).
    reused: bool,
}

/// A kept-alive connection's end before any of the response.
const CLOSED: &str = "the connection closed before the response head";

/// Whether a read failed because the peer had closed the connection.
fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe
    )
}

/// How a response's body is delimited.
enum Framing {
    Chunked,
    Length(usize),
}

impl Conn {
    /// Connect and handshake. Client certificates only ([`can_open`]).
    pub async fn open(config: &kube::Config) -> Result<Conn, String> {
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
        let name =
            rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
        let io = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Conn {
            io,
            authority: format!("{host}:{port}"),
            config: config.clone(),
            reused: false,
        })
    }

    /// Send `GET path` and read the response head: the status, how the body is
    /// delimited, and whatever of the body came with the head.
    async fn request(
        &mut self,
        path: &str,
        accept: &str,
    ) -> Result<(u16, Framing, Vec<u8>), String> {
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: {accept}\r\nUser-Agent: kapi-bench\r\n\r\n",
            self.authority
        );
        let sent = match self.io.write_all(req.as_bytes()).await {
            Ok(()) => self.io.flush().await,
            Err(e) => Err(e),
        };
        match sent {
            Err(e) if closed(&e) => return Err(CLOSED.into()),
            Err(e) => return Err(e.to_string()),
            Ok(()) => {}
        }
        let mut raw = Vec::with_capacity(16 * 1024);
        let end = loop {
            if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut block = [0u8; 8192];
            let n = match self.io.read(&mut block).await {
                Ok(n) => n,
                // Servers drop idle connections without TLS's close_notify.
                Err(e) if raw.is_empty() && closed(&e) => 0,
                Err(e) => return Err(e.to_string()),
            };
            if n == 0 {
                return Err(CLOSED.into());
            }
            raw.extend_from_slice(&block[..n]);
        };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        raw.drain(..end);
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.strip_prefix("http/1.1 "))
            .and_then(|l| l.get(..3))
            .and_then(|c| c.parse().ok())
            .ok_or("not an HTTP/1.1 response")?;
        let mut framing = None;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            match (name.trim(), value.trim()) {
                ("transfer-encoding", v) if v.contains("chunked") => {
                    framing = Some(Framing::Chunked)
                }
                ("content-length", v) if framing.is_none() => {
                    let n = v.parse().map_err(|_| "a bad content-length")?;
                    framing = Some(Framing::Length(n));
                }
                _ => {}
            }
        }
        let framing = framing.ok_or("a response without a length and not chunked")?;
        Ok((status, framing, raw))
    }

    /// `GET path`, its body read to the end and counted, not kept: the status
    /// and the body's length. The connection is ready for the next request.
    pub async fn drain(&mut self, path: &str, accept: &str) -> Result<(u16, usize), String> {
        let (status, framing, raw) = match self.request(path, accept).await {
            Ok(head) => head,
            // A kept-alive connection the server closed while it was idle (its
            // time-out for the next request): the request cannot have been
            // acted on, so it is sent again on a new connection, as HTTP
            // clients do.
            Err(e) if self.reused && e == CLOSED => {
                *self = Conn::open(&self.config).await?;
                self.request(path, accept).await?
            }
            Err(e) => return Err(e),
        };
        self.reused = true;
        let n = match framing {
            Framing::Chunked => {
                let mut body = ChunkedBody::new(&mut self.io, raw);
                body.drain().await.map_err(|e| e.to_string())?
            }
            Framing::Length(len) => drain_length(&mut self.io, raw.len(), len)
                .await
                .map_err(|e| e.to_string())?,
        };
        Ok((status, n))
    }
}

/// Read the rest of a body of `len` bytes, of which `got` came with the head,
/// without copying it anywhere; nothing past the body is taken.
async fn drain_length<R: AsyncBufRead + Unpin>(
    io: &mut R,
    mut got: usize,
    len: usize,
) -> std::io::Result<usize> {
    while got < len {
        let buffered = io.fill_buf().await?;
        if buffered.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let n = buffered.len().min(len - got);
        io.consume(n);
        got += n;
    }
    Ok(got)
}

/// GET `path` (a watch) on a connection of its own; the response must be 200
/// and chunked.
pub async fn open_watch(config: &kube::Config, path: &str) -> Result<WatchBody, String> {
    let mut conn = Conn::open(config).await?;
    let (status, framing, raw) = conn.request(path, "application/json").await?;
    if status != 200 {
        return Err(format!("watch answered {status}"));
    }
    if !matches!(framing, Framing::Chunked) {
        return Err("the watch response is not chunked".into());
    }
    Ok(ChunkedBody::new(conn.io, raw))
}

/// An HTTP/1.1 chunked body, decoded as it is read: straight from the TLS
/// stream's own buffer of decrypted bytes (`fill_buf`), so nothing is copied
/// but what the caller keeps.
pub struct ChunkedBody<R> {
    io: R,
    /// Body bytes read with the response head, decoded first.
    early: Vec<u8>,
    /// The chunk framing read so far.
    decoder: Decoder,
}

/// The chunked framing, fed any split of the body.
#[derive(Default)]
struct Decoder {
    /// Data bytes left in the current chunk.
    left: usize,
    /// A line (chunk size, data terminator or trailer) read in part.
    line: Vec<u8>,
    /// The next line ends a chunk's data (it is empty).
    after_data: bool,
    /// The last chunk was read; the trailer section is being read.
    trailer: bool,
    done: bool,
}

impl Decoder {
    /// Hand the data in `input` to `sink`; returns the bytes used (all of
    /// them unless the body ended inside `input`).
    fn decode(&mut self, input: &[u8], sink: &mut dyn FnMut(&[u8])) -> usize {
        let mut i = 0;
        while i < input.len() && !self.done {
            if self.left > 0 {
                let n = self.left.min(input.len() - i);
                sink(&input[i..i + n]);
                i += n;
                self.left -= n;
                self.after_data = self.left == 0;
                continue;
            }
            match input[i..].iter().position(|b| *b == b'\n') {
                None => {
                    self.line.extend_from_slice(&input[i..]);
                    i = input.len();
                }
                Some(nl) => {
                    self.line.extend_from_slice(&input[i..i + nl]);
                    i += nl + 1;
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    self.on_line(&line);
                    line.clear();
                    self.line = line;
                }
            }
        }
        i
    }

    fn on_line(&mut self, line: &[u8]) {
        if self.after_data {
            self.after_data = false;
            // Anything but the empty line after a chunk's data is broken framing.
            self.done = !line.is_empty();
            return;
        }
        if self.trailer {
            // Trailer fields are skipped; an empty line ends the body.
            self.done = line.is_empty();
            return;
        }
        let hex = line.split(|b| *b == b';').next().unwrap_or_default();
        let size = std::str::from_utf8(hex)
            .ok()
            .and_then(|h| usize::from_str_radix(h.trim(), 16).ok());
        match size {
            Some(0) => self.trailer = true,
            None => self.done = true,
            Some(n) => self.left = n,
        }
    }
}

impl<R: AsyncBufRead + Unpin> ChunkedBody<R> {
    /// A body read from `io`, of which `early` came with the response head.
    pub fn new(io: R, early: Vec<u8>) -> Self {
        ChunkedBody {
            io,
            early,
            decoder: Decoder::default(),
        }
    }

    /// Decode what `io` has buffered (reading the socket if nothing is),
    /// handing the data to `sink`; false at the end of the stream.
    async fn step(&mut self, sink: &mut (dyn FnMut(&[u8]) + Send)) -> std::io::Result<bool> {
        if !self.early.is_empty() {
            let early = std::mem::take(&mut self.early);
            self.decoder.decode(&early, sink);
            return Ok(true);
        }
        let input = self.io.fill_buf().await?;
        if input.is_empty() {
            return Ok(false);
        }
        let used = self.decoder.decode(input, sink);
        self.io.consume(used);
        Ok(true)
    }

    /// Append the body bytes decodable now to `out`, waiting for the socket if
    /// there are none yet; false once the body (or the connection) has ended.
    pub async fn read_into(&mut self, out: &mut Vec<u8>) -> std::io::Result<bool> {
        let before = out.len();
        while out.len() == before && !self.decoder.done {
            if !self.step(&mut |data| out.extend_from_slice(data)).await? {
                self.decoder.done = true;
            }
        }
        Ok(out.len() > before || !self.decoder.done)
    }

    /// Read the body to its end (its trailer section included, so the
    /// connection can carry the next request), counting the data bytes
    /// without copying them anywhere.
    pub async fn drain(&mut self) -> std::io::Result<usize> {
        let mut total = 0;
        while !self.decoder.done {
            if !self.step(&mut |data| total += data.len()).await? {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The read side of a pipe whose writer sends `bytes` one at a time (every
    /// split a reader can see), and the writer's task.
    fn byte_by_byte(bytes: Vec<u8>) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<()>) {
        let (mut tx, rx) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for byte in bytes {
                tx.write_all(&[byte]).await.unwrap();
            }
        });
        (rx, writer)
    }

    /// Every split of a chunked body into reads decodes to the same bytes.
    #[tokio::test]
    async fn a_chunked_body_decodes_the_same_however_it_is_split() {
        let wire = b"5\r\nhello\r\n1;ext=1\r\n \r\n6\r\nworld\n\r\n0\r\n\r\n";
        for cut in 0..wire.len() {
            let (a, b) = wire.split_at(cut);
            let (rx, writer) = byte_by_byte(b.to_vec());
            let mut body = ChunkedBody::new(tokio::io::BufReader::with_capacity(3, rx), a.to_vec());
            let mut out = Vec::new();
            while body.read_into(&mut out).await.unwrap() {}
            writer.await.unwrap();
            assert_eq!(out, b"hello world\n", "cut at {cut}");
        }
    }

    /// Draining counts the data bytes, reads through the trailer section (so
    /// the connection is at the next response), and fails on a cut body.
    #[tokio::test]
    async fn a_drained_body_counts_its_data_and_ends_after_the_trailers() {
        let wire = b"5\r\nhello\r\n7;x=y\r\n world\n\r\n0\r\nX-T: 1\r\n\r\n";
        for cut in 0..wire.len() {
            let (a, b) = wire.split_at(cut);
            let (rx, writer) = byte_by_byte([b, b"NEXT"].concat());
            let mut body = ChunkedBody::new(tokio::io::BufReader::with_capacity(5, rx), a.to_vec());
            assert_eq!(body.drain().await.unwrap(), 12, "cut at {cut}");
            writer.await.unwrap();
            let mut after = Vec::new();
            body.io.read_to_end(&mut after).await.unwrap();
            assert_eq!(
                after, b"NEXT",
                "nothing past the body is taken (cut at {cut})"
            );
        }
        let (tx, rx) = tokio::io::duplex(64);
        drop(tx);
        let mut cut = ChunkedBody::new(tokio::io::BufReader::new(rx), b"5\r\nhel".to_vec());
        assert!(cut.drain().await.is_err(), "a body cut short is an error");
    }

    /// A body with a length is read to that length and no further, and a
    /// connection that ends before it is an error.
    #[tokio::test]
    async fn a_body_with_a_length_is_read_to_its_end_and_no_further() {
        let (rx, writer) = byte_by_byte(b"world!NEXT".to_vec());
        let mut io = tokio::io::BufReader::with_capacity(4, rx);
        // 5 bytes came with the head; 6 more make the body.
        assert_eq!(drain_length(&mut io, 5, 11).await.unwrap(), 11);
        writer.await.unwrap();
        let mut after = Vec::new();
        io.read_to_end(&mut after).await.unwrap();
        assert_eq!(after, b"NEXT");
        let (rx, writer) = byte_by_byte(b"wor".to_vec());
        let mut cut = tokio::io::BufReader::new(rx);
        writer.await.unwrap();
        assert!(drain_length(&mut cut, 5, 11).await.is_err());
    }
}
