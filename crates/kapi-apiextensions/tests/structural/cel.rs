//! CEL rules: self, oldSelf transition rules, messages, fieldPath, reason, compile
//! errors, Kubernetes library functions.

use serde_json::{json, Value};

use super::{messages, schema};

fn spec_rules(rules: Value) -> kapi_apiextensions::structural::Structural {
    schema(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": rules,
            "properties": {
                "replicas": {"type": "integer"},
                "min": {"type": "integer"},
                "name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "integer"}}
            }
        }}
    }))
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": spec})
}

#[test]
fn rule_results_and_messages() {
    let s = spec_rules(json!([
        {"rule": "self.replicas >= self.min"},
        {"rule": "self.name.startsWith('a')", "message": "name must start with a"},
        {"rule": "self.replicas < 100", "messageExpression": "'too many: ' + string(self.replicas)"},
        {"rule": "self.min > 0", "fieldPath": ".min", "reason": "FieldValueForbidden", "message": "min must be positive"},
        {"rule": "self.items.isSorted()", "message": "unsorted"}
    ]));
    let good = obj(json!({"replicas": 3, "min": 1, "name": "abc", "items": [1, 2]}));
    assert_eq!(messages(&s.validate_cel(&good, None)), Vec::<String>::new());
    let bad = obj(json!({"replicas": 300, "min": 400, "name": "b", "items": [2, 1]}));
    let bad2 = obj(json!({"replicas": 1, "min": 0, "name": "a", "items": []}));
    assert_eq!(
        messages(&s.validate_cel(&bad, None)),
        vec![
            r#"spec: Invalid value: "object": failed rule: self.replicas >= self.min"#,
            r#"spec: Invalid value: "object": name must start with a"#,
            r#"spec: Invalid value: "object": too many: 300"#,
            r#"spec: Invalid value: "object": unsorted"#,
        ]
    );
    assert_eq!(
        messages(&s.validate_cel(&bad2, None)),
        vec!["spec.min: Forbidden: min must be positive"]
    );
}

#[test]
fn transition_rules() {
    let s = spec_rules(json!([
        {"rule": "self.replicas >= oldSelf.replicas", "message": "may not scale down"},
        {"rule": "!oldSelf.hasValue() || oldSelf.value().name == self.name", "optionalOldSelf": true, "message": "name is immutable"}
    ]));
    let new = obj(json!({"replicas": 1, "name": "a"}));
    // Create: the plain transition rule is skipped, the optional one sees no old value.
    assert_eq!(messages(&s.validate_cel(&new, None)), Vec::<String>::new());
    let old = obj(json!({"replicas": 2, "name": "b"}));
    assert_eq!(
        messages(&s.validate_cel(&new, Some(&old))),
        vec![
            r#"spec: Invalid value: "object": may not scale down"#,
            r#"spec: Invalid value: "object": name is immutable"#,
        ]
    );
}

#[test]
fn runtime_errors_and_compile_errors() {
    let s = schema(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "replicas": {"type": "integer"},
            "n": {"x-kubernetes-int-or-string": true}
        },
        "x-kubernetes-validations": [
            {"rule": "self.free.nope > 1"},
            {"rule": "self.replicas / 0 == 1"},
            {"rule": "self.n > 1"},
            {"rule": "self.nope > 1"},
            {"rule": "self.replicas >"}
        ]
    }}}));
    let got = messages(&s.validate_cel(
        &json!({"spec": {"free": {}, "replicas": 1, "n": "x"}}),
        None,
    ));
    assert_eq!(
        got,
        vec![
            r#"spec: Invalid value: "object": no such key: nope evaluating rule: self.free.nope > 1"#,
            r#"spec: Invalid value: "object": division by zero evaluating rule: self.replicas / 0 == 1"#,
            r#"spec: Invalid value: "object": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.n > 1"#,
            "spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 1\n | ....^",
            "spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.replicas >\n | ...............^",
        ]
    );
}

