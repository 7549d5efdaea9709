//! Accept loops serving an axum `Router` over TLS ([`serve_tls`]) or plain
//! TCP ([`serve_plain`]).
//!
//! Per connection: (TLS handshake bounded by [`HANDSHAKE_TIMEOUT`], then
//! [`Coalesced`] so HTTP/2 frames leave in batches) → hyper-util
//! auto builder (HTTP/1.1 or HTTP/2, upgrades enabled; HTTP/1 request heads
//! bounded by [`HEADER_READ_TIMEOUT`]) → [`KeepUnread`] (an HTTP/2 request body
//! left unread is read to its end on a task of its own, `unread.rs`) → the router, wrapped so
//! that every request carries two extensions: `Option<PeerIdentity>` (always
//! present; `Some` only for a verified client certificate) and
//! `axum::extract::ConnectInfo<SocketAddr>`.
//!
//! Shutdown: when the `shutdown` future completes the listener is closed, every
//! connection is told to finish gracefully (in-flight requests complete, idle
//! keep-alives close, HTTP/2 clients get GOAWAY), and the loop waits up to the
//! drain timeout ([`SHUTDOWN_DRAIN_TIMEOUT`] unless [`ConnectionSettings`] says
//! otherwise) before aborting what is left. Accept errors are logged and
//! retried, never fatal.
//!
//! [`ConnectionSettings`] carries the per-connection flags: the HTTP/2 stream
//! limit (`--http2-max-streams-per-connection`), HTTP/1.1 only
//! (`--disable-http2-serving`), and `--goaway-chance`: each HTTP/2 request
//! makes its connection send GOAWAY with that probability (the request and the
//! others in flight finish; the client reconnects, through its load balancer,
//! perhaps to another server). With SNI certificates (`ServingConfigs`) the
//! configuration is chosen once the client hello is read.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::Request;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt as _;

use super::coalesce::Coalesced;
use super::unread::{KeepUnread, Unread};
use super::{PeerIdentity, ServingConfigs};

/// Upper bound for a client to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers (upstream's
/// `ReadHeaderTimeout`): a slow-loris client cannot hold a connection longer.
/// hyper starts the clock when it waits for a request head, so an HTTP/1
/// keep-alive connection idle that long is closed too (clients reconnect).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// Streams one HTTP/2 connection may have open at once: upstream's default
/// (`--http2-max-streams-per-connection` 0 means 100, matching what Go
/// clients assume before the server's settings arrive; hyper's own is 200). A
/// client with more watches than this opens another connection, as client-go does.
pub const HTTP2_MAX_STREAMS: u32 = 100;
/// The most encrypted bytes one TLS connection queues for the socket (rustls's
/// default is 64 KiB). A large response (a LIST of 300,000 objects is 450 MB)
/// then goes out in writes of up to hyper's whole write buffer instead of one
/// per 64 KiB: about a sixth as many `writev` calls, each of which wakes the
/// reader, which cut the server's CPU per such LIST by a fifth to a quarter.
/// The queue only fills while the socket is full (a slow reader), and then
/// holds the response back as the smaller one did.
pub const TLS_SEND_BUFFER: usize = 1 << 20;
/// How long shutdown waits for open connections before aborting them.
pub const SHUTDOWN_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How connections are served once accepted (see the module doc).
#[derive(Debug, Clone, Copy)]
pub struct ConnectionSettings {
    /// Concurrent HTTP/2 streams per connection (0: [`HTTP2_MAX_STREAMS`]).
    pub http2_max_streams: u32,
    /// Serve HTTP/1.1 only.
    pub http1_only: bool,
    /// Probability, per HTTP/2 request, that the connection is sent GOAWAY.
    pub goaway_chance: f64,
    /// How long shutdown waits for open connections before aborting them.
    pub drain_timeout: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            http2_max_streams: 0,
            http1_only: false,
            goaway_chance: 0.0,
            drain_timeout: SHUTDOWN_DRAIN_TIMEOUT,
        }
    }
}

/// A request's handle on its connection: [`GoAway::send`] makes an HTTP/2
/// connection send GOAWAY once (streams in flight finish), as Go's server does
/// for a response with `Connection: close`. In every request's extensions.
#[derive(Clone, Default)]
pub struct GoAway(Arc<tokio::sync::Notify>);

impl GoAway {
    pub fn send(&self) {
        self.0.notify_one();
    }
}

/// Serve `app` over TLS on `listener` until `shutdown` completes.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_tls_with(
        listener,
        tls.into(),
        app,
        shutdown,
        ConnectionSettings::default(),
    )
    .await
}

/// [`serve_tls`] with a certificate per server name and the given connection
/// settings.
pub async fn serve_tls_with(
    listener: TcpListener,
    configs: ServingConfigs,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    settings: ConnectionSettings,
) -> io::Result<()> {
    let configs = Arc::new(configs);
    serve_loop(listener, app, shutdown, settings, move |tcp: TcpStream| {
        let configs = configs.clone();
        async move {
            let handshake = handshake(tcp, configs);
            let mut stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
                .await
                .map_err(|_| {
                    io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out")
                })??;
            stream.get_mut().1.set_buffer_limit(Some(TLS_SEND_BUFFER));
            let chain = stream.get_ref().1.peer_certificates();
            let peer = chain.and_then(|chain| {
                let mut peer = PeerIdentity::from_der(chain.first()?)?;
                peer.chain = chain.iter().map(|c| c.clone().into_owned()).collect();
                Some(peer)
            });
            Ok((Coalesced::new(stream), peer))
        }
    })
    .await
}

