//! The link to the server in front of this one in the delegation chain: the
//! aggregator (`kapi-aggregator`) serves the group-versions of remote
//! APIServices. It gets every request first, after the filter chain, and
//! hands back what it does not serve ([`delegate`]); discovery and the OpenAPI
//! endpoints ask it for the remote groups and documents to add to the local
//! ones. Without one (a server alone), everything is local.

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::{Request, State};
use axum::response::Response;
use kapi_http::next::Next;
use serde_json::Value;

/// The group-versions served elsewhere.
#[async_trait]
pub trait RemoteApis: Send + Sync {
    /// Serve `req` if it belongs to a remote group-version; hand it back if not.
    async fn serve(&self, req: Request) -> Result<Response, Request>;
    /// Add the remote groups to `/apis` (`APIGroupList` items).
    fn extend_group_list(&self, groups: &mut Vec<Value>);
    /// Add the remote groups to aggregated discovery (`APIGroupDiscovery` items).
    fn extend_aggregated(&self, items: &mut Vec<Value>);
    /// `/openapi/v2` with the remote documents merged into `local`, when there
    /// are any.
    fn merged_v2(&self, local: &[u8]) -> Option<Vec<u8>>;
    /// Add the remote group-versions to the `/openapi/v3` index.
    fn extend_v3_index(&self, index: &mut Value);
    /// A remote `/openapi/v3/<path>` document and its hash.
    fn v3_document(&self, path: &str) -> Option<(bytes::Bytes, String)>;
}

/// The middleware asking the remote side first.
pub async fn delegate<N: Next>(
    State(remote): State<Option<Arc<dyn RemoteApis>>>,
    req: Request,
    next: N,
) -> Response {
    let Some(remote) = remote else {
        return next.run(req).await;
    };
    match remote.serve(req).await {
        Ok(resp) => resp,
        Err(req) => next.run(req).await,
    }
}
