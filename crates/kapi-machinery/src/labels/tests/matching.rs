//! Tests of label selector display, matching and JSON conversion.

use super::*;

#[test]
fn display_table() {
    let cases = [
        (
            vec![
                req("x", Operator::In, &["def", "abc"]),
                req("y", Operator::NotIn, &["jkl"]),
                req("z", Operator::Exists, &[]),
            ],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            vec![
                req("x", Operator::NotIn, &["abc", "def"]),
                req("y", Operator::NotEquals, &["jkl"]),
                req("z", Operator::DoesNotExist, &[]),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            vec![
                req("x", Operator::NotIn, &["abc"]),
                req("y", Operator::In, &["jkl", "mno"]),
                req("z", Operator::NotIn, &[""]),
            ],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            vec![
                req("x", Operator::Equals, &["abc"]),
                req("y", Operator::DoubleEquals, &["jkl"]),
                req("z", Operator::NotEquals, &["a"]),
                req("z", Operator::Exists, &[]),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            vec![
                req("z", Operator::Exists, &[]),
                req("y", Operator::LessThan, &["8"]),
                req("x", Operator::GreaterThan, &["2"]),
            ],
            "x>2,y<8,z",
        ),
    ];
    for (reqs, want) in cases {
        assert_eq!(
            LabelSelector::everything()
                .with_requirements(reqs)
                .to_string(),
            want
        );
    }
    assert_eq!(LabelSelector::everything().to_string(), "");
}

#[test]
fn parsed_selectors_match_label_sets() {
    let yes = [
        ("", set(&[("x", "y")])),
        ("x=y", set(&[("x", "y")])),
        ("x==y", set(&[("x", "y")])),
        ("x=y,z=w", set(&[("x", "y"), ("z", "w")])),
        ("x!=y,z!=w", set(&[("x", "z"), ("z", "a")])),
        ("notin=in", set(&[("notin", "in")])),
        ("x", set(&[("x", "z")])),
        ("x", set(&[("x", "")])),
        ("!x", set(&[("y", "z")])),
        ("x>1", set(&[("x", "2")])),
        ("x<1", set(&[("x", "0")])),
        ("x<1", set(&[("x", "-5")])),
        ("x in (a,b)", set(&[("x", "b")])),
        ("x notin (a,b)", set(&[("x", "c")])),
        ("x notin (a,b)", set(&[])),
        ("x!=a", set(&[])),
        ("x=", set(&[("x", "")])),
        ("x in ()", set(&[("x", "")])),
        ("foo=bar,baz=blah", set(&[("foo", "bar"), ("baz", "blah")])),
    ];
    for (s, labels) in yes {
        assert!(sel(s).matches_map(&labels), "{s:?} should match {labels:?}");
    }
    let no = [
        ("x=z", set(&[])),
        ("x=y", set(&[("x", "z")])),
        ("x=y,z=w", set(&[("x", "w"), ("z", "w")])),
        ("x!=y,z!=w", set(&[("x", "z"), ("z", "w")])),
        ("x", set(&[("y", "z")])),
        ("!x", set(&[("x", "z")])),
        ("x>1", set(&[("x", "0")])),
        ("x>1", set(&[("x", "1")])),
        ("x>1", set(&[("x", "v2")])),
        ("x>1", set(&[])),
        ("x<1", set(&[("x", "2")])),
        ("x<1", set(&[("x", "99999999999999999999")])),
        ("x in (a,b)", set(&[("x", "c")])),
        ("x in (a,b)", set(&[])),
        ("x notin (a,b)", set(&[("x", "a")])),
        ("x=", set(&[])),
        (
            "foo=bar,foobar=bar,baz=blah",
            set(&[("foo", "bar"), ("baz", "blah")]),
        ),
    ];
    for (s, labels) in no {
        assert!(
            !sel(s).matches_map(&labels),
            "{s:?} should not match {labels:?}"
        );
    }
}

#[test]
fn requirement_matching_table() {
    let cases = [
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![
                req("x", Operator::In, &["foo"]),
                req("y", Operator::NotIn, &["alpha"]),
            ],
            true,
        ),
        (
            set(&[("x", "foo"), ("y", "baz")]),
            vec![
                req("x", Operator::In, &["foo"]),
                req("y", Operator::In, &["alpha"]),
            ],
            false,
        ),
        (
            set(&[("y", "")]),
            vec![
                req("x", Operator::NotIn, &[""]),
                req("y", Operator::Exists, &[]),
            ],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![
                req("x", Operator::DoesNotExist, &[]),
                req("y", Operator::Exists, &[]),
            ],
            true,
        ),
        (
            set(&[("y", "")]),
            vec![
                req("x", Operator::NotIn, &[""]),
                req("y", Operator::DoesNotExist, &[]),
            ],
            false,
        ),
        (
            set(&[("y", "baz")]),
            vec![req("x", Operator::In, &[""])],
            false,
        ),
        (
            set(&[("z", "2")]),
            vec![req("z", Operator::GreaterThan, &["1"])],
            true,
        ),
        (
            set(&[("z", "v2")]),
            vec![req("z", Operator::GreaterThan, &["1"])],
            false,
        ),
    ];
    for (labels, reqs, want) in cases {
        let s = LabelSelector::everything().with_requirements(reqs);
        assert_eq!(s.matches_map(&labels), want, "{s} vs {labels:?}");
    }
}

#[test]
fn matches_json_labels_and_objects() {
    let s = sel("app=web,!canary");
    let labels = json!({"app": "web", "tier": "fe"});
    assert!(s.matches(labels.as_object().unwrap()));
    assert!(s.matches_object(&json!({"metadata": {"name": "a", "labels": {"app": "web"}}})));
    assert!(!s.matches_object(&json!({"metadata": {"labels": {"app": "web", "canary": "1"}}})));
    assert!(!s.matches_object(&json!({"metadata": {"name": "a"}})));
    assert!(sel("!x").matches_object(&json!({})));
    assert!(sel("x!=a").matches_object(&json!({"metadata": {"labels": null}})));
    assert!(LabelSelector::everything().matches_object(&json!({})));
    assert!(sel("x").matches(json!({"x": 1}).as_object().unwrap()));
    assert!(s.matches_with(|k| (k == "app").then_some("web")));
}

#[test]
fn empty_everything_and_nothing() {
    assert!(sel("").is_empty());
    assert!(sel(" \t ").is_empty());
    assert!(!sel("x").is_empty());
    let nothing = LabelSelector::nothing();
    assert!(!nothing.is_empty());
    assert!(nothing.matches_nothing());
    assert!(!nothing.matches_map(&set(&[])));
    assert_eq!(nothing.to_string(), "");
    assert!(nothing
        .with_requirements([req("x", Operator::Exists, &[])])
        .matches_nothing());
    assert!(!LabelSelector::everything().matches_nothing());
}

#[test]
fn exact_value_table() {
    let cases = [
        ("key in (value)", "key", Some("value")),
        ("key in (value,value2)", "key", None),
        (
            "key in (value,value1),key2 in (value2)",
            "key2",
            Some("value2"),
        ),
        ("key=value", "key", Some("value")),
        ("key==value", "key", Some("value")),
        ("key!=value", "key", None),
        ("key", "key", None),
        ("key=value,key2=value2", "key", Some("value")),
        ("other=value", "key", None),
        ("key=", "key", Some("")),
    ];
    for (s, key, want) in cases {
        assert_eq!(sel(s).exact_value(key), want, "{s:?} / {key}");
    }
    // Only the first requirement on the key counts (after the stable key sort).
    assert_eq!(sel("key!=a,key=b").exact_value("key"), None);
}

#[test]
fn from_validated_set_requires_every_pair() {
    let s = LabelSelector::from_validated_set([("b", "2"), ("a", "1")]);
    assert_eq!(s.to_string(), "a=1,b=2");
    assert!(s.matches_map(&set(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(!s.matches_map(&set(&[("a", "1")])));
    assert!(LabelSelector::from_validated_set(BTreeMap::<String, String>::new()).is_empty());
    assert_eq!(
        "a=1".parse::<LabelSelector>().unwrap().exact_value("a"),
        Some("1")
    );
}

#[test]
fn label_selector_json_conversion() {
    assert!(from_label_selector_json(&json!({})).unwrap().is_empty());
    assert!(
        from_label_selector_json(&json!({"matchLabels": {}, "matchExpressions": []}))
            .unwrap()
            .is_empty()
    );
    assert!(from_label_selector_json(&json!({"matchLabels": null}))
        .unwrap()
        .is_empty());
    assert!(from_label_selector_json(&Value::Null)
        .unwrap()
        .matches_nothing());
    let s = from_label_selector_json(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["fe", "be"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "team", "operator": "Exists"},
            {"key": "legacy", "operator": "DoesNotExist", "values": []}
        ]
    }))
    .unwrap();
    assert_eq!(
        s.to_string(),
        "app=web,env notin (prod),!legacy,team,tier in (be,fe)"
    );
    let labels = set(&[("app", "web"), ("tier", "be"), ("team", "x")]);
    assert!(s.matches_map(&labels));
    assert!(!s.matches_map(&set(&[
        ("app", "web"),
        ("tier", "be"),
        ("team", "x"),
        ("legacy", "")
    ])));
    assert!(!s.matches_map(&set(&[
        ("app", "web"),
        ("tier", "be"),
        ("team", "x"),
        ("env", "prod")
    ])));
    assert!(!s.matches_map(&set(&[("app", "web"), ("tier", "qa"), ("team", "x")])));
    assert_eq!(s.exact_value("app"), Some("web"));
}

#[test]
fn label_selector_json_errors() {
    let e = |v: Value| {
        from_label_selector_json(&v)
            .unwrap_err()
            .message()
            .to_string()
    };
    assert_eq!(
        e(json!({"matchExpressions": [{"key": "name", "operator": "In", "values": []}]})),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        e(json!({"matchExpressions": [{"key": "name", "operator": "NotIn"}]})),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
    assert_eq!(
        e(json!({"matchExpressions": [{"key": "name", "operator": "Exists", "values": ["a"]}]})),
        "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does not exist"
    );
    assert_eq!(
        e(json!({"matchExpressions": [{"key": "name", "operator": "Seriously"}]})),
        "\"Seriously\" is not a valid label selector operator"
    );
    assert_eq!(
        e(json!({"matchExpressions": [{"key": "name", "operator": "in", "values": ["a"]}]})),
        "\"in\" is not a valid label selector operator"
    );
    assert_eq!(
        e(json!({"matchLabels": {"app": "demo-{nginx}"}})),
        format!("values[0][app]: Invalid value: \"demo-{{nginx}}\": {VALUE_ERR}")
    );
    assert_eq!(
        e(json!({"matchLabels": {"a b": "x"}})),
        format!("key: Invalid value: \"a b\": {KEY_NAME_ERR}")
    );
    assert!(e(json!({"matchLabels": {"a": 1}})).starts_with("json: cannot unmarshal number"));
    assert!(e(json!({"matchLabels": []})).starts_with("json: cannot unmarshal array"));
    assert!(e(json!({"matchExpressions": {}})).starts_with("json: cannot unmarshal object"));
    assert!(e(json!({"matchExpressions": [1]})).starts_with("json: cannot unmarshal number"));
    assert!(e(json!("app=web")).starts_with("json: cannot unmarshal string"));
}

#[test]
fn go_quoting_matches_strconv_quote() {
    assert_eq!(go_quote("plain"), "\"plain\"");
    assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    assert_eq!(go_quote("\n\t\u{1}\u{7f}"), "\"\\n\\t\\x01\\x7f\"");
    assert_eq!(go_quote("é\u{a0}"), "\"é\\u00a0\"");
    assert_eq!(
        go_string_slice(&strings(&["a", "b"])),
        "[]string{\"a\", \"b\"}"
    );
}

#[test]
fn errors_display_their_message() {
    let e = parse("x y").unwrap_err();
    assert_eq!(e.to_string(), e.message());
    assert_eq!(SelectorError::new("m").message(), "m");
    assert_eq!(Operator::NotIn.to_string(), "notin");
    assert_eq!(Operator::GreaterThan.as_str(), "gt");
}

/// Found by the fuzz entry point: a multi-byte character right after a
/// one-byte symbol made the lexer slice inside the character and panic.
#[test]
fn multibyte_character_after_a_symbol_is_an_error_not_a_panic() {
    for s in [
        "!é",
        "a=é",
        "a!é",
        "a>€",
        "(é",
        "a in (é",
        "ty\u{11}.\u{fffd}yr\u{fffd},!\u{fffd}",
    ] {
        assert!(parse(s).is_err(), "{s:?}");
    }
    assert_eq!(
        tokens("!é"),
        vec![Token::DoesNotExist, Token::Identifier, Token::EndOfString]
    );
}
