//! Reads through the watch cache: how the store maps upstream's
//! `resourceVersion` / `resourceVersionMatch` rules onto [`ReadAt`], pages and
//! filters shared [`CachedObject`]s (selectors against label and field sets
//! computed once per object), and falls back to the backend path whenever the
//! cache cannot answer (`Ok(None)`).
//!
//! | request | read |
//! |---|---|
//! | no `resourceVersion` | consistent: the cache once it caught up with the backend |
//! | `resourceVersion=0` | whatever the cache holds |
//! | `resourceVersion=N` (NotOlderThan, or unset without `limit`) | the cache once it reached N; 504 after the wait |
//! | `resourceVersion=N` Exact (or unset with `limit`), `continue` | the cache at N if N is in its window, else the backend |
//!
//! Selectors narrow what is visited before they are evaluated: a namespace (or
//! `metadata.namespace=`) is a key range, `metadata.name=` with a known namespace
//! is one key (upstream's `MatchesSingle`), and `field=value` on a field the
//! strategy indexes ([`crate::Strategy::indexed_fields`]) reads the cache's index.

use std::sync::Arc;

use kapi_machinery::status::ApiError;
use kapi_storage::Revision;
use serde_json::Value;

use super::list::{decode_token, encode_token};
use super::options::{ListOptions, RvMatch};
use super::{parse_rv, Store};
use crate::cache::{Attrs, CachedBackend, CachedObject, Indexer, Items, KeyFilter, ReadAt};
use crate::meta;
use crate::resource::ResourceDef;

/// A list page of cached objects; each is shown at its own `mod_revision`.
#[derive(Debug, Clone, Default)]
pub struct CachedList {
    pub items: Items,
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining: Option<i64>,
}

impl Store {
    /// Serve reads and watches through `cache` (the resource's prefix is added
    /// to it when missing, as for a custom resource installed while serving);
    /// writes go through it to the backend below.
    pub fn with_cache(mut self, cache: CachedBackend) -> Self {
        let prefix = self.def.list_prefix(None);
        if !cache.add_prefix(&prefix) {
            tracing::warn!(%prefix, "not cached: the prefix contains cached prefixes");
            return self;
        }
        let fields = self.def.strategy.indexed_fields();
        if !fields.is_empty() {
            let def = self.def.clone();
            let indexer = Indexer {
                fields: fields.iter().map(|f| (*f).to_owned()).collect(),
                key: self.attrs_key,
                attrs: Box::new(move |kv| attrs_of(&def, kv)),
            };
            cache.set_indexer(&prefix, indexer);
        }
        self.backend = Arc::new(cache.clone());
        self.cache = Some(cache);
        self
    }

    pub fn cache(&self) -> Option<&CachedBackend> {
        self.cache.as_ref()
    }

