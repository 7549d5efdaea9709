//! `validate_schema`: structural rules, extension rules, defaults, CEL checks and
//! cost limits, with upstream's paths and messages.

use kapi_apiextensions::structural::validate_schema;
use kapi_machinery::validation::FieldPath;
use serde_json::{json, Value};

use super::messages;

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

fn check(schema: Value) -> Vec<String> {
    let path = FieldPath::new("spec")
        .child("versions")
        .index(0)
        .child("schema")
        .child("openAPIV3Schema");
    messages(&validate_schema(&schema, &path))
}

/// `{type: object, properties: {spec: <spec>}}`
fn with_spec(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn one(schema: Value, want: &str) {
    let got = check(schema.clone());
    let want = want.replace("$P", P);
    assert_eq!(got, vec![want], "{schema}");
}

#[test]
fn valid_schemas_pass() {
    let ok = [
        json!({"type": "object"}),
        with_spec(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1, "minimum": 0},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
            "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }, "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "message": "m"}]})),
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10}}}}}),
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"required": ["a"]}, {"properties": {"a": {"minLength": 2}}}]}}}),
    ];
    for s in ok {
        assert_eq!(check(s.clone()), Vec::<String>::new(), "{s}");
    }
}

#[test]
fn structural_violations() {
    one(
        json!({"properties": {}}),
        "$P.type: Required value: must not be empty at the root",
    );
    one(
        json!({"type": "string"}),
        r#"$P.type: Invalid value: "string": must be object at the root"#,
    );
    one(
        with_spec(json!({"type": "object", "properties": {"x": {}}})),
        "$P.properties[spec].properties[x].type: Required value: must not be empty for specified object fields",
    );
    one(
        with_spec(json!({"type": "array"})),
        "$P.properties[spec].items: Required value: must be specified",
    );
    one(
        with_spec(json!({"type": "array", "items": {}})),
        "$P.properties[spec].items.type: Required value: must not be empty for specified array items",
    );
    one(
        with_spec(json!({"type": "object", "anyOf": [{"type": "object"}]})),
        "$P.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
    );
    one(
        // Completeness is checked for the root's junctors, as upstream.
        json!({"type": "object", "allOf": [{"properties": {"x": {"minimum": 1}}}]}),
        "$P.properties[x]: Required value: because it is defined in $P.allOf[0].properties[x]",
    );
    one(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
        "$P.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
    );
    one(
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
        "$P.additionalProperties: Forbidden: must not be used at the root",
    );
    assert_eq!(
        check(with_spec(json!({"type": "string", "x-kubernetes-embedded-resource": true}))),
        vec![
            format!("{P}.properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
            format!(r#"{P}.properties[spec].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#),
        ]
    );
    one(
        with_spec(json!({"type": "object", "x-kubernetes-embedded-resource": true})),
        "$P.properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
    );
    for (pattern, message) in [
        ("[a", "missing closing ]: `[a`"),
        ("(a", "missing closing ): `(a`"),
        ("a)", "unexpected ): `a)`"),
        ("*a", "missing argument to repetition operator: `*`"),
        ("a\\q", "invalid escape sequence: `\\q`"),
        ("[z-a]", "invalid character class range: `z-a`"),
        ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ] {
        one(
            with_spec(json!({"type": "string", "pattern": pattern})),
            &format!(
                "$P.properties[spec].pattern: Invalid value: {}: must be a valid regular expression, but isn't: error parsing regexp: {message}",
                kapi_machinery::validation::go_quote(pattern)
            ),
        );
    }
}

#[test]
fn extension_rules() {
    one(
        with_spec(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false})),
        "$P.properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
    );
    one(
        with_spec(
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
        ),
        r#"$P.properties[spec].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#,
    );
    one(
        with_spec(
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["a"]}),
        ),
        r#"$P.properties[spec].x-kubernetes-list-map-keys: Invalid value: []string{"a"}: must be empty if x-kubernetes-list-type is not map"#,
    );
    one(
        with_spec(json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"a": {"type": "string"}}}})),
        "$P.properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
    );
    one(
        with_spec(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}}}})),
        "$P.properties[spec].items.properties[a].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
    );
    one(
        with_spec(
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}}}}),
        ),
        r#"$P.properties[spec].x-kubernetes-list-map-keys: Invalid value: []string{"b"}: entries must all be names of item properties"#,
    );
    one(
        with_spec(
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}}),
        ),
        r#"$P.properties[spec].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map"#,
    );
    one(
        with_spec(json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}})),
        "$P.properties[spec].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set",
    );
    one(
        with_spec(json!({"type": "object", "x-kubernetes-map-type": "deep"})),
        r#"$P.properties[spec].x-kubernetes-map-type: Unsupported value: "deep": supported values: "atomic", "granular""#,
    );
    one(
        with_spec(json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}})),
        "$P.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
    );
    one(
        with_spec(json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}})),
        "$P.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
    );
    one(
        with_spec(json!({"type": "object", "$ref": "#/x"})),
        "$P.properties[spec].$ref: Forbidden: $ref is not supported",
    );
    one(
        with_spec(json!({"type": "null"})),
        "$P.properties[spec].type: Forbidden: type cannot be set to null, use nullable as an alternative",
    );
    one(
        with_spec(json!({"type": "int"})),
        r#"$P.properties[spec].type: Unsupported value: "int": supported values: "array", "boolean", "integer", "number", "object", "string""#,
    );
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    one(
        with_spec(json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 3, "default": 5}}})),
        // The default is validated with its own schema as the root (name ""), so
        // upstream's message starts with " in body".
        "$P.properties[spec].properties[n].default: Invalid value: 5:  in body should be less than or equal to 3",
    );
    // Defaults must also pass the node's CEL rules.
    one(
        with_spec(
            json!({"type": "object", "properties": {"n": {"type": "integer", "default": 5,
            "x-kubernetes-validations": [{"rule": "self % 2 == 0", "message": "must be even"}]}}}),
        ),
        r#"$P.properties[spec].properties[n].default: Invalid value: "integer": must be even"#,
    );
    one(
        with_spec(
            json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}},
            "default": {"a": "x", "b": 1}}}}),
        ),
        // Upstream prints the map with Go's %#v; objects print as JSON here.
        r#"$P.properties[spec].properties[o].default: Invalid value: {"a":"x","b":1}: must not have unknown fields: b"#,
    );
}