/// The TLS handshake, with the configuration chosen by the server name the
/// client asks for (or the address it reached) when there are SNI certificates.
async fn handshake(
    tcp: TcpStream,
    configs: Arc<ServingConfigs>,
) -> io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
    if !configs.has_sni() {
        let acceptor = tokio_rustls::TlsAcceptor::from(configs.default.clone());
        return acceptor.accept(tcp).await;
    }
    let local_ip = tcp.local_addr()?.ip();
    let acceptor = tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), tcp);
    let start = acceptor.await?;
    let config = configs.select(start.client_hello().server_name(), local_ip);
    start.into_stream(config).await
}

/// Serve `app` over plain HTTP on `listener` until `shutdown` completes. Every
/// request carries `Option::<PeerIdentity>::None`.
pub async fn serve_plain(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let settings = ConnectionSettings::default();
    serve_loop(
        listener,
        app,
        shutdown,
        settings,
        |tcp: TcpStream| async move { Ok((tcp, None)) },
    )
    .await
}

/// The accept loop shared by both modes; `handshake` turns a TCP stream into
/// the transport plus the peer identity.
async fn serve_loop<H, Fut, S>(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
    settings: ConnectionSettings,
    handshake: H,
) -> io::Result<()>
where
    H: Fn(TcpStream) -> Fut,
    Fut: Future<Output = io::Result<(S, Option<PeerIdentity>)>> + Send + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, remote)) => {
                    let _ = tcp.set_nodelay(true);
                    let conn = handshake(tcp);
                    let stop = stop_rx.clone();
                    tasks.spawn(connection(conn, remote, app.clone(), stop, settings));
                }
                Err(err) => {
                    tracing::warn!(%err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let drain = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(settings.drain_timeout, drain)
        .await
        .is_err()
    {
        tracing::info!(
            open = tasks.len(),
            "aborting connections still open after drain timeout"
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    Ok(())
}

/// One connection: finish the handshake, then serve HTTP until the client
/// goes away or shutdown is signalled (then gracefully).
async fn connection<Fut, S>(
    handshake: Fut,
    remote: SocketAddr,
    app: Router,
    mut stop: watch::Receiver<bool>,
    settings: ConnectionSettings,
) where
    Fut: Future<Output = io::Result<(S, Option<PeerIdentity>)>>,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (io, peer) = tokio::select! {
        res = handshake => match res {
            Ok(ok) => ok,
            Err(err) => {
                tracing::debug!(%remote, %err, "handshake failed");
                return;
            }
        },
        () = stopped(&mut stop) => return,
    };
    let goaway = GoAway::default();
    let decide = goaway.clone();
    let svc = app.map_request(move |mut req: Request<Unread>| {
        if req.version() == hyper::Version::HTTP_2
            && settings.goaway_chance > 0.0
            && rand::random::<f64>() < settings.goaway_chance
        {
            decide.send();
        }
        req.extensions_mut().insert(decide.clone());
        req.extensions_mut().insert(peer.clone());
        req.extensions_mut().insert(ConnectInfo(remote));
        req
    });
    let mut builder = auto::Builder::new(FirstPollInline);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let streams = match settings.http2_max_streams {
        0 => HTTP2_MAX_STREAMS,
        n => n,
    };
    builder.http2().max_concurrent_streams(streams);
    if settings.http1_only {
        builder = builder.http1_only();
    }
    let conn = builder.serve_connection_with_upgrades(
        TokioIo::new(io),
        TowerToHyperService::new(KeepUnread(svc)),
    );
    tokio::pin!(conn);
    let result = tokio::select! {
        res = conn.as_mut() => res,
        () = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
        () = goaway.0.notified() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                res = conn.as_mut() => res,
                () = stopped(&mut stop) => conn.await,
            }
        }
    };
    if let Err(err) = result {
        tracing::debug!(%remote, %err, "connection ended with error");
    }
}

/// Completes once shutdown is signalled (or the sender is gone). The watch
/// guard is dropped here so callers' futures stay `Send`.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// The executor of a connection's HTTP/2 streams: hyper hands it each
/// stream's future (the request's service call, then sending its response)
/// from inside the connection's task. The future is polled there once, and
/// spawned as a task of its own only if it is not done by then.
///
/// A request answered without waiting (a GET from the watch cache) so costs
/// no task: no allocation of one, no scheduling, and no wake-up handed from
/// the stream's task to the connection's to send the frames it queued. One
/// that waits (a write for its commit, a watch) runs on its own task from its
/// first wait, as every stream did before, so streams of one connection still
/// wait and run apart. A first poll runs only until the future's first wait,
/// and a long body's sending stops at its flow-control window.
///
/// That first poll gets a waker that does nothing: a future polled again
/// must check again whatever it waits for (the contract of `Future::poll`),
/// so the spawned task's first poll, which comes without any wake-up, sees
/// what happened in between and registers the task's own waker.
#[derive(Clone, Copy, Debug, Default)]
struct FirstPollInline;

impl<F> hyper::rt::Executor<F> for FirstPollInline
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, fut: F) {
        let mut fut = Box::pin(fut);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if fut.as_mut().poll(&mut cx).is_pending() {
            tokio::spawn(fut);
        }
    }
}
