use super::*;
use serde_json::json;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn md() -> FieldPath {
    FieldPath::new("metadata")
}

#[test]
fn field_path_display() {
    assert_eq!(md().child("name").to_string(), "metadata.name");
    assert_eq!(
        md().child("labels").key("foo").to_string(),
        "metadata.labels[foo]"
    );
    let p = FieldPath::new("spec")
        .child("containers")
        .index(0)
        .child("image");
    assert_eq!(p.to_string(), "spec.containers[0].image");
    assert_eq!(FieldPath::new("a").index(1).index(2).to_string(), "a[1][2]");
    assert_eq!(FieldPath::default().to_string(), "");
}

#[test]
fn field_error_messages() {
    let p = FieldPath::new("spec").child("x");
    assert_eq!(
        FieldError::required(&p, "").to_string(),
        "spec.x: Required value"
    );
    assert_eq!(
        FieldError::required(&p, "must be set").to_string(),
        "spec.x: Required value: must be set"
    );
    assert_eq!(
        FieldError::forbidden(&p, "nope").to_string(),
        "spec.x: Forbidden: nope"
    );
    assert_eq!(
        FieldError::not_supported(&FieldPath::new("spec").child("y"), "z", &["a", "b"]).to_string(),
        r#"spec.y: Unsupported value: "z": supported values: "a", "b""#
    );
    assert_eq!(
        FieldError::invalid(&p, 5, "too big").to_string(),
        "spec.x: Invalid value: 5: too big"
    );
    assert_eq!(
        FieldError::invalid(&p, true, "no").to_string(),
        "spec.x: Invalid value: true: no"
    );
    assert_eq!(
        FieldError::invalid(&p, Value::Null, "no").to_string(),
        "spec.x: Invalid value: null: no"
    );
    assert_eq!(
        FieldError::duplicate(&p, "a").to_string(),
        r#"spec.x: Duplicate value: "a""#
    );
    assert_eq!(
        FieldError::not_found(&p, "a").to_string(),
        r#"spec.x: Not found: "a""#
    );
    assert_eq!(
        FieldError::too_long(&p, "xxxx", 3).to_string(),
        "spec.x: Too long: must have at most 3 bytes"
    );
    assert_eq!(
        FieldError::too_many(&p, Some(5), Some(4)).to_string(),
        "spec.x: Too many: 5: must have at most 4 items"
    );
    assert_eq!(
        FieldError::too_many(&p, None, None).to_string(),
        "spec.x: Too many: has too many items"
    );
    assert_eq!(
        FieldError::internal(&p, "boom").to_string(),
        "spec.x: Internal error: boom"
    );
    assert_eq!(
        FieldError::invalid(&p, json!(["a", "b"]), "bad").to_string(),
        r#"spec.x: Invalid value: []string{"a", "b"}: bad"#
    );
}

