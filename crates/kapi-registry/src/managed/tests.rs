use kapi_machinery::schema::{NoSchema, TypeRef};
use serde_json::{json, Value};

use super::*;

fn fm<'a>(root: &'a TypeRef, sub: Option<&'a str>) -> FieldManager<'a> {
    FieldManager {
        schema: &NoSchema,
        root,
        api_version: "v1",
        kind: "ConfigMap",
        subresource: sub,
        has_status: false,
    }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "c", "namespace": "ns", "labels": {"a": "1"}}, "data": data})
}

fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn create_records_an_update_entry_in_upstream_shape() {
    let root = TypeRef::UNKNOWN;
    let mut obj = cm(json!({"k": "v"}));
    fm(&root, None).update(None, &mut obj, "kubectl-create", "2026-01-01T00:00:00Z");
    let e = entries(&obj);
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0],
        json!({"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
               "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:data": {".": {}, "f:k": {}},
                            "f:metadata": {"f:labels": {".": {}, "f:a": {}}}}})
    );
}

#[test]
fn time_moves_only_when_the_update_changes_something() {
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let mut obj = cm(json!({"k": "v"}));
    f.update(None, &mut obj, "m", "2026-01-01T00:00:00Z");
    obj["metadata"]["uid"] = json!("u");
    let mut same = obj.clone();
    f.update(Some(&obj), &mut same, "m", "2026-02-02T00:00:00Z");
    assert_eq!(entries(&same)[0]["time"], "2026-01-01T00:00:00Z");
    let mut changed = obj.clone();
    changed["data"]["k"] = json!("w");
    f.update(Some(&obj), &mut changed, "m", "2026-02-02T00:00:00Z");
    assert_eq!(entries(&changed)[0]["time"], "2026-02-02T00:00:00Z");
}

#[test]
fn an_empty_list_resets_and_untracked_objects_stay_untracked() {
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let mut obj = cm(json!({"k": "v"}));
    f.update(None, &mut obj, "m", "2026-01-01T00:00:00Z");
    obj["metadata"]["uid"] = json!("u");
    let mut reset = obj.clone();
    reset["metadata"]["managedFields"] = json!([]);
    reset["data"]["k"] = json!("w");
    f.update(Some(&obj), &mut reset, "m", "2026-01-01T00:00:00Z");
    assert!(reset["metadata"].get("managedFields").is_none());
    let mut next = reset.clone();
    next["data"]["n"] = json!("1");
    f.update(Some(&reset), &mut next, "m", "2026-01-01T00:00:00Z");
    assert!(next["metadata"].get("managedFields").is_none());
    // The first apply records what exists as before-first-apply.
    let applied = f
        .apply(
            Some(&next),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                    "data": {"x": "y"}}),
            "ap",
            false,
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let e = entries(&applied);
    let names: Vec<&str> = e.iter().map(|e| e["manager"].as_str().unwrap()).collect();
    assert_eq!(names, ["ap", "before-first-apply"]);
    // Without a schema `data` is a map entry itself (upstream's deduced type).
    assert_eq!(e[0]["fieldsV1"], json!({"f:data": {".": {}, "f:x": {}}}));
    assert!(e[0].get("apiVersion").is_some());
}

#[test]
fn client_managed_fields_replace_the_live_ones_on_update() {
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let mut obj = cm(json!({"k": "v"}));
    f.update(None, &mut obj, "m", "2026-01-01T00:00:00Z");
    obj["metadata"]["uid"] = json!("u");
    let mut new = obj.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Apply",
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:k": {}}}}]);
    f.update(Some(&obj), &mut new, "m", "2026-01-01T00:00:00Z");
    let e = entries(&new);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["manager"], "x");
    // Through a subresource the client's list is ignored.
    let sub = fm(&root, Some("status"));
    let mut via_status = obj.clone();
    via_status["metadata"]["managedFields"] = json!([]);
    sub.update(Some(&obj), &mut via_status, "m", "2026-01-01T00:00:00Z");
    assert_eq!(entries(&via_status), entries(&obj));
}

