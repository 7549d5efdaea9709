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

use crate::authn::{self, Authenticator};
use crate::authz::{filter::authorize_layer, impersonation::impersonate_layer};
use crate::limits::{self, Chain};
use crate::Server;
use crate::{audit, metrics};

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