    /// Where a list without `continue` reads, per the table above.
    fn list_read_at(opts: &ListOptions) -> Result<ReadAt, ApiError> {
        match opts.resource_version.as_deref() {
            None | Some("") => {
                if opts.rv_match != RvMatch::Unset {
                    return Err(ApiError::bad_request(
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                Ok(ReadAt::Consistent)
            }
            Some(rv) => {
                let rv = parse_rv(rv)?;
                match opts.rv_match {
                    RvMatch::Exact if rv == 0 => Err(ApiError::bad_request(
                        "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
                    )),
                    RvMatch::Exact => Ok(ReadAt::Exact(rv)),
                    RvMatch::Unset if rv > 0 && opts.limit > 0 => Ok(ReadAt::Exact(rv)),
                    _ if rv == 0 => Ok(ReadAt::Any),
                    _ => Ok(ReadAt::AtLeast(rv)),
                }
            }
        }
    }

    /// A list page from the cache, or `None` when the backend must answer.
    pub async fn list_cached(
        &self,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Option<CachedList>, ApiError> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        // A namespace pinned by the field selector narrows the key range (the
        // namespace index is the key order).
        let namespace = namespace.or_else(|| {
            self.def
                .namespaced
                .then(|| opts.field.exact_value("metadata.namespace"))
                .flatten()
                .filter(|ns| !ns.is_empty() && !ns.contains('/'))
        });
        let prefix = self.def.list_prefix(namespace);
        let (mut at, mut start) = match opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => {
                let (rv, key) = decode_token(token)?;
                (ReadAt::Exact(rv), Some(format!("{prefix}{key}")))
            }
            None => (Self::list_read_at(opts)?, None),
        };
        let filtered = !opts.label.is_empty() || !opts.field.is_empty();
        let filter = self.key_filter(cache, &prefix, namespace, opts);
        let mut out = CachedList::default();
        let revision: Revision;
        loop {
            let page = cache
                .list_filtered(&prefix, at, opts.limit, start.as_deref(), &filter)
                .await
                .map_err(|e| self.storage_error(e, ""))?;
            let Some(page) = page else {
                return Ok(None);
            };
            at = ReadAt::Exact(page.revision);
            // A page never holds more than `limit` objects (see list.rs).
            let mut more = page.more;
            let mut items = page.items;
            let room = match opts.limit {
                0 => usize::MAX,
                l => l.saturating_sub(out.items.len()),
            };
            if items.len() > room {
                items.to_mut().truncate(room);
                more = true;
            }
            // The last object looked at, for the next page or the continue token.
            let last_key = items.last().cloned();
            if filtered {
                items.retain(|o| self.cached_matches(o, opts));
            }
            if out.items.is_empty() {
                out.items = items;
            } else {
                out.items.append(items);
            }
            let full = opts.limit > 0 && out.items.len() >= opts.limit;
            match last_key.as_ref().map(|o| o.kv.key.as_str()) {
                Some(last) if more => {
                    if full || !filtered {
                        let next = format!("{last}\0");
                        let rel = next.strip_prefix(&prefix).unwrap_or(&next).to_owned();
                        out.continue_token = Some(encode_token(page.revision, &rel));
                        out.remaining = (!filtered).then_some(page.remaining);
                        revision = page.revision;
                        break;
                    }
                    start = Some(format!("{last}\0"));
                }
                _ => {
                    revision = page.revision;
                    break;
                }
            }
        }
        out.resource_version = revision.to_string();
        Ok(Some(out))
    }

    /// Wait, at most `timeout`, until the watch cache serves this resource;
    /// false when it has no cache or the cache is not filled by then. For
    /// in-process readers that would rather wait a moment than read and decode
    /// everything from the backend while the cache fills (after a restart).
    pub async fn cache_ready(&self, timeout: std::time::Duration) -> bool {
        let Some(cache) = &self.cache else {
            return false;
        };
        let prefix = self.def.list_prefix(None);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if cache.is_ready(&prefix) {
                return true;
            }
            if !cache.caches(&prefix) || tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Which keys a list under `prefix` needs to visit for `opts`' field selector.
    fn key_filter(
        &self,
        cache: &CachedBackend,
        prefix: &str,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> KeyFilter {
        let name = opts
            .field
            .exact_value("metadata.name")
            .filter(|n| !n.is_empty() && !n.contains('/'));
        if let Some(name) = name {
            if namespace.is_some() || !self.def.namespaced {
                return KeyFilter::Key(self.def.key(namespace, name));
            }
            return KeyFilter::Name(name.to_owned());
        }
        for field in self.def.strategy.indexed_fields() {
            if let Some(value) = opts.field.exact_value(field) {
                if cache.has_index(prefix, field) {
                    return KeyFilter::Field {
                        field: (*field).to_owned(),
                        value: value.to_owned(),
                    };
                }
            }
        }
        KeyFilter::All
    }

    /// One object from the cache (`resourceVersion` "0" or N, not-older-than), or
    /// `None` when the backend must answer.
    pub(crate) async fn get_cached(
        &self,
        key: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Option<Value>, ApiError> {
        match self.cached_object(key, name, resource_version).await? {
            Some(obj) => self.decode(&obj.kv).map(Some),
            None => Ok(None),
        }
    }

    /// The cached object itself, for callers that write its bytes directly.
    pub async fn get_cached_object(
        &self,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
    ) -> Result<Option<Arc<CachedObject>>, ApiError> {
        let key = self.def.key(namespace, name);
        self.cached_object(&key, name, resource_version).await
    }

    /// The object a GET without `resourceVersion` reads — the latest, as a
    /// read from storage would give it — from the watch cache once it has caught
    /// up with storage's current revision; `None` when the cache cannot say
    /// (not ready, consistent reads from it off, or it did not catch up in time).
    pub async fn get_cached_object_latest(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<CachedObject>>, ApiError> {
        let key = self.def.key(namespace, name);
        self.cached_at(&key, name, ReadAt::Consistent).await
    }

    async fn cached_object(
        &self,
        key: &str,
        name: &str,
        resource_version: &str,
    ) -> Result<Option<Arc<CachedObject>>, ApiError> {
        let at = match parse_rv(resource_version)? {
            0 => ReadAt::Any,
            rv => ReadAt::AtLeast(rv),
        };
        self.cached_at(key, name, at).await
    }

    async fn cached_at(
        &self,
        key: &str,
        name: &str,
        at: ReadAt,
    ) -> Result<Option<Arc<CachedObject>>, ApiError> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        match cache.get_cached(key, at).await {
            Ok(None) => Ok(None),
            Ok(Some((Some(obj), _))) => Ok(Some(obj)),
            Ok(Some((None, _))) => Err(self.not_found(name)),
            Err(e) => Err(self.storage_error(e, name)),
        }
    }

    /// Whether a cached object passes the selectors, using its attribute sets.
    pub fn cached_matches(&self, obj: &CachedObject, opts: &ListOptions) -> bool {
        if opts.label.is_empty() && opts.field.is_empty() {
            return true;
        }
        // A selector on the name alone (a controller that follows one object)
        // reads the name from the key, whose last segment it is: the object
        // is not parsed for every write under the prefix.
        if opts.label.is_empty()
            && opts
                .field
                .requirements()
                .all(|r| r.field == "metadata.name")
        {
            let name = obj.kv.key.rsplit('/').next().unwrap_or("");
            return opts.field.matches(|_| Some(name.to_owned()));
        }
        obj.with_attrs(
            self.attrs_key,
            |kv| attrs_of(&self.def, kv),
            |a| {
                a.is_some_and(|a| {
                    opts.label.matches_with(|k| a.labels.get(k))
                        && opts.field.matches(|f| a.fields.get(f).map(str::to_owned))
                })
            },
        )
    }
}

/// The label and field sets of a stored object of `def`'s resource.
fn attrs_of(def: &ResourceDef, kv: &kapi_storage::KeyValue) -> Option<Attrs> {
    let selectable = def.strategy.selectable_field_names();
    // Most resources select on metadata alone: parse only that, without
    // managedFields (the rest is skipped unallocated), which matters when a
    // selector first touches every cached object of a large resource.
    let obj: Value = if selectable.iter().all(|f| f.starts_with("metadata.")) {
        let meta = Store::stored_metadata_without_managed_fields(kv).ok()?;
        Value::Object(serde_json::Map::from_iter([(
            "metadata".to_owned(),
            Value::Object(meta),
        )]))
    } else {
        serde_json::from_slice(&super::json_of(kv).ok()?).ok()?
    };
    let labels = meta::meta(&obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let mut fields = std::collections::BTreeMap::new();
    for f in ["metadata.name", "metadata.namespace"]
        .into_iter()
        .chain(selectable.iter().map(String::as_str))
    {
        if let Some(v) = super::list::field_value(def, &obj, f) {
            fields.insert(f.to_owned(), v);
        }
    }
    Some(Attrs {
        labels,
        fields: fields.into(),
    })
}
