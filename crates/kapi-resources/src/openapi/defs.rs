//! The definitions (swagger 2.0 form, `$ref`s as `#/definitions/<name>`): read
//! once per process from k8s-openapi's schemars schemas (generated at build time
//! by `build.rs`, embedded in the binary), then completed with
//! what those schemas lack — `<Kind>List` definitions, upstream's scalar forms
//! of `IntOrString` and `Quantity`, `x-kubernetes-group-version-kind` on kinds,
//! and the patch/list facts of [`crate::patchmeta`].
//!
//! Invariants: [`base`] is deterministic (same bytes every run) and contains only
//! swagger 2.0 keywords plus `x-` extensions (gnostic rejects anything else);
//! every `$ref` in it resolves inside it (tested). Documents take the subset
//! reachable from their paths with [`closure`].
//! Where to look next: `kinds.rs` (the type table), `v3.rs` (the 3.0 rewrite).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

use super::kinds::{self, KINDS};
use crate::patchmeta::{ListFact, ATOMIC_STRUCTS, FACTS};

pub const REF_PREFIX: &str = "#/definitions/";
pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
pub const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

pub type Defs = Map<String, Value>;

/// Every built-in definition, with the fact table applied; built on first use.
pub fn base() -> Arc<Defs> {
    static BASE: OnceLock<Arc<Defs>> = OnceLock::new();
    BASE.get_or_init(|| Arc::new(generate())).clone()
}

/// k8s-openapi's schemas of the built-in kinds and meta types, as schemars
/// emits them (written by `build.rs`).
const GENERATED: &str = include_str!(concat!(env!("OUT_DIR"), "/definitions.json"));

fn generate() -> Defs {
    let mut defs: Defs = serde_json::from_str(GENERATED).expect("build.rs writes valid JSON");
    scalar_forms(&mut defs);
    for kind in KINDS {
        let name = kind.def_name();
        if let Some(Value::Object(def)) = defs.get_mut(&name) {
            def.insert(
                GVK.into(),
                json!([gvk(kind.group, kind.version, kind.kind)]),
            );
        }
        if kind.listable {
            let list_kind = format!("{}List", kind.kind);
            let plural = format!("{}s", kind.kind.to_lowercase());
            let list = list_def(&name, kind.group, kind.version, &list_kind, &plural);
            defs.insert(format!("{name}List"), list);
        }
    }
    for (name, kind) in kinds::CORE_META_KINDS {
        if let Some(Value::Object(def)) = defs.get_mut(*name) {
            def.insert(GVK.into(), json!([gvk("", "v1", kind)]));
        }
    }
    apply_facts(&mut defs);
    metadata_optional(&mut defs);
    sorted(defs)
}

/// k8s-openapi types hold `metadata` as a plain field, so schemars lists it as
/// required; upstream's is `+optional` everywhere (kubectl's client-side
/// validation refuses a `TokenReview` without `metadata` otherwise).
fn metadata_optional(defs: &mut Defs) {
    for def in defs.values_mut() {
        let Some(def) = def.as_object_mut() else {
            continue;
        };
        if let Some(Value::Array(required)) = def.get_mut("required") {
            required.retain(|r| r != "metadata");
            if required.is_empty() {
                def.remove("required");
            }
        }
    }
}

pub const GVK: &str = "x-kubernetes-group-version-kind";

pub fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// Upstream's swagger forms: `IntOrString` is a string of format
/// `int-or-string`, `Quantity` a string (`v3.rs` turns both into `oneOf`).
fn scalar_forms(defs: &mut Defs) {
    for (name, format) in [(INT_OR_STRING, Some("int-or-string")), (QUANTITY, None)] {
        let Some(Value::Object(def)) = defs.get_mut(name) else {
            continue;
        };
        def.shift_remove("x-kubernetes-int-or-string");
        def.insert("type".into(), "string".into());
        if let Some(format) = format {
            def.insert("format".into(), format.into());
        }
    }
}

/// The `<Kind>List` definition for objects of definition `item_def`, worded
/// as upstream's: a built-in list's documentation comes from its Go type
/// (`kapi_protobuf::list_docs`); a custom resource's list is described as
/// upstream's custom resource OpenAPI builder does, with the resource's
/// `plural`.
pub fn list_def(
    item_def: &str,
    group: &str,
    version: &str,
    list_kind: &str,
    plural: &str,
) -> Value {
    let kind = list_kind.strip_suffix("List").unwrap_or(list_kind);
    let docs = kapi_protobuf::list_docs::list_docs(&format!("{item_def}List"));
    let (kind_doc, items_doc, meta_doc) = match docs {
        Some(d) => (d.kind.to_owned(), d.items.to_owned(), d.metadata.to_owned()),
        None => (
            format!("{list_kind} is a list of {kind}"),
            format!("List of {plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"),
            "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds".to_owned(),
        ),
    };
    let mut items = json!({"type": "array", "items": {"$ref": format!("{REF_PREFIX}{item_def}")}});
    if !items_doc.is_empty() {
        items["description"] = json!(items_doc);
    }
    let mut metadata = json!({"$ref": format!("{REF_PREFIX}{LIST_META}")});
    if !meta_doc.is_empty() {
        metadata["description"] = json!(meta_doc);
    }
    let mut def = json!({
        "description": kind_doc,
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": items,
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": metadata,
        },
        GVK: [gvk(group, version, list_kind)],
    });
    if def["description"] == "" {
        def.as_object_mut().expect("object").remove("description");
    }
    def
}

