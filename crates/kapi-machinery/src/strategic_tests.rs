//! Tests for strategic merge patch, modelled on upstream `patch_test.go` and on
//! what `kubectl apply` / `kubectl patch` actually send.

use serde_json::{json, Value};

use super::{apply, PatchError};
use crate::schema::{FieldInfo, NoSchema, SchemaNav, TypeRef};

/// A slice of the core/v1 and apps/v1 schemas, with patch metadata as upstream.
struct TestSchema;

fn f(elem: &str, strategies: &[&str], key: Option<&str>) -> FieldInfo {
    FieldInfo {
        elem: TypeRef::new(elem),
        patch_strategies: strategies.iter().map(|s| s.to_string()).collect(),
        patch_merge_key: key.map(str::to_string),
        ..FieldInfo::default()
    }
}

impl SchemaNav for TestSchema {
    fn field(&self, ty: &TypeRef, name: &str) -> Option<FieldInfo> {
        let merge = &["merge"][..];
        Some(match (ty.0.as_str(), name) {
            ("Pod" | "Deployment", "metadata") => f("ObjectMeta", &[], None),
            ("Pod", "spec") => f("PodSpec", &[], None),
            ("Deployment", "spec") => f("DeploymentSpec", &[], None),
            ("ObjectMeta", "labels" | "annotations") => f("string", &[], None),
            ("ObjectMeta", "finalizers") => f("string", merge, None),
            ("PodSpec", "containers" | "initContainers") => f("Container", merge, Some("name")),
            ("PodSpec", "volumes") => f("Volume", &["merge", "retainKeys"], Some("name")),
            ("PodSpec", "tolerations") => f("Toleration", &[], None),
            ("PodSpec", "dnsConfig") => f("PodDNSConfig", &["replace"], None),
            ("PodSpec", "readinessGates") => f("PodReadinessGate", merge, None),
            ("PodSpec", "weird") => f("string", &["merge", "replace"], None),
            ("Container", "ports") => f("ContainerPort", merge, Some("containerPort")),
            ("Container", "env") => f("EnvVar", merge, Some("name")),
            ("Container", "args") => f("string", &[], None),
            ("DeploymentSpec", "strategy") => f("DeploymentStrategy", &["retainKeys"], None),
            ("DeploymentSpec", "template") => f("PodTemplateSpec", &[], None),
            ("PodTemplateSpec", "spec") => f("PodSpec", &[], None),
            _ => return None,
        })
    }
}

fn smp(original: Value, patch: Value) -> Value {
    smp_try(original, patch).unwrap_or_else(|e| panic!("patch failed: {e}"))
}

fn smp_try(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply(&original, &patch, &TestSchema, &TypeRef::new("Pod"))
}

