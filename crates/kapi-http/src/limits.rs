//! Load limits of the filter chain: the request deadline and timeout
//! (`--request-timeout`, `?timeout=`), and `--max-requests-inflight` /
//! `--max-mutating-requests-inflight` when API Priority and Fairness is off
//! (`kapi-flowcontrol` replaces them otherwise), as upstream's
//! `WithRequestDeadline`, `WithTimeoutForNonLongRunningRequests` and
//! `WithMaxInFlightLimit`.
//!
//! Long-running requests (watch, proxy, and the attach/exec/log/portforward/proxy
//! subresources, as kube-apiserver's `BasicLongRunningRequestCheck`) have no
//! deadline and take no seat. A seat is held until the response body ends,
//! which [`on_body_end`] observes; the other filters (metrics, audit, APF) use it
//! for the same reason.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use crate::next::Next;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kapi_machinery::status::ApiError;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::metrics::{Gauge, Metrics, DROPPED};
use crate::negotiate::error_response;
use crate::request::{self, Query};
use crate::user::UserInfo;

/// What a request is, as the limit filters see it.
#[derive(Debug, Clone)]
pub struct Kind {
    pub info: Option<request::RequestInfo>,
    /// The request verb: the resource verb, or the lowercase method.
    pub verb: String,
    pub long_running: bool,
    pub mutating: bool,
    /// The method and URL `info` was parsed from.
    parsed_from: (axum::http::Method, axum::http::Uri),
}

impl Kind {
    /// The request's kind: computed once by the outermost filter and kept in
    /// the request extensions (as upstream's `WithRequestInfo`).
    pub fn of(req: &Request) -> Arc<Kind> {
        match req.extensions().get::<Arc<Kind>>() {
            Some(k) => k.clone(),
            None => Arc::new(Kind::compute(req)),
        }
    }

    /// The request info of a request to `method` `uri` (`query` is its
    /// query): this kind's when it was parsed from them — the filters do not
    /// rewrite URLs, so later stages need not parse the URL again — else
    /// parsed now.
    pub fn info_for(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        query: &Query,
    ) -> Option<request::RequestInfo> {
        // What the parse reads is the method, path and query (an HTTP/2
        // request's URL also has a scheme and authority, slower to compare).
        if self.parsed_from.0 == *method
            && self.parsed_from.1.path_and_query() == uri.path_and_query()
        {
            return self.info.clone();
        }
        request::parse(method, uri.path(), query)
    }

    fn compute(req: &Request) -> Kind {
        let query = Query::parse(req.uri().query());
        let info = request::parse(req.method(), req.uri().path(), &query);
        let verb = match &info {
            Some(i) => i.verb.to_owned(),
            None => req.method().as_str().to_ascii_lowercase(),
        };
        let long_running = info.as_ref().is_some_and(|i| {
            matches!(i.verb, "watch" | "proxy")
                || matches!(
                    i.subresource.as_deref(),
                    Some("attach" | "exec" | "proxy" | "log" | "portforward")
                )
        });
        let mutating = !matches!(verb.as_str(), "get" | "list" | "watch");
        Kind {
            info,
            verb,
            long_running,
            mutating,
            parsed_from: (req.method().clone(), req.uri().clone()),
        }
    }
}

/// When the request must be answered by (set for non-long-running requests).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    pub received: Instant,
    pub at: Instant,
}

/// Parse a Go duration (`time.ParseDuration`): `300ms`, `1.5h`, `2h45m`, `-1s`.
pub fn parse_go_duration(s: &str) -> Result<(bool, Duration), String> {
    let invalid = || format!("time: invalid duration \"{s}\"");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok((false, Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return Err(invalid());
        }
        let value: f64 = num.parse().map_err(|_| invalid())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let scale = match unit {
            "" => return Err(format!("time: missing unit in duration \"{s}\"")),
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => {
                return Err(format!(
                    "time: unknown unit \"{other}\" in duration \"{s}\""
                ))
            }
        };
        total += value * scale;
        rest = &rest[unit_end..];
    }
    Ok((neg, Duration::from_secs_f64(total)))
}

