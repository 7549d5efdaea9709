//! The filter chain every request passes before any route, as kube-apiserver's
//! `DefaultBuildHandlerChain`. [`apply`] lists the filters in the order a
//! request meets them:
//!
//! 0. indented JSON for requests that ask (`kapi_http::pretty`), around
//!    everything, as upstream's negotiated serializer answers errors too;
//! 1. metrics (`kapi_http::metrics`): the request's clock and counters;
//! 2. the audit ID (`kapi_auth::audit::id_layer`);
//! 3. graceful termination, when the server has a lifecycle
//!    (`kapi_http::lifecycle`): requests refused or counted while shutting down;
//! 4. panic recovery ([`recover`]), and `Cache-Control: no-cache, private`
//!    on every response without one ([`no_cache`]);
//! 5. the deadline and timeout (`kapi_http::limits::timeout`);
//! 6. HSTS, when `--strict-transport-security-directives` are given ([`hsts`]),
//!    then CORS, when origins are allowed (`kapi_http::cors`), before
//!    authentication as upstream's (a preflight carries no credentials);
//! 7. authentication (`kapi_auth::authn`), then, with
//!    `--tracing-config-file`, the request span ([`trace`]), after it as
//!    upstream's since 1.33 (it trusts a privileged caller's trace context);
//! 8. audit events, when an audit policy is set (`kapi_auth::audit::layer`);
//! 9. impersonation (`kapi_auth::authz::impersonation`);
//! 10. API Priority and Fairness (`kapi-flowcontrol`), or max-inflight when
//!     it is off (`kapi_http::limits::max_inflight`);
//! 11. authorization (`kapi_auth::authz::filter`);
//! 12. the server in front of this one, when there is one (the aggregator,
//!     [`crate::remote`]), which serves remote APIs and hands back the rest.
//!
//! [`Chain`] is the built state of the filters that keep state (metrics,
//! audit sink, concurrency), from [`ChainOptions`] (the flags).

use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::future::BoxFuture;
use futures::future::Either;
use futures::FutureExt;
use kapi_auth::audit;
use kapi_auth::authn::{self, Authenticator};
use kapi_auth::authz::filter::authorize_layer;
use kapi_auth::authz::impersonation::impersonate_layer;
use kapi_auth::authz::Authorizer;
use kapi_http::limits::{self, MaxInflight};
use kapi_http::metrics::{self, Metrics};
use kapi_http::next::{Next, Then};
use tower::ServiceExt;

use crate::remote::{self, RemoteApis};

/// Put `routes` behind the whole filter chain; `remote`, the server in front
/// of this one in the delegation chain (the aggregator), gets each request
/// first after the filters.
pub fn apply(
    routes: Router,
    auth: Arc<Authenticator>,
    authz: Arc<dyn Authorizer>,
    chain: &Chain,
    remote: Option<Arc<dyn RemoteApis>>,
) -> Router {
    routes.layer(Filters(Arc::new(Shared {
        chain: chain.clone(),
        auth,
        authz,
        remote,
    })))
}

/// The filters as one layer over every route. One call runs them all, each
/// stage handing on to the next through a small boxed future ([`Then`]),
/// rather than a layer per filter (each of which copied every layer beneath
/// it and boxed twice on every request).
#[derive(Clone)]
struct Filters(Arc<Shared>);

/// What the filters need: their built state, who is asking, who may.
struct Shared {
    chain: Chain,
    auth: Arc<Authenticator>,
    authz: Arc<dyn Authorizer>,
    remote: Option<Arc<dyn RemoteApis>>,
}

/// The routes beneath the filters (axum's `Route`).
trait Routes:
    tower::Service<Request, Response = Response, Error = Infallible, Future: Send>
    + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> Routes for S where
    S: tower::Service<Request, Response = Response, Error = Infallible, Future: Send>
        + Clone
        + Send
        + Sync
        + 'static
{
}

impl<S: Routes> tower::Layer<S> for Filters {
    type Service = Chained<S>;

    fn layer(&self, routes: S) -> Chained<S> {
        Chained {
            state: self.0.clone(),
            routes,
        }
    }
}

/// One route behind the filters; each stage of a request gets a copy, to hand
/// on to the next.
#[derive(Clone)]
struct Chained<S> {
    state: Arc<Shared>,
    routes: S,
}

impl<S: Routes> tower::Service<Request> for Chained<S> {
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The routes are polled for readiness when the request reaches them.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        Box::pin(pretty(self.clone(), req).map(Ok))
    }
}

// The stages, in the order a request meets them (the list at the top); each
// runs its filter with the next stage as the rest of the chain, or hands on
// straight away when its filter is off. Each stage's future is boxed on its
// own: a dozen small allocations cost less than moving one future that holds
// all the stages beneath it at every step. A stage is a plain function
// returning its filter's future, not an `async fn` around it, so the box
// holds the filter's state once rather than the request twice (the copy into
// the box is the future's whole size, ~1 KiB a stage that way); a filter that
// is off by default is boxed apart when on, so that a chain without it does
// not copy its state (up to 5 KiB, the audit filter's) at every request.

