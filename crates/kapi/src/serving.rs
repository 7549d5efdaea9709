//! The secure port as the serving flags describe it — the socket
//! (`--bind-address`, `--secure-port`, `--permit-address-sharing`,
//! `--permit-port-sharing`: [`bind`]), TLS (`--tls-min-version`,
//! `--tls-cipher-suites`, `--tls-sni-cert-key`), connections
//! (`--http2-max-streams-per-connection`, `--disable-http2-serving`,
//! `--goaway-chance`) — and graceful termination on SIGTERM/SIGINT
//! ([`listener_closes`]), in kube-apiserver's order:
//!
//! 1. the signal: `/readyz` fails from now on, everything is still served;
//! 2. `--shutdown-delay-duration` later the server stops accepting requests:
//!    open watches end cleanly, new requests are refused (429 + Retry-After
//!    under `--shutdown-send-retry-after`, which also keeps the listener open
//!    until the requests in flight are done, at most `--request-timeout`);
//! 3. the listener closes; connections finish what they carry and close, for
//!    at most `--request-timeout` plus `--shutdown-watch-termination-grace-period`.
//!
//! Nothing a client was told succeeded is lost: a write is answered only after
//! storage made it durable, and in-flight requests run to their answer.

use std::path::Path;
use std::time::Duration;

use kapi_http::lifecycle::Lifecycle;
use kapi_server::tls::{self, ConnectionSettings, NamedCert, ServingConfigs, TlsSettings};
use tokio::net::{TcpListener, TcpSocket};

use crate::serve::ServeArgs;

/// The TLS configurations of the secure port for the serving pair
/// `cert`/`key`, asking for client certificates signed by `client_cas`.
pub fn tls_configs(
    a: &ServeArgs,
    cert: &str,
    key: &str,
    client_cas: &[String],
) -> Result<ServingConfigs, String> {
    let mut settings: TlsSettings = a.tls.clone();
    settings.http1_only = a.disable_http2_serving;
    for name in &settings.unavailable {
        tracing::warn!(
            "cipher suite {name} (--tls-cipher-suites) is not implemented by kapi's TLS library; \
             it is not offered"
        );
    }
    for (cert_file, key_file, names) in &a.tls_sni_cert_key {
        settings.sni.push(NamedCert {
            cert_pem: read(cert_file)?,
            key_pem: read(key_file)?,
            names: names.clone(),
        });
    }
    tls::serving_configs(cert, key, client_cas, &settings).map_err(|e| e.to_string())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| {
        format!(
            "failed to load SNI cert and key: open {}: {e}",
            path.display()
        )
    })
}

/// How connections are served.
pub fn connection_settings(a: &ServeArgs) -> ConnectionSettings {
    ConnectionSettings {
        http2_max_streams: a.http2_max_streams_per_connection,
        http1_only: a.disable_http2_serving,
        goaway_chance: if a.disable_http2_serving {
            0.0
        } else {
            a.goaway_chance
        },
        drain_timeout: a.request_timeout + a.shutdown_watch_termination_grace_period,
    }
}

/// Completes when the listener should close: after a termination signal, the
/// shutdown delay, and — with `--shutdown-send-retry-after` — the requests in
/// flight (see the module doc). `lifecycle` moves through its states on the way.
pub async fn listener_closes(lifecycle: Lifecycle, a: TerminationSettings) {
    termination_signal().await;
    tracing::info!(
        delay = ?a.delay,
        "[graceful-termination] shutdown initiated: /readyz fails from now on"
    );
    lifecycle.initiate();
    tokio::time::sleep(a.delay).await;
    lifecycle.stop_accepting();
    tracing::info!(
        watches = lifecycle.open_watches(),
        "[graceful-termination] not accepting new requests; open watches end"
    );
    if lifecycle.sends_retry_after() {
        let drained = tokio::time::timeout(a.request_timeout, lifecycle.in_flight_drained()).await;
        tracing::info!(
            drained = drained.is_ok(),
            "[graceful-termination] requests in flight are done; closing the listener"
        );
    }
    let waited = tokio::time::timeout(a.watch_grace, lifecycle.watches_drained()).await;
    tracing::info!(
        drained = waited.is_ok(),
        "[graceful-termination] watches drained"
    );
}

/// The timings of [`listener_closes`].
#[derive(Debug, Clone, Copy)]
pub struct TerminationSettings {
    pub delay: Duration,
    pub request_timeout: Duration,
    pub watch_grace: Duration,
}

impl TerminationSettings {
    pub fn of(a: &ServeArgs) -> TerminationSettings {
        TerminationSettings {
            delay: a.shutdown_delay_duration,
            request_timeout: a.request_timeout,
            watch_grace: a.shutdown_watch_termination_grace_period,
        }
    }
}

async fn termination_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
}

/// The listening socket. SO_REUSEADDR (`--permit-address-sharing`: a restart
/// does not wait for TIME_WAIT sockets) is set on every listener, as Go's
/// runtime sets it on Linux listeners whatever the flag says, so the flag
/// changes nothing more here than upstream; SO_REUSEPORT with
/// `--permit-port-sharing` lets several servers listen on one port, the
/// kernel spreading connections between them.
pub async fn bind(a: &ServeArgs) -> std::io::Result<TcpListener> {
    let addr = tokio::net::lookup_host((a.bind_address.as_str(), a.secure_port))
        .await?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_reuseport(a.permit_port_sharing)?;
    socket.bind(addr)?;
    socket.listen(1024)
}