/// A schema shaped like controller-gen output: descriptions everywhere, int-or-string
/// quantities with a pattern, pod-template metadata below the root, atomic maps.
#[test]
fn controller_gen_style_schema_is_accepted_and_works() {
    let quantity = json!({
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$",
        "x-kubernetes-int-or-string": true
    });
    let schema = json!({
        "description": "Widget is the Schema for the widgets API",
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines...", "type": "string"},
            "kind": {"description": "Kind is...", "type": "string"},
            "metadata": {"type": "object"},
            "spec": {"description": "spec", "type": "object", "required": ["template"], "properties": {
                "replicas": {"type": "integer", "format": "int32", "default": 1},
                "memory": quantity,
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                    "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                "mode": {"type": "string", "enum": ["Fast", "Safe"]},
                "template": {"type": "object", "properties": {
                    "metadata": {"type": "object", "properties": {
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            }},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "required": ["type", "status"], "properties": {
                        "type": {"type": "string", "maxLength": 316},
                        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                        "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}
        }
    });
    assert_eq!(check(schema.clone()), Vec::<String>::new());
    let s = super::schema(schema);
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"memory": "512Mi", "mode": "Fast", "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}});
    assert!(s.prune(&mut obj).is_empty());
    s.default(&mut obj);
    assert_eq!(obj["spec"]["replicas"], json!(1));
    assert_eq!(messages(&s.validate_all(&obj, None)), Vec::<String>::new());
    obj["spec"]["memory"] = json!("lots");
    obj["spec"]["mode"] = json!("Slow");
    assert_eq!(
        messages(&s.validate_all(&obj, None)),
        vec![
            r#"spec.memory: Invalid value: "lots": spec.memory in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'"#,
            r#"spec.mode: Unsupported value: "Slow": supported values: "Fast", "Safe""#,
        ]
    );
}
