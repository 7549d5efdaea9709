//! Key, value and operator rules for requirements, with upstream's messages.

use super::*;

pub(super) const LABEL_MAX_LEN: usize = 63;
pub(super) const DNS1123_SUBDOMAIN_MAX_LEN: usize = 253;
pub(super) const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub(super) const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";
pub(super) const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
pub(super) const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of \
     alphanumeric characters, '-', '_' or '.', and must start and end with an \
     alphanumeric character";
pub(super) const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
pub(super) const DNS1123_SUBDOMAIN_ERR: &str =
    "a lowercase RFC 1123 subdomain must consist of lower \
     case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character";

pub(super) fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} bytes")
}

/// Upstream's regex explanation, including its quirk of a double space before "or".
pub(super) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
pub(super) fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]`/`-`, alnum at edges.
pub(super) fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        edge(b.first())
            && edge(b.last())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

pub(super) fn label_key_errors(key: &str) -> Vec<String> {
    let examples = ["MyName", "my.name", "123-abc"];
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LEN {
                    let msg = max_len_error(DNS1123_SUBDOMAIN_MAX_LEN);
                    errs.push(format!("prefix part {msg}"));
                }
                if !is_dns1123_subdomain(prefix) {
                    let msg = regex_error(
                        DNS1123_SUBDOMAIN_ERR,
                        DNS1123_SUBDOMAIN_FMT,
                        &["example.com"],
                    );
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            let msg = regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples);
            return vec![format!(
                "a valid label key {msg} with an optional DNS subdomain prefix and '/' \
                 (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > LABEL_MAX_LEN {
        errs.push(format!("name part {}", max_len_error(LABEL_MAX_LEN)));
    }
    if !is_label_name(name) {
        let msg = regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &examples);
        errs.push(format!("name part {msg}"));
    }
    errs
}

pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_MAX_LEN {
        errs.push(max_len_error(LABEL_MAX_LEN));
    }
    if !value.is_empty() && !is_label_name(value) {
        let examples = ["MyValue", "my_value", "12345"];
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &examples));
    }
    errs
}

/// A label key's validation failure rendered as a `field.Invalid` error at `path`.
pub(super) fn key_error(key: &str, path: &str) -> Option<String> {
    let errs = label_key_errors(key);
    (!errs.is_empty()).then(|| invalid(path, &go_quote(key), &errs.join("; ")))
}

pub(super) fn arity_errors(op: Operator, values: &[String]) -> Vec<String> {
    let slice = || go_string_slice(values);
    let detail = match op {
        Operator::In | Operator::NotIn if values.is_empty() => {
            "for 'in', 'notin' operators, values set can't be empty"
        }
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            "exact-match compatibility requires one single value"
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            "values set must be empty for exists and does not exist"
        }
        Operator::GreaterThan | Operator::LessThan => return ordering_errors(values),
        _ => return Vec::new(),
    };
    vec![invalid("values", &slice(), detail)]
}

pub(super) fn ordering_errors(values: &[String]) -> Vec<String> {
    let mut errs = Vec::new();
    if values.len() != 1 {
        errs.push(invalid(
            "values",
            &go_string_slice(values),
            "for 'Gt', 'Lt' operators, exactly one value is required",
        ));
    }
    for (i, v) in values.iter().enumerate() {
        if v.parse::<i64>().is_err() {
            errs.push(invalid(
                &format!("values[{i}]"),
                &go_quote(v),
                "for 'Gt', 'Lt' operators, the value must be an integer",
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------
// Upstream error rendering (field.Error, utilerrors.Aggregate, Go's %q and %#v)

pub(super) fn invalid(path: &str, rendered_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {rendered_value}: {detail}")
}

/// One error renders bare; several render as `[e1, e2]`; duplicates collapse.
pub(super) fn aggregate(errs: Vec<String>) -> Option<SelectorError> {
    let mut unique: Vec<String> = Vec::with_capacity(errs.len());
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => None,
        1 => unique.pop().map(SelectorError::new),
        _ => Some(SelectorError::new(format!("[{}]", unique.join(", ")))),
    }
}

/// Go's `%#v` of a `[]string`. Values reach `NewRequirement` as a nil slice when empty
/// (upstream copies with `append([]string(nil), ...)`), hence `[]string(nil)`.
pub(super) fn go_string_slice(values: &[String]) -> String {
    if values.is_empty() {
        return "[]string(nil)".to_string();
    }
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Go's `%q` (strconv.Quote) for the characters that can reach an error message.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
