//! Accept loops serving an axum `Router` over TLS ([`serve_tls`]) or plain
//! TCP ([`serve_plain`]).
//!
//! Per connection: (TLS handshake bounded by [`HANDSHAKE_TIMEOUT`], then
//! [`Coalesced`] so HTTP/2 frames leave in batches) → hyper-util
//! auto builder (HTTP/1.1 or HTTP/2, upgrades enabled; HTTP/1 request heads
//! bounded by [`HEADER_READ_TIMEOUT`]) → the router, wrapped so
//! that every request carries two extensions: `Option<PeerIdentity>` (always
//! present; `Some` only for a verified client certificate) and
//! `axum::extract::ConnectInfo<SocketAddr>`.
//!
//! Shutdown: when the `shutdown` future completes the listener is closed, every
//! connection is told to finish gracefully (in-flight requests complete, idle
//! keep-alives close), and the loop waits up to [`SHUTDOWN_DRAIN_TIMEOUT`] before
//! aborting what is left (long watches). Accept errors are logged and retried,
//! never fatal.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt as _;

use super::coalesce::Coalesced;
use super::PeerIdentity;

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

/// Serve `app` over TLS on `listener` until `shutdown` completes.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    serve_loop(listener, app, shutdown, move |tcp: TcpStream| {
        let acceptor = acceptor.clone();
        async move {
            let mut stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
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

/// Serve `app` over plain HTTP on `listener` until `shutdown` completes. Every
/// request carries `Option::<PeerIdentity>::None`.
pub async fn serve_plain(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_loop(listener, app, shutdown, |tcp: TcpStream| async move {
        Ok((tcp, None))
    })
    .await
}

/// The accept loop shared by both modes; `handshake` turns a TCP stream into
/// the transport plus the peer identity.
async fn serve_loop<H, Fut, S>(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
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
                    tasks.spawn(connection(conn, remote, app.clone(), stop_rx.clone()));
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
    if tokio::time::timeout(SHUTDOWN_DRAIN_TIMEOUT, drain)
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
    let svc = app.map_request(move |mut req: Request<Incoming>| {
        req.extensions_mut().insert(peer.clone());
        req.extensions_mut().insert(ConnectInfo(remote));
        req
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().max_concurrent_streams(HTTP2_MAX_STREAMS);
    let conn =
        builder.serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(svc));
    tokio::pin!(conn);
    let result = tokio::select! {
        res = conn.as_mut() => res,
        () = stopped(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.await
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