/// A schema for a kind without a built-in type: any object with standard metadata.
pub fn generic_def(group: &str, version: &str, kind: &str) -> Value {
    json!({
        "description": format!("{kind} is served without a published schema; any fields are accepted."),
        "type": "object",
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": {
                "$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "description": "Standard object's metadata.",
            },
        },
        "x-kubernetes-preserve-unknown-fields": true,
        GVK: [gvk(group, version, kind)],
    })
}

/// The definition name used for a kind without a built-in type, in upstream's
/// style: `io.k8s.api.<group>.<version>.<Kind>` for `*.k8s.io` and dotless
/// groups, the reversed group (as for CRDs) otherwise.
pub fn generic_name(group: &str, version: &str, kind: &str) -> String {
    if group.is_empty() {
        return format!("io.k8s.api.core.{version}.{kind}");
    }
    if let Some(short) = group
        .strip_suffix(".k8s.io")
        .or((!group.contains('.')).then_some(group))
    {
        let short = short.split('.').next().unwrap_or(short);
        return format!("io.k8s.api.{short}.{version}.{kind}");
    }
    let reversed: Vec<&str> = group.rsplit('.').collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

pub const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
pub const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// Writes [`FACTS`] and [`ATOMIC_STRUCTS`] into the definitions as extensions.
fn apply_facts(defs: &mut Defs) {
    for fact in FACTS {
        let prop = defs
            .get_mut(fact.def)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(fact.field))
            .and_then(Value::as_object_mut);
        let Some(prop) = prop else {
            continue; // the type is not generated (tested: never for table kinds)
        };
        if !fact.strategy.is_empty() {
            prop.insert("x-kubernetes-patch-strategy".into(), fact.strategy.into());
        }
        if !fact.merge_key.is_empty() {
            prop.insert("x-kubernetes-patch-merge-key".into(), fact.merge_key.into());
        }
        let list_type = match fact.list {
            ListFact::Unset => None,
            ListFact::Atomic => Some("atomic"),
            ListFact::Set => Some("set"),
            ListFact::Map(keys) => {
                prop.insert("x-kubernetes-list-map-keys".into(), json!(keys));
                Some("map")
            }
        };
        if let Some(list_type) = list_type {
            prop.insert("x-kubernetes-list-type".into(), list_type.into());
        }
        if fact.map_atomic {
            prop.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
    }
    for name in ATOMIC_STRUCTS {
        if let Some(Value::Object(def)) = defs.get_mut(*name) {
            def.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
    }
}

fn sorted(defs: Defs) -> Defs {
    let mut entries: Vec<(String, Value)> = defs.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().collect()
}

/// Calls `f` with the definition name of every `$ref` inside `value`.
pub fn for_each_ref(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => f(r.strip_prefix(REF_PREFIX).unwrap_or(r)),
                    _ => for_each_ref(v, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| for_each_ref(v, f)),
        _ => {}
    }
}

/// The `$ref`s of every base definition, computed once.
fn base_refs() -> &'static HashMap<String, Vec<String>> {
    static REFS: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    REFS.get_or_init(|| {
        let base = base();
        let refs_of = |def: &Value| {
            let mut out = Vec::new();
            for_each_ref(def, &mut |r| out.push(r.to_string()));
            out
        };
        base.iter()
            .map(|(name, def)| (name.clone(), refs_of(def)))
            .collect()
    })
}

/// Every base definition in OpenAPI 3.0 form, converted once.
pub fn base_v3() -> Arc<Defs> {
    static BASE_V3: OnceLock<Arc<Defs>> = OnceLock::new();
    BASE_V3
        .get_or_init(|| Arc::new(super::v3::schemas(&base())))
        .clone()
}

/// The names of the definitions reachable from the `$ref`s in `roots`, looked up
/// in `extra` first, then in [`base`]; names that resolve nowhere are left out.
pub fn closure<'a>(roots: impl IntoIterator<Item = &'a Value>, extra: &Defs) -> BTreeSet<String> {
    let refs = base_refs();
    let mut seen = BTreeSet::new();
    let mut stack = Vec::new();
    for root in roots {
        for_each_ref(root, &mut |r| stack.push(r.to_string()));
    }
    while let Some(name) = stack.pop() {
        if seen.contains(&name) {
            continue;
        }
        if let Some(def) = extra.get(&name) {
            for_each_ref(def, &mut |r| stack.push(r.to_string()));
        } else if let Some(names) = refs.get(&name) {
            stack.extend(names.iter().cloned());
        } else {
            continue;
        }
        seen.insert(name);
    }
    seen
}
