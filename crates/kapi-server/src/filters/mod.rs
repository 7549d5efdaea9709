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
//! 4. panic recovery ([`recover`]);
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
//! 11. authorization (`kapi_auth::authz::filter`).
//!
//! [`Chain`] is the built state of the filters that keep state (metrics,
//! audit sink, concurrency), from [`ChainOptions`] (the flags).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::FutureExt;
use kapi_auth::audit;
use kapi_auth::authn::{self, Authenticator};
use kapi_auth::authz::filter::authorize_layer;
use kapi_auth::authz::impersonation::impersonate_layer;
use kapi_auth::authz::Authorizer;
use kapi_http::limits::{self, MaxInflight};
use kapi_http::metrics::{self, Metrics};
use tower::util::Either;
use tower::ServiceBuilder;

/// Put `routes` behind the whole filter chain.
pub fn apply(
    routes: Router,
    auth: Arc<Authenticator>,
    authz: Arc<dyn Authorizer>,
    chain: &Chain,
) -> Router {
    let concurrency = match &chain.concurrency {
        Concurrency::Apf(fc) => {
            Either::Left(from_fn_with_state(fc.clone(), kapi_flowcontrol::layer))
        }
        Concurrency::MaxInflight(m) => {
            Either::Right(from_fn_with_state(m.clone(), limits::max_inflight))
        }
    };
    let auditing = chain
        .audit
        .clone()
        .map(|a| from_fn_with_state(a, audit::layer));
    let lifecycle = chain
        .lifecycle
        .clone()
        .map(|lc| from_fn_with_state(lc, kapi_http::lifecycle::layer));
    let cors = chain
        .cors
        .clone()
        .map(|c| from_fn_with_state(c, kapi_http::cors::layer));
    let hsts = chain.hsts.clone().map(|h| from_fn_with_state(h, hsts));
    let traced = chain
        .tracing
        .clone()
        .map(|t| from_fn_with_state(t, trace::layer));
    let filters = ServiceBuilder::new()
        .layer(from_fn(kapi_http::pretty::layer))
        .layer(from_fn_with_state(chain.metrics.clone(), metrics::layer))
        .layer(from_fn_with_state(chain.audit.clone(), audit::id_layer))
        .option_layer(lifecycle)
        .layer(from_fn(recover))
        .layer(from_fn_with_state(chain.request_timeout, limits::timeout))
        .option_layer(hsts)
        .option_layer(cors)
        .layer(from_fn_with_state(auth, authn::authenticate_layer))
        .option_layer(traced)
        .option_layer(auditing)
        .layer(from_fn_with_state(authz.clone(), impersonate_layer))
        .layer(concurrency)
        .layer(from_fn_with_state(authz, authorize_layer));
    routes.layer(filters)
}

/// `Strict-Transport-Security` on every response that has none, as
/// upstream's `WithHSTS`.
async fn hsts(
    axum::extract::State(value): axum::extract::State<HeaderValue>,
    req: Request,
    next: Next,
) -> Response {
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
async fn recover(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
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
    }
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
