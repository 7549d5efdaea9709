//! What a filter hands a request on to: the rest of the chain ([`Next`]).
//!
//! The filters are plain async functions taking the request and the rest of
//! the chain. The server's chain (`kapi-server`'s `filters`) runs them as
//! stages of one service, each handing on to the next through [`Then`];
//! axum's own middleware `Next` is one too, so a filter can still stand alone
//! as `axum::middleware::from_fn(filter::<axum::middleware::Next>)` (the
//! tests use them so).

use std::future::Future;

use axum::extract::Request;
use axum::response::Response;

/// The rest of the filter chain, as a filter sees it: run once with the
/// request, it answers.
pub trait Next: Send + 'static {
    /// Run the rest of the chain with `req`.
    fn run(self, req: Request) -> impl Future<Output = Response> + Send + 'static;
}

impl Next for axum::middleware::Next {
    fn run(self, req: Request) -> impl Future<Output = Response> + Send + 'static {
        axum::middleware::Next::run(self, req)
    }
}

/// A closure as the rest of the chain.
pub struct Then<F>(pub F);

impl<F, Fut> Next for Then<F>
where
    F: FnOnce(Request) -> Fut + Send + 'static,
    Fut: Future<Output = Response> + Send + 'static,
{
    fn run(self, req: Request) -> impl Future<Output = Response> + Send + 'static {
        (self.0)(req)
    }
}
