//! Field selectors: the `fieldSelector=` query language (`metadata.name=foo,
//! status.phase!=Running`), with upstream's parsing, escaping, matching and error texts
//! (`k8s.io/apimachinery/pkg/fields/selector.go`).
//!
//! Invariants:
//! - Terms are kept in the order upstream produces: the raw comma-separated terms sorted
//!   bytewise, so `Display` is canonical for a given set of terms.
//! - Stored values are unescaped; `Display` re-escapes them with [`escape_value`], so
//!   printing and re-parsing round-trips.
//! - A field the object lacks compares as the empty string (`spec.nodeName=` selects
//!   unscheduled pods), as upstream's `fields.Set`.
//!
//! This module does not know which fields a resource supports; the registry decides and
//! calls [`FieldSelector::validate_fields`]. Errors and operators are shared with
//! `labels.rs`, which owns [`SelectorError`] and [`Operator`].

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::labels::{Operator, SelectorError};

/// One `field op value` term; `op` is [`Operator::Equals`] (for `=` and `==`) or
/// [`Operator::NotEquals`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: Operator,
    pub value: String,
}

impl FieldRequirement {
    fn matches(&self, actual: &str) -> bool {
        match self.operator {
            Operator::NotEquals => actual != self.value,
            _ => actual == self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            Operator::NotEquals => "!=",
            _ => "=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms. The default matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

/// Parses the `fieldSelector` query syntax (upstream `fields.ParseSelector`).
///
/// Terms are split on unescaped commas; empty terms are skipped (so a trailing comma is
/// accepted, unlike label selectors). Each term splits at the first `!=`, `==` or `=`;
/// the field part is taken literally, the value part is unescaped.
pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
    let mut parts = split_terms(s);
    parts.sort_unstable();
    let mut terms = Vec::with_capacity(parts.len());
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let Some((field, operator, raw)) = split_term(part) else {
            return Err(SelectorError::new(format!(
                "invalid selector: '{s}'; can't understand '{part}'"
            )));
        };
        let value = unescape_value(raw)?;
        // Upstream's identity transform drops a term whose field and value are both
        // empty (a bare "="), leaving it to match everything.
        if field.is_empty() && value.is_empty() {
            continue;
        }
        terms.push(FieldRequirement {
            field: field.to_string(),
            operator,
            value,
        });
    }
    Ok(FieldSelector { terms })
}

impl FieldSelector {
    pub fn everything() -> Self {
        Self::default()
    }

    /// `field=value` (upstream `OneTermEqualSelector`); the field is not checked.
    pub fn one_term_equal(field: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            terms: vec![FieldRequirement {
                field: field.into(),
                operator: Operator::Equals,
                value: value.into(),
            }],
        }
    }

    /// True when the selector does not restrict anything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn requirements(&self) -> impl Iterator<Item = &FieldRequirement> + '_ {
        self.terms.iter()
    }

    /// Evaluates every term against `get`, which returns an object's value for a field
    /// path; `None` (field absent) compares as the empty string.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms
            .iter()
            .all(|t| t.matches(get(&t.field).as_deref().unwrap_or("")))
    }

    /// Matches against a precomputed field set (upstream `fields.Set`).
    pub fn matches_set(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches(|f| fields.get(f).cloned())
    }

    /// If some `=`/`==` term pins `field`, returns its value (the first such term, as
    /// upstream; `!=` terms are skipped rather than ending the search).
    pub fn exact_value(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator != Operator::NotEquals)
            .map(|t| t.value.as_str())
    }

    /// Rejects the first term whose field is not in `supported`, with upstream's
    /// wording from the per-resource field label conversion functions.
    pub fn validate_fields(&self, supported: &[&str]) -> Result<(), SelectorError> {
        match self
            .terms
            .iter()
            .find(|t| !supported.contains(&t.field.as_str()))
        {
            Some(t) => Err(SelectorError::new(format!(
                "field label not supported: {}",
                t.field
            ))),
            None => Ok(()),
        }
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, term) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse(s)
    }
}