/// The deadline and timeout filter: a non-long-running request gets
/// `min(?timeout, --request-timeout)` and is answered 504 when it runs past it.
pub async fn timeout<N: Next>(State(max): State<Duration>, mut req: Request, next: N) -> Response {
    let kind = Kind::of(&req);
    if kind.long_running {
        return next.run(req).await;
    }
    let query = Query::parse(req.uri().query());
    let mut limit = max;
    if let Some(v) = query.non_empty("timeout") {
        match parse_go_duration(v) {
            Ok((false, d)) if !d.is_zero() && d < max => limit = d,
            Ok(_) => {}
            Err(e) => {
                let msg = format!("invalid timeout specified in the request URL - {e}");
                return error_response(&ApiError::bad_request(msg));
            }
        }
    }
    let received = Instant::now();
    let at = received + limit;
    req.extensions_mut().insert(Deadline { received, at });
    // As upstream, a request past its deadline is answered but not cancelled:
    // the handler runs here until the deadline (or until the connection goes
    // away), then finishes as a task of its own, so a write is never cut in
    // half. Running it here rather than as a task from the start spares every
    // request a task and the hand-over between threads; a panic reaches the
    // recovery filter as before.
    let mut handler = Detached(Some(Box::pin(next.run(req))));
    match tokio::time::timeout_at(at, &mut handler).await {
        Ok(resp) => resp,
        Err(_) => error_response(&ApiError::timeout(
            "request did not complete within requested timeout - context deadline exceeded",
            0,
        )),
    }
}

/// A handler's future that is never cancelled: dropped before it finished
/// (the deadline passed, the client went away), it goes on as a task.
struct Detached(Option<Pin<Box<dyn Future<Output = Response> + Send>>>);

impl Future for Detached {
    type Output = Response;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        let fut = self.0.as_mut().expect("polled after it finished");
        let out = ready!(fut.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(out)
    }
}

impl Drop for Detached {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(fut);
            }
        }
    }
}

/// Upstream's 429 for a request over a concurrency limit: plain text, with
/// `Retry-After`.
pub fn too_many_requests() -> Response {
    let mut resp = (
        StatusCode::TOO_MANY_REQUESTS,
        "Too many requests, please try again later.\n",
    )
        .into_response();
    let h = resp.headers_mut();
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// `apiserver_current_inflight_requests` for one executing request.
pub struct Executing {
    inflight: Gauge,
}

impl Executing {
    pub fn start(metrics: &Metrics, mutating: bool) -> Executing {
        let inflight = metrics.inflight(mutating).clone();
        inflight.add(1.0);
        Executing { inflight }
    }

    /// Count a request refused for load (`apiserver_dropped_requests_total`).
    pub fn dropped(metrics: &Metrics, mutating: bool) {
        let kind = if mutating { "mutating" } else { "readOnly" };
        metrics.add(&DROPPED, &[kind], 1.0);
    }
}

impl Drop for Executing {
    fn drop(&mut self) {
        self.inflight.add(-1.0);
    }
}

/// Whether the user is in `system:masters`, which max-inflight never refuses.
pub fn is_privileged(req: &Request) -> bool {
    req.extensions()
        .get::<UserInfo>()
        .is_some_and(|u| u.groups.iter().any(|g| g == "system:masters"))
}

/// The two semaphores of `--max-requests-inflight` and
/// `--max-mutating-requests-inflight` (`None`: unlimited).
#[derive(Clone)]
pub struct MaxInflight {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
    metrics: Metrics,
}

impl MaxInflight {
    pub fn new(read_only: usize, mutating: usize, metrics: Metrics) -> MaxInflight {
        let sem = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        MaxInflight {
            read_only: sem(read_only),
            mutating: sem(mutating),
            metrics,
        }
    }
}

/// The max-inflight filter (APF off).
pub async fn max_inflight<N: Next>(
    State(lim): State<MaxInflight>,
    req: Request,
    next: N,
) -> Response {
    let kind = Kind::of(&req);
    if kind.long_running {
        return next.run(req).await;
    }
    let sem = if kind.mutating {
        &lim.mutating
    } else {
        &lim.read_only
    };
    let permit = match sem {
        None => None,
        Some(s) => match s.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) if is_privileged(&req) => None,
            Err(_) => {
                Executing::dropped(&lim.metrics, kind.mutating);
                return too_many_requests();
            }
        },
    };
    let executing = Executing::start(&lim.metrics, kind.mutating);
    let resp = next.run(req).await;
    on_body_end(resp, NO_FRAMES, move || {
        drop(permit);
        drop(executing);
    })
}

