use serde_json::{json, Value};

use super::*;
use crate::fieldpath::{from_fields_v1, to_fields_v1};
use crate::schema::{FieldInfo, NoSchema};

/// Root{spec: Spec}; Spec{items: [Item] keyed by name, tags: set, args: atomic,
/// selector: atomic map, replicas}; Item{name, value, port}.
pub(crate) struct TestSchema;

impl SchemaNav for TestSchema {
    fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>> {
        let info = |elem: &str| FieldInfo {
            elem: TypeRef::new(elem),
            ..Default::default()
        };
        let found = match (ty.0.as_str(), name) {
            ("Root", "spec") => Some(info("Spec")),
            ("Root", "metadata") => Some(info(OBJECT_META)),
            ("Root", "apiVersion" | "kind") => Some(info("")),
            ("Spec", "items") => Some(FieldInfo {
                list_type: ListType::Map(vec!["name".into()]),
                ..info("Item")
            }),
            ("Spec", "tags") => Some(FieldInfo {
                list_type: ListType::Set,
                ..info("")
            }),
            ("Spec", "args") => Some(info("")),
            ("Spec", "selector") => Some(FieldInfo {
                map_type: MapType::Atomic,
                ..info("")
            }),
            ("Spec", "replicas") => Some(info("")),
            ("Item", "name" | "value" | "port") => Some(info("")),
            (OBJECT_META, "name" | "labels" | "annotations") => Some(info("")),
            _ => None,
        };
        found.map(std::sync::Arc::new)
    }
}

fn typed() -> Typed<'static> {
    Typed::new(&TestSchema, leak(TypeRef::new("Root")))
}

fn leak(t: TypeRef) -> &'static TypeRef {
    Box::leak(Box::new(t))
}

fn fields(v: &Value) -> Value {
    to_fields_v1(&typed().to_field_set(v, false).unwrap())
}

#[test]
fn field_set_of_struct_fields_list_maps_sets_and_atomics() {
    let obj = json!({"spec": {
        "items": [{"name": "a", "value": "1"}],
        "tags": ["x", "y"],
        "args": ["1", "2"],
        "selector": {"k": "v"},
        "replicas": 2,
    }, "metadata": {"labels": {"app": "x"}}});
    assert_eq!(
        fields(&obj),
        json!({
            "f:metadata": {"f:labels": {"f:app": {}}},
            "f:spec": {
                "f:args": {},
                "f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {}}},
                "f:replicas": {},
                "f:selector": {},
                "f:tags": {"v:\"x\"": {}, "v:\"y\"": {}},
            }
        })
    );
}

#[test]
fn without_schema_objects_are_granular_maps_and_lists_atomic() {
    let unknown = TypeRef::UNKNOWN;
    let t = Typed::new(&NoSchema, &unknown);
    let obj = json!({"spec": {"a": {"b": 1}, "l": [1, 2]}});
    let s = t.to_field_set(&obj, false).unwrap();
    assert_eq!(
        to_fields_v1(&s),
        json!({"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}})
    );
}

#[test]
fn missing_keys_and_duplicates_are_errors() {
    let e = typed()
        .to_field_set(&json!({"spec": {"items": [{"value": "1"}]}}), false)
        .unwrap_err();
    assert!(
        e.0.starts_with(".spec.items: element 0: associative list"),
        "{e}"
    );
    let dup = json!({"spec": {"items": [{"name": "a"}, {"name": "a"}]}});
    assert!(typed().to_field_set(&dup, false).is_err());
    assert!(typed().to_field_set(&dup, true).is_ok());
}

#[test]
fn merge_keeps_right_leaves_and_merges_list_maps() {
    let live = json!({"spec": {
        "items": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}],
        "args": ["old"], "selector": {"x": "1", "y": "2"}, "replicas": 1}});
    let cfg = json!({"spec": {
        "items": [{"name": "c", "value": "3"}, {"name": "a", "port": 80}],
        "args": ["new"], "selector": {"z": "3"}}});
    let out = typed().merge(&live, &cfg).unwrap();
    assert_eq!(
        out,
        json!({"spec": {
            "items": [{"name": "c", "value": "3"}, {"name": "a", "value": "1", "port": 80},
                      {"name": "b", "value": "2"}],
            "args": ["new"], "selector": {"z": "3"}, "replicas": 1}})
    );
    let names: Vec<&str> = out["spec"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "a", "b"]);
}

