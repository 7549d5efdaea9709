//! kapi-storage: the bottom layer. One [`Backend`] trait with etcd3 semantics
//! (byte values, global revisions, compare-and-swap, consistent paged lists,
//! ordered watches, compaction), two implementations — the embedded store
//! (default) and real etcd — a factory that picks one from flags, the
//! background connection slot the seed describes, and the compactor.
//!
//! Nothing here knows about Kubernetes objects; `kapi-registry` builds on it.

mod backend;
pub mod compactor;
pub mod embedded;
pub mod etcd;
pub mod etcd_dial;
mod etcd_lease;
mod etcd_watch;
pub mod factory;
pub mod migrate;
pub mod slot;
mod update;

pub use backend::{
    Backend, Claim, Claimed, Claims, DbSize, Deleted, Event, EventKind, KeyValue, ListOptions,
    ListPage, Result, Revision, StorageError, WatchMessage, WatchStream,
};
pub use update::{guaranteed_update, guaranteed_update_with_ttl, Decision, Outcome, UpdateError};