/// Run `on_end` once when the response body has been sent (or dropped: the
/// client went away), and `on_frame` with the length of every data frame.
pub fn on_body_end(
    resp: Response,
    on_frame: Option<impl Fn(usize) + Send + 'static>,
    on_end: impl FnOnce() + Send + 'static,
) -> Response {
    let (parts, body) = resp.into_parts();
    let guarded = Guarded {
        inner: body,
        on_frame: on_frame.map(|f| Box::new(f) as Box<dyn Fn(usize) + Send>),
        on_end: Some(Box::new(on_end)),
    };
    Response::from_parts(parts, Body::new(guarded))
}

/// No per-frame callback ([`on_body_end`]'s `on_frame`).
pub const NO_FRAMES: Option<fn(usize)> = None;

struct Guarded {
    inner: Body,
    on_frame: Option<Box<dyn Fn(usize) + Send>>,
    on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl Guarded {
    fn end(&mut self) {
        if let Some(f) = self.on_end.take() {
            f();
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.end();
    }
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(f), Some(data)) = (&this.on_frame, frame.data_ref()) {
                    f(data.len());
                }
            }
            Poll::Ready(_) => this.end(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        let ok = |s: &str| parse_go_duration(s).unwrap();
        assert_eq!(ok("1ms"), (false, Duration::from_millis(1)));
        assert_eq!(ok("1m30s"), (false, Duration::from_secs(90)));
        assert_eq!(ok("1.5h"), (false, Duration::from_secs(5400)));
        assert_eq!(ok("0"), (false, Duration::ZERO));
        assert!(ok("-2s").0);
        assert_eq!(
            parse_go_duration("10").unwrap_err(),
            "time: missing unit in duration \"10\""
        );
        assert_eq!(
            parse_go_duration("3x").unwrap_err(),
            "time: unknown unit \"x\" in duration \"3x\""
        );
        assert_eq!(
            parse_go_duration("abc").unwrap_err(),
            "time: invalid duration \"abc\""
        );
    }
}

#[cfg(test)]
mod timeout_tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use axum::middleware::from_fn_with_state;
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    /// A route whose handler sleeps `for_ms`, then sets `done`.
    fn slow(done: Arc<AtomicBool>, for_ms: u64, limit: Duration) -> Router {
        let handler = move || {
            let done = done.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
                done.store(true, Ordering::SeqCst);
                "finished"
            }
        };
        Router::new()
            .route("/api/v1/namespaces", get(handler))
            .layer(from_fn_with_state(limit, timeout::<axum::middleware::Next>))
    }

    fn request() -> Request {
        Request::builder()
            .uri("/api/v1/namespaces")
            .body(Body::empty())
            .expect("request")
    }

    #[tokio::test]
    async fn a_request_within_its_deadline_is_answered_by_its_handler() {
        let done = Arc::new(AtomicBool::new(false));
        let app = slow(done.clone(), 10, Duration::from_secs(5));
        let resp = app.oneshot(request()).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(done.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn past_its_deadline_a_request_is_answered_504_and_its_handler_still_finishes() {
        let done = Arc::new(AtomicBool::new(false));
        let app = slow(done.clone(), 300, Duration::from_millis(50));
        let resp = app.oneshot(request()).await.expect("infallible");
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(
            !done.load(Ordering::SeqCst),
            "answered before the handler ended"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(done.load(Ordering::SeqCst), "the handler was cancelled");
    }

    #[tokio::test]
    async fn a_request_dropped_by_its_connection_is_not_cancelled() {
        let done = Arc::new(AtomicBool::new(false));
        let app = slow(done.clone(), 200, Duration::from_secs(5));
        let call = app.oneshot(request());
        // The connection goes away while the handler runs.
        let cut = tokio::time::timeout(Duration::from_millis(30), call).await;
        assert!(cut.is_err(), "the handler cannot have finished yet");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(done.load(Ordering::SeqCst), "the handler was cancelled");
    }
}
