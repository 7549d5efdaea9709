use serde_json::json;

use super::*;

fn f(name: &str) -> PathElement {
    PathElement::field(name)
}

fn key(name: &str) -> PathElement {
    PathElement::key(vec![("name".into(), json!(name))])
}

fn set(paths: &[&[PathElement]]) -> Set {
    Set::from_paths(paths.iter().copied())
}

#[test]
fn fields_v1_round_trip_keeps_dot_entries() {
    let wire = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:containers": {
            "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}
        }, "f:replicas": {}},
    });
    let s = from_fields_v1(&wire).unwrap();
    assert!(s.has(&[f("metadata"), f("labels")]));
    assert!(s.has(&[f("metadata"), f("labels"), f("app")]));
    assert!(!s.has(&[f("metadata")]));
    assert!(s.has(&[f("spec"), f("containers"), key("nginx")]));
    assert!(s.has(&[f("spec"), f("containers"), key("nginx"), f("image")]));
    assert_eq!(to_fields_v1(&s), wire);
    // Upstream's order: "." first, then elements in order.
    let text = serde_json::to_string(&to_fields_v1(&s)).unwrap();
    assert!(text.starts_with(r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec""#));
}

#[test]
fn element_kinds_encode_as_upstream() {
    let s = set(&[
        &[f("a"), PathElement::Value(json!("x"))],
        &[f("a"), PathElement::Index(3)],
        &[
            f("p"),
            PathElement::key(vec![
                ("protocol".into(), json!("TCP")),
                ("containerPort".into(), json!(80)),
            ]),
        ],
    ]);
    let wire = to_fields_v1(&s);
    assert_eq!(
        wire,
        json!({"f:a": {"v:\"x\"": {}, "i:3": {}},
               "f:p": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {}}})
    );
    assert_eq!(from_fields_v1(&wire).unwrap(), s);
}

#[test]
fn bad_fields_v1_is_an_error() {
    assert!(from_fields_v1(&json!({"x:y": {}})).is_err());
    assert!(from_fields_v1(&json!({"k:[]": {}})).is_err());
    assert!(from_fields_v1(&json!({"i:z": {}})).is_err());
    assert!(from_fields_v1(&json!({"f:a": 1})).is_err());
    assert!(from_fields_v1(&json!([])).is_err());
}

#[test]
fn union_intersection_difference() {
    let a = set(&[&[f("a")], &[f("b"), f("c")], &[f("b"), f("d")]]);
    let b = set(&[&[f("b"), f("c")], &[f("e")]]);
    let u = a.union(&b);
    assert_eq!(u.len(), 4);
    assert_eq!(a.intersection(&b), set(&[&[f("b"), f("c")]]));
    assert_eq!(a.difference(&b), set(&[&[f("a")], &[f("b"), f("d")]]));
    assert_eq!(b.difference(&a), set(&[&[f("e")]]));
    assert!(a.difference(&a).is_empty());
}

#[test]
fn difference_of_a_member_keeps_its_children_but_recursive_does_not() {
    let a = set(&[&[f("s")], &[f("s"), f("x")]]);
    let b = set(&[&[f("s")]]);
    assert_eq!(a.difference(&b), set(&[&[f("s"), f("x")]]));
    assert!(a.recursive_difference(&b).is_empty());
}

#[test]
fn ordering_and_printing() {
    // fields < keys < values < indexes; numbers compare numerically.
    let mut v = [
        PathElement::Index(0),
        PathElement::Value(json!(10)),
        PathElement::Value(json!(9)),
        key("a"),
        f("z"),
    ];
    v.sort();
    assert_eq!(v[0], f("z"));
    assert_eq!(v[1], key("a"));
    assert_eq!(v[2], PathElement::Value(json!(9)));
    let p = vec![
        f("spec"),
        f("containers"),
        key("nginx"),
        f("args"),
        PathElement::Value(json!("x")),
        PathElement::Index(2),
    ];
    assert_eq!(
        path_string(&p),
        r#".spec.containers[name="nginx"].args[="x"][2]"#
    );
    let two = PathElement::key(vec![
        ("protocol".into(), json!("TCP")),
        ("containerPort".into(), json!(80)),
    ]);
    assert_eq!(two.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
}

#[test]
fn paths_lists_members_before_children() {
    let s = set(&[&[f("b"), f("c")], &[f("a")], &[f("b")]]);
    let printed: Vec<String> = s.paths().iter().map(|p| path_string(p)).collect();
    assert_eq!(printed, vec![".a", ".b", ".b.c"]);
    assert!(s.with_prefix(&f("b")).has(&[f("c")]));
    assert!(s.with_prefix(&f("a")).is_empty());
}

#[test]
fn subtract_in_place_equals_difference() {
    let sets = [
        set(&[
            &[f("a")],
            &[f("b"), f("c")],
            &[f("b"), f("d")],
            &[f("s")],
            &[f("s"), f("x")],
        ]),
        set(&[&[f("b"), f("c")], &[f("s")], &[f("e")]]),
        set(&[
            &[f("b")],
            &[f("b"), f("d")],
            &[f("s"), f("x")],
            &[f("s"), f("y"), key("k")],
        ]),
        set(&[
            &[f("metadata"), f("name")],
            &[f("metadata"), f("labels"), f("app")],
        ]),
        set(&[&[f("metadata"), f("name")], &[f("metadata")]]),
        Set::new(),
    ];
    for a in &sets {
        for b in &sets {
            let mut in_place = a.clone();
            in_place.subtract(b);
            assert_eq!(in_place, a.difference(b), "{a:?} - {b:?}");
        }
    }
}

#[test]
fn fields_are_found_by_name_as_by_their_elements() {
    let s = set(&[
        &[f("b")],
        &[f("d"), f("x")],
        &[f("m")],
        &[f("m"), f("y")],
        &[key("k")],
        &[key("k"), f("z")],
        &[PathElement::Index(0)],
    ]);
    for name in ["a", "b", "c", "d", "m", "n", "k", "z", ""] {
        let pe = f(name);
        assert_eq!(
            s.has_field(name),
            s.has(std::slice::from_ref(&pe)),
            "{name}"
        );
        assert_eq!(s.field_child(name), s.child(&pe), "{name}");
    }
    assert!(!Set::new().has_field("a"));
    assert!(Set::new().field_child("a").is_none());
}
