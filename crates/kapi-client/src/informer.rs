//! An informer over one resource's store, as client-go's reflector: list once,
//! then watch from the list's resourceVersion, resuming a broken watch from the
//! last version seen; only when that version is gone (410) does it list again,
//! reporting what vanished meanwhile as deletions. Events go to one channel,
//! so a controller sees the changes of a resource in order.
//!
//! Memory: from the watch cache the list is the cache's shared objects, decoded
//! a batch at a time as they are sent; without a cache it is read in pages (as
//! client-go's pager). Either way at most one batch of decoded objects exists at
//! a time however many objects the resource has, and what is kept per object to
//! report deletions is its key and uid. An identity informer (as upstream's
//! metadata informers, used by the garbage collector) decodes only each
//! object's identity and ownership metadata; a deletions informer (the quota controller's, for
//! resources whose usage only falls when objects go away) decodes nothing of
//! the objects it lists and hands on only deletions. The garbage collector's
//! informers hand on a typed [`ObjectIdentity`] instead of JSON ([`Item`]).

use std::sync::Arc;
use std::time::Duration;

use kapi_machinery::fields::FieldSelector;
use kapi_machinery::status::ApiError;
use kapi_registry::cache::CachedObject;
use kapi_registry::meta;
use kapi_registry::store::options::{ListOptions, WatchOptions};
use kapi_registry::store::{ObjectIdentity, WatchEventType};
use serde_json::Value;
use tokio::sync::mpsc;

use kapi_registry::apis::Entry;

/// What happened to one object of the watched resource.
#[derive(Debug, Clone)]
pub enum Change<T = Value> {
    /// Created or changed (or seen by a list).
    Upsert(T),
    /// Gone; the last state seen.
    Deleted(T),
    /// The first list has been delivered: the controller knows every object.
    Synced,
}

impl<T> Change<T> {
    /// The object changed or gone; `None` for [`Change::Synced`].
    pub fn object(&self) -> Option<&T> {
        match self {
            Change::Upsert(o) | Change::Deleted(o) => Some(o),
            Change::Synced => None,
        }
    }
}

/// One event with the resource it came from.
#[derive(Clone)]
pub struct Event<T = Value> {
    pub entry: Arc<Entry>,
    pub change: Change<T>,
}

/// What an informer hands on of each object: JSON cut to its [`Shape`], or
/// (for [`Shape::Identity`]) a typed [`ObjectIdentity`].
pub trait Item: Sized + Send + 'static {
    /// From an object decoded whole (a backend list or watch event).
    fn from_object(shape: Shape, obj: Value) -> Self;
    /// From a cached object's bytes, with `revision` as its
    /// `resourceVersion`: the identity shapes' read (`Store::decode_identity_at`).
    fn from_cached(entry: &Entry, obj: &CachedObject, revision: i64) -> Result<Self, ApiError>;
    /// The object's namespace (empty when cluster-scoped) and name.
    fn key(&self) -> (String, String);
    /// What is kept of the object to report its deletion: its uid.
    fn uid(&self) -> Option<String>;
    fn resource_version(&self) -> Option<&str>;
    /// The object reported as deleted after a re-list: its identity only.
    fn skeleton(entry: &Entry, key: (String, String), uid: Option<String>) -> Self;
}

impl Item for Value {
    fn from_object(shape: Shape, obj: Value) -> Self {
        shaped(shape, obj)
    }

    fn from_cached(entry: &Entry, obj: &CachedObject, revision: i64) -> Result<Self, ApiError> {
        entry.store.decode_identity_at(&obj.kv, revision)
    }

    fn key(&self) -> (String, String) {
        (
            meta::namespace(self).unwrap_or("").to_owned(),
            meta::name(self).to_owned(),
        )
    }

    fn uid(&self) -> Option<String> {
        meta::uid(self).map(str::to_owned)
    }

    fn resource_version(&self) -> Option<&str> {
        meta::resource_version(self)
    }

    fn skeleton(entry: &Entry, (namespace, name): (String, String), uid: Option<String>) -> Self {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), name.into());
        if !namespace.is_empty() {
            m.insert("namespace".into(), namespace.into());
        }
        if let Some(uid) = uid {
            m.insert("uid".into(), uid.into());
        }
        serde_json::json!({"apiVersion": entry.def.api_version(), "kind": entry.def.kind, "metadata": m})
    }
}

impl Item for ObjectIdentity {
    fn from_object(_: Shape, obj: Value) -> Self {
        ObjectIdentity::of(&obj)
    }

    fn from_cached(entry: &Entry, obj: &CachedObject, revision: i64) -> Result<Self, ApiError> {
        entry.store.identity_at(&obj.kv, revision)
    }

    fn key(&self) -> (String, String) {
        (
            self.namespace.clone().unwrap_or_default(),
            self.name.clone(),
        )
    }

    fn uid(&self) -> Option<String> {
        self.uid.clone()
    }

    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    fn skeleton(_: &Entry, (namespace, name): (String, String), uid: Option<String>) -> Self {
        ObjectIdentity {
            name,
            namespace: Some(namespace).filter(|n| !n.is_empty()),
            uid,
            ..Default::default()
        }
    }
}

