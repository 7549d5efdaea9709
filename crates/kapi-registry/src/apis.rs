//! The served resources: every installed `ResourceDef` with its store, looked up
//! by group, version and resource. Built-ins are installed when the server is
//! built; custom resources come and go at run time (the apiextensions server),
//! hence the lock. Discovery, OpenAPI, the handlers, admission and the
//! controllers all read this one table, so they cannot disagree.
//!
//! How resources are stored follows the storage flags ([`StorageOptions`]):
//! with the watch cache or without it (`--watch-cache`, and per resource
//! `--watch-cache-sizes=<resource>#0`), on the main backend or on another one
//! (`--etcd-servers-overrides`, e.g. events in their own etcd; every version
//! of a resource, and resources sharing its keys, go there too, each such
//! backend with its own watch cache), with the garbage collector's finalizers
//! or not (`--enable-garbage-collector`).
//!
//! Where to look next: `store/` is what each entry serves through; `cache/`
//! is the watch cache every installed store reads and watches through.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use kapi_machinery::schema::{SchemaNav, TypeRef};
use kapi_storage::Backend;

use crate::cache::{CacheConfig, CachedBackend};
use crate::codec::StorageCodec;
use crate::{ResourceDef, Store, Verb};

/// One resource of the table.
pub struct Entry {
    pub def: Arc<ResourceDef>,
    pub store: Store,
    /// Whether clients see it (discovery, OpenAPI, its routes). A resource
    /// `--runtime-config` turns off keeps its store for the server's own
    /// readers (admission, controllers), as they would find its objects in
    /// storage, but is not served.
    pub served: bool,
}

#[derive(Default)]
struct State {
    /// Entries by resource name, then group and version: a look-up (every
    /// request makes several) borrows its strings instead of copying them.
    by_resource: foldhash::HashMap<String, Vec<Arc<Entry>>>,
    /// Installation order, which is discovery order.
    order: Vec<Arc<Entry>>,
}

impl State {
    fn get(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<Entry>> {
        self.by_resource
            .get(resource)?
            .iter()
            .find(|e| e.def.group == group && e.def.version == version)
    }

    /// Adds `entry`, replacing the one of the same group/version/resource.
    fn insert(&mut self, entry: Arc<Entry>) {
        let def = &entry.def;
        let same = self.by_resource.entry(def.resource.clone()).or_default();
        same.retain(|e| (&e.def.group, &e.def.version) != (&def.group, &def.version));
        same.push(entry);
    }

    fn remove(&mut self, group: &str, version: &str, resource: &str) -> Option<Arc<Entry>> {
        let same = self.by_resource.get_mut(resource)?;
        let at = same
            .iter()
            .position(|e| e.def.group == group && e.def.version == version)?;
        let gone = same.remove(at);
        if same.is_empty() {
            self.by_resource.remove(resource);
        }
        Some(gone)
    }
}

#[derive(Default)]
pub struct Apis {
    state: RwLock<State>,
    /// The watch cache every installed store reads and watches through.
    cache: Option<CachedBackend>,
    /// How every installed store encodes and decodes its objects.
    codec: StorageCodec,
    /// Key prefixes stored elsewhere (`--etcd-servers-overrides`).
    routes: Vec<Route>,
    /// Key prefixes served without a cache.
    uncached: Vec<String>,
    /// Resources installed but not served (`--runtime-config`).
    hidden: Vec<(String, String, String)>,
    /// `--enable-garbage-collector=false` (default-constructed tables collect).
    gc_disabled: bool,
    /// The storage clusters, each once: the main backend, then those of
    /// `--etcd-servers-overrides` (upstream's `etcd-0`, `etcd-1`, …).
    clusters: Vec<Arc<dyn Backend>>,
}

/// A key prefix on a backend of its own.
struct Route {
    prefix: String,
    backend: Arc<dyn Backend>,
    cache: Option<CachedBackend>,
}

/// How the resource table stores its resources (the storage flags).
#[derive(Clone)]
pub struct StorageOptions {
    /// `--watch-cache`: serve reads and watches from a watch cache.
    pub watch_cache: bool,
    /// `--watch-cache-sizes` entries of size 0: `(group, resource)` served
    /// from storage only.
    pub uncached: Vec<(String, String)>,
    /// `--etcd-servers-overrides`: `(group, resource)` and its backend.
    pub overrides: Vec<((String, String), Arc<dyn Backend>)>,
    /// `--enable-garbage-collector`.
    pub garbage_collection: bool,
    /// `(group, version, resource)` of the built-in resources not served
    /// (`--runtime-config`).
    pub hidden: Vec<(String, String, String)>,
    /// The caches' tuning (`consistent_reads` is the `ConsistentListFromCache` gate).
    pub cache: CacheConfig,
    /// How every store encodes and decodes its objects (`--storage-media-type`,
    /// older versions upgraded on read); the caches transcode with it too.
    pub codec: StorageCodec,
}

impl Default for StorageOptions {
    fn default() -> Self {
        StorageOptions {
            watch_cache: true,
            uncached: Vec::new(),
            overrides: Vec::new(),
            garbage_collection: true,
            hidden: Vec::new(),
            cache: CacheConfig::default(),
            codec: StorageCodec::default(),
        }
    }
}

/// One API group with its versions, preferred first.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub name: String,
    pub versions: Vec<String>,
}