#[test]
fn merge_reorders_shared_elements_like_the_right_side() {
    let live = json!({"spec": {"items": [{"name": "a"}, {"name": "b"}, {"name": "x"}]}});
    let cfg = json!({"spec": {"items": [{"name": "b"}, {"name": "a"}]}});
    let out = typed().merge(&live, &cfg).unwrap();
    let names: Vec<&str> = out["spec"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    // As upstream: x stays after the element it followed.
    assert_eq!(names, ["b", "x", "a"]);
}

#[test]
fn compare_reports_added_removed_modified() {
    let old =
        json!({"spec": {"items": [{"name": "a", "value": "1"}], "replicas": 1, "tags": ["x"]}});
    let new = json!({"spec": {"items": [{"name": "b"}], "replicas": 2, "tags": ["x", "y"]},
                     "metadata": {"labels": {"k": "v"}}});
    let c = typed().compare(&old, &new).unwrap();
    assert_eq!(
        to_fields_v1(&c.added),
        json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:k": {}}},
               "f:spec": {"f:items": {"k:{\"name\":\"b\"}": {".": {}, "f:name": {}}},
                          "f:tags": {"v:\"y\"": {}}}})
    );
    assert_eq!(
        to_fields_v1(&c.removed),
        json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:value": {}}}}})
    );
    assert_eq!(
        to_fields_v1(&c.modified),
        json!({"f:spec": {"f:replicas": {}}})
    );
    assert!(typed().compare(&old, &old).unwrap().is_same());
}

#[test]
fn empty_containers_are_leaves() {
    let c = typed()
        .compare(&json!({"spec": {}}), &json!({"spec": {"selector": {}}}))
        .unwrap();
    assert_eq!(
        to_fields_v1(&c.added),
        json!({"f:spec": {"f:selector": {}}})
    );
}

#[test]
fn remove_items_and_named_fields() {
    let obj = json!({"spec": {"items": [{"name": "a", "value": "1"}, {"name": "b"}],
                              "replicas": 1, "tags": ["x", "y"]}});
    let set = from_fields_v1(&json!({"f:spec": {
        "f:items": {"k:{\"name\":\"a\"}": {}}, "f:tags": {"v:\"y\"": {}}}}))
    .unwrap();
    assert_eq!(
        typed().remove_items(&obj, &set),
        json!({"spec": {"items": [{"name": "b"}], "replicas": 1, "tags": ["x"]}})
    );
    // With spec a member, the whole spec goes.
    let only = from_fields_v1(&json!({"f:spec": {"f:replicas": {}}})).unwrap();
    let ensured = typed().ensure_named_fields_are_members(&only);
    assert_eq!(
        to_fields_v1(&ensured),
        json!({"f:spec": {".": {}, "f:replicas": {}}})
    );
    assert_eq!(typed().remove_items(&obj, &ensured), json!({}));
    let spec_only = json!({"spec": {"replicas": 1}});
    assert_eq!(typed().remove_items(&spec_only, &only), json!({}));
}

/// An ignored field drops exactly its subtree from what a create writes, and
/// is still walked for what fails: a list element without its key below an
/// ignored field fails the write as it fails the comparison.
#[test]
fn written_fields_leave_out_ignored_subtrees_but_check_them() {
    let t = typed();
    let empty = json!({});
    let obj = json!({"apiVersion": "v1", "kind": "X",
        "metadata": {"name": "n", "labels": {"a": "b"}},
        "spec": {"replicas": 1, "tags": ["x"],
                 "items": [{"name": "a", "value": "1"}, {"name": "b", "port": 2}]}});
    let none = Set::new();
    let all = t
        .written_fields_v1(&empty, &obj, &none, &none)
        .unwrap()
        .unwrap();
    assert!(all.get("f:metadata").is_some() && all.get("f:spec").is_some());
    let ignored = Set::from_paths([
        &[PathElement::field("metadata")][..],
        &[PathElement::field("kind")][..],
    ]);
    let got = t
        .written_fields_v1(&empty, &obj, &ignored, &none)
        .unwrap()
        .unwrap();
    let mut want = all.as_object().unwrap().clone();
    want.remove("f:metadata");
    want.remove("f:kind");
    assert_eq!(got, Value::Object(want));
    let only_spec = Set::from_paths([&[PathElement::field("spec")][..]]);
    let rest = t
        .written_fields_v1(&empty, &obj, &only_spec, &none)
        .unwrap()
        .unwrap();
    assert!(rest.get("f:spec").is_none() && rest.get("f:metadata").is_some());
    // Below an ignored field, an element without its key still fails.
    let bad = json!({"spec": {"items": [{"value": "1"}]}, "metadata": {"name": "n"}});
    assert!(t.compare(&empty, &bad).is_err());
    assert!(t
        .written_fields_v1(&empty, &bad, &only_spec, &none)
        .is_err());
    assert!(t.written_fields_v1(&empty, &bad, &none, &none).is_err());
}
