//! Graceful termination, as kube-apiserver's lifecycle signals: on SIGTERM the
//! server is [`Lifecycle::initiate`]d (`/readyz` fails from then on, every
//! request is still served); after `--shutdown-delay-duration` it
//! [`Lifecycle::stop_accepting`]: open watches end cleanly (their streams
//! finish instead of being cut), and new requests are refused — with 429 and
//! `Retry-After: 5` plus a closed connection (HTTP/1.1 `Connection: close`,
//! HTTP/2 GOAWAY) under `--shutdown-send-retry-after`, otherwise with 503 and
//! `Retry-After: 1` on connections that are still open. Requests already in
//! flight finish; [`Lifecycle::in_flight_drained`] and
//! [`Lifecycle::watches_drained`] say when.
//!
//! Invariants: health probes, `/metrics` and the server's own loopback client
//! (user agent `kube-apiserver/…`) are never refused nor counted, as upstream's
//! `isRequestExemptFromRetryAfter`; a request is counted until its response
//! body ends. Where to look next: `kapi` (`serve.rs`) runs the sequence, the
//! watch handler ends streams on [`Lifecycle::not_accepting`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::next::Next;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio::sync::{watch, Notify};

use crate::limits::{on_body_end, Kind, NO_FRAMES};
use crate::tls::GoAway;

/// Paths never refused while shutting down.
const EXEMPT_PREFIXES: &[&str] = &["/readyz", "/livez", "/healthz", "/metrics"];

/// The shutdown state of one server (cheap to clone).
#[derive(Clone)]
pub struct Lifecycle(Arc<Shared>);

struct Shared {
    initiated: watch::Sender<bool>,
    not_accepting: watch::Sender<bool>,
    send_retry_after: bool,
    in_flight: Counter,
    watches: Counter,
}

#[derive(Default)]
struct Counter {
    n: AtomicUsize,
    changed: Notify,
}

impl Counter {
    fn add(&self) {
        self.n.fetch_add(1, Ordering::SeqCst);
    }

    fn done(&self) {
        self.n.fetch_sub(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    async fn drained(&self) {
        loop {
            let changed = self.changed.notified();
            if self.n.load(Ordering::SeqCst) == 0 {
                return;
            }
            changed.await;
        }
    }
}

impl Lifecycle {
    /// A running server; `send_retry_after` is `--shutdown-send-retry-after`.
    pub fn new(send_retry_after: bool) -> Lifecycle {
        Lifecycle(Arc::new(Shared {
            initiated: watch::channel(false).0,
            not_accepting: watch::channel(false).0,
            send_retry_after,
            in_flight: Counter::default(),
            watches: Counter::default(),
        }))
    }

    /// Termination was asked for: readiness fails from now on.
    pub fn initiate(&self) {
        self.0.initiated.send_replace(true);
    }

    pub fn is_initiated(&self) -> bool {
        *self.0.initiated.borrow()
    }

    /// The shutdown delay is over: watches end, new requests are refused.
    pub fn stop_accepting(&self) {
        self.initiate();
        self.0.not_accepting.send_replace(true);
    }

    pub fn is_not_accepting(&self) -> bool {
        *self.0.not_accepting.borrow()
    }

    /// Completes once [`Lifecycle::stop_accepting`] was called.
    pub fn not_accepting(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.0.not_accepting.subscribe();
        async move {
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }

    /// Whether new requests are answered 429 once not accepting.
    pub fn sends_retry_after(&self) -> bool {
        self.0.send_retry_after
    }

    /// Completes when no counted request that is not long-running is in flight.
    pub async fn in_flight_drained(&self) {
        self.0.in_flight.drained().await
    }

    /// Completes when no watch is open.
    pub async fn watches_drained(&self) {
        self.0.watches.drained().await
    }

    /// Watches open now.
    pub fn open_watches(&self) -> usize {
        self.0.watches.n.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for Lifecycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lifecycle")
            .field("initiated", &self.is_initiated())
            .field("not_accepting", &self.is_not_accepting())
            .finish()
    }
}

fn exempt(req: &Request) -> bool {
    let path = req.uri().path();
    EXEMPT_PREFIXES.iter().any(|p| path.starts_with(p))
        || req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ua| ua.starts_with("kube-apiserver/"))
}

/// The filter: refuse or count each request, and hand the lifecycle to the
/// handlers (the watch handler ends its stream when not accepting).
pub async fn layer<N: Next>(State(lc): State<Lifecycle>, mut req: Request, next: N) -> Response {
    if exempt(&req) {
        req.extensions_mut().insert(lc);
        return next.run(req).await;
    }
    if lc.is_not_accepting() {
        if lc.sends_retry_after() {
            return retry_after(&req);
        }
        return shutting_down();
    }
    let kind = Kind::of(&req);
    let counter = if !kind.long_running {
        Some(&lc.0.in_flight)
    } else if kind.verb == "watch" {
        Some(&lc.0.watches)
    } else {
        None
    };
    let Some(counter) = counter else {
        req.extensions_mut().insert(lc);
        return next.run(req).await;
    };
    counter.add();
    let watch = std::ptr::eq(counter, &lc.0.watches);
    req.extensions_mut().insert(lc.clone());
    let resp = next.run(req).await;
    on_body_end(resp, NO_FRAMES, move || {
        if watch {
            lc.0.watches.done()
        } else {
            lc.0.in_flight.done()
        }
    })
}

/// 429 with `Retry-After: 5`, closing the connection (GOAWAY on HTTP/2).
fn retry_after(req: &Request) -> Response {
    let mut resp = text(
        StatusCode::TOO_MANY_REQUESTS,
        "The apiserver is shutting down, please try again later.\n",
        "5",
    );
    if req.version() == axum::http::Version::HTTP_2 {
        if let Some(goaway) = req.extensions().get::<GoAway>() {
            goaway.send();
        }
    } else {
        resp.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// 503 with `Retry-After: 1`, for requests on connections still open after
/// the server stopped accepting (upstream's wait group filter).
fn shutting_down() -> Response {
    text(
        StatusCode::SERVICE_UNAVAILABLE,
        "apiserver is shutting down.\n",
        "1",
    )
}

fn text(code: StatusCode, body: &'static str, retry: &'static str) -> Response {
    let mut resp = (code, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::RETRY_AFTER, HeaderValue::from_static(retry));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counters_drain() {
        let lc = Lifecycle::new(false);
        lc.0.in_flight.add();
        let waiter = {
            let lc = lc.clone();
            tokio::spawn(async move { lc.in_flight_drained().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        lc.0.in_flight.done();
        waiter.await.unwrap();
        assert!(!lc.is_initiated());
        lc.stop_accepting();
        assert!(lc.is_initiated() && lc.is_not_accepting());
        lc.not_accepting().await;
    }
}
