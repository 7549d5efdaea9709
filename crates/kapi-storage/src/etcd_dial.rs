//! etcd connections opened by a caller-supplied dialer (kube-apiserver's
//! `etcd` egress selection): the seam the binary fills, and the gRPC channel
//! built over it.
//!
//! Without a dialer, `etcd-client` connects by itself (`Client::connect`).
//! With one, each endpoint gets a lazy tonic channel whose connector asks
//! the dialer for `host:port`; TLS (an `https://` endpoint, or any endpoint
//! when a CA or client pair is configured, as `etcd-client` decides) runs
//! on top of the dialled stream, so etcd still sees our client certificate.
//! Requests go to the endpoints in turn ([`RoundRobin`]); a request whose
//! member could not be dialled fails with "error trying to connect …" and
//! is sent again by the backend (`never_sent` in `etcd.rs`), as with
//! `etcd-client`'s own balanced channel.
//!
//! This crate does not know the egress configuration (it sits below
//! `kapi-egress`); the binary adapts its selection to [`EtcdDial`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::codegen::http::{Request, Response, Uri};
use tonic::transport::{Channel, Endpoint};
use tower::Service;

use crate::backend::{Result, StorageError};

/// A stream to an etcd member.
pub trait DialedIo: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> DialedIo for T {}

/// Opens connections to etcd members (`host` without brackets).
#[async_trait::async_trait]
pub trait EtcdDial: Send + Sync {
    async fn dial(&self, host: &str, port: u16) -> std::io::Result<Box<dyn DialedIo>>;
}

/// The dialer an [`EtcdConfig`](crate::etcd::EtcdConfig) connects through.
#[derive(Clone)]
pub struct EtcdDialer(pub Arc<dyn EtcdDial>);

impl fmt::Debug for EtcdDialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EtcdDialer")
    }
}

/// A client of `endpoints` whose connections `dialer` opens; `tls` and the
/// timeouts as `etcd-client` would apply them.
pub(crate) async fn client(
    dialer: &EtcdDialer,
    endpoints: &[String],
    tls: Option<etcd_client::TlsOptions>,
    settings: &Settings,
    options: ConnectOptions,
) -> Result<Client> {
    if endpoints.is_empty() {
        return Err(StorageError::Internal("etcd: empty endpoints".into()));
    }
    let mut members = Vec::with_capacity(endpoints.len());
    for url in endpoints {
        let endpoint = endpoint(url, tls.clone(), settings)?;
        let dialer = dialer.0.clone();
        let connector = tower::service_fn(move |uri: Uri| {
            let dialer = dialer.clone();
            async move { dial(&*dialer, &uri).await.map(TokioIo::new) }
        });
        members.push(endpoint.connect_with_connector_lazy(connector));
    }
    let balanced = RoundRobin {
        members: members.into(),
        next: Arc::default(),
        picked: None,
    };
    let channel = etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(balanced));
    Client::from_channel(channel, Some(options))
        .await
        .map_err(crate::etcd::map_err)
}

/// The timeouts every etcd connection uses.
pub(crate) struct Settings {
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub keep_alive: (Duration, Duration),
}

/// One endpoint as `etcd-client`'s `build_endpoint` makes it: a URL without
/// a scheme is `https://` when TLS is configured, else `http://`.
fn endpoint(url: &str, tls: Option<etcd_client::TlsOptions>, s: &Settings) -> Result<Endpoint> {
    let bad = |e: String| StorageError::Internal(format!("etcd endpoint {url:?}: {e}"));
    let full = if url.starts_with("http://") {
        if tls.is_some() {
            return Err(bad("TLS options are only supported with HTTPS URLs".into()));
        }
        url.to_owned()
    } else if url.starts_with("https://") {
        url.to_owned()
    } else if tls.is_some() {
        format!("https://{url}")
    } else {
        format!("http://{url}")
    };
    let mut e = Endpoint::from_shared(full.clone()).map_err(|e| bad(e.to_string()))?;
    if full.starts_with("https://") {
        e = e
            .tls_config(tls.unwrap_or_default())
            .map_err(|e| bad(e.to_string()))?;
    }
    Ok(e.keep_alive_while_idle(true)
        .http2_keep_alive_interval(s.keep_alive.0)
        .keep_alive_timeout(s.keep_alive.1)
        .timeout(s.request_timeout)
        .connect_timeout(s.connect_timeout))
}

/// Dial the member `uri` names; a failure reads "error trying to connect"
/// as `etcd-client`'s own connector's does, so the backend knows the
/// request never left.
async fn dial(dialer: &dyn EtcdDial, uri: &Uri) -> std::io::Result<Box<dyn DialedIo>> {
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let default = if uri.scheme_str() == Some("https") {
        443
    } else {
        80
    };
    let port = uri.port_u16().unwrap_or(default);
    dialer.dial(host, port).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("error trying to connect to {uri} through the etcd egress selection: {e}"),
        )
    })
}

type Body = tonic::body::Body;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The members' channels, one request to each in turn. The channel that
/// `poll_ready` readied is the one `call` uses (a tonic channel reserves its
/// slot in `poll_ready`).
struct RoundRobin {
    members: Arc<[Channel]>,
    next: Arc<AtomicUsize>,
    picked: Option<Channel>,
}

impl Clone for RoundRobin {
    fn clone(&self) -> Self {
        RoundRobin {
            members: self.members.clone(),
            next: self.next.clone(),
            picked: None,
        }
    }
}

impl Service<Request<Body>> for RoundRobin {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = std::result::Result<Response<Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        let members = &self.members;
        let next = &self.next;
        let picked = self.picked.get_or_insert_with(|| {
            members[next.fetch_add(1, Ordering::Relaxed) % members.len()].clone()
        });
        picked.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let mut channel = self
            .picked
            .take()
            .expect("RoundRobin::call without poll_ready");
        let fut = channel.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}
