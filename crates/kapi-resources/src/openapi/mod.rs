//! The OpenAPI documents of the served API: `GET /openapi/v2` (swagger 2.0, one
//! document) and `GET /openapi/v3` (an index) plus `GET /openapi/v3/<key>` (one
//! OpenAPI 3.0.0 document per group-version, and discovery documents for `api`,
//! `apis` and `apis/<group>`), as kube-apiserver serves them. kubectl reads them
//! for `--validate` (it sends `fieldValidation` only when a PATCH operation of the
//! kind declares it), `kubectl explain`, and strategic-merge patch metadata.
//!
//! What this module owns: turning the served `ResourceDef`s into documents.
//! Definitions come from k8s-openapi's schemars schemas, generated at build
//! time by the crate's `build.rs` (`kinds.rs`, `defs.rs`), plus the fact table of [`crate::patchmeta`]; paths from `paths.rs` and
//! `params.rs`; the 3.0 form from `v3.rs`.
//!
//! Invariants: [`OpenApi::build`] is deterministic (same resources → same bytes →
//! same hashes); every `$ref` of every document resolves inside it; a document's
//! hash is upstream's ETag: the upper-case hex SHA-512 of its bytes
//! (`kube-openapi/pkg/handler3`). Documents are rendered on first use — not at
//! start-up, which they would slow by a second and grow by megabytes on a server
//! nobody asks for OpenAPI (upstream's handlers render lazily too) — then shared
//! (`Arc`), so serving them costs a clone of a pointer.
//! Where to look next: `kapi-server` (the HTTP handlers), `patchmeta/`.

mod custom_v2;
pub mod defs;
pub mod kinds;
pub mod params;
pub mod paths;
pub mod render;
pub mod v3;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use kapi_registry::ResourceDef;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};

use defs::Defs;
use paths::{GroupVersion, Target};
use render::{Part, Sources};

/// A rendered document and its hash.
#[derive(Clone)]
struct Doc {
    bytes: Arc<[u8]>,
    hash: String,
}

impl Doc {
    fn new(value: &impl serde::Serialize) -> Doc {
        let bytes = serde_json::to_vec(value).expect("a JSON value always serializes");
        let hash = hash(&bytes);
        Doc {
            bytes: bytes.into(),
            hash,
        }
    }
}

/// Upstream's document hash: upper-case hex SHA-512.
pub fn hash(bytes: &[u8]) -> String {
    Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// What the documents are rendered from, and the documents once rendered.
struct Inner {
    resources: Vec<ResourceDef>,
    custom: Defs,
    rendered: OnceLock<Rendered>,
}

struct Rendered {
    v2: Doc,
    v3: BTreeMap<String, Doc>,
}

/// The OpenAPI documents of one set of served resources; cheap to clone.
#[derive(Clone)]
pub struct OpenApi {
    inner: Arc<Inner>,
}

/// The OpenAPI documents of what is served now: built when the server is
/// assembled, replaced whole when custom resources come or go (the
/// apiextensions server publishes, the OpenAPI endpoints read).
#[derive(Debug)]
pub struct Published(std::sync::RwLock<OpenApi>);

impl Published {
    pub fn new(api: OpenApi) -> Published {
        Published(std::sync::RwLock::new(api))
    }

    /// The documents now.
    pub fn current(&self) -> OpenApi {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Serve `api` from now on.
    pub fn publish(&self, api: OpenApi) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = api;
    }
}

impl std::fmt::Debug for OpenApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<&str> = self
            .inner
            .resources
            .iter()
            .map(|r| r.kind.as_str())
            .collect();
        f.debug_struct("OpenApi").field("kinds", &kinds).finish()
    }
}

impl OpenApi {
    /// The documents for `resources` (rendered on first use).
    pub fn build(resources: &[ResourceDef]) -> OpenApi {
        Self::build_with(resources, &Defs::new())
    }

    /// The documents for `resources`, taking the definitions of kinds without a
    /// built-in schema from `custom` (custom resources' schemas, by
    /// [`defs::generic_name`]) before falling back to a generic definition.
    /// Rendered on first use.
    pub fn build_with(resources: &[ResourceDef], custom: &Defs) -> OpenApi {
        OpenApi {
            inner: Arc::new(Inner {
                resources: resources.to_vec(),
                custom: custom.clone(),
                rendered: OnceLock::new(),
            }),
        }
    }

