//! What a resource's storage does around the generic store's writes beyond
//! its strategy (upstream: the resource's REST storage wrapping the generic
//! store — services give their ClusterIPs and node ports back when they go).
//!
//! Hooks are installed once, when the server is built (`Apis::set_hooks`).
//! The store calls them on every path that removes an object from storage,
//! whoever asks: a client's delete or delete-collection, the last finalizer
//! going in an update, the namespace controller, the garbage collector.

use async_trait::async_trait;
use serde_json::Value;

#[async_trait]
pub trait StoreHooks: Send + Sync {
    /// `obj`, as it was last stored, is gone from storage.
    async fn deleted(&self, obj: &Value);
}
