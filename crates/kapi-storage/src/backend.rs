//! The storage interface: byte values under string keys, with etcd3 semantics.
//!
//! Invariants every backend keeps (and `tests/conformance` checks):
//! - every successful write gets the next global revision, strictly increasing;
//!   the revision is the object's `resourceVersion` above this layer;
//! - each key carries `create_revision`, `mod_revision` and `version` (writes since
//!   creation, starting at 1);
//! - updates and conditional deletes are compare-and-swap on `mod_revision`;
//! - a list is consistent at one revision and may be paged with `continue_from`;
//! - a watch delivers every change after its start revision, in revision order,
//!   with the previous value, and fails with [`StorageError::Compacted`] when the
//!   start revision has been compacted away;
//! - a key written with a TTL disappears once it expires, as etcd's leases: by a
//!   delete at a new revision that watchers see with the previous value. A write
//!   with a TTL sets the key's expiry anew; a write without one leaves the key
//!   with none (etcd detaches a key from its lease on a put without a lease).
//!   Expiry is not exact: etcd keeps a key up to its lease's end (a lease may be
//!   shared by writes a little apart, see `etcd_lease.rs`) plus the time its
//!   lessor takes to notice.
//!
//! Where to look next: `embedded/` and `etcd.rs` implement this trait,
//! `update.rs` builds the retry loop on top of it, `slot.rs` hands it out.

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

/// A global storage revision. `0` means "none" / "latest" where an option allows it.
pub type Revision = i64;

/// One key at one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    pub create_revision: Revision,
    pub mod_revision: Revision,
    /// Number of writes since the key was (re)created; 1 after create.
    pub version: i64,
}

/// A page of a list, read at one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    pub kvs: Vec<KeyValue>,
    /// The revision the whole list (every page of it) is consistent at.
    pub revision: Revision,
    /// Whether keys remain after this page.
    pub more: bool,
    /// How many keys remain after this page: exact, unless the list asked for
    /// `skip_count` (then only `0` or, when `more`, at least `1`).
    pub remaining: i64,
}

/// What a list asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Read at this revision; `None` reads at the current one.
    pub revision: Option<Revision>,
    /// At most this many keys; `0` means no limit.
    pub limit: usize,
    /// Start at this key (inclusive); it must lie under the prefix.
    pub continue_from: Option<String>,
    /// The caller needs only `more`, not how many keys remain: a backend may
    /// then stop reading at the first key after the page (a paged read of the
    /// whole keyspace stays linear instead of counting the rest per page).
    pub skip_count: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Put,
    Delete,
}

/// One change. For a delete, `kv.value` is empty and `kv.mod_revision` is the
/// revision of the delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    pub prev: Option<KeyValue>,
}

impl Event {
    pub fn revision(&self) -> Revision {
        self.kv.mod_revision
    }

    /// A put whose key did not exist before (create revision is this write).
    pub fn is_create(&self) -> bool {
        self.kind == EventKind::Put && self.kv.create_revision == self.kv.mod_revision
    }
}

/// What a watch stream yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchMessage {
    /// Changes in revision order, none skipped.
    Events(Vec<Event>),
    /// Nothing changed under the prefix up to this revision.
    Progress(Revision),
}

pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchMessage, StorageError>> + Send>>;

