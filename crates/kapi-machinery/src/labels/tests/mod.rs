//! Tests of label selector parsing (lexer, grammar, key and value validation,
//! requirement construction); `matching.rs` has display, matching and the JSON
//! conversion.

use super::*;
use serde_json::json;

const KEY_NAME_ERR: &str = "name part must consist of alphanumeric characters, '-', '_' \
    or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
    'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric \
    characters, '-', '_' or '.', and must start and end with an alphanumeric character \
    (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
    '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn sel(s: &str) -> LabelSelector {
    parse(s).unwrap_or_else(|e| panic!("parse({s:?}) failed: {e}"))
}

fn err(s: &str) -> String {
    match parse(s) {
        Ok(got) => panic!("parse({s:?}) unexpectedly gave {got:?}"),
        Err(e) => e.message().to_string(),
    }
}

fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
    let values = values.iter().map(|v| v.to_string()).collect();
    Requirement::new(key, op, values).unwrap_or_else(|e| panic!("{key}: {e}"))
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn tokens(s: &str) -> Vec<Token> {
    lex(s).into_iter().map(|i| i.tok).collect()
}

#[test]
fn good_strings_round_trip_without_blanks() {
    for s in [
        "x=a,y=b,z=c",
        "",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
    ] {
        assert_eq!(sel(s).to_string(), s.replace(' ', ""), "input {s:?}");
    }
}

#[test]
fn bad_strings_are_rejected() {
    for s in [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        "x,,y",
        ",x,y",
        "x nott in (y)",
        "a in (xyz),",
        "a in (xyz)b notin ()",
        "a in (xyz abc)",
        "a notin(",
        "a (",
        "(",
        "x=a,",
        "!",
        "x in",
        "x in (a",
    ] {
        assert!(parse(s).is_err(), "{s:?} should not parse");
    }
}

#[test]
fn parse_is_deterministic_and_sorted_by_key() {
    assert_eq!(sel("x=a,a=x").to_string(), sel("a=x,x=a").to_string());
    assert_eq!(sel("x=a,a=x").to_string(), "a=x,x=a");
    assert_eq!(sel("x,y in (a)").to_string(), "x,y in (a)");
}

#[test]
fn every_operator_parses() {
    let cases = [
        ("x=a", Operator::Equals, vec!["a"]),
        ("x==a", Operator::DoubleEquals, vec!["a"]),
        ("x!=a", Operator::NotEquals, vec!["a"]),
        ("x in (b,a)", Operator::In, vec!["a", "b"]),
        ("x notin (a)", Operator::NotIn, vec!["a"]),
        ("x", Operator::Exists, vec![]),
        ("!x", Operator::DoesNotExist, vec![]),
        ("x>1", Operator::GreaterThan, vec!["1"]),
        ("x<7", Operator::LessThan, vec!["7"]),
    ];
    for (input, op, values) in cases {
        let parsed = sel(input);
        let [r] = parsed.requirements() else {
            panic!("{input}: expected one requirement")
        };
        assert_eq!((r.key(), r.operator()), ("x", op), "{input}");
        assert_eq!(r.values(), strings(&values).as_slice(), "{input}");
    }
}

#[test]
fn set_based_syntax_table() {
    let cases = [
        ("\rx", "x"),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            "this-is-a-dns.domain.com/key-with-dash",
        ),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        (
            "x notin (abc,,def),bar,z in (),w",
            "bar,w,x notin (,abc,def),z in ()",
        ),
        ("a ", "a"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("x in (b,a,b)", "x in (a,b)"),
        ("  a = b  ,  c  ", "a=b,c"),
        ("notin=in", "notin=in"),
        ("in in (in)", "in in (in)"),
        ("!in", "!in"),
    ];
    for (input, want) in cases {
        assert_eq!(sel(input).to_string(), want, "input {input:?}");
    }
}

#[test]
fn lexer_token_sequences() {
    use Token::*;
    assert_eq!(tokens(""), [EndOfString]);
    assert_eq!(tokens("~"), [Identifier, EndOfString]);
    assert_eq!(tokens("||"), [Identifier, EndOfString]);
    assert_eq!(
        tokens("key in ( value )"),
        [Identifier, In, OpenPar, Identifier, ClosedPar, EndOfString]
    );
    assert_eq!(
        tokens("== != (), = notin"),
        [
            DoubleEquals,
            NotEquals,
            OpenPar,
            ClosedPar,
            Comma,
            Equals,
            NotIn,
            EndOfString
        ]
    );
    assert_eq!(
        tokens("key>2"),
        [Identifier, GreaterThan, Identifier, EndOfString]
    );
    assert_eq!(
        tokens("key<1"),
        [Identifier, LessThan, Identifier, EndOfString]
    );
    assert_eq!(tokens("!key"), [DoesNotExist, Identifier, EndOfString]);
    assert_eq!(tokens("!=="), [NotEquals, Equals, EndOfString]);
    assert_eq!(tokens("<="), [LessThan, Equals, EndOfString]);
}