/// What an informer hands on of each object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The whole object.
    Full,
    /// `apiVersion`, `kind` and `metadata`, without `managedFields`; from the
    /// watch cache (lists and watch events alike), only the identity and
    /// ownership fields of `metadata` are decoded (`Store::decode_identity`).
    Identity,
    /// Deletions only (as [`Shape::Identity`]); nothing is decoded for the
    /// objects a list finds, and creates and updates are not handed on.
    Deletions,
}

/// Watch `entry` (all namespaces, objects matching `field`), sending changes to
/// `tx` until the receiver is dropped.
pub fn spawn(
    entry: Arc<Entry>,
    field: FieldSelector,
    tx: mpsc::Sender<Event>,
) -> tokio::task::JoinHandle<()> {
    spawn_shaped(entry, field, Shape::Full, tx)
}

/// As [`spawn`], handing on what `shape` says: [`Shape::Identity`] for the
/// garbage collector's monitors (as upstream's metadata informers),
/// [`Shape::Deletions`] for a controller that acts only when objects go away.
pub fn spawn_shaped(
    entry: Arc<Entry>,
    field: FieldSelector,
    shape: Shape,
    tx: mpsc::Sender<Event>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(entry, field, shape, tx))
}

/// As [`spawn_shaped`] with [`Shape::Identity`], handing on each object's
/// typed identity (the garbage collector's monitors).
pub fn spawn_identities(
    entry: Arc<Entry>,
    field: FieldSelector,
    tx: mpsc::Sender<Event<ObjectIdentity>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(entry, field, Shape::Identity, tx))
}

/// Objects decoded at a time from a cached list (one batch, so a conversion
/// webhook gets one review per batch).
const BATCH: usize = 500;

/// How long a list waits for the watch cache to fill before reading the backend.
const CACHE_WAIT: Duration = Duration::from_secs(30);

/// `obj` cut down to `shape`.
fn shaped(shape: Shape, obj: Value) -> Value {
    match (shape, obj) {
        (Shape::Identity | Shape::Deletions, Value::Object(mut m)) => {
            m.retain(|k, _| matches!(k.as_str(), "apiVersion" | "kind" | "metadata"));
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                meta.remove("managedFields");
            }
            Value::Object(m)
        }
        (_, obj) => obj,
    }
}

/// How a list ended.
enum Listed {
    /// Every object was sent; the list's resourceVersion.
    Done(Option<String>),
    /// The receiver is gone.
    Closed,
}

/// List `entry`'s objects matching `field` into `tx`, recording each in `fresh`.
async fn list<T: Item>(
    entry: &Arc<Entry>,
    field: &FieldSelector,
    shape: Shape,
    tx: &mpsc::Sender<Event<T>>,
    fresh: &mut Known,
) -> Result<Listed, ApiError> {
    let send = |obj: T| {
        let change = Change::Upsert(obj);
        let entry = entry.clone();
        async move { tx.send(Event { entry, change }).await.is_ok() }
    };
    let store = &entry.store;
    let mut opts = ListOptions {
        field: field.clone(),
        ..Default::default()
    };
    // From the cache (waiting a moment for it after a restart rather than
    // decoding everything from the backend): its shared objects, decoded a batch
    // at a time.
    let cached = match store.cache_ready(CACHE_WAIT).await {
        true => store.list_cached(None, &opts).await?,
        false => None,
    };
    if let Some(cached) = cached {
        if shape == Shape::Deletions {
            // Only the keys are kept, to report what a later list misses.
            for obj in cached.items.iter() {
                fresh.insert(key_of(&obj.kv.key, entry.def.namespaced), None);
            }
            return Ok(Listed::Done(Some(cached.resource_version)));
        }
        for batch in cached.items.chunks(BATCH) {
            let objs: Vec<T> = match shape {
                Shape::Full => store
                    .decode_values(batch.iter().map(|o| &o.kv))?
                    .into_iter()
                    .map(|v| T::from_object(shape, v))
                    .collect(),
                Shape::Identity | Shape::Deletions => batch
                    .iter()
                    .map(|o| T::from_cached(entry, o, o.kv.mod_revision))
                    .collect::<Result<_, _>>()?,
            };
            for obj in objs {
                fresh.insert(obj.key(), obj.uid());
                if !send(obj).await {
                    return Ok(Listed::Closed);
                }
            }
        }
        return Ok(Listed::Done(Some(cached.resource_version)));
    }
    opts.limit = PAGE;
    let mut list_rv = None;
    loop {
        let page = store.list(None, &opts).await?;
        list_rv.get_or_insert(page.resource_version);
        for obj in page.items {
            let obj = T::from_object(shape, obj);
            fresh.insert(obj.key(), obj.uid());
            if shape == Shape::Deletions {
                continue;
            }
            if !send(obj).await {
                return Ok(Listed::Closed);
            }
        }
        match page.continue_token {
            Some(token) => opts.continue_token = Some(token),
            None => return Ok(Listed::Done(list_rv)),
        }
    }
}

