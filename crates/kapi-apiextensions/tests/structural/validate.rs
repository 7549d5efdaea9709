//! Object validation: each keyword valid and invalid, with upstream's message.

use serde_json::{json, Value};

use super::{messages, schema};

/// A root schema with `spec.<field>` described by `field`.
fn spec_with(field: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"f": field}}}})
}

fn check(field: Value, value: Value) -> Vec<String> {
    let s = schema(spec_with(field));
    messages(&s.validate(&json!({"apiVersion": "a/v1", "kind": "K", "spec": {"f": value}})))
}

#[test]
fn keyword_table() {
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (json!({"type": "integer"}), json!(3), vec![]),
        (
            json!({"type": "integer"}),
            json!("x"),
            vec![r#"spec.f: Invalid value: "string": spec.f in body must be of type integer: "string""#],
        ),
        (json!({"type": "integer"}), json!(2.0), vec![]),
        (
            json!({"type": "integer"}),
            json!(2.5),
            vec![r#"spec.f: Invalid value: "number": spec.f in body must be of type integer: "number""#],
        ),
        (json!({"type": "number"}), json!(2), vec![]),
        (
            json!({"type": "string"}),
            Value::Null,
            vec![r#"spec.f: Invalid value: "null": spec.f in body must be of type string: "null""#],
        ),
        (json!({"type": "string", "nullable": true}), Value::Null, vec![]),
        (
            json!({"type": "boolean"}),
            json!({}),
            vec![r#"spec.f: Invalid value: "object": spec.f in body must be of type boolean: "object""#],
        ),
        (json!({"x-kubernetes-int-or-string": true}), json!("50%"), vec![]),
        (json!({"x-kubernetes-int-or-string": true}), json!(5), vec![]),
        (
            json!({"x-kubernetes-int-or-string": true}),
            json!(true),
            vec![r#"spec.f: Invalid value: "boolean": spec.f in body must be of type integer,string: "boolean""#],
        ),
        (
            json!({"type": "integer", "maximum": 10}),
            json!(11),
            vec!["spec.f: Invalid value: 11: spec.f in body should be less than or equal to 10"],
        ),
        (
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10),
            vec!["spec.f: Invalid value: 10: spec.f in body should be less than 10"],
        ),
        (
            json!({"type": "integer", "minimum": 1}),
            json!(0),
            vec!["spec.f: Invalid value: 0: spec.f in body should be greater than or equal to 1"],
        ),
        (
            json!({"type": "number", "minimum": 1.5, "exclusiveMinimum": true}),
            json!(1.5),
            vec!["spec.f: Invalid value: 1.5: spec.f in body should be greater than 1.5"],
        ),
        (
            json!({"type": "number", "maximum": 1000000}),
            json!(1000000.5),
            vec!["spec.f: Invalid value: 1000000.5: spec.f in body should be less than or equal to 1e+06"],
        ),
        (
            json!({"type": "integer", "multipleOf": 3}),
            json!(7),
            vec!["spec.f: Invalid value: 7: spec.f in body should be a multiple of 3"],
        ),
        (json!({"type": "integer", "multipleOf": 3}), json!(9), vec![]),
        (json!({"type": "number", "multipleOf": 0.5}), json!(1.5), vec![]),
        (
            json!({"type": "number", "multipleOf": 0.5}),
            json!(1.25),
            vec!["spec.f: Invalid value: 1.25: spec.f in body should be a multiple of 0.5"],
        ),
        (
            json!({"type": "integer", "multipleOf": -1}),
            json!(i64::MIN),
            vec!["spec.f: Invalid value: -1: factor MultipleOf declared for spec.f must be positive: -1"],
        ),
        (
            json!({"type": "string", "maxLength": 3}),
            json!("abcd"),
            vec!["spec.f: Too long: may not be longer than 3"],
        ),
        (json!({"type": "string", "maxLength": 3}), json!("äöü"), vec![]),
        (
            json!({"type": "string", "minLength": 2}),
            json!("a"),
            vec![r#"spec.f: Invalid value: "a": spec.f in body should be at least 2 chars long"#],
        ),
        (
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("A1"),
            vec![r#"spec.f: Invalid value: "A1": spec.f in body should match '^[a-z]+$'"#],
        ),
        // Go's \d, \w, \s and \b are ASCII-only.
        (json!({"type": "string", "pattern": "^\\d+$"}), json!("123"), vec![]),
        (
            json!({"type": "string", "pattern": "^\\d+$"}),
            json!("١٢٣"),
            vec![r#"spec.f: Invalid value: "١٢٣": spec.f in body should match '^\d+$'"#],
        ),
        (
            json!({"type": "string", "pattern": "^[\\w.-]+\\b$"}),
            json!("ä"),
            vec![r#"spec.f: Invalid value: "ä": spec.f in body should match '^[\w.-]+\b$'"#],
        ),
        (json!({"type": "string", "pattern": "^[\\w.-]+\\b$"}), json!("a.b_c"), vec![]),
        (json!({"type": "string", "pattern": "^[^\\s]+[[:alpha:]]$"}), json!("x1a"), vec![]),
        (
            json!({"type": "string", "pattern": "^[^\\S]$"}),
            json!("\u{a0}"),
            vec!["spec.f: Invalid value: \"\u{a0}\": spec.f in body should match '^[^\\S]$'"],
        ),
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!("c"),
            vec![r#"spec.f: Unsupported value: "c": supported values: "a", "b""#],
        ),
        (
            json!({"type": "integer", "enum": [1, 2]}),
            json!(3),
            vec![r#"spec.f: Unsupported value: 3: supported values: "1", "2""#],
        ),
        (json!({"type": "integer", "enum": [1, 2]}), json!(2), vec![]),
        (
            json!({"type": "array", "items": {"type": "string"}, "maxItems": 1}),
            json!(["a", "b"]),
            vec!["spec.f: Too many: 2: must have at most 1 items"],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "minItems": 2}),
            json!(["a"]),
            vec!["spec.f: Invalid value: 1: spec.f in body should have at least 2 items"],
        ),
        (
            json!({"type": "array", "items": {"type": "integer"}}),
            json!([1, "x"]),
            vec![r#"spec.f[1]: Invalid value: "string": spec.f[1] in body must be of type integer: "string""#],
        ),
        (
            json!({"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}),
            json!({"a": "x", "b": "y"}),
            vec!["spec.f: Too many: 2: must have at most 1 items"],
        ),
        (
            json!({"type": "object", "minProperties": 1}),
            json!({}),
            vec!["spec.f: Invalid value: 0: spec.f in body should have at least 1 properties"],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({"a": 1, "b": "x"}),
            vec![r#"spec.f.b: Invalid value: "string": spec.f.b in body must be of type integer: "string""#],
        ),
        (
            json!({"type": "object", "additionalProperties": false}),
            json!({"a": 1}),
            vec![r#"spec.f: Invalid value: "a": spec.f.a in body is a forbidden property"#],
        ),
        (
            json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}),
            json!({}),
            vec!["spec.f.a: Required value"],
        ),
    ];
    for (field, value, want) in cases {
        assert_eq!(
            check(field.clone(), value.clone()),
            want,
            "{field} with {value}"
        );
    }
}

#[test]
fn root_errors_print_nil_path() {
    let s = schema(
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
    );
    assert_eq!(
        messages(&s.validate(&json!({}))),
        vec!["spec: Required value"]
    );
    let s = schema(json!({"type": "object", "maxProperties": 1}));
    assert_eq!(
        messages(&s.validate(&json!({"a": 1, "b": 2}))),
        vec!["<nil>: Too many: 2: must have at most 1 items"]
    );
}

#[test]
fn formats() {
    let ok: &[(&str, &str)] = &[
        ("date-time", "2024-01-02T03:04:05Z"),
        ("date-time", "2024-01-02T03:04:05.123+02:00"),
        ("date", "2024-02-29"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("byte", "aGVsbG8="),
        ("ipv4", "10.0.0.1"),
        ("ipv6", "::1"),
        ("cidr", "10.0.0.0/8"),
        ("duration", "1h30m"),
        ("hostname", "example.com"),
        ("email", "a@example.com"),
        ("int32", "anything"),
        ("unknown-format", "anything"),
    ];
    for (format, v) in ok {
        let errs = check(json!({"type": "string", "format": format}), json!(v));
        assert!(errs.is_empty(), "{format} {v}: {errs:?}");
    }
    let bad: &[(&str, &str)] = &[
        ("date-time", "yesterday"),
        ("date", "2024-13-01"),
        ("uuid", "nope"),
        ("byte", "a?=="),
        ("ipv4", "300.1.1.1"),
        ("cidr", "10.0.0.0/33"),
        ("duration", "soon"),
    ];
    for (format, v) in bad {
        let errs = check(json!({"type": "string", "format": format}), json!(v));
        let want = format!(
            r#"spec.f: Invalid value: "{v}": spec.f in body must be of type {format}: "{v}""#
        );
        assert_eq!(errs, vec![want], "{format}");
    }
}

#[test]
fn junctors() {
    let any = json!({"type": "integer", "anyOf": [{"minimum": 10}, {"maximum": 1}]});
    assert_eq!(check(any.clone(), json!(11)), Vec::<String>::new());
    assert_eq!(
        check(any, json!(5)),
        vec![
            r#"<nil>: Invalid value: "": "spec.f" must validate at least one schema (anyOf)"#,
            "spec.f: Invalid value: 5: spec.f in body should be greater than or equal to 10",
        ]
    );
    let not = json!({"type": "string", "not": {"enum": ["x"]}});
    assert_eq!(
        check(not, json!("x")),
        vec![r#"<nil>: Invalid value: "": "spec.f" must not validate the schema (not)"#]
    );
    let one = json!({"type": "integer", "oneOf": [{"minimum": 1}, {"minimum": 2}]});
    assert_eq!(
        check(one, json!(3)),
        vec![
            r#"<nil>: Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        ]
    );
    let all = json!({"type": "integer", "allOf": [{"minimum": 1}, {"maximum": 2}]});
    assert_eq!(
        check(all, json!(3)),
        vec![
            "spec.f: Invalid value: 3: spec.f in body should be less than or equal to 2",
            r#"<nil>: Invalid value: "": "spec.f" must validate all the schemas (allOf)"#,
        ]
    );
}

#[test]
fn list_types() {
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    assert_eq!(
        check(set, json!(["a", "b", "a", "a"])),
        vec![r#"spec.f[2]: Duplicate value: "a""#]
    );
    let map = json!({
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}
    });
    assert_eq!(
        check(map.clone(), json!([{"name": "a"}, {"name": "b"}])),
        Vec::<String>::new()
    );
    assert_eq!(
        check(map, json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}])),
        vec![r#"spec.f[1]: Duplicate value: {"name":"a"}"#]
    );
}

#[test]
fn embedded_resources() {
    let emb = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true});
    assert_eq!(
        check(
            emb.clone(),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        check(emb.clone(), json!({})),
        vec![
            "spec.f.apiVersion: Required value: must not be empty",
            "spec.f.kind: Required value: must not be empty",
        ]
    );
    assert_eq!(
        check(emb.clone(), json!({"apiVersion": "a/b/c", "kind": ""})),
        vec![
            r#"spec.f.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
            r#"spec.f.kind: Invalid value: "": must not be empty"#,
        ]
    );
    // Embedded names follow the path-segment rule, not DNS names.
    let pod = |meta: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta});
    assert_eq!(
        check(emb.clone(), pod(json!({"name": "A_B"}))),
        Vec::<String>::new()
    );
    assert_eq!(
        check(emb.clone(), pod(json!({"name": "a/b"}))),
        vec![r#"spec.f.metadata.name: Invalid value: "a/b": may not contain '/'"#]
    );
    assert_eq!(
        check(
            emb,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": "x"})
        ),
        vec![
            r#"spec.f.metadata: Invalid value: "x": invalid metadata: expected object, got string"#
        ]
    );
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 2},
            "b": {"type": "integer", "maximum": 5},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "p": {"type": "integer", "maximum": 10}}}},
            "args": {"type": "array", "items": {"type": "integer", "maximum": 1}}
        }}}}),
    );
    let old =
        json!({"spec": {"a": "long", "b": 9, "ports": [{"name": "x", "p": 99}], "args": [5]}});
    assert_eq!(
        messages(&s.validate_update(&old, &old)),
        Vec::<String>::new()
    );
    // Reordered map-list items still correlate by key; a changed atomic list does not.
    let new = json!({"spec": {"a": "long", "b": 8, "ports": [{"name": "y", "p": 1}, {"name": "x", "p": 99}], "args": [5, 0]}});
    assert_eq!(
        messages(&s.validate_update(&new, &old)),
        vec![
            "spec.args[0]: Invalid value: 5: spec.args[0] in body should be less than or equal to 1",
            "spec.b: Invalid value: 8: spec.b in body should be less than or equal to 5",
        ]
    );
    assert_eq!(messages(&s.validate(&new)).len(), 4);
}