fn err(original: Value, patch: Value) -> String {
    smp_try(original, patch)
        .expect_err("patch should fail")
        .to_string()
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

fn names(v: &Value) -> Vec<&str> {
    v["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

fn assert_no_directives(v: &Value) {
    match v {
        Value::Object(m) => m.iter().for_each(|(k, v)| {
            assert!(!k.starts_with('$'), "directive {k} leaked");
            assert_no_directives(v);
        }),
        Value::Array(a) => a.iter().for_each(assert_no_directives),
        _ => {}
    }
}

// ---- maps ----

#[test]
fn map_merge_adds_changes_and_null_deletes() {
    let orig = json!({"metadata": {"name": "p", "labels": {"foo": "1", "bar": "2"}}});
    let out = smp(
        orig,
        json!({"metadata": {"labels": {"foo": null, "baz": "3", "bar": "x"}}}),
    );
    assert_eq!(
        out,
        json!({"metadata": {"name": "p", "labels": {"bar": "x", "baz": "3"}}})
    );
}

#[test]
fn null_for_missing_key_is_dropped() {
    let out = smp(
        json!({"a": 1}),
        json!({"b": null, "c": {"d": null, "e": 1}}),
    );
    assert_eq!(out, json!({"a": 1, "c": {"e": 1}}));
}

#[test]
fn key_order_is_preserved() {
    let out = smp(
        json!({"a": 1, "b": 2, "c": 3}),
        json!({"a": 9, "b": null, "d": 4}),
    );
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "c", "d"]);
}

#[test]
fn patch_replace_directive_on_map() {
    let orig = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let out = smp(
        orig,
        json!({"metadata": {"labels": {"$patch": "replace", "c": "3", "d": null}}}),
    );
    assert_eq!(out, json!({"metadata": {"labels": {"c": "3"}}}));
}

#[test]
fn patch_delete_directive_on_map_removes_it() {
    let orig = json!({"metadata": {"name": "p", "labels": {"a": "1"}}});
    let out = smp(orig, json!({"metadata": {"labels": {"$patch": "delete"}}}));
    assert_eq!(out, json!({"metadata": {"name": "p"}}));
}

#[test]
fn patch_directives_at_root() {
    let orig = json!({"a": 1, "b": {"c": 2}});
    assert_eq!(smp(orig.clone(), json!({"$patch": "delete"})), json!({}));
    assert_eq!(
        smp(orig.clone(), json!({"$patch": "replace", "x": 1})),
        json!({"x": 1})
    );
    assert_eq!(
        smp(orig, json!({"$patch": "merge", "a": 2})),
        json!({"a": 2, "b": {"c": 2}})
    );
}

#[test]
fn unknown_patch_directive_is_rejected() {
    let msg = err(
        json!({}),
        json!({"metadata": {"$patch": "explode", "x": 1}}),
    );
    assert_eq!(
        msg,
        "unknown patch type: explode in map: map[$patch:explode x:1]"
    );
}

#[test]
fn type_change_takes_patch_value_cleaned() {
    let out = smp(
        json!({"a": "s", "b": [1]}),
        json!({"a": {"x": 1, "y": null}, "b": "t"}),
    );
    assert_eq!(out, json!({"a": {"x": 1}, "b": "t"}));
}

#[test]
fn replace_strategy_map_is_replaced() {
    let orig = json!({"spec": {"dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["a"]}}});
    let out = smp(orig, json!({"spec": {"dnsConfig": {"searches": ["b"]}}}));
    assert_eq!(out, json!({"spec": {"dnsConfig": {"searches": ["b"]}}}));
}

#[test]
fn non_object_patch_or_original_is_rejected() {
    assert_eq!(
        err(json!({}), json!([1])),
        "invalid patch: expected a JSON object, but received list"
    );
    assert!(smp_try(json!({}), json!("x")).is_err());
    assert!(smp_try(json!(3), json!({})).is_err());
    assert_eq!(smp(Value::Null, json!({"a": 1})), json!({"a": 1}));
}

// ---- merge-keyed lists ----

#[test]
fn kubectl_patch_changes_container_image() {
    let orig = pod(json!([
        {"name": "x", "image": "old", "ports": [{"containerPort": 80}]},
        {"name": "side", "image": "s"}
    ]));
    let out = smp(
        orig,
        json!({"spec": {"containers": [{"name": "x", "image": "y"}]}}),
    );
    let want = pod(json!([
        {"name": "x", "image": "y", "ports": [{"containerPort": 80}]},
        {"name": "side", "image": "s"}
    ]));
    assert_eq!(out, want);
}

#[test]
fn new_item_without_set_element_order_goes_first_like_upstream() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}]));
    let out = smp(
        orig,
        json!({"spec": {"containers": [{"name": "new", "image": "n"}]}}),
    );
    assert_eq!(names(&out), ["new", "a", "b"]);
}

#[test]
fn patched_items_keep_live_order_when_known() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d"}]}});
    let out = smp(orig, patch);
    assert_eq!(names(&out), ["a", "b", "c", "d"]);
    assert_eq!(
        out["spec"]["containers"][2],
        json!({"name": "c", "image": "i"})
    );
}

#[test]
fn kubectl_apply_patch_with_set_element_order() {
    let orig = pod(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]));
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"image": "b:2", "name": "b"}]
    }});
    let out = smp(orig, patch);
    let want = pod(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}]));
    assert_eq!(out, want);
}

#[test]
fn set_element_order_places_new_item() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}]));
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "n"}, {"name": "b"}],
        "containers": [{"name": "n", "image": "n"}]
    }});
    assert_eq!(names(&smp(orig, patch)), ["a", "n", "b"]);
}

#[test]
fn set_element_order_alone_reorders() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}});
    let out = smp(orig, patch);
    // Upstream mergeSortedSlice: server-only "b" goes before "c" because live
    // order puts it there; then the listed items follow in the wanted order.
    assert_eq!(names(&out), ["b", "c", "a"]);
    assert_no_directives(&out);
}

#[test]
fn set_element_order_for_absent_live_list() {
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "b"}, {"name": "a", "x": null}]
    }});
    let out = smp(json!({"spec": {}}), patch);
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}})
    );
}

#[test]
fn set_element_order_mismatch_is_rejected() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}]));
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"name": "b"}, {"name": "a"}]
    }});
    assert!(err(orig, patch).starts_with("The order in patch list:"));
}

