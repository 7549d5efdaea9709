//! SchemaNav answers for custom resources: list types, map types, map values.

use std::sync::Arc;

use kapi_apiextensions::structural::StructuralNav;
use kapi_machinery::schema::{ListType, MapType, SchemaNav, TypeRef};
use serde_json::json;

use super::schema;

#[test]
fn list_and_map_types() {
    let s = Arc::new(schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {
                    "port": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"}},
            "a/b~c": {"type": "object", "properties": {"x": {"type": "string"}}}
        }}}
    })));
    let nav = StructuralNav::new(s);
    let root = StructuralNav::root_type();
    let spec = nav.field(&root, "spec").expect("spec");
    assert!(nav.is_struct(&spec.elem));
    let ports = nav.field(&spec.elem, "ports").expect("ports");
    assert_eq!(
        ports.list_type,
        ListType::Map(vec!["port".into(), "protocol".into()])
    );
    assert_eq!(nav.key_default(&ports.elem, "protocol"), Some(json!("TCP")));
    assert_eq!(
        nav.field(&ports.elem, "port").map(|f| f.list_type.clone()),
        Some(ListType::Atomic)
    );
    assert_eq!(
        nav.field(&spec.elem, "tags").map(|f| f.list_type.clone()),
        Some(ListType::Set)
    );
    assert_eq!(
        nav.field(&spec.elem, "args").map(|f| f.list_type.clone()),
        Some(ListType::Atomic)
    );
    let selector = nav.field(&spec.elem, "selector").expect("selector");
    assert_eq!(selector.map_type, MapType::Atomic);
    assert!(nav.map_value(&selector.elem).is_some());
    assert!(!nav.is_struct(&selector.elem));
    let odd = nav.field(&spec.elem, "a/b~c").expect("escaped name");
    assert!(nav.field(&odd.elem, "x").is_some());
    assert!(nav.field(&spec.elem, "missing").is_none());
    let meta = nav.field(&root, "metadata").expect("metadata");
    assert_eq!(
        meta.elem,
        TypeRef::new("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    );
}

/// A stand-in for the built-in schema: answers ObjectMeta questions.
struct MetaOnly;

impl SchemaNav for MetaOnly {
    fn field(
        &self,
        ty: &TypeRef,
        name: &str,
    ) -> Option<std::sync::Arc<kapi_machinery::schema::FieldInfo>> {
        (ty.0.ends_with("ObjectMeta") && name == "finalizers").then(|| {
            Arc::new(kapi_machinery::schema::FieldInfo {
                list_type: ListType::Set,
                ..Default::default()
            })
        })
    }
}

#[test]
fn metadata_questions_go_to_the_fallback() {
    let s = Arc::new(schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"tmpl": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}}}}),
    ));
    let plain = StructuralNav::new(s.clone());
    let nav = StructuralNav::with_fallback(s, Arc::new(MetaOnly));
    let root = StructuralNav::root_type();
    let meta = nav.field(&root, "metadata").expect("metadata");
    assert_eq!(
        nav.field(&meta.elem, "finalizers")
            .map(|f| f.list_type.clone()),
        Some(ListType::Set)
    );
    assert!(plain.field(&meta.elem, "finalizers").is_none());
    // Embedded resources have ObjectMeta too.
    let spec = nav.field(&root, "spec").expect("spec");
    let tmpl = nav.field(&spec.elem, "tmpl").expect("tmpl");
    let tmeta = nav
        .field(&tmpl.elem, "metadata")
        .expect("embedded metadata");
    assert_eq!(tmeta.elem, meta.elem);
    assert!(!nav.is_struct(&tmpl.elem));
}

/// Server-side apply's merge over a custom object, driven by the schema's list and
/// map types through `StructuralNav`.
#[test]
fn typed_merge_of_custom_objects() {
    use kapi_machinery::typed::Typed;
    let s = Arc::new(schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}, "proto": {"type": "string"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }}}}),
    ));
    let nav = StructuralNav::new(s);
    let root = StructuralNav::root_type();
    let typed = Typed::new(&nav, &root);
    let live = json!({"apiVersion": "a/v1", "kind": "K", "spec": {
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
        "tags": ["a", "b"], "args": ["x", "y"],
        "selector": {"app": "web", "tier": "fe"}, "labels": {"a": "1"}}});
    let config = json!({"spec": {
        "ports": [{"name": "https", "proto": "TCP"}, {"name": "metrics", "port": 9090}],
        "tags": ["c", "a"], "args": ["z"],
        "selector": {"app": "api"}, "labels": {"b": "2"}}});
    let merged = typed.merge(&live, &config).expect("merge");
    assert_eq!(
        merged["spec"],
        json!({
            // Map list: merged by name, new keys appended.
            "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443, "proto": "TCP"}, {"name": "metrics", "port": 9090}],
            // Set: union (in the typed merge's element order).
            "tags": ["c", "a", "b"],
            // Atomic list and atomic map: replaced.
            "args": ["z"],
            "selector": {"app": "api"},
            // Granular map: merged.
            "labels": {"a": "1", "b": "2"}
        })
    );
    // A map-list item without its key is a typed error, as upstream.
    let bad = json!({"spec": {"ports": [{"port": 1}]}});
    assert!(typed.merge(&live, &bad).is_err());
}