    fn docs(&self) -> &Rendered {
        let inner = &self.inner;
        inner
            .rendered
            .get_or_init(|| Rendered::new(&inner.resources, &inner.custom))
    }

    /// `GET /openapi/v2`: the swagger 2.0 document and its ETag.
    pub fn v2_json(&self) -> (Vec<u8>, String) {
        let (bytes, etag) = self.v2_shared();
        (bytes.to_vec(), etag.to_string())
    }

    /// Like [`Self::v2_json`], without copying the bytes.
    pub fn v2_shared(&self) -> (Arc<[u8]>, &str) {
        (self.docs().v2.bytes.clone(), &self.docs().v2.hash)
    }

    /// `GET /openapi/v3`: every document key with its hash-pinned URL.
    pub fn v3_index(&self) -> Value {
        let paths: Map<String, Value> = self
            .docs()
            .v3
            .iter()
            .map(|(key, doc)| {
                let url = format!("/openapi/v3/{key}?hash={}", doc.hash);
                (key.clone(), json!({"serverRelativeURL": url}))
            })
            .collect();
        json!({"paths": paths})
    }

    /// `GET /openapi/v3/<key>` (`api/v1`, `apis/apps/v1`, `api`, `apis`,
    /// `apis/apps`): the document and its hash; `None` for unknown keys.
    pub fn v3_document(&self, path: &str) -> Option<(Vec<u8>, String)> {
        let (bytes, hash) = self.v3_shared(path)?;
        Some((bytes.to_vec(), hash.to_string()))
    }

    /// Like [`Self::v3_document`], without copying the bytes.
    pub fn v3_shared(&self, path: &str) -> Option<(Arc<[u8]>, &str)> {
        let key = path.trim_start_matches('/').trim_end_matches('/');
        let doc = self.docs().v3.get(key)?;
        Some((doc.bytes.clone(), &doc.hash))
    }

    /// The keys of the v3 documents, sorted.
    pub fn v3_keys(&self) -> impl Iterator<Item = &str> {
        self.docs().v3.keys().map(String::as_str)
    }
}

impl Rendered {
    /// Renders every document for `resources` (see [`OpenApi::build_with`]).
    fn new(resources: &[ResourceDef], custom: &Defs) -> Rendered {
        let mut by_gv: BTreeMap<(&str, &str), Vec<&ResourceDef>> = BTreeMap::new();
        for r in resources {
            by_gv.entry((&r.group, &r.version)).or_default().push(r);
        }
        let served: Vec<(&str, &str)> = by_gv.keys().copied().collect();
        let mut extra = multi_gv_defs(&served);
        let mut docs: Vec<(String, Map<String, Value>)> = Vec::new();
        for ((group, version), list) in &by_gv {
            let gv = GroupVersion::new(group, version);
            let mut gv_paths = Map::new();
            paths::resources_discovery(&mut gv_paths, &gv);
            for r in list {
                paths::resource(&mut gv_paths, &gv, &target(r, &mut extra, custom));
            }
            docs.push((gv.doc_key(), gv_paths));
        }
        for (key, item) in discovery_items(&by_gv) {
            docs.push((key, [item].into_iter().collect()));
        }
        let (base, base_v3, extra_v3) = (defs::base(), defs::base_v3(), v3::schemas(&extra));
        let sources_v3 = Sources {
            extra: &extra_v3,
            base: &base_v3,
        };
        let mut v3 = BTreeMap::new();
        for (key, doc_paths) in &docs {
            let names = defs::closure(doc_paths.values(), &extra);
            v3.insert(
                key.clone(),
                Doc::new(&v3::document(doc_paths, &names, sources_v3)),
            );
        }
        let all_paths: Map<String, Value> = docs.into_iter().flat_map(|(_, p)| p).collect();
        let names = defs::closure(all_paths.values(), &extra);
        // Custom resources' definitions in their v2 form (`custom_v2.rs`).
        let mut extra_v2 = extra.clone();
        for (name, def) in extra_v2.iter_mut() {
            if custom.contains_key(name) {
                *def = custom_v2::definition(def);
            }
        }
        let sources = Sources {
            extra: &extra_v2,
            base: &base,
        };
        let v2 = Doc::new(&swagger(all_paths, &names, sources));
        Rendered { v2, v3 }
    }
}