#[test]
fn nested_rules_and_escaping() {
    let s = schema(json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "ports": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "port-number": {"type": "integer"}
                }, "x-kubernetes-validations": [
                    {"rule": "self.port__dash__number > 0", "message": "port must be positive"},
                    {"rule": "self.port__dash__number == oldSelf.port__dash__number", "message": "port is immutable"}
                ]}
            },
            "labels": {"type": "object", "additionalProperties": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.size() < 5"}]},
                "x-kubernetes-validations": [{"rule": "!('bad.key' in self)", "fieldPath": "['bad.key']", "message": "no bad key"}]}
        }}}
    }));
    let new = obj(
        json!({"ports": [{"name": "a", "port-number": 0}, {"name": "b", "port-number": 2}], "labels": {"k": "toolong", "bad.key": "x"}}),
    );
    let old = obj(json!({"ports": [{"name": "b", "port-number": 3}]}));
    assert_eq!(
        messages(&s.validate_cel(&new, Some(&old))),
        vec![
            // Upstream appends the normalized fieldPath as one child name, so a
            // subscript path prints after a dot.
            r#"spec.labels.[bad.key]: Invalid value: "object": no bad key"#,
            r#"spec.labels[k]: Invalid value: "string": failed rule: self.size() < 5"#,
            r#"spec.ports[0]: Invalid value: "object": port must be positive"#,
            r#"spec.ports[1]: Invalid value: "object": port is immutable"#,
        ]
    );
}

fn schema_errors(schema: Value) -> Vec<String> {
    let path = kapi_machinery::validation::FieldPath::new("s");
    messages(&kapi_apiextensions::structural::validate_schema(
        &schema, &path,
    ))
}

fn spec_schema(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

#[test]
fn schema_checks_of_rules() {
    let with_rules = |rules: Value| {
        spec_schema(
            json!({"type": "object", "properties": {"a": {"type": "integer"}},
            "x-kubernetes-validations": rules}),
        )
    };
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (json!([{"rule": "self.a > 0"}]), vec![]),
        (json!([{"rule": " "}]), vec!["s.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified"]),
        (
            json!([{"rule": "self.a > 0", "message": "two\nlines"}]),
            vec!["s.properties[spec].x-kubernetes-validations[0].message: Invalid value: \"two\\nlines\": message must not contain line breaks"],
        ),
        (
            json!([{"rule": "self.a > 0", "reason": "Nope"}]),
            vec![r#"s.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#],
        ),
        (
            json!([{"rule": "self.a > 0", "fieldPath": ".b"}]),
            vec![r#"s.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: ".b": fieldPath must be a valid path"#],
        ),
        (json!([{"rule": "self.a > 0", "fieldPath": ".a"}]), vec![]),
        (
            json!([{"rule": "string(self.a).lowerascii() == 'x'"}]),
            vec!["s.properties[spec].x-kubernetes-validations[0]: Invalid value: {\"rule\":\"string(self.a).lowerascii() == 'x'\"}: compilation failed: ERROR: <input>:1:26: undeclared reference to 'lowerascii' (in container '')\n | string(self.a).lowerascii() == 'x'\n | .........................^"],
        ),
        (json!([{"rule": "[string(self.a)].all(x, x.lowerAscii() != 'q') && math.greatest([1]) == 1"}]), vec![]),
        (json!([{"rule": "self.a > 0", "fieldPath": "['a']"}]), vec![]),
        (
            json!([{"rule": "self.b > 0"}]),
            vec!["s.properties[spec].x-kubernetes-validations[0]: Invalid value: {\"rule\":\"self.b > 0\"}: compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | self.b > 0\n | ....^"],
        ),
        (
            json!([{"rule": "self.a > 0", "optionalOldSelf": true}]),
            vec!["s.properties[spec].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if rule does not use oldSelf"],
        ),
    ];
    for (rules, want) in cases {
        assert_eq!(schema_errors(with_rules(rules.clone())), want, "{rules}");
    }
    let got = schema_errors(with_rules(json!([{"rule": "self.a >"}])));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with(r#"s.properties[spec].x-kubernetes-validations[0]: Invalid value: {"rule":"self.a >"}: compilation failed: ERROR: <input>:1:"#),
        "{got:?}"
    );
}

#[test]
fn root_metadata_exposes_only_name_and_generate_name() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object"}},
        "x-kubernetes-validations": [{"rule": "!has(self.metadata.labels)"}]});
    assert_eq!(
        schema_errors(s),
        vec!["s.x-kubernetes-validations[0]: Invalid value: {\"rule\":\"!has(self.metadata.labels)\"}: compilation failed: ERROR: <input>:1:19: undefined field 'labels'\n | !has(self.metadata.labels)\n | ..................^"]
    );
}