/// Escapes a literal for use as a field selector value: `\` → `\\`, `,` → `\,`,
/// `=` → `\=` (upstream `fields.EscapeValue`).
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`] (upstream `fields.UnescapeValue`). Only `\\`, `\,` and `\=`
/// are escape sequences; any other backslash sequence, a trailing backslash, or a bare
/// `,`/`=` is an error.
pub fn unescape_value(s: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(invalid_escape(&format!("\\{c}")));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Upstream formats the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(SelectorError::new(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )))
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err(invalid_escape("\\"));
    }
    Ok(out)
}

fn invalid_escape(sequence: &str) -> SelectorError {
    SelectorError::new(format!(
        "invalid field selector: invalid escape sequence: {sequence}"
    ))
}

/// Splits on commas not preceded by an escaping backslash, keeping escapes intact.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator; at each position `!=` and `==` win over `=`
/// so that `a==b` does not leave `=b` as the value.
fn split_term(term: &str) -> Option<(&str, Operator, &str)> {
    const OPERATORS: [(&str, Operator); 3] = [
        ("!=", Operator::NotEquals),
        ("==", Operator::Equals),
        ("=", Operator::Equals),
    ];
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        OPERATORS.iter().find_map(|(text, op)| {
            rest.strip_prefix(text)
                .map(|value| (&term[..i], *op, value))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(s: &str) -> FieldSelector {
        parse(s).unwrap_or_else(|e| panic!("parse({s:?}) failed: {e}"))
    }

    fn err(s: &str) -> String {
        match parse(s) {
            Ok(got) => panic!("parse({s:?}) unexpectedly gave {got:?}"),
            Err(e) => e.message().to_string(),
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn triples(s: &FieldSelector) -> Vec<(&str, Operator, &str)> {
        s.requirements()
            .map(|r| (r.field.as_str(), r.operator, r.value.as_str()))
            .collect()
    }

    #[test]
    fn parses_each_operator() {
        assert_eq!(triples(&sel("a=b")), [("a", Operator::Equals, "b")]);
        assert_eq!(triples(&sel("a==b")), [("a", Operator::Equals, "b")]);
        assert_eq!(triples(&sel("a!=b")), [("a", Operator::NotEquals, "b")]);
        assert_eq!(triples(&sel("a=")), [("a", Operator::Equals, "")]);
        assert_eq!(triples(&sel("a!=")), [("a", Operator::NotEquals, "")]);
        assert_eq!(sel("a==b").to_string(), "a=b");
        assert_eq!(sel("a!=b").to_string(), "a!=b");
    }

    #[test]
    fn good_selectors_and_canonical_form() {
        let cases = [
            ("", ""),
            ("a=b", "a=b"),
            ("a=b,c=d", "a=b,c=d"),
            ("c=d,a=b", "a=b,c=d"),
            (
                "metadata.name=foo,status.phase!=Running",
                "metadata.name=foo,status.phase!=Running",
            ),
            ("a=b,", "a=b"),
            (",", ""),
            (",,a=b,,", "a=b"),
            ("=", ""),
            ("x=a||y", "x=a||y"),
            (" a = b ", " a = b "),
            ("a=b c", "a=b c"),
        ];
        for (input, want) in cases {
            assert_eq!(sel(input).to_string(), want, "input {input:?}");
        }
        assert_eq!(triples(&sel(" a = b ")), [(" a ", Operator::Equals, " b ")]);
    }

    #[test]
    fn error_messages() {
        assert_eq!(err("a"), "invalid selector: 'a'; can't understand 'a'");
        assert_eq!(
            err("a!b"),
            "invalid selector: 'a!b'; can't understand 'a!b'"
        );
        assert_eq!(
            err("x==a==b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            err("x=a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        // "!=" wins at the first position, leaving "=b" with an unescaped '='.
        assert_eq!(
            err("a!==b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            err("a=b,c"),
            "invalid selector: 'a=b,c'; can't understand 'c'"
        );
        assert_eq!(
            err("x=a\\q"),
            "invalid field selector: invalid escape sequence: \\q"
        );
        assert_eq!(
            err("x=a\\!"),
            "invalid field selector: invalid escape sequence: \\!"
        );
        assert_eq!(
            err("x=a\\"),
            "invalid field selector: invalid escape sequence: \\"
        );
    }

    #[test]
    fn escape_and_unescape_tables() {
        let cases = [
            ("", ""),
            ("a", "a"),
            ("=", "\\="),
            (",", "\\,"),
            ("\\", "\\\\"),
            ("\\=\\,\\", "\\\\\\=\\\\\\,\\\\"),
            ("a,b=c\\d", "a\\,b\\=c\\\\d"),
            ("héllo wörld", "héllo wörld"),
        ];
        for (raw, escaped) in cases {
            assert_eq!(escape_value(raw), escaped, "escape {raw:?}");
            assert_eq!(
                unescape_value(escaped).unwrap(),
                raw,
                "unescape {escaped:?}"
            );
        }
        for bad in ["\\", "\\a", "a\\", "=", ",", "a=b", "\\\\\\"] {
            assert!(unescape_value(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn escaped_values_round_trip_through_parse() {
        for value in ["", ",", "=", "\\", "a,b=c\\d", "x\\,y", "!", "a!=b"] {
            let s = FieldSelector::one_term_equal("spec.x", value);
            let text = s.to_string();
            let back = sel(&text);
            assert_eq!(back, s, "{value:?} via {text:?}");
        }
        let s = sel("a=b\\,c,d=e\\=f");
        assert_eq!(
            triples(&s),
            [
                ("a", Operator::Equals, "b,c"),
                ("d", Operator::Equals, "e=f")
            ]
        );
        // An escaped backslash does not escape the following comma.
        let s = sel("a=b\\\\,c=d");
        assert_eq!(
            triples(&s),
            [("a", Operator::Equals, "b\\"), ("c", Operator::Equals, "d")]
        );
    }

    #[test]
    fn matching_treats_missing_fields_as_empty() {
        let pod = fields(&[("metadata.name", "web-1"), ("status.phase", "Running")]);
        let yes = [
            "",
            "metadata.name=web-1",
            "metadata.name==web-1",
            "metadata.name=web-1,status.phase=Running",
            "status.phase!=Pending",
            "spec.nodeName=",
            "spec.nodeName!=node-1",
        ];
        for s in yes {
            assert!(sel(s).matches_set(&pod), "{s:?} should match");
        }
        let no = [
            "metadata.name=web-2",
            "metadata.name=web-1,status.phase=Pending",
            "status.phase!=Running",
            "spec.nodeName!=",
            "spec.nodeName=node-1",
        ];
        for s in no {
            assert!(!sel(s).matches_set(&pod), "{s:?} should not match");
        }
        let s = sel("metadata.namespace=default");
        assert!(s.matches(|f| (f == "metadata.namespace").then(|| "default".to_string())));
        assert!(!s.matches(|_| None));
    }

    #[test]
    fn exact_value_lookup() {
        assert_eq!(sel("a=b").exact_value("a"), Some("b"));
        assert_eq!(sel("a==b").exact_value("a"), Some("b"));
        assert_eq!(sel("a!=b").exact_value("a"), None);
        assert_eq!(sel("a=b").exact_value("c"), None);
        assert_eq!(sel("a!=x,a=y").exact_value("a"), Some("y"));
        assert_eq!(sel("a=c,a=b").exact_value("a"), Some("b"));
        assert_eq!(sel("a=").exact_value("a"), Some(""));
        assert_eq!(FieldSelector::everything().exact_value("a"), None);
    }

    #[test]
    fn validate_fields_reports_first_unsupported() {
        let supported = ["metadata.name", "metadata.namespace", "status.phase"];
        assert!(sel("metadata.name=a,status.phase!=b")
            .validate_fields(&supported)
            .is_ok());
        assert!(FieldSelector::everything().validate_fields(&[]).is_ok());
        let e = sel("spec.foo=a,metadata.name=b")
            .validate_fields(&supported)
            .unwrap_err();
        assert_eq!(e.message(), "field label not supported: spec.foo");
        let e = sel("b.bad=1,a.bad=2")
            .validate_fields(&supported)
            .unwrap_err();
        assert_eq!(e.message(), "field label not supported: a.bad");
    }

    #[test]
    fn empty_and_requirements() {
        assert!(sel("").is_empty());
        assert!(FieldSelector::everything().is_empty());
        assert!(!sel("a=b").is_empty());
        assert_eq!(sel("a=b,c!=d").requirements().count(), 2);
        assert_eq!(
            "a=b".parse::<FieldSelector>().unwrap(),
            FieldSelector::one_term_equal("a", "b")
        );
        assert_eq!(FieldSelector::default(), FieldSelector::everything());
    }
}