/// The definitions of a kind and its list; unknown kinds get a generic schema
/// (recorded in `extra`).
fn target<'a>(r: &'a ResourceDef, extra: &mut Defs, custom: &Defs) -> Target<'a> {
    let (group, version) = (r.group.as_str(), r.version.as_str());
    let mut is_custom = false;
    let def = match kinds::find(group, version, &r.kind) {
        Some(entry) => entry.def_name(),
        None => {
            let name = defs::generic_name(group, version, &r.kind);
            is_custom = custom.contains_key(&name);
            let def = custom
                .get(&name)
                .cloned()
                .unwrap_or_else(|| defs::generic_def(group, version, &r.kind));
            extra.insert(name.clone(), def);
            name
        }
    };
    let list_def = match def.strip_suffix(r.kind.as_str()) {
        Some(prefix) => format!("{prefix}{}", r.list_kind),
        None => format!("{def}List"),
    };
    let base = defs::base();
    if !base.contains_key(&list_def) && !extra.contains_key(&list_def) {
        let list = defs::list_def(&def, group, version, &r.list_kind, &r.resource);
        extra.insert(list_def.clone(), list);
    }
    Target {
        res: r,
        def,
        list_def,
        custom: is_custom,
    }
}

/// The multi-group meta kinds (`DeleteOptions`, `WatchEvent`) with one
/// group-version-kind per served group-version.
fn multi_gv_defs(served: &[(&str, &str)]) -> Defs {
    let base = defs::base();
    let mut out = Defs::new();
    for (name, kind) in kinds::MULTI_GV_KINDS {
        let Some(mut def) = base.get(*name).cloned() else {
            continue;
        };
        let list: Vec<Value> = served.iter().map(|(g, v)| defs::gvk(g, v, kind)).collect();
        def[defs::GVK] = Value::Array(list);
        out.insert(name.to_string(), def);
    }
    out
}

/// The discovery documents: `api`, `apis` and `apis/<group>`.
fn discovery_items(
    by_gv: &BTreeMap<(&str, &str), Vec<&ResourceDef>>,
) -> Vec<(String, (String, Value))> {
    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
    let mut items = vec![
        (
            "api".to_string(),
            paths::discovery(
                "/api/",
                "getCoreAPIVersions",
                "core",
                &format!("{META}APIVersions"),
            ),
        ),
        (
            "apis".to_string(),
            paths::discovery(
                "/apis/",
                "getAPIVersions",
                "apis",
                &format!("{META}APIGroupList"),
            ),
        ),
    ];
    let mut groups: Vec<&str> = by_gv
        .keys()
        .map(|(g, _)| *g)
        .filter(|g| !g.is_empty())
        .collect();
    groups.dedup();
    for group in groups {
        let gv = GroupVersion::new(group, "");
        let op_id = format!("get{}APIGroup", gv.group_word);
        let item = paths::discovery(
            &format!("/apis/{group}/"),
            &op_id,
            &gv.tag_group,
            &format!("{META}APIGroup"),
        );
        items.push((format!("apis/{group}"), item));
    }
    items
}

fn swagger<'a>(
    paths: Map<String, Value>,
    names: &'a BTreeSet<String>,
    sources: Sources<'a>,
) -> Part<'a> {
    Part::Map(vec![
        ("definitions", Part::Defs(names, sources)),
        ("info", Part::Value(info())),
        ("paths", Part::Value(Value::Object(paths))),
        ("security", Part::Value(json!([{"BearerToken": []}]))),
        (
            "securityDefinitions",
            Part::Value(json!({"BearerToken": bearer_token()})),
        ),
        ("swagger", Part::Value("2.0".into())),
    ])
}

fn info() -> Value {
    json!({"title": "Kubernetes", "version": "unversioned"})
}

fn bearer_token() -> Value {
    json!({
        "description": "Bearer Token authentication",
        "in": "header",
        "name": "authorization",
        "type": "apiKey",
    })
}

#[cfg(test)]
mod tests;