#[test]
fn old_self_needs_correlatable_values() {
    let s = spec_schema(json!({"type": "array", "items": {"type": "object",
        "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a == oldSelf.a"}]}}));
    assert_eq!(
        schema_errors(s),
        vec![
            r#"s.properties[spec].items.x-kubernetes-validations[0].rule: Invalid value: "self.a == oldSelf.a": oldSelf cannot be used on the uncorrelatable portion of the schema within s.properties[spec]"#
        ]
    );
}

#[test]
fn static_cost_limits() {
    // Unbounded lists of unbounded strings: the nested scan is far over budget.
    let unbounded = spec_schema(json!({"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, y.startsWith(x)))"}]}));
    // The rule also counts towards the schema's total, as upstream.
    let hint = "(try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        schema_errors(unbounded),
        vec![
            format!("s.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}"),
            format!("s: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}"),
        ]
    );
    // The same rule with bounds is fine.
    let bounded = spec_schema(
        json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, y.startsWith(x)))"}]}),
    );
    assert_eq!(schema_errors(bounded), Vec::<String>::new());
    // Cheap per rule, but run for every item of two unbounded nested lists.
    let fan_out = spec_schema(
        json!({"type": "array", "items": {"type": "array", "items": {"type": "string", "maxLength": 64,
        "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}}}),
    );
    let got = schema_errors(fan_out);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("s: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of"),
        "{got:?}"
    );
}

#[test]
fn runtime_cost_limits() {
    let s = schema(spec_schema(
        json!({"type": "array", "items": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y || x != y))"}]}),
    ));
    let small = json!({"spec": ["a", "b"]});
    assert_eq!(
        messages(&s.validate_cel(&small, None)),
        Vec::<String>::new()
    );
    let items: Vec<String> = (0..2000).map(|i| format!("v{i}")).collect();
    let big = json!({"spec": items});
    assert_eq!(
        messages(&s.validate_cel(&big, None)),
        vec![
            r#"spec: Invalid value: "array": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x == y || x != y))"#
        ]
    );
}

#[test]
fn typed_values_and_library_functions() {
    let s = schema(spec_schema(json!({"type": "object",
    "properties": {
        "at": {"type": "string", "format": "date-time"},
        "timeout": {"type": "string", "format": "duration"},
        "mem": {"x-kubernetes-int-or-string": true},
        "ratio": {"type": "number"},
        "name": {"type": "string"},
        "ips": {"type": "array", "items": {"type": "string"}}
    },
    "x-kubernetes-validations": [
        {"rule": "self.at > timestamp('2024-01-01T00:00:00Z')", "message": "too early"},
        {"rule": "self.timeout <= duration('1h')", "message": "timeout too long"},
        {"rule": "quantity(string(self.mem)).isLessThan(quantity('1Gi'))", "message": "too much memory"},
        {"rule": "self.name.indexOf('x') < 0", "message": "no x"},
        {"rule": "self.ips.all(i, isIP(i))", "message": "bad ip"},
        {"rule": "!has(self.ratio) || self.ratio == 2.0", "message": "a number field is a double"}
    ]})));
    let good = json!({"spec": {"at": "2024-06-01T00:00:00Z", "timeout": "30m", "mem": "512Mi", "name": "abc", "ips": ["10.0.0.1"], "ratio": 2}});
    assert_eq!(messages(&s.validate_cel(&good, None)), Vec::<String>::new());
    let bad = json!({"spec": {"at": "2023-06-01T00:00:00Z", "timeout": "2h", "mem": "2Gi", "name": "xyz", "ips": ["nope"]}});
    assert_eq!(
        messages(&s.validate_cel(&bad, None)),
        vec![
            r#"spec: Invalid value: "object": too early"#,
            r#"spec: Invalid value: "object": timeout too long"#,
            r#"spec: Invalid value: "object": too much memory"#,
            r#"spec: Invalid value: "object": no x"#,
            r#"spec: Invalid value: "object": bad ip"#,
        ]
    );
}

#[test]
fn root_rules_see_metadata_name_and_type_meta() {
    let s = schema(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('ok-')", "message": "bad name"},
            {"rule": "self.kind == 'Widget'"}
        ],
        "properties": {"spec": {"type": "object"}}}));
    let good = json!({"apiVersion": "a/v1", "kind": "Widget", "metadata": {"name": "ok-1", "labels": {"a": "b"}}});
    assert_eq!(messages(&s.validate_cel(&good, None)), Vec::<String>::new());
    let bad = json!({"apiVersion": "a/v1", "kind": "Gadget", "metadata": {"name": "x"}});
    assert_eq!(
        messages(&s.validate_cel(&bad, None)),
        // Upstream validates from a nil path: errors about the object print `<nil>`.
        vec![
            r#"<nil>: Invalid value: "object": bad name"#,
            r#"<nil>: Invalid value: "object": failed rule: self.kind == 'Widget'"#,
        ]
    );
}

