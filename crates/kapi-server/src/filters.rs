//! The filter chain every request passes before any route, listed in the order a
//! request meets them: panic recovery, authentication (`authn/`), impersonation
//! (`authz/impersonation.rs`), authorization (`authz/filter.rs`).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use futures::FutureExt;
use kapi_machinery::status::ApiError;

use crate::authn::{self, Authenticator};
use crate::authz::{filter::authorize_layer, impersonation::impersonate_layer};
use crate::negotiate::error_response;
use crate::Server;

pub fn apply(routes: Router, auth: Arc<Authenticator>, srv: Arc<Server>) -> Router {
    // Layers wrap outside-in: the last added meets the request first.
    routes
        .layer(middleware::from_fn_with_state(srv.clone(), authorize_layer))
        .layer(middleware::from_fn_with_state(srv, impersonate_layer))
        .layer(middleware::from_fn_with_state(
            auth,
            authn::authenticate_layer,
        ))
        .layer(middleware::from_fn(recover))
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