/// Objects per list page (client-go pages by 500; larger pages here because each
/// page of a cached list also counts the objects after it).
const PAGE: usize = 10_000;

/// Object key → the object's uid, for reporting deletions after a re-list.
type Known = foldhash::HashMap<(String, String), Option<String>>;

/// An object's key in [`Known`] from its storage key (`…/<namespace>/<name>`,
/// or `…/<name>` for a cluster-scoped resource): no decode needed.
fn key_of(storage_key: &str, namespaced: bool) -> (String, String) {
    let mut parts = storage_key.rsplit('/');
    let name = parts.next().unwrap_or_default().to_owned();
    let namespace = match namespaced {
        true => parts.next().unwrap_or_default().to_owned(),
        false => String::new(),
    };
    (namespace, name)
}

async fn run<T: Item>(
    entry: Arc<Entry>,
    field: FieldSelector,
    shape: Shape,
    tx: mpsc::Sender<Event<T>>,
) {
    let send = |change| {
        let tx = tx.clone();
        let entry = entry.clone();
        async move { tx.send(Event { entry, change }).await.is_ok() }
    };
    let mut known = Known::default();
    let mut rv: Option<String> = None;
    let mut synced = false;
    let retry = Duration::from_millis(500);
    loop {
        if tx.is_closed() {
            return;
        }
        if rv.is_none() {
            let mut fresh = Known::default();
            let list_rv = match list(&entry, &field, shape, &tx, &mut fresh).await {
                Ok(Listed::Done(list_rv)) => {
                    tracing::debug!(resource = %entry.def.gvr(), objects = fresh.len(), "informer listed");
                    list_rv
                }
                Ok(Listed::Closed) => return,
                Err(e) => {
                    tracing::debug!(resource = %entry.def.gvr(), error = %e, "informer list failed");
                    tokio::time::sleep(retry).await;
                    continue;
                }
            };
            for (k, uid) in known.drain() {
                if !fresh.contains_key(&k)
                    && !send(Change::Deleted(T::skeleton(&entry, k, uid))).await
                {
                    return;
                }
            }
            known = fresh;
            if !synced {
                synced = true;
                if !send(Change::Synced).await {
                    return;
                }
            }
            rv = list_rv;
        }
        let opts = WatchOptions {
            field: field.clone(),
            resource_version: rv.clone(),
            allow_bookmarks: true,
            // The shapes that keep only metadata read its identity and
            // ownership fields from the cached object (the parser skips the
            // rest) instead of a whole decode.
            cached_objects: shape != Shape::Full,
            ..Default::default()
        };
        let mut events = match entry.store.watch(None, &opts).await {
            Ok(rx) => rx,
            Err(e) => {
                tracing::debug!(resource = %entry.def.gvr(), code = e.code, "informer watch failed");
                if e.code == 410 {
                    rv = None;
                } else {
                    tokio::time::sleep(retry).await;
                }
                continue;
            }
        };
        while let Some(ev) = events.recv().await {
            // Deletions only: a create or an update is recorded by its key
            // alone, as a list records it, without decoding the object.
            if shape == Shape::Deletions
                && matches!(ev.kind, WatchEventType::Added | WatchEventType::Modified)
            {
                if let Some(c) = &ev.cached {
                    known.insert(key_of(&c.object.kv.key, entry.def.namespaced), None);
                    rv = Some(c.revision.to_string());
                    continue;
                }
            }
            match ev.kind {
                WatchEventType::Error => {
                    let status = &ev.object;
                    tracing::debug!(resource = %entry.def.gvr(), status = %status, "informer watch ended");
                    if status.get("code").and_then(Value::as_i64) == Some(410) {
                        rv = None;
                    }
                    break;
                }
                WatchEventType::Bookmark => {
                    if let Some(v) = meta::resource_version(&ev.object) {
                        rv = Some(v.to_owned());
                    }
                    continue;
                }
                WatchEventType::Added | WatchEventType::Modified | WatchEventType::Deleted => {}
            }
            // What the cache's identity read gives is already cut to shape.
            let obj = match &ev.cached {
                Some(c) => match T::from_cached(&entry, &c.object, c.revision) {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::debug!(resource = %entry.def.gvr(), key = %c.object.kv.key, error = %e, "informer skipped an undecodable object");
                        continue;
                    }
                },
                None => T::from_object(shape, ev.object),
            };
            if let Some(v) = obj.resource_version() {
                rv = Some(v.to_owned());
            }
            let change = if ev.kind == WatchEventType::Deleted {
                known.remove(&obj.key());
                Change::Deleted(obj)
            } else {
                known.insert(obj.key(), obj.uid());
                if shape == Shape::Deletions {
                    continue;
                }
                Change::Upsert(obj)
            };
            if !send(change).await {
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::key_of;

    #[test]
    fn a_key_comes_from_the_storage_key_alone() {
        let key = |k, ns| key_of(k, ns);
        assert_eq!(
            key("/registry/configmaps/team-a/settings", true),
            ("team-a".to_owned(), "settings".to_owned())
        );
        assert_eq!(
            key("/custom/prefix/registry/nodes/node-1", false),
            (String::new(), "node-1".to_owned())
        );
    }
}