#[test]
fn error_types_and_bodies() {
    let p = FieldPath::new("f");
    let e = FieldError::invalid(&p, "v", "d");
    assert_eq!(e.kind.as_str(), "FieldValueInvalid");
    assert_eq!(e.error_body(), r#"Invalid value: "v": d"#);
    assert_eq!(
        FieldError::required(&p, "").kind.as_str(),
        "FieldValueRequired"
    );
    assert_eq!(FieldError::internal(&p, "x").kind.as_str(), "InternalError");
    assert_eq!(
        FieldError::too_many(&p, None, None).kind.as_str(),
        "FieldValueTooMany"
    );
}

#[test]
fn go_quote_escapes() {
    assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
    assert_eq!(go_quote("l1\nl2\t"), r#""l1\nl2\t""#);
    assert_eq!(go_quote("\u{1}"), r#""\x01""#);
    assert_eq!(go_quote("héllo"), "\"héllo\"");
}

#[test]
fn aggregate_formatting() {
    let p = FieldPath::new("spec");
    assert_eq!(aggregate(&[]), None);
    let one = vec![FieldError::required(&p.child("a"), "")];
    assert_eq!(aggregate(&one).unwrap(), "spec.a: Required value");
    let two = vec![
        FieldError::required(&p.child("a"), ""),
        FieldError::required(&p.child("b"), ""),
        FieldError::required(&p.child("a"), ""),
    ];
    assert_eq!(
        aggregate(&two).unwrap(),
        "[spec.a: Required value, spec.b: Required value]"
    );
    let dup = vec![FieldError::required(&p, ""), FieldError::required(&p, "")];
    assert_eq!(aggregate(&dup).unwrap(), "spec: Required value");
}

#[test]
fn dns1123_subdomain() {
    for good in [
        "a",
        "ab",
        "a-b",
        "0",
        "a.b",
        "example.com",
        "a.b.c-d.e",
        &"a".repeat(253),
    ] {
        assert!(is_dns1123_subdomain(good).is_empty(), "{good}");
    }
    for bad in ["", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a.-b", "ä"] {
        assert_eq!(
            is_dns1123_subdomain(bad),
            vec![SUBDOMAIN_MSG.to_string()],
            "{bad}"
        );
    }
    let long = "a".repeat(254);
    assert_eq!(
        is_dns1123_subdomain(&long),
        vec!["must be no more than 253 characters".to_string()]
    );
}

#[test]
fn dns1123_label() {
    for good in ["a", "a-b", "1-2", "abc123", &"a".repeat(63)] {
        assert!(is_dns1123_label(good).is_empty(), "{good}");
    }
    assert_eq!(
        is_dns1123_label("a.b"),
        vec!["must not contain dots".to_string()]
    );
    assert_eq!(is_dns1123_label("A"), vec![LABEL_MSG.to_string()]);
    assert_eq!(is_dns1123_label(""), vec![LABEL_MSG.to_string()]);
    let long = is_dns1123_label(&"a".repeat(64));
    assert_eq!(long, vec!["must be no more than 63 characters".to_string()]);
}

#[test]
fn regex_error_format() {
    assert_eq!(
        regex_error("m", "re", &[]),
        "m (regex used for validation is 're')"
    );
    assert_eq!(
        regex_error("m", "re", &["a", "b"]),
        "m (e.g. 'a',  or 'b', regex used for validation is 're')"
    );
}

#[test]
fn dns1035_label() {
    assert!(is_dns1035_label("abc-1").is_empty());
    let errs = is_dns1035_label("1abc");
    assert_eq!(errs, vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]);
    assert_eq!(is_dns1035_label("").len(), 1);
}

#[test]
fn qualified_names() {
    for good in [
        "a",
        "A",
        "a.b_c-D",
        "example.com/Name",
        "k8s.io/app",
        &"a".repeat(63),
    ] {
        assert!(is_qualified_name(good).is_empty(), "{good}");
    }
    assert_eq!(
        is_qualified_name("/a"),
        vec!["prefix part must be non-empty".to_string()]
    );
    let errs = is_qualified_name("a/");
    assert_eq!(errs[0], "name part must be non-empty");
    assert!(errs[1].starts_with("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
    assert_eq!(
        is_qualified_name(&"a".repeat(64)),
        vec!["name part must be no more than 63 characters".to_string()]
    );
    assert!(
        is_qualified_name("Foo_/a")[0].starts_with("prefix part a lowercase RFC 1123 subdomain")
    );
    assert!(is_qualified_name("a/b/c")[0].starts_with("a qualified name must consist of"));
    assert!(is_qualified_name("a/b/c")[0]
        .ends_with(" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
    assert_eq!(is_qualified_name("-a").len(), 1);
}

#[test]
fn label_values() {
    for good in ["", "a", "A_b.c-1", &"z".repeat(63)] {
        assert!(is_valid_label_value(good).is_empty(), "{good}");
    }
    assert_eq!(is_valid_label_value("-a"), vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]);
    assert_eq!(is_valid_label_value(&"a".repeat(64)).len(), 1);
    assert_eq!(
        is_valid_label_value(&format!("{}-", "a".repeat(64))).len(),
        2
    );
}

#[test]
fn misc_validators() {
    assert!(is_c_identifier("_a1").is_empty());
    assert!(is_c_identifier("Ab").is_empty());
    assert_eq!(is_c_identifier("1a").len(), 1);
    assert_eq!(is_c_identifier("").len(), 1);
    assert!(is_c_identifier("a-b")[0]
        .starts_with("a valid C identifier must start with alphabetic character or '_'"));
    assert!(is_valid_port_num(1).is_empty() && is_valid_port_num(65535).is_empty());
    assert_eq!(
        is_valid_port_num(0),
        vec!["must be between 1 and 65535, inclusive".to_string()]
    );
    assert_eq!(is_valid_port_num(65536).len(), 1);
    assert!(is_valid_ip("10.9.8.7").is_empty() && is_valid_ip("2001:db8::ffff").is_empty());
    assert_eq!(
        is_valid_ip("1.2.3"),
        vec!["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_string()]
    );
    assert!(is_config_map_key("key.name").is_empty() && is_config_map_key("KEY_NAME-1").is_empty());
    assert_eq!(is_config_map_key("."), vec!["must not be '.'".to_string()]);
    assert_eq!(
        is_config_map_key(".."),
        vec!["must not be '..'".to_string()]
    );
    assert_eq!(
        is_config_map_key("..a"),
        vec!["must not start with '..'".to_string()]
    );
    assert!(is_config_map_key("a/b")[0].starts_with(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
    ));
}

#[test]
fn name_functions() {
    assert!(name_is_dns_subdomain("abc-", true).is_empty());
    assert_eq!(name_is_dns_subdomain("abc-", false).len(), 1);
    assert!(name_is_dns_label("ns-", true).is_empty());
    assert!(name_is_dns1035_label("svc-", true).is_empty());
    assert!(validate_path_segment_name("Any_Thing:ok", false).is_empty());
    assert_eq!(
        validate_path_segment_name("..", false),
        vec!["may not be '..'".to_string()]
    );
    assert!(validate_path_segment_name("..", true).is_empty());
    assert_eq!(
        validate_path_segment_name("a/b%c", false),
        vec![
            "may not contain '/'".to_string(),
            "may not contain '%'".to_string()
        ]
    );
}

#[test]
fn object_meta_valid() {
    let m = json!({"name": "cm", "namespace": "default", "labels": {"app": "x", "k8s.io/y": ""},
        "annotations": {"Example.com/Key": "v"}, "finalizers": ["kubernetes.io/pv-protection"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": true}]});
    assert_eq!(
        validate_object_meta(&m, true, name_is_dns_subdomain, &md()),
        vec![]
    );
    let cluster = json!({"name": "node-1"});
    assert!(validate_object_meta(&cluster, false, name_is_dns_subdomain, &md()).is_empty());
}

#[test]
fn object_meta_name_and_namespace() {
    let errs = validate_object_meta(&json!({}), true, name_is_dns_subdomain, &md());
    let msgs: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        msgs,
        vec![
            "metadata.name: Required value: name or generateName is required".to_string(),
            "metadata.namespace: Required value".to_string(),
        ]
    );
    let errs = validate_object_meta(
        &json!({"name": "A_b", "namespace": "x"}),
        true,
        name_is_dns_subdomain,
        &md(),
    );
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        format!("metadata.name: Invalid value: \"A_b\": {SUBDOMAIN_MSG}")
    );
}

#[test]
fn object_meta_namespace_generate_name_generation() {
    let errs = validate_object_meta(
        &json!({"name": "a", "namespace": "x"}),
        false,
        name_is_dns_label,
        &md(),
    );
    assert_eq!(
        errs[0].to_string(),
        "metadata.namespace: Forbidden: not allowed on this type"
    );
    let errs = validate_object_meta(
        &json!({"name": "a", "namespace": "a.b"}),
        true,
        name_is_dns_label,
        &md(),
    );
    assert_eq!(
        errs[0].to_string(),
        "metadata.namespace: Invalid value: \"a.b\": must not contain dots"
    );
    let errs = validate_object_meta(
        &json!({"generateName": "Bad-"}),
        false,
        name_is_dns_label,
        &md(),
    );
    assert_eq!(errs.len(), 2);
    assert_eq!(errs[0].field, "metadata.generateName");
    let errs = validate_object_meta(
        &json!({"name": "a", "generation": -1}),
        false,
        name_is_dns_label,
        &md(),
    );
    assert_eq!(
        errs[0].to_string(),
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    );
    let errs = validate_object_meta(
        &json!({"name": "a/b"}),
        false,
        validate_path_segment_name,
        &md(),
    );
    assert_eq!(
        errs[0].to_string(),
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    );
}

#[test]
fn object_meta_labels_annotations() {
    let m = json!({"name": "a", "labels": {"bad key": "ok", "k": "-bad"}, "annotations": {"x/y/z": "v"}});
    let errs = validate_object_meta(&m, false, name_is_dns_subdomain, &md());
    assert_eq!(errs.len(), 3);
    assert!(errs[0]
        .to_string()
        .starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist of"));
    assert!(errs[1]
        .to_string()
        .starts_with("metadata.labels: Invalid value: \"-bad\": a valid label must be"));
    assert!(errs[2]
        .to_string()
        .starts_with("metadata.annotations: Invalid value: \"x/y/z\": a qualified name"));
    let big = "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B);
    let m = json!({"name": "a", "annotations": {"k": big}});
    let errs = validate_object_meta(&m, false, name_is_dns_subdomain, &md());
    assert_eq!(
        errs[0].to_string(),
        "metadata.annotations: Too long: must have at most 262144 bytes"
    );
    assert_eq!(errs[0].kind.as_str(), "FieldValueTooLong");
    let m = json!({"name": "a", "labels": {"k": 1}});
    let errs = validate_object_meta(&m, false, name_is_dns_subdomain, &md());
    assert_eq!(errs[0].field, "metadata.labels[k]");
    assert_eq!(errs[0].kind.as_str(), "FieldValueTypeInvalid");
}

#[test]
fn object_meta_owner_refs_and_finalizers() {
    let m = json!({"name": "a", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""},
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}], "finalizers": ["orphan", "foregroundDeletion", "a b"]});
    let msgs: Vec<String> = validate_object_meta(&m, false, name_is_dns_subdomain, &md())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        msgs[0],
        "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty"
    );
    assert_eq!(
        msgs[1],
        "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty"
    );
    assert_eq!(
        msgs[2],
        "metadata.ownerReferences.name: Invalid value: \"\": must not be empty"
    );
    assert_eq!(
        msgs[3],
        "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty"
    );
    assert!(msgs[4].ends_with(": /v1, Kind=Event is disallowed from being an owner"));
    assert!(
        msgs[5].starts_with("metadata.finalizers: Invalid value: \"a b\": name part must consist")
    );
    assert_eq!(
        msgs[6],
        "metadata.finalizers: Invalid value: []string{\"orphan\", \"foregroundDeletion\", \"a b\"}: finalizer orphan and foregroundDeletion cannot be both set"
    );
    let two = json!({"name": "a", "ownerReferences": [
        {"apiVersion": "v1", "kind": "A", "name": "x", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "B", "name": "y", "uid": "2", "controller": true}]});
    let errs = validate_object_meta(&two, false, name_is_dns_subdomain, &md());
    assert!(errs[0].to_string().ends_with("Only one reference can have Controller set to true. Found \"true\" in references for A/x and B/y"));
}

#[test]
fn object_meta_update() {
    let old = json!({"name": "a", "namespace": "ns", "uid": "u1", "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2});
    assert!(validate_object_meta_update(&old, &old, &md()).is_empty());
    let new = json!({"name": "b", "namespace": "ns", "uid": "u2", "creationTimestamp": null, "generation": 1,
        "labels": {"k": "-"}});
    let msgs: Vec<String> = validate_object_meta_update(&new, &old, &md())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        msgs[0],
        "metadata.generation: Invalid value: 1: must not be decremented"
    );
    assert_eq!(
        msgs[1],
        "metadata.name: Invalid value: \"b\": field is immutable"
    );
    assert_eq!(
        msgs[2],
        "metadata.uid: Invalid value: \"u2\": field is immutable"
    );
    assert_eq!(
        msgs[3],
        "metadata.creationTimestamp: Invalid value: \"\": field is immutable"
    );
    assert!(msgs[4].starts_with("metadata.labels: Invalid value: \"-\":"));
    assert_eq!(msgs.len(), 5);
}

#[test]
fn object_meta_update_finalizers_while_deleting() {
    let old =
        json!({"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x"]});
    let new = json!({"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x", "z", "y"]});
    let errs = validate_object_meta_update(&new, &old, &md());
    assert_eq!(
        errs[0].to_string(),
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"y\", \"z\"}"
    );
    let removed = json!({"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"});
    assert!(validate_object_meta_update(&removed, &old, &md()).is_empty());
}

/// A path prints as upstream's `field.Path`, and paths built apart compare
/// by their segments (a child shares its parent's).
#[test]
fn paths_print_and_compare_by_their_segments() {
    let spec = FieldPath::new("spec");
    let p = spec.child("containers").index(2).child("env").key("a.b");
    assert_eq!(p.to_string(), "spec.containers[2].env[a.b]");
    assert_eq!(spec.to_string(), "spec");
    assert_eq!(FieldPath::default().to_string(), "");
    let again = FieldPath::new("spec")
        .child("containers")
        .index(2)
        .child("env")
        .key("a.b");
    assert_eq!(p, again);
    assert_ne!(p, spec.child("containers").index(2).child("env").key("a"));
    assert_ne!(spec.key("x"), spec.child("x"));
}