/// The future of one stage.
trait Stage: std::future::Future<Output = Response> + Send + 'static {}

impl<F: std::future::Future<Output = Response> + Send + 'static> Stage for F {}

/// Run `filter` with its state when it is on; hand on when it is off.
fn optional<T, N, F, Fut>(state: Option<T>, req: Request, next: N, filter: F) -> impl Stage
where
    N: Next,
    F: FnOnce(State<T>, Request, N) -> Fut,
    Fut: Stage,
{
    match state {
        Some(s) => Either::Left(filter(State(s), req, next)),
        None => Either::Right(next.run(req)),
    }
}

/// [`optional`] for a filter that is off by default: its state is boxed
/// when it is on, so that the stage is small when it is off.
fn optional_boxed<T, N, F, Fut>(state: Option<T>, req: Request, next: N, filter: F) -> impl Stage
where
    N: Next,
    F: FnOnce(State<T>, Request, N) -> Fut,
    Fut: Stage,
{
    optional(state, req, next, |s, req, next| {
        Box::pin(filter(s, req, next))
    })
}

/// The rest of the chain from `stage` on.
macro_rules! then {
    ($stage:ident, $r:expr) => {{
        let r = $r;
        Then(move |req| Box::pin($stage(r, req)))
    }};
}

fn pretty<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    kapi_http::pretty::layer(req, then!(count, r))
}

fn count<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let m = r.state.chain.metrics.clone();
    metrics::layer(State(m), req, then!(audit_id, r))
}

fn audit_id<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let a = r.state.chain.audit.clone();
    audit::id_layer(State(a), req, then!(lifecycle, r))
}

fn lifecycle<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let state = r.state.chain.lifecycle.clone();
    optional(state, req, then!(recovery, r), kapi_http::lifecycle::layer)
}

fn recovery<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    recover(req, then!(deadline, r))
}

/// `Cache-Control: no-cache, private` on every response that sets none, as
/// upstream's `WithCacheControl`: every answer depends on who asked (the
/// OpenAPI documents under a hash set their own).
fn no_cache(resp: &mut Response) {
    resp.headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-cache, private"));
}

fn deadline<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let max = r.state.chain.request_timeout;
    limits::timeout(State(max), req, then!(strict_transport, r))
}

fn strict_transport<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let state = r.state.chain.hsts.clone();
    optional_boxed(state, req, then!(cors, r), hsts)
}

fn cors<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let state = r.state.chain.cors.clone();
    optional_boxed(state, req, then!(authenticate, r), kapi_http::cors::layer)
}

fn authenticate<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let auth = r.state.auth.clone();
    authn::authenticate_layer(State(auth), req, then!(traced, r))
}

fn traced<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let state = r.state.chain.tracing.clone();
    optional_boxed(state, req, then!(audited, r), trace::layer)
}

fn audited<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let state = r.state.chain.audit.clone();
    optional_boxed(state, req, then!(impersonate, r), audit::layer)
}

fn impersonate<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let authz = r.state.authz.clone();
    impersonate_layer(State(authz), req, then!(concurrency, r))
}

fn concurrency<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let limits = r.state.chain.concurrency.clone();
    let next = then!(authorize, r);
    match limits {
        Concurrency::Apf(fc) => Either::Left(kapi_flowcontrol::layer(State(fc), req, next)),
        Concurrency::MaxInflight(m) => Either::Right(limits::max_inflight(State(m), req, next)),
    }
}

fn authorize<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let authz = r.state.authz.clone();
    authorize_layer(State(authz), req, then!(delegate, r))
}

fn delegate<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    let remote = r.state.remote.clone();
    remote::delegate(State(remote), req, then!(route, r))
}

fn route<S: Routes>(r: Chained<S>, req: Request) -> impl Stage {
    r.routes.oneshot(req).map(|res| match res {
        Ok(resp) => resp,
        Err(never) => match never {},
    })
}

/// `Strict-Transport-Security` on every response that has none, as
/// upstream's `WithHSTS`.
async fn hsts<N: Next>(State(value): State<HeaderValue>, req: Request, next: N) -> Response {
    let mut resp = next.run(req).await;
    resp.headers_mut()
        .entry(header::STRICT_TRANSPORT_SECURITY)
        .or_insert(value);
    resp
}

/// `--strict-transport-security-directives` joined into the header's value;
/// each directive must be `max-age=<seconds>`, `includeSubDomains` or
/// `preload` (RFC 6797 section 6.1), as upstream validates them.
pub fn hsts_value(directives: &[String]) -> Result<Option<HeaderValue>, String> {
    if directives.is_empty() {
        return Ok(None);
    }
    for d in directives {
        if d.trim().is_empty() {
            return Err("empty value in strict-transport-security-directives".into());
        }
        let max_age = d.split('=').collect::<Vec<_>>();
        if d != "includeSubDomains"
            && d != "preload"
            && (max_age.len() != 2 || max_age[0] != "max-age")
        {
            return Err("--strict-transport-security-directives invalid, allowed values: max-age=expireTime, includeSubDomains, preload. see RFC 6797 section 6.1 for more information".into());
        }
    }
    HeaderValue::from_str(&directives.join("; "))
        .map(Some)
        .map_err(|e| format!("--strict-transport-security-directives: {e}"))
}

