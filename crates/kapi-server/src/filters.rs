//! The filter chain every request passes before any route, listed in the order a
//! request meets them (as kube-apiserver's `DefaultBuildHandlerChain`): metrics
//! (`metrics.rs`), the audit ID (`audit/`), panic recovery, the request
//! deadline and timeout (`limits.rs`), authentication, audit, API Priority and
//! Fairness (`flowcontrol/`; max-inflight when it is off), authorization.
//!
//! Authorization is, for now, "authenticated users may do everything; anonymous
//! users may read health and version only" — what upstream's default RBAC grants
//! `system:unauthenticated` through `system:public-info-viewer`. Full RBAC
//! replaces `authorize` without moving it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use futures::FutureExt;
use kapi_machinery::status::{ApiError, Reason};

use crate::authn::{self, Authenticator, UserInfo};
use crate::limits::{self, Chain};
use crate::negotiate::error_response;
use crate::{audit, metrics};

pub fn apply(routes: Router, auth: Arc<Authenticator>, chain: &Chain) -> Router {
    // Layers wrap outside-in: the last added meets the request first.
    let routes = routes.layer(middleware::from_fn(authorize));
    let routes = chain.concurrency_layer(routes);
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

/// Turn a panic in any handler into a 500 Status; the server keeps serving.
async fn recover(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::error!(%path, "handler panicked");
            error_response(&ApiError::internal("an unexpected error occurred"))
        }
    }
}

const PUBLIC_PATHS: &[&str] = &["/healthz", "/livez", "/readyz", "/version", "/version/"];

fn is_public(path: &str) -> bool {
    PUBLIC_PATHS.contains(&path)
        || ["/healthz/", "/livez/", "/readyz/"]
            .iter()
            .any(|p| path.starts_with(p))
}

async fn authorize(req: Request, next: Next) -> Response {
    let anonymous = req
        .extensions()
        .get::<UserInfo>()
        .is_none_or(|u| u.name == "system:anonymous");
    if anonymous && !is_public(req.uri().path()) {
        let verb = match req.method().as_str() {
            "GET" | "HEAD" => "get",
            "POST" => "post",
            "PUT" => "put",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "use",
        };
        let msg = format!(
            "forbidden: User \"system:anonymous\" cannot {verb} path \"{}\"",
            req.uri().path()
        );
        return error_response(&ApiError::new(403, Reason::Forbidden, msg));
    }
    next.run(req).await
}
