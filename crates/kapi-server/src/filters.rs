//! The filter chain every request passes before any route, listed in the order a
//! request meets them (as kube-apiserver's `DefaultBuildHandlerChain`): metrics
//! (`metrics.rs`), the audit ID (`audit/`), panic recovery, the request
//! deadline and timeout (`limits.rs`), authentication (`authn/`), audit,
//! impersonation (`authz/impersonation.rs`), API Priority and Fairness
//! (`flowcontrol/`; max-inflight when it is off), authorization
//! (`authz/filter.rs`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::FutureExt;

use std::time::Duration;

use kapi_http::limits::{self, MaxInflight};
use kapi_http::metrics::{self, Metrics};

use crate::audit;
use crate::authn::{self, Authenticator};
use crate::authz::{filter::authorize_layer, impersonation::impersonate_layer};
use crate::Server;

pub fn apply(routes: Router, auth: Arc<Authenticator>, srv: Arc<Server>, chain: &Chain) -> Router {
    // Layers wrap outside-in: the last added meets the request first.
    let routes = routes.layer(middleware::from_fn_with_state(srv.clone(), authorize_layer));
    let routes = chain.concurrency_layer(routes);
    let routes = routes.layer(middleware::from_fn_with_state(srv, impersonate_layer));
    let routes = chain.audit_layer(routes);
    routes
        .layer(middleware::from_fn_with_state(
            auth,
            authn::authenticate_layer,
        ))
        .layer(middleware::from_fn_with_state(
            chain.request_timeout,
            limits::timeout,
        ))
        .layer(middleware::from_fn(recover))
        .layer(middleware::from_fn_with_state(
            chain.audit.clone(),
            audit::id_layer,
        ))
        .layer(middleware::from_fn_with_state(
            chain.metrics.clone(),
            metrics::layer,
        ))
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
    pub audit: Option<crate::audit::AuditConfig>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            enable_priority_and_fairness: true,
            request_timeout: Duration::from_secs(60),
            audit: None,
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
    pub audit: Option<crate::audit::Audit>,
}

/// APF, or the two max-inflight limits when APF is off.
#[derive(Clone)]
pub enum Concurrency {
    Apf(crate::flowcontrol::FlowControl),
    MaxInflight(MaxInflight),
}

impl Chain {
    /// Build the filters' state; opens the audit log.
    pub fn build(opts: &ChainOptions) -> Result<Chain, String> {
        let metrics = Metrics::default();
        let concurrency = if opts.enable_priority_and_fairness {
            let limit = opts.max_requests_inflight + opts.max_mutating_requests_inflight;
            Concurrency::Apf(crate::flowcontrol::FlowControl::new(
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
            Some(cfg) => Some(
                crate::audit::Audit::open(cfg, metrics.clone())
                    .map_err(|e| format!("opening audit log {}: {e}", cfg.log.path.display()))?,
            ),
            None => None,
        };
        Ok(Chain {
            metrics,
            request_timeout: opts.request_timeout,
            concurrency,
            audit,
        })
    }

    /// Wrap `routes` in the concurrency filter (APF or max-inflight).
    pub fn concurrency_layer(&self, routes: axum::Router) -> axum::Router {
        use axum::middleware::from_fn_with_state;
        match &self.concurrency {
            Concurrency::Apf(fc) => {
                routes.layer(from_fn_with_state(fc.clone(), crate::flowcontrol::layer))
            }
            Concurrency::MaxInflight(m) => {
                routes.layer(from_fn_with_state(m.clone(), limits::max_inflight))
            }
        }
    }

    /// Wrap `routes` in the audit filter, when auditing is on.
    pub fn audit_layer(&self, routes: axum::Router) -> axum::Router {
        match &self.audit {
            Some(a) => routes.layer(axum::middleware::from_fn_with_state(
                a.clone(),
                crate::audit::layer,
            )),
            None => routes,
        }
    }
}