#[test]
fn malformed_set_element_order_is_rejected() {
    let orig = pod(json!([{"name": "a"}]));
    let bad_key = json!({"spec": {"$setElementOrdercontainers": []}});
    assert_eq!(
        err(orig.clone(), bad_key),
        "invalid patch format of setElementOrder list"
    );
    let bad_value = json!({"spec": {"$setElementOrder/containers": "a"}});
    assert_eq!(
        err(orig, bad_value),
        "invalid patch format of setElementOrder list"
    );
}

#[test]
fn delete_container_with_patch_delete() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
    let patch = json!({"spec": {"containers": [{"name": "b", "$patch": "delete"}]}});
    assert_eq!(names(&smp(orig, patch)), ["a", "c"]);
}

#[test]
fn kubectl_apply_deletion_with_set_element_order() {
    let orig = pod(json!([{"name": "a"}, {"name": "b"}]));
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}],
        "containers": [{"$patch": "delete", "name": "b"}]
    }});
    assert_eq!(names(&smp(orig, patch)), ["a"]);
}

#[test]
fn delete_element_without_merge_key_is_rejected() {
    let orig = pod(json!([{"name": "a"}]));
    let patch = json!({"spec": {"containers": [{"$patch": "delete"}]}});
    assert_eq!(
        err(orig, patch),
        "map: map[$patch:delete] does not contain declared merge key: name"
    );
}

#[test]
fn patch_element_without_merge_key_is_rejected() {
    let orig = pod(json!([{"name": "a"}]));
    let patch = json!({"spec": {"containers": [{"image": "x"}]}});
    assert_eq!(
        err(orig, patch),
        "map: map[image:x] does not contain declared merge key: name"
    );
}

#[test]
fn replace_element_replaces_whole_list() {
    let orig = pod(json!([{"name": "a", "image": "1"}, {"name": "b"}]));
    let patch = json!({"spec": {"containers": [
        {"name": "a", "image": "2"}, {"$patch": "replace"}, {"name": "z", "$patch": "delete"}
    ]}});
    assert_eq!(smp(orig, patch), pod(json!([{"name": "a", "image": "2"}])));
}

#[test]
fn replace_element_alone_clears_list() {
    let orig = pod(json!([{"name": "a"}]));
    let out = smp(
        orig,
        json!({"spec": {"containers": [{"$patch": "replace"}]}}),
    );
    assert_eq!(out, pod(json!([])));
}

#[test]
fn merge_element_directive_is_rejected() {
    let orig = pod(json!([{"name": "a"}]));
    let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}});
    assert_eq!(
        err(orig, patch),
        "merging lists cannot yet be specified in the patch"
    );
    let bad = json!({"spec": {"containers": [{"name": "a", "$patch": "nope"}]}});
    assert!(err(pod(json!([])), bad).starts_with("unknown patch type: nope"));
}

#[test]
fn nested_lists_merge_by_their_own_keys() {
    let orig = pod(json!([{
        "name": "a",
        "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
        "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]
    }]));
    let patch = json!({"spec": {"containers": [{
        "name": "a",
        // 80.0 matches the live 80 (numbers compare by value), then overwrites it.
        "ports": [{"containerPort": 80.0, "name": "http"}],
        "env": [{"name": "Y", "value": "3"}, {"name": "X", "$patch": "delete"}]
    }]}});
    let out = smp(orig, patch);
    let c = &out["spec"]["containers"][0];
    assert_eq!(
        c["ports"],
        json!([{"containerPort": 80.0, "protocol": "TCP", "name": "http"}, {"containerPort": 443}])
    );
    assert_eq!(c["env"], json!([{"name": "Y", "value": "3"}]));
}

#[test]
fn new_list_is_cleaned_of_directives() {
    let patch = json!({"spec": {"volumes": [
        {"name": "v", "emptyDir": {}, "secret": null},
        {"name": "gone", "$patch": "delete"}
    ]}});
    let out = smp(json!({"spec": {}}), patch);
    assert_eq!(
        out,
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}})
    );
}

#[test]
fn live_element_without_merge_key_is_rejected() {
    let orig = pod(json!([{"image": "x"}]));
    let patch = json!({"spec": {"containers": [{"name": "a"}]}});
    assert!(err(orig, patch).contains("does not contain declared merge key: name"));
}