/// Turn a panic in any handler into a 500; the server keeps serving. As
/// upstream's `WithPanicRecovery`, the answer is plain text, not a Status.
/// Either answer then gets [`no_cache`]'s `Cache-Control` (one future, not a
/// second one around this).
async fn recover<N: Next>(req: Request, next: N) -> Response {
    let path = req.uri().path().to_owned();
    let mut resp = match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::error!(%path, "handler panicked");
            let body = "This request caused apiserver to panic. Look in the logs for details.\n";
            let headers = [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ];
            (StatusCode::INTERNAL_SERVER_ERROR, headers, body).into_response()
        }
    };
    no_cache(&mut resp);
    resp
}

/// How the load-limiting and record-keeping filters are set up (`kapi serve`
/// flags of the same names).
#[derive(Debug, Clone)]
pub struct ChainOptions {
    /// `--max-requests-inflight` (0: no limit).
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight` (0: no limit).
    pub max_mutating_requests_inflight: usize,
    /// `--enable-priority-and-fairness`: APF instead of the two limits above
    /// (whose sum becomes APF's server concurrency limit).
    pub enable_priority_and_fairness: bool,
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// `--audit-policy-file` / `--audit-log-*`; `None` audits nothing.
    pub audit: Option<kapi_auth::audit::AuditConfig>,
    /// `--cors-allowed-origins`; `None` leaves CORS off.
    pub cors: Option<kapi_http::cors::Cors>,
    /// `--strict-transport-security-directives` ([`hsts_value`]); `None` sends none.
    pub hsts: Option<HeaderValue>,
    /// The metrics flags (`--disabled-metrics`, `--allow-metric-labels`).
    pub metrics: kapi_http::metrics::Policy,
    /// The server's shutdown state (`kapi serve` terminates through it).
    pub lifecycle: Option<kapi_http::lifecycle::Lifecycle>,
    /// `--tracing-config-file`'s tracers; `None` traces nothing (the filter
    /// is left out of the chain).
    pub tracing: Option<trace::Tracing>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            enable_priority_and_fairness: true,
            request_timeout: Duration::from_secs(60),
            audit: None,
            cors: None,
            hsts: None,
            metrics: Default::default(),
            lifecycle: None,
            tracing: None,
        }
    }
}

/// The built state of the load-limiting and record-keeping filters of one
/// server, from [`ChainOptions`].
#[derive(Clone)]
pub struct Chain {
    pub metrics: Metrics,
    pub request_timeout: Duration,
    pub concurrency: Concurrency,
    pub audit: Option<kapi_auth::audit::Audit>,
    pub cors: Option<kapi_http::cors::Cors>,
    pub hsts: Option<HeaderValue>,
    pub lifecycle: Option<kapi_http::lifecycle::Lifecycle>,
    pub tracing: Option<trace::Tracing>,
}

/// APF, or the two max-inflight limits when APF is off.
#[derive(Clone)]
pub enum Concurrency {
    Apf(kapi_flowcontrol::FlowControl),
    MaxInflight(MaxInflight),
}

impl Chain {
    /// Build the filters' state; opens the audit log.
    pub fn build(opts: &ChainOptions) -> Result<Chain, String> {
        let metrics = Metrics::with_policy(opts.metrics.clone());
        let concurrency = if opts.enable_priority_and_fairness {
            let limit = opts.max_requests_inflight + opts.max_mutating_requests_inflight;
            Concurrency::Apf(kapi_flowcontrol::FlowControl::new(
                limit,
                opts.request_timeout,
                metrics.clone(),
            ))
        } else {
            Concurrency::MaxInflight(MaxInflight::new(
                opts.max_requests_inflight,
                opts.max_mutating_requests_inflight,
                metrics.clone(),
            ))
        };
        let audit = match &opts.audit {
            Some(cfg) => Some(kapi_auth::audit::Audit::open(cfg, metrics.clone()).map_err(
                |e| {
                    let path = cfg.log.as_ref().map(|l| l.path.display().to_string());
                    format!("opening audit log {}: {e}", path.unwrap_or_default())
                },
            )?),
            None => None,
        };
        Ok(Chain {
            metrics,
            request_timeout: opts.request_timeout,
            concurrency,
            audit,
            cors: opts.cors.clone(),
            hsts: opts.hsts.clone(),
            lifecycle: opts.lifecycle.clone(),
            tracing: opts.tracing.clone(),
        })
    }
}

pub mod trace;

#[cfg(test)]
mod tests;
