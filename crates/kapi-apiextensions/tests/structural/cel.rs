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
    let s = spec_rules(json!([{"rule": "self.nope > 1"}, {"rule": "self.replicas >"}]));
    let got = messages(&s.validate_cel(&obj(json!({"replicas": 1})), None));
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].starts_with(r#"spec: Invalid value: "object": "#),
        "{got:?}"
    );
    assert!(
        got[0].ends_with("evaluating rule: self.nope > 1"),
        "{got:?}"
    );
    assert!(
        got[1].starts_with(r#"spec: Invalid value: "object": rule compile error: compilation failed: ERROR: <input>:1:"#),
        "{got:?}"
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
                "x-kubernetes-validations": [{"rule": "self.size() < 5"}]}}
        }}}
    }));
    let new = obj(
        json!({"ports": [{"name": "a", "port-number": 0}, {"name": "b", "port-number": 2}], "labels": {"k": "toolong"}}),
    );
    let old = obj(json!({"ports": [{"name": "b", "port-number": 3}]}));
    assert_eq!(
        messages(&s.validate_cel(&new, Some(&old))),
        vec![
            r#"spec.labels[k]: Invalid value: "string": failed rule: self.size() < 5"#,
            r#"spec.ports[0]: Invalid value: "object": port must be positive"#,
            r#"spec.ports[1]: Invalid value: "object": port is immutable"#,
        ]
    );
}