impl Apis {
    /// Install `defs`, caching their prefixes (and `extra_prefixes`, where
    /// resources installed later live) in a watch cache over `backend`;
    /// `root_of` names each definition's schema type.
    pub fn new(
        defs: Vec<ResourceDef>,
        backend: Arc<dyn Backend>,
        schema: Arc<dyn SchemaNav>,
        root_of: impl Fn(&ResourceDef) -> TypeRef,
        extra_prefixes: impl IntoIterator<Item = String>,
    ) -> Apis {
        let opts = StorageOptions::default();
        Apis::with_options(defs, backend, schema, root_of, extra_prefixes, &opts)
    }

    /// [`Apis::new`] storing as `opts` says.
    pub fn with_options(
        defs: Vec<ResourceDef>,
        backend: Arc<dyn Backend>,
        schema: Arc<dyn SchemaNav>,
        root_of: impl Fn(&ResourceDef) -> TypeRef,
        extra_prefixes: impl IntoIterator<Item = String>,
        opts: &StorageOptions,
    ) -> Apis {
        let prefix_of = |gr: &(String, String)| {
            defs.iter()
                .find(|d| (&d.group, &d.resource) == (&gr.0, &gr.1))
                .map(|d| d.list_prefix(None))
        };
        let uncached: Vec<String> = opts.uncached.iter().filter_map(prefix_of).collect();
        let cache_config = CacheConfig {
            codec: Some(opts.codec.clone()),
            ..opts.cache.clone()
        };
        let mut routes: Vec<Route> = Vec::new();
        for (gr, other) in &opts.overrides {
            let Some(prefix) = prefix_of(gr) else {
                continue;
            };
            let cached = opts.watch_cache && !uncached.contains(&prefix);
            let cache = cached
                .then(|| CachedBackend::new(other.clone(), [prefix.clone()], cache_config.clone()));
            routes.push(Route {
                prefix,
                backend: other.clone(),
                cache,
            });
        }
        let main_prefixes = defs
            .iter()
            .map(|d| d.list_prefix(None))
            .filter(|p| !uncached.contains(p) && !routes.iter().any(|r| &r.prefix == p))
            .chain(extra_prefixes);
        let cache = opts
            .watch_cache
            .then(|| CachedBackend::new(backend.clone(), main_prefixes, cache_config.clone()));
        let apis = Apis {
            cache,
            codec: opts.codec.clone(),
            routes,
            uncached,
            gc_disabled: !opts.garbage_collection,
            hidden: opts.hidden.clone(),
            clusters: Vec::new(),
            ..Apis::default()
        };
        let mut clusters: Vec<Arc<dyn Backend>> = vec![backend.clone()];
        for r in &apis.routes {
            if !clusters.iter().any(|c| Arc::ptr_eq(c, &r.backend)) {
                clusters.push(r.backend.clone());
            }
        }
        let apis = Apis { clusters, ..apis };
        for def in defs {
            let root = root_of(&def);
            apis.install(def, backend.clone(), schema.clone(), root);
        }
        apis
    }

    pub fn install(
        &self,
        def: ResourceDef,
        backend: Arc<dyn Backend>,
        schema: Arc<dyn SchemaNav>,
        root: TypeRef,
    ) {
        let def = Arc::new(def);
        let prefix = def.list_prefix(None);
        let (backend, cache) = match self.routes.iter().find(|r| r.prefix == prefix) {
            Some(r) => (r.backend.clone(), r.cache.as_ref()),
            None if self.uncached.contains(&prefix) => (backend, None),
            None => (backend, self.cache.as_ref()),
        };
        let mut store = Store::new(def.clone(), backend)
            .with_schema(schema, root)
            .with_codec(self.codec.clone())
            .with_garbage_collection(!self.gc_disabled);
        if let Some(cache) = cache {
            store = store.with_cache(cache.clone());
        }
        let gvr = (def.group.clone(), def.version.clone(), def.resource.clone());
        let entry = Arc::new(Entry {
            store,
            def: def.clone(),
            served: !self.hidden.contains(&gvr),
        });
        let mut st = self.state.write().expect("apis lock");
        st.order.retain(|e| {
            (
                e.def.group.as_str(),
                e.def.version.as_str(),
                e.def.resource.as_str(),
            ) != (gvr.0.as_str(), gvr.1.as_str(), gvr.2.as_str())
        });
        st.order.push(entry.clone());
        st.insert(entry);
    }