#[test]
fn ratcheting_unchanged_values() {
    let s = spec_rules(
        json!([{"rule": "self.replicas < 10", "message": "too many"},
        {"rule": "self.replicas >= oldSelf.replicas", "message": "no scale down"}]),
    );
    let old = obj(json!({"replicas": 20, "name": "a"}));
    // Unchanged: the non-transition rule is ratcheted into a warning, the
    // transition rule holds.
    assert_eq!(
        messages(&s.validate_cel(&old, Some(&old))),
        Vec::<String>::new()
    );
    let (errs, warnings) = s.validate_cel_with_warnings(&old, Some(&old));
    assert!(errs.is_empty());
    assert_eq!(warnings, vec![r#"spec: Invalid value: "object": too many"#]);
    // Through validate_all too.
    let (errs, warnings) = s.validate_all_with_warnings(&old, Some(&old));
    assert!(errs.is_empty());
    assert_eq!(warnings.len(), 1);
    let changed = obj(json!({"replicas": 15, "name": "a"}));
    assert_eq!(
        messages(&s.validate_cel(&changed, Some(&old))),
        vec![
            r#"spec: Invalid value: "object": too many"#,
            r#"spec: Invalid value: "object": no scale down"#,
        ]
    );
}

#[test]
fn message_expression_fallbacks() {
    let s = spec_rules(json!([
        {"rule": "self.replicas > 5", "messageExpression": "''", "message": "fallback"},
        {"rule": "self.replicas > 6", "messageExpression": "self.missingKeyOfMap"},
        {"rule": "self.replicas > 7", "messageExpression": "1"},
        {"rule": "self.replicas > 8"}
    ]));
    let got = messages(&s.validate_cel(&obj(json!({"replicas": 1, "min": 0})), None));
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], r#"spec: Invalid value: "object": fallback"#);
    // A message expression that does not compile (validate_schema rejects such
    // CRDs) leaves the default message.
    assert_eq!(
        got[1],
        r#"spec: Invalid value: "object": failed rule: self.replicas > 6"#
    );
    // A non-string message stops evaluation: the fourth rule does not run.
    assert_eq!(
        got[2],
        r#"spec: Invalid value: "object": messageExpression must evaluate to a string"#
    );
}

#[test]
fn library_coverage() {
    let rules = [
        "self.items.all(x, x > 0)",
        "self.items.exists(x, x == 2)",
        "self.items.exists_one(x, x == 2)",
        "self.items.map(x, x * 2) == [2, 4]",
        "self.items.filter(x, x > 1) == [2]",
        "size(self.items) == 2 && self.items.size() == 2",
        "self.name.matches('^[a-z]+$')",
        "self.name.upperAscii() == 'ABC'",
        "self.name.split('b') == ['a', 'c']",
        "['a', 'b'].join('-') == 'a-b'",
        "'%s-%d'.format(['x', 1]) == 'x-1'",
        "sets.contains([1, 2, 3], [1, 2])",
        "self.items.indexOf(2) == 1",
        "self.items.isSorted()",
        "has(self.name) && !has(self.min)",
        "self.name in ['abc', 'd']",
        "int('5') + 1 == 6",
        "duration('1m') < duration('1h')",
        "self.name.find('[bc]+') == 'bc'",
        "math.greatest([1, 5, 3]) == 5",
        "optional.of(1).hasValue()",
        "dyn(self.replicas) == 1",
        // Not supported by the `cel` crate 0.13: optional field selection
        // (`self.?min`) and two-variable comprehensions (`all(i, x, ...)`).
    ];
    let list: Vec<Value> = rules.iter().map(|r| json!({"rule": r})).collect();
    let s = spec_rules(Value::Array(list));
    let got = messages(&s.validate_cel(
        &obj(json!({"replicas": 1, "name": "abc", "items": [1, 2]})),
        None,
    ));
    assert_eq!(got, Vec::<String>::new());
}

/// Rules nest no deeper than the operator limit, so parsing, checking, pricing and
/// evaluating them fits a 2 MiB thread stack (a tokio worker's) even unoptimized.
#[test]
fn rule_nesting_is_bounded() {
    let run = |rule: String| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let s = schema(
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "x-kubernetes-validations": [{"rule": rule}]}),
                );
                messages(&s.validate_cel(&json!({"a": {"a": 1}}), None))
            })
            .expect("thread")
            .join()
            .expect("no stack overflow")
    };
    // 997 `+` and one `==`: just under the limit.
    let sum = format!("{} == 998", vec!["1"; 998].join("+"));
    assert_eq!(run(sum), Vec::<String>::new());
    let deep = format!("has(self{})", ".a".repeat(999));
    assert_eq!(run(deep).len(), 1);
    let too_long = format!("{} == 1", vec!["1"; 5000].join(" + "));
    let got = run(too_long);
    assert_eq!(got.len(), 1);
    assert!(
        got[0].ends_with("compilation failed: ERROR: <input>:1:1: expression recursion limit exceeded: more than 1000 operators"),
        "{got:?}"
    );
}