#[test]
fn merge_list_of_objects_without_key_is_rejected() {
    let orig = json!({"spec": {"readinessGates": [{"conditionType": "a"}]}});
    let patch = json!({"spec": {"readinessGates": [{"conditionType": "b"}]}});
    assert_eq!(
        err(orig, patch),
        "cannot merge lists without merge key for type PodReadinessGate"
    );
}

#[test]
fn conflicting_strategies_are_rejected() {
    let msg = err(
        json!({"spec": {"weird": [1]}}),
        json!({"spec": {"weird": [2]}}),
    );
    assert!(msg.starts_with("unexpected patch strategy"));
}

#[test]
fn mixed_or_nested_list_elements_are_rejected() {
    let orig = json!({"metadata": {"finalizers": ["a"]}});
    let mixed = err(orig.clone(), json!({"metadata": {"finalizers": [1]}}));
    assert!(mixed.starts_with("list element types are not identical"));
    let nested = err(orig, json!({"metadata": {"finalizers": [["b"]]}}));
    assert_eq!(nested, "lists of lists are not supported");
}

#[test]
fn duplicate_keys_in_patch_merge_in_turn() {
    let orig = pod(json!([{"name": "a", "image": "1"}]));
    let patch = json!({"spec": {"containers": [
        {"name": "a", "image": "2"}, {"name": "a", "tty": true}
    ]}});
    assert_eq!(
        smp(orig, patch),
        pod(json!([{"name": "a", "image": "2", "tty": true}]))
    );
}

// ---- primitive lists ----

#[test]
fn primitive_merge_list_is_a_union() {
    let orig = json!({"metadata": {"finalizers": ["a", "b"]}});
    // Items named by the patch take the patch's order (upstream normalizeElementOrder).
    let out = smp(
        orig.clone(),
        json!({"metadata": {"finalizers": ["b", "a"]}}),
    );
    assert_eq!(out, json!({"metadata": {"finalizers": ["b", "a"]}}));
    // Upstream order: patch items that live order cannot place come first.
    let out = smp(orig, json!({"metadata": {"finalizers": ["c", "b"]}}));
    assert_eq!(out, json!({"metadata": {"finalizers": ["c", "a", "b"]}}));
}

#[test]
fn primitive_merge_list_with_set_element_order_appends() {
    let orig = json!({"metadata": {"finalizers": ["a", "b"]}});
    let patch = json!({"metadata": {
        "$setElementOrder/finalizers": ["a", "b", "c"], "finalizers": ["c"]
    }});
    assert_eq!(
        smp(orig, patch),
        json!({"metadata": {"finalizers": ["a", "b", "c"]}})
    );
}

#[test]
fn delete_from_primitive_list() {
    let orig = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
    let patch = json!({"metadata": {
        "$setElementOrder/finalizers": ["a", "c"],
        "$deleteFromPrimitiveList/finalizers": ["b"]
    }});
    assert_eq!(
        smp(orig, patch),
        json!({"metadata": {"finalizers": ["a", "c"]}})
    );
}

#[test]
fn delete_from_absent_primitive_list_is_a_noop() {
    let orig = json!({"metadata": {"name": "p"}});
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}});
    assert_eq!(smp(orig.clone(), patch), orig);
}

#[test]
fn malformed_delete_from_primitive_list_is_rejected() {
    let orig = json!({"metadata": {"finalizers": ["a"]}});
    let not_list = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}});
    assert_eq!(
        err(orig.clone(), not_list),
        "invalid patch format of primitive list"
    );
    let no_slash = json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}});
    assert_eq!(
        err(orig, no_slash),
        "invalid patch format of primitive list"
    );
}

// ---- atomic lists and unknown schema ----

#[test]
fn lists_without_merge_strategy_are_replaced() {
    let orig = json!({"spec": {
        "tolerations": [{"key": "a"}, {"key": "b"}],
        "containers": [{"name": "c", "args": ["1", "2"]}]
    }});
    let patch = json!({"spec": {
        "tolerations": [{"key": "z", "effect": null}],
        "containers": [{"name": "c", "args": ["3"]}]
    }});
    let want = json!({"spec": {
        "tolerations": [{"key": "z"}],
        "containers": [{"name": "c", "args": ["3"]}]
    }});
    assert_eq!(smp(orig, patch), want);
}

#[test]
fn unknown_schema_merges_maps_and_replaces_lists() {
    let orig = json!({"spec": {"containers": [{"name": "a"}], "x": {"y": 1}}});
    let patch = json!({"spec": {"containers": [{"name": "b"}], "x": {"z": 2}}});
    let out = apply(&orig, &patch, &NoSchema, &TypeRef::new("Pod")).unwrap();
    assert_eq!(
        out,
        json!({"spec": {"containers": [{"name": "b"}], "x": {"y": 1, "z": 2}}})
    );
    let out = apply(&orig, &patch, &TestSchema, &TypeRef::UNKNOWN).unwrap();
    assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
}

