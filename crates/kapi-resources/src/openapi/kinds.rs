//! Which kind has which built-in OpenAPI definition: the table from (group,
//! version, kind) to the definition name of the k8s-openapi type that backs it.
//! The table itself is written by the crate's build script (`build.rs`), which
//! also generates the definitions from k8s-openapi's schemars schemas; to serve
//! another built-in kind, add one line there.
//!
//! Invariants: one entry per (group, version, kind); the definition of a kind is
//! named as k8s-openapi's `JsonSchema::schema_name` names its type (already
//! upstream's names, `io.k8s.api.core.v1.Pod`), its list that name + `List`.
//! Where to look next: `defs.rs` (how entries become definitions).

use std::sync::OnceLock;

/// One kind with a built-in schema.
pub struct KindEntry {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Whether a `<Kind>List` definition is generated.
    pub listable: bool,
    def: &'static str,
}

impl KindEntry {
    /// The upstream definition name, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub fn def_name(&self) -> String {
        self.def.to_owned()
    }

    /// [`Self::def_name`] without a copy.
    pub fn def(&self) -> &'static str {
        self.def
    }
}

include!(concat!(env!("OUT_DIR"), "/kinds.rs"));

/// The entry of a kind, if it has a built-in schema. Writes ask for every
/// object (managedFields, Go type checks): the table is indexed by kind.
pub fn find(group: &str, version: &str, kind: &str) -> Option<&'static KindEntry> {
    static BY_KIND: OnceLock<foldhash::HashMap<&'static str, Vec<&'static KindEntry>>> =
        OnceLock::new();
    let by_kind = BY_KIND.get_or_init(|| {
        let mut map: foldhash::HashMap<&'static str, Vec<&'static KindEntry>> = Default::default();
        for k in KINDS {
            map.entry(k.kind).or_default().push(k);
        }
        map
    });
    by_kind
        .get(kind)?
        .iter()
        .find(|k| k.group == group && k.version == version)
        .copied()
}

/// Meta kinds whose definitions carry one group-version-kind per served
/// group-version (upstream registers them in every group).
pub const MULTI_GV_KINDS: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "DeleteOptions",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
        "WatchEvent",
    ),
];

/// Meta kinds served only at core v1 (discovery documents).
pub const CORE_META_KINDS: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        "APIResourceList",
    ),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "APIGroup"),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        "APIGroupList",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "APIVersions",
    ),
];