/// Work over function results is priced by the result's size.
#[test]
fn function_results_are_priced() {
    let rule = "self.s.split('').all(c, self.s.split('').exists(d, c == d))";
    let s = schema(spec_schema(
        json!({"type": "object", "properties": {"s": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": rule}]}),
    ));
    assert_eq!(
        messages(&s.validate_cel(&json!({"spec": {"s": "abc"}}), None)),
        Vec::<String>::new()
    );
    let long = "x".repeat(5000);
    let got = messages(&s.validate_cel(&json!({"spec": {"s": long}}), None));
    assert_eq!(
        got,
        vec![format!(
            r#"spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"#
        )]
    );
    // Statically, an unbounded string makes the same rule far too expensive.
    let errs = schema_errors(spec_schema(
        json!({"type": "object", "properties": {"s": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": rule}]}),
    ));
    assert!(
        errs[0].contains("estimated rule cost exceeds budget by factor of more than 100x"),
        "{errs:?}"
    );
    let bounded = schema_errors(spec_schema(
        json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 64}},
        "x-kubernetes-validations": [{"rule": rule}]}),
    ));
    assert_eq!(bounded, Vec::<String>::new());
}

/// Set and map lists compare as sets and maps in `self == oldSelf`, as upstream.
#[test]
fn immutability_ignores_the_order_of_set_and_map_lists() {
    let s = schema(spec_schema(json!({"type": "object",
    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "spec is immutable"}],
    "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
        "args": {"type": "array", "items": {"type": "string"}}
    }})));
    let old = json!({"spec": {"tags": ["a", "b"], "args": ["x", "y"],
        "ports": [{"name": "p", "hosts": ["h1", "h2"]}, {"name": "q"}]}});
    let reordered = json!({"spec": {"tags": ["b", "a"], "args": ["x", "y"],
        "ports": [{"name": "q"}, {"name": "p", "hosts": ["h2", "h1"]}]}});
    assert_eq!(
        messages(&s.validate_cel(&reordered, Some(&old))),
        Vec::<String>::new()
    );
    let immutable = vec![r#"spec: Invalid value: "object": spec is immutable"#];
    // Atomic lists keep their order.
    let args = json!({"spec": {"tags": ["a", "b"], "args": ["y", "x"],
        "ports": [{"name": "p", "hosts": ["h1", "h2"]}, {"name": "q"}]}});
    assert_eq!(messages(&s.validate_cel(&args, Some(&old))), immutable);
    // A changed or added item is a change.
    let changed = json!({"spec": {"tags": ["a", "c"], "args": ["x", "y"],
        "ports": [{"name": "p", "hosts": ["h1", "h2"]}, {"name": "q"}]}});
    assert_eq!(messages(&s.validate_cel(&changed, Some(&old))), immutable);
    let nested = json!({"spec": {"tags": ["a", "b"], "args": ["x", "y"],
        "ports": [{"name": "p", "hosts": ["h1"]}, {"name": "q"}]}});
    assert_eq!(messages(&s.validate_cel(&nested, Some(&old))), immutable);
}