#[test]
fn validate_all_skips_rules_after_blocking_errors() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.n > 1", "message": "n too small"}],
        "properties": {"n": {"type": "integer", "maximum": 10}, "s": {"type": "string"}}}}}),
    );
    // A non-blocking schema error (maximum) still lets the rules run.
    assert_eq!(
        messages(&s.validate_all(&json!({"spec": {"n": 11}}), None)),
        vec!["spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10"]
    );
    assert_eq!(
        messages(&s.validate_all(&json!({"spec": {"n": 0}}), None)),
        vec![r#"spec: Invalid value: "object": n too small"#]
    );
    // A wrong type blocks them.
    assert_eq!(
        messages(&s.validate_all(&json!({"spec": {"n": 0, "s": 1}}), None)),
        vec![
            r#"spec.s: Invalid value: "integer": spec.s in body must be of type string: "integer""#,
            r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
        ]
    );
    // A schema without rules has no CEL validator upstream: no note.
    let plain = schema(json!({"type": "object", "properties": {"s": {"type": "string"}}}));
    assert_eq!(
        messages(&plain.validate_all(&json!({"s": 1}), None)),
        vec![r#"s: Invalid value: "integer": s in body must be of type string: "integer""#]
    );
    // On update, unchanged invalid values are ratcheted and the rules run.
    let old = json!({"spec": {"n": 20}});
    assert_eq!(
        messages(&s.validate_all(&old, Some(&old))),
        Vec::<String>::new()
    );
}

#[test]
fn large_lists_are_checked_by_hashing() {
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "required": ["k"], "properties": {"k": {"type": "integer"}, "v": {"type": "integer", "maximum": 1}}}}
        }}}}),
    );
    let mut set: Vec<Value> = (0..20_000).map(|i| json!(format!("v{i}"))).collect();
    set.push(json!("v7"));
    let map: Vec<Value> = (0..20_000).map(|i| json!({"k": i, "v": 2})).collect();
    let old = json!({"spec": {"map": map}});
    let mut reversed = map.clone();
    reversed.reverse();
    let new = json!({"spec": {"set": set, "map": reversed}});
    // Every map item correlates with its old self (unchanged, so ratcheted).
    assert_eq!(
        messages(&s.validate_update(&new, &old)),
        vec![r#"spec.set[20000]: Duplicate value: "v7""#]
    );
}
