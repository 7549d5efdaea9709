//! Pruning and defaulting cases (upstream's pruning and defaulting algorithms).

use serde_json::{json, Value};

use super::schema;

fn pruned(s: Value, mut obj: Value) -> (Value, Vec<String>) {
    let paths = schema(s).prune(&mut obj);
    (obj, paths)
}

#[test]
fn prune_table() {
    let base = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
            "anything": {"type": "object", "additionalProperties": true},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}}
        }}
    }});
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "x": 1}, "extra": 1, "spec": {"a": "s", "b": 2}}),
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "x": 1}, "spec": {"a": "s"}}),
            vec!["extra", "spec.b"],
        ),
        (
            json!({"spec": {"list": [{"x": 1, "y": 2}, {"z": 3}]}}),
            json!({"spec": {"list": [{"x": 1}, {}]}}),
            vec!["spec.list[0].y", "spec.list[1].z"],
        ),
        (
            json!({"spec": {"free": {"u": {"deep": 1}, "known": {"k": "v", "drop": 1}}}}),
            json!({"spec": {"free": {"u": {"deep": 1}, "known": {"k": "v"}}}}),
            vec!["spec.free.known.drop"],
        ),
        (
            json!({"spec": {"map": {"a": {"v": "1", "w": "2"}}}}),
            json!({"spec": {"map": {"a": {"v": "1"}}}}),
            vec!["spec.map.a.w"],
        ),
        (
            json!({"spec": {"anything": {"a": 1, "b": {"c": 2}}}}),
            json!({"spec": {"anything": {"a": 1, "b": {}}}}),
            vec!["spec.anything.b.c"],
        ),
        (
            json!({"spec": {"embedded": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1, "annotations": 5},
                "spec": {"n": 1, "m": 2}, "status": {}}}}),
            json!({"spec": {"embedded": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"n": 1}}}}),
            vec![
                "spec.embedded.metadata.annotations",
                "spec.embedded.metadata.bogus",
                "spec.embedded.spec.m",
                "spec.embedded.status",
            ],
        ),
    ];
    for (input, want, paths) in cases {
        let (got, got_paths) = pruned(base.clone(), input.clone());
        assert_eq!(got, want, "{input}");
        assert_eq!(got_paths, paths, "{input}");
    }
}

#[test]
fn preserve_unknown_fields_at_root_keeps_everything_unknown() {
    let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let (got, paths) = pruned(s, json!({"x": {"y": 1}, "spec": {"a": "1", "b": 2}}));
    assert_eq!(got, json!({"x": {"y": 1}, "spec": {"a": "1"}}));
    assert_eq!(paths, vec!["spec.b"]);
}

fn defaulted(s: Value, mut obj: Value) -> Value {
    schema(s).default(&mut obj);
    obj
}

#[test]
fn default_table() {
    let s = json!({"type": "object", "properties": {
        "spec": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "strategy": {"type": "object", "default": {"type": "Recreate"}, "properties": {
                "type": {"type": "string"},
                "maxSurge": {"type": "integer", "default": 25}
            }},
            "nullableWithDefault": {"type": "string", "nullable": true, "default": "d"},
            "plain": {"type": "string"},
            "nullablePlain": {"type": "string", "nullable": true},
            "ports": {"type": "array", "items": {"type": "object", "default": {"name": "dflt"},
                "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}},
            "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "cpu": {"type": "string", "default": "1"}}}}
        }}
    }});
    let cases: Vec<(Value, Value)> = vec![
        (
            json!({}),
            json!({"spec": {"replicas": 1, "strategy": {"type": "Recreate", "maxSurge": 25}, "nullableWithDefault": "d"}}),
        ),
        (
            json!({"spec": {"replicas": 3, "strategy": {}}}),
            json!({"spec": {"replicas": 3, "strategy": {"maxSurge": 25}, "nullableWithDefault": "d"}}),
        ),
        (
            // A non-nullable null takes the default; a nullable null stays; a
            // non-nullable null without default is dropped.
            json!({"spec": {"replicas": null, "nullableWithDefault": null, "plain": null, "nullablePlain": null}}),
            json!({"spec": {"replicas": 1, "nullableWithDefault": null, "nullablePlain": null,
                "strategy": {"type": "Recreate", "maxSurge": 25}}}),
        ),
        (
            json!({"spec": {"ports": [{"name": "a"}, null], "limits": {"x": {}, "y": {"cpu": "2"}}}}),
            json!({"spec": {"ports": [{"name": "a", "protocol": "TCP"}, {"name": "dflt", "protocol": "TCP"}],
                "limits": {"x": {"cpu": "1"}, "y": {"cpu": "2"}},
                "replicas": 1, "strategy": {"type": "Recreate", "maxSurge": 25}, "nullableWithDefault": "d"}}),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(defaulted(s.clone(), input.clone()), want, "{input}");
    }
}