#[test]
fn map_value_type_is_used_for_map_entries() {
    struct MapSchema;
    impl SchemaNav for MapSchema {
        fn field(&self, ty: &TypeRef, name: &str) -> Option<FieldInfo> {
            match (ty.0.as_str(), name) {
                ("Root", "byName") => Some(f("ContainerMap", &[], None)),
                ("Entry", "items") => Some(f("Item", &["merge"], Some("id"))),
                _ => None,
            }
        }
        fn map_value(&self, ty: &TypeRef) -> Option<TypeRef> {
            (ty.0 == "ContainerMap").then(|| TypeRef::new("Entry"))
        }
    }
    let orig = json!({"byName": {"k": {"items": [{"id": 1, "v": "a"}]}}});
    let patch = json!({"byName": {"k": {"items": [{"id": 1, "w": "b"}]}}});
    let out = apply(&orig, &patch, &MapSchema, &TypeRef::new("Root")).unwrap();
    assert_eq!(
        out,
        json!({"byName": {"k": {"items": [{"id": 1, "v": "a", "w": "b"}]}}})
    );
}

// ---- retainKeys ----

fn deployment(strategy: Value) -> Value {
    json!({"spec": {"replicas": 1, "strategy": strategy}})
}

fn smp_deploy(original: Value, patch: Value) -> Result<Value, PatchError> {
    apply(&original, &patch, &TestSchema, &TypeRef::new("Deployment"))
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let orig = deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
    let patch = json!({"spec": {"strategy": {
        "$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null
    }}});
    assert_eq!(
        smp_deploy(orig, patch).unwrap(),
        deployment(json!({"type": "Recreate"}))
    );
}

#[test]
fn retain_keys_keeps_listed_fields_and_merges() {
    let orig = deployment(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}));
    let patch = json!({"spec": {"strategy": {
        "$retainKeys": ["type", "rollingUpdate"], "rollingUpdate": {"maxUnavailable": 0}
    }}});
    let want = deployment(
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
    );
    assert_eq!(smp_deploy(orig, patch).unwrap(), want);
}

#[test]
fn retain_keys_rejects_unlisted_patch_field_and_bad_format() {
    let orig = deployment(json!({"type": "RollingUpdate"}));
    let unlisted = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
    let e = smp_deploy(orig.clone(), unlisted).unwrap_err();
    assert_eq!(e, PatchError::BadRetainKeys);
    let bad = json!({"spec": {"strategy": {"$retainKeys": "type"}}});
    assert_eq!(
        smp_deploy(orig, bad).unwrap_err().to_string(),
        "invalid patch format of retainKeys"
    );
}

#[test]
fn retain_keys_in_merge_list_element() {
    let orig = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
    let patch = json!({"spec": {"volumes": [
        {"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
    ]}});
    let want = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}});
    assert_eq!(smp(orig, patch), want);
}

// ---- whole-object scenarios ----

#[test]
fn kubectl_apply_deployment_template_patch() {
    let orig = json!({
        "metadata": {"name": "d", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "log", "image": "busybox"}
        ]}}}
    });
    let patch = json!({
        "metadata": {"labels": {"tier": "fe"}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "log"}],
            "containers": [{"name": "web", "image": "nginx:2",
                "$setElementOrder/env": [{"name": "A"}, {"name": "B"}],
                "env": [{"name": "B", "value": "2"}]}]
        }}}
    });
    let out = smp_deploy(orig, patch).unwrap();
    assert_no_directives(&out);
    let cs = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(cs[0]["image"], "nginx:2");
    assert_eq!(
        cs[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(cs[1], json!({"name": "log", "image": "busybox"}));
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "tier": "fe"})
    );
}

#[test]
fn inputs_are_not_modified_and_empty_patch_is_identity() {
    let orig = pod(json!([{"name": "a"}]));
    let patch = json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}});
    let (o2, p2) = (orig.clone(), patch.clone());
    let _ = smp(orig.clone(), patch.clone());
    assert_eq!((orig.clone(), patch), (o2, p2));
    assert_eq!(smp(orig.clone(), json!({})), orig);
    let empty = json!({"spec": {"containers": []}});
    assert_eq!(
        smp(empty.clone(), json!({"spec": {"containers": []}})),
        empty
    );
}