    /// Make `group/version/resource`'s store call `hooks` (`crate::hooks`);
    /// for the server's assembly, before anyone holds the entry.
    pub fn set_hooks(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        hooks: Arc<dyn crate::hooks::StoreHooks>,
    ) {
        let mut st = self.state.write().expect("apis lock");
        let Some(old) = st.get(group, version, resource).cloned() else {
            return;
        };
        let entry = Arc::new(Entry {
            store: old.store.clone().with_hooks(hooks),
            def: old.def.clone(),
            served: old.served,
        });
        for e in st.order.iter_mut() {
            if Arc::ptr_eq(e, &old) {
                *e = entry.clone();
            }
        }
        st.insert(entry);
    }

    /// Stop serving a resource (a custom resource whose definition changed or went).
    pub fn remove(&self, group: &str, version: &str, resource: &str) -> Option<Arc<Entry>> {
        let mut st = self.state.write().expect("apis lock");
        let gone = st.remove(group, version, resource)?;
        st.order.retain(|e| !Arc::ptr_eq(e, &gone));
        Some(gone)
    }

    /// How the stores encode and decode their objects.
    pub fn codec(&self) -> &StorageCodec {
        &self.codec
    }

    /// Whether every watch cache of the table (the main one and those of
    /// `--etcd-servers-overrides`) is filled; true without caches.
    pub fn caches_ready(&self) -> bool {
        self.cache.iter().all(CachedBackend::all_ready)
            && self
                .routes
                .iter()
                .filter_map(|r| r.cache.as_ref())
                .all(CachedBackend::all_ready)
    }

    /// The storage clusters behind the stores, the main one first.
    pub fn storage_clusters(&self) -> &[Arc<dyn Backend>] {
        &self.clusters
    }

    /// The watch cache the stores read through.
    pub fn cache(&self) -> Option<&CachedBackend> {
        self.cache.as_ref()
    }

    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<Entry>> {
        let st = self.state.read().expect("apis lock");
        st.get(group, version, resource).cloned()
    }

    /// Every resource of the table, served or not.
    pub fn all(&self) -> Vec<Arc<Entry>> {
        self.state.read().expect("apis lock").order.clone()
    }

    /// The resources clients see.
    pub fn served(&self) -> Vec<Arc<Entry>> {
        self.all().into_iter().filter(|e| e.served).collect()
    }

    /// The served resources' declarations (what OpenAPI publishes).
    pub fn defs(&self) -> Vec<ResourceDef> {
        self.served().iter().map(|e| (*e.def).clone()).collect()
    }

    /// Served groups other than core, in installation order; versions
    /// preferred first (GA before beta before alpha, then newest).
    pub fn groups(&self) -> Vec<GroupInfo> {
        let mut out: Vec<GroupInfo> = Vec::new();
        for e in self.served() {
            if e.def.group.is_empty() {
                continue;
            }
            match out.iter_mut().find(|g| g.name == e.def.group) {
                Some(g) if !g.versions.contains(&e.def.version) => {
                    g.versions.push(e.def.version.clone())
                }
                Some(_) => {}
                None => out.push(GroupInfo {
                    name: e.def.group.clone(),
                    versions: vec![e.def.version.clone()],
                }),
            }
        }
        for g in &mut out {
            g.versions
                .sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        out
    }

    /// Served resources of one group-version, in installation order.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<Arc<Entry>> {
        self.served()
            .into_iter()
            .filter(|e| e.def.group == group && e.def.version == version)
            .collect()
    }

    /// Served entries by group-version, for discovery.
    pub fn by_group_version(&self) -> BTreeMap<(String, String), Vec<Arc<Entry>>> {
        let mut map: BTreeMap<(String, String), Vec<Arc<Entry>>> = BTreeMap::new();
        for e in self.served() {
            map.entry((e.def.group.clone(), e.def.version.clone()))
                .or_default()
                .push(e);
        }
        map
    }
}

impl Apis {
    /// One served version per resource (the preferred one) that supports
    /// `verbs`: the resources a controller that walks "everything" visits.
    pub fn preferred(&self, verbs: &[Verb]) -> Vec<Arc<Entry>> {
        let mut out: Vec<Arc<Entry>> = Vec::new();
        for e in self.all() {
            if !verbs.iter().all(|v| e.def.supports(*v)) {
                continue;
            }
            let same =
                |o: &Arc<Entry>| o.def.group == e.def.group && o.def.resource == e.def.resource;
            match out.iter_mut().find(|o| same(o)) {
                Some(o) if version_priority(&e.def.version) > version_priority(&o.def.version) => {
                    *o = e
                }
                Some(_) => {}
                None => out.push(e),
            }
        }
        out
    }

    /// The served resource of objects of `kind` at `api_version` (that version
    /// if served, otherwise the preferred version of the same group and kind).
    pub fn resolve_kind(&self, api_version: &str, kind: &str) -> Option<Arc<Entry>> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        self.all()
            .into_iter()
            .filter(|e| e.def.group == group && e.def.kind == kind)
            .max_by_key(|e| (e.def.version == version, version_priority(&e.def.version)))
    }
}

/// Upstream's version ordering: GA > beta > alpha, higher numbers first.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (level, major, minor)
}
