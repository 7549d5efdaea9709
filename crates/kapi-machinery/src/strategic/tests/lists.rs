//! Strategic merge patch on lists: merge keys, `$setElementOrder`,
//! `$patch: delete|replace` elements, primitive lists and their deletions.

use serde_json::json;

use super::*;

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