#[test]
fn grammar_error_messages() {
    let cases = [
        (
            "x y",
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (
            "a (",
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("x=a,", "found '', expected: identifier after ','"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (
            ",x",
            "found ',', expected: !, identifier, or 'end of string'",
        ),
        (
            "(",
            "found '(', expected: !, identifier, or 'end of string'",
        ),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        (
            "!",
            "unable to parse requirement: found '', expected: identifier",
        ),
        (
            "!!x",
            "unable to parse requirement: found '!', expected: identifier",
        ),
        (
            "x=(",
            "unable to parse requirement: found '(', expected: identifier",
        ),
        (
            "a in xyz",
            "unable to parse requirement: found 'xyz' expected: '('",
        ),
        (
            "a notin(",
            "unable to parse requirement: found '', expected: ',', ')' or identifier",
        ),
        (
            "a in (=)",
            "unable to parse requirement: found '=', expected: ',', ')' or identifier",
        ),
        (
            "a in (xyz abc)",
            "unable to parse requirement: found 'abc', expected: ',' or ')'",
        ),
        (
            "a in (x,=)",
            "unable to parse requirement: found '=', expected: ',', or identifier",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(err(input), want, "input {input:?}");
    }
}

#[test]
fn key_validation_messages() {
    assert_eq!(
        err("app:monolith"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {KEY_NAME_ERR}"
        )
    );
    assert_eq!(
        err("app.kubernetes_io/name=x"),
        "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": \
         prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
         characters, '-' or '.', and must start and end with an alphanumeric character \
         (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    let multi = err("a/b/c");
    assert!(multi.starts_with(
        "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist"
    ));
    assert!(multi
        .ends_with("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
    assert!(err("/a").ends_with("\"/a\": prefix part must be non-empty"));
    assert!(err("a/").ends_with(&format!(
        "\"a/\": name part must be non-empty; {KEY_NAME_ERR}"
    )));
    let long = "k".repeat(64);
    assert!(err(&long).ends_with("name part must be no more than 63 bytes"));
    assert!(parse(&"k".repeat(63)).is_ok());
    let long_prefix = format!("{}/a", "p".repeat(254));
    assert!(err(&long_prefix).contains("prefix part must be no more than 253 bytes"));
    assert!(parse("example.com/MyName=v").is_ok());
    assert!(parse("Example.com/a").is_err(), "prefix must be lowercase");
    assert!(parse("-a").is_err());
    assert!(parse("a-").is_err());
    assert!(parse("a.b_c-D9").is_ok());
}

#[test]
fn value_validation_messages() {
    assert_eq!(
        err("app=demo-{nginx}"),
        format!("unable to parse requirement: values[0][app]: Invalid value: \"demo-{{nginx}}\": {VALUE_ERR}")
    );
    let long = "v".repeat(64);
    assert_eq!(
        err(&format!("x={long}")),
        format!("unable to parse requirement: values[0][x]: Invalid value: \"{long}\": must be no more than 63 bytes")
    );
    assert!(parse(&format!("x={}", "v".repeat(63))).is_ok());
    // Index refers to the sorted, deduplicated value set.
    assert!(err("x in (b,-a)").contains("values[0][x]: Invalid value: \"-a\""));
    assert_eq!(
        err("x<a"),
        "unable to parse requirement: values[0]: Invalid value: \"a\": \
         for 'Gt', 'Lt' operators, the value must be an integer"
    );
    assert!(err("x>").contains("values[0]: Invalid value: \"\": for 'Gt', 'Lt'"));
    assert!(err("x>99999999999999999999").contains("must be an integer"));
    assert!(err("x>-1").contains(&format!("values[0][x]: Invalid value: \"-1\": {VALUE_ERR}")));
}

#[test]
fn requirement_constructor_table() {
    let cases: &[(&str, Operator, &[&str], bool)] = &[
        ("x", Operator::In, &[], false),
        ("x", Operator::NotIn, &[], false),
        ("x", Operator::In, &["foo"], true),
        ("x", Operator::NotIn, &["foo"], true),
        ("x", Operator::Exists, &[], true),
        ("x", Operator::DoesNotExist, &[], true),
        ("x", Operator::Exists, &["a"], false),
        ("x", Operator::Equals, &[], false),
        ("x", Operator::NotEquals, &["a", "b"], false),
        ("1foo", Operator::In, &["bar"], true),
        ("1234", Operator::In, &["bar"], true),
        ("y", Operator::GreaterThan, &["1"], true),
        ("z", Operator::LessThan, &["6"], true),
        ("foo", Operator::GreaterThan, &["bar"], false),
        ("barz", Operator::LessThan, &["blah"], false),
        ("x", Operator::In, &[""], true),
    ];
    for (key, op, values, ok) in cases {
        let got = Requirement::new(*key, *op, strings(values));
        assert_eq!(got.is_ok(), *ok, "{key} {op} {values:?}: {got:?}");
    }
    assert!(Requirement::new("a".repeat(254), Operator::Exists, vec![]).is_err());
}

#[test]
fn requirement_errors_aggregate_like_upstream() {
    let e = Requirement::new("x", Operator::GreaterThan, strings(&["a", "b"])).unwrap_err();
    assert_eq!(
        e.message(),
        "[values: Invalid value: []string{\"a\", \"b\"}: for 'Gt', 'Lt' operators, exactly \
         one value is required, values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, \
         the value must be an integer, values[1]: Invalid value: \"b\": for 'Gt', 'Lt' \
         operators, the value must be an integer]"
    );
    let e = Requirement::new("", Operator::Exists, vec![]).unwrap_err();
    assert_eq!(
        e.message(),
        format!("key: Invalid value: \"\": name part must be non-empty; {KEY_NAME_ERR}")
    );
    let e = Requirement::new("x", Operator::In, vec![]).unwrap_err();
    assert_eq!(
        e.message(),
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    );
}

mod matching;