/// The result of a successful delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The value that was deleted.
    pub prev: KeyValue,
    /// The revision of the delete.
    pub revision: Revision,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    #[error("key {key:?} not found")]
    NotFound { key: String },
    #[error("key {key:?} already exists")]
    AlreadyExists { key: String },
    /// The key's mod revision was not the expected one; `current` is what is there now.
    #[error("key {key:?} was modified (conflict)")]
    Conflict {
        key: String,
        current: Option<Box<KeyValue>>,
    },
    #[error("required revision {requested} has been compacted (compacted at {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    #[error("required revision {requested} is a future revision (current {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    #[error("storage error: {0}")]
    Internal(String),
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// The storage interface every backend implements.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// The latest value of `key`, or its value at `revision`.
    async fn get(&self, key: &str, revision: Option<Revision>) -> Result<Option<KeyValue>>;

    /// Keys under `prefix`, consistent at one revision.
    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListPage>;

    /// How many keys lie under `prefix` now.
    async fn count(&self, prefix: &str) -> Result<i64>;

    /// Create `key`; fails with `AlreadyExists` when it exists. Returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        self.create_with_ttl(key, value, None).await
    }

    /// [`Backend::create`], the key expiring `ttl` after the write when given.
    async fn create_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        ttl: Option<Duration>,
    ) -> Result<KeyValue>;

    /// Replace `key` if its mod revision is `expected`; `Conflict` otherwise,
    /// `NotFound` when it does not exist. The key keeps no expiry.
    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue> {
        self.update_with_ttl(key, value, expected, None).await
    }

    /// [`Backend::update`], the key expiring `ttl` after the write when given
    /// (and never, whatever it had before, when not).
    async fn update_with_ttl(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue>;

    /// Delete `key`, if `expected` is given only when its mod revision matches.
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted>;

    /// Every change under `prefix` after `after` (0: from now on).
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream>;

    /// Forget history at and before `revision`.
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision of the last write.
    async fn current_revision(&self) -> Result<Revision>;

    /// [`Backend::current_revision`] when the backend knows it without a
    /// round trip or a wait (a store in this process); `None` sends the
    /// caller to the asynchronous read.
    fn known_revision(&self) -> Option<Revision> {
        None
    }

    /// Claim `key` for a create about to be prepared (a generated name), when
    /// the backend can tell at once — a store in this process — whether the
    /// key holds a value now: [`Claim::Taken`] when it does or another claim
    /// holds it, else [`Claim::Free`], which keeps other claims of the key
    /// off until it is dropped. A create that names its key itself claims
    /// nothing, so a claimed key may still be taken by one; the claimant
    /// learns it from its write. [`Claim::Unknown`] by default.
    fn claim(&self, _key: &str) -> Claim {
        Claim::Unknown
    }

    /// A cheap round trip proving the backend answers.
    async fn health(&self) -> Result<()>;

    /// Whether `kv`, as this backend returned it, is kept in a form the
    /// backend no longer writes (encrypted with a key that is no longer the
    /// writing one: upstream's *stale* read), so that an update which changes
    /// nothing must still rewrite it — how a key rotation reaches every
    /// object. Plain backends keep nothing stale.
    async fn is_stale(&self, kv: &KeyValue) -> Result<bool> {
        let _ = kv;
        Ok(false)
    }

    /// The size of the database file each storage member keeps, by member:
    /// for etcd, every endpoint's `dbSize` as its Status reports it (`None`
    /// for a member that did not answer); for the embedded store, its data
    /// directory's files. What `apiserver_storage_size_bytes` and
    /// `apiserver_storage_db_total_size_in_bytes` report.
    async fn db_sizes(&self) -> Result<Vec<DbSize>> {
        Ok(Vec::new())
    }

    /// A short name for logs and health checks.
    fn name(&self) -> &'static str;
}

/// One storage member's database size ([`Backend::db_sizes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbSize {
    /// The member: an etcd endpoint URL, or the embedded store's directory.
    pub endpoint: String,
    /// Bytes physically allocated; `None` when the member did not answer.
    pub bytes: Option<i64>,
}

/// What [`Backend::claim`] found.
#[derive(Debug)]
pub enum Claim {
    /// The backend cannot tell without a round trip (the write will).
    Unknown,
    /// The key holds a value, or another claim holds it.
    Taken,
    /// The key held nothing, and no other claim holds it while this lives.
    Free(Claimed),
}

/// The keys claimed in one store, each until its [`Claimed`] is dropped.
#[derive(Debug, Default)]
pub struct Claims(std::sync::Mutex<std::collections::HashSet<String, foldhash::fast::RandomState>>);

impl Claims {
    /// Claim `key` unless another claim holds it or `taken` (asked under the
    /// claims' lock, so no claim of the key comes between) says it holds a value.
    pub fn claim(self: &std::sync::Arc<Self>, key: &str, taken: impl FnOnce() -> bool) -> Claim {
        let mut keys = self.0.lock().expect("claims lock");
        if keys.contains(key) || taken() {
            return Claim::Taken;
        }
        keys.insert(key.to_owned());
        Claim::Free(Claimed {
            claims: self.clone(),
            key: key.to_owned(),
        })
    }
}

/// A key claimed for a create ([`Backend::claim`]); dropping it lets the key go.
#[derive(Debug)]
pub struct Claimed {
    claims: std::sync::Arc<Claims>,
    key: String,
}

impl Drop for Claimed {
    fn drop(&mut self) {
        self.claims.0.lock().expect("claims lock").remove(&self.key);
    }
}
