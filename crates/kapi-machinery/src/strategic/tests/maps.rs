//! Strategic merge patch on maps: merge, `null`, `$patch` directives.

use serde_json::json;

use super::*;

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