#[test]
fn eleven_updaters_leave_ten_entries_with_ancient_changes() {
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let mut obj = cm(json!({}));
    obj["metadata"]["uid"] = json!("u");
    obj["metadata"]["managedFields"] = json!([{"manager": "seed", "operation": "Update",
        "apiVersion": "v1", "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}}}]);
    for i in 0..11 {
        let mut new = obj.clone();
        new["data"][format!("k{i}")] = json!("v");
        f.update(
            Some(&obj),
            &mut new,
            &format!("m{i:02}"),
            &format!("2026-01-01T00:00:{:02}Z", i + 1),
        );
        obj = new;
    }
    let e = entries(&obj);
    assert_eq!(e.len(), 10, "{e:#?}");
    let names: Vec<&str> = e.iter().map(|e| e["manager"].as_str().unwrap()).collect();
    assert!(names.contains(&"ancient-changes"), "{names:?}");
    assert!(!names.contains(&"seed") && !names.contains(&"m00") && !names.contains(&"m01"));
    let ancient = e
        .iter()
        .find(|e| e["manager"] == "ancient-changes")
        .unwrap();
    assert_eq!(
        ancient["fieldsV1"],
        json!({"f:data": {"f:k0": {}, "f:k1": {}}, "f:metadata": {"f:labels": {"f:a": {}}}})
    );
}

#[test]
fn entries_round_trip_and_sort_as_upstream() {
    let list = json!([
        {"manager": "u", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:02Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
        {"manager": "s", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:01Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status"},
        {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-01T00:00:09Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
    ]);
    let managed = decode(Some(&list)).unwrap();
    let encoded = Value::Array(encode(&managed));
    assert_eq!(encoded[0]["manager"], "a");
    assert_eq!(encoded[1]["manager"], "s");
    assert_eq!(encoded[1]["subresource"], "status");
    assert_eq!(encoded[2]["manager"], "u");
    assert_eq!(decode(Some(&encoded)).unwrap().fields, managed.fields);
    let bad = json!([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    assert!(decode(Some(&bad)).is_err());
    assert!(is_reset(Some(&json!([]))) && is_reset(Some(&json!([{}]))));
    assert!(!is_reset(None) && !is_reset(Some(&list)));
}

#[test]
fn conflict_messages_as_upstream() {
    use kapi_machinery::apply::Conflict;
    use kapi_machinery::fieldpath::PathElement;
    let path = vec![PathElement::field("spec"), PathElement::field("replicas")];
    let upd = manager_id("kube-controller-manager", "Update", "apps/v1", None);
    let app = manager_id("helm", "Apply", "apps/v1", Some("status"));
    assert_eq!(
        print_manager(&upd),
        "\"kube-controller-manager\" using apps/v1"
    );
    assert_eq!(print_manager(&app), "\"helm\" with subresource \"status\"");
    let one = conflict_error(&[Conflict {
        manager: upd.clone(),
        path: path.clone(),
    }]);
    assert_eq!(one.code, 409);
    assert_eq!(
        one.message,
        "Apply failed with 1 conflict: conflict with \"kube-controller-manager\" using apps/v1: .spec.replicas"
    );
    let d = one.details.unwrap();
    assert_eq!(d.causes[0].reason, "FieldManagerConflict");
    assert_eq!(d.causes[0].field, ".spec.replicas");
    let two = conflict_error(&[
        Conflict {
            manager: upd,
            path: path.clone(),
        },
        Conflict { manager: app, path },
    ]);
    assert_eq!(
        two.message,
        "Apply failed with 2 conflicts: conflicts with \"helm\" with subresource \"status\":\n- .spec.replicas\nconflicts with \"kube-controller-manager\" using apps/v1:\n- .spec.replicas"
    );
}

#[test]
fn kubectl_may_take_over_client_side_applied_fields() {
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let last = r#"{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"c","namespace":"ns"}}"#;
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u",
                     "annotations": {lastapplied::LAST_APPLIED: last}},
        "data": {"k": "v"}});
    f.update(
        None,
        &mut obj,
        "kubectl-client-side-apply",
        "2026-01-01T00:00:00Z",
    );
    obj["metadata"]["uid"] = json!("u");
    let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "w"}});
    let err = f
        .apply(Some(&obj), &cfg, "other", false, "2026-01-01T00:00:01Z")
        .unwrap_err();
    assert_eq!(err.code, 409);
    let out = f
        .apply(Some(&obj), &cfg, "kubectl", false, "2026-01-01T00:00:01Z")
        .unwrap();
    assert_eq!(out["data"]["k"], "w");
    let ann = out["metadata"]["annotations"][lastapplied::LAST_APPLIED]
        .as_str()
        .unwrap();
    assert_eq!(
        ann,
        "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"w\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}}\n"
    );
}

#[test]
fn a_create_records_the_same_fields_whether_or_not_another_manager_is_listed() {
    // Alone, a create takes the short way (nothing to take from anyone);
    // with another manager listed, the whole transfer runs.
    let root = TypeRef::UNKNOWN;
    let f = fm(&root, None);
    let mut alone = cm(json!({"k": "v", "l": "w"}));
    f.update(None, &mut alone, "m", "2026-01-01T00:00:00Z");
    let mut listed = cm(json!({"k": "v", "l": "w"}));
    listed["metadata"]["managedFields"] = json!([{
        "manager": "other", "operation": "Update", "apiVersion": "v1",
        "time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:gone": {}}}}]);
    f.update(None, &mut listed, "m", "2026-01-01T00:00:00Z");
    let mine = |obj: &Value| {
        entries(obj)
            .into_iter()
            .find(|e| e["manager"] == "m")
            .expect("m's entry")
    };
    assert_eq!(mine(&alone), mine(&listed));
    assert_eq!(entries(&listed).len(), 2, "{:?}", entries(&listed));
}

/// Manager identifiers are the compact JSON of their parts, in order, with
/// JSON's escapes (a manager name is free text from the client).
#[test]
fn manager_ids_are_compact_json() {
    let cases = [
        ("kubectl", "Update", "v1", None),
        ("kubectl", "Apply", "v1", Some("status")),
        ("we\"ird\\ <name>\n\u{7f}é", "Update", "", Some("")),
        ("", "Update", "apps/v1", Some("scale")),
    ];
    for (manager, operation, api_version, sub) in cases {
        let mut m = serde_json::Map::new();
        m.insert("manager".into(), json!(manager));
        m.insert("operation".into(), json!(operation));
        if operation != "Apply" && !api_version.is_empty() {
            m.insert("apiVersion".into(), json!(api_version));
        }
        if let Some(s) = sub.filter(|s: &&str| !s.is_empty()) {
            m.insert("subresource".into(), json!(s));
        }
        assert_eq!(
            manager_id(manager, operation, api_version, sub),
            Value::Object(m).to_string()
        );
    }
}
