//! Go's words for a JSON body it cannot parse, which upstream's error
//! messages carry (`unexpected end of JSON input`, `invalid character 'x'
//! looking for beginning of value`), made from serde_json's errors and the
//! byte they stopped at; and upstream's summary of a body it could not read
//! (`summarizeData`: the first 30 bytes, as text when the body starts with
//! `{`, in hex otherwise).

/// Go `encoding/json`'s message for the syntax error `e` in `body`.
pub fn syntax_error(e: &serde_json::Error, body: &[u8]) -> String {
    if e.is_eof() {
        return "unexpected end of JSON input".to_owned();
    }
    let at = offset(body, e.line(), e.column());
    let c = body[at..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace());
    let Some(c) = c else {
        return "unexpected end of JSON input".to_owned();
    };
    let text = e.to_string();
    let context = if text.starts_with("key must be a string") {
        "looking for beginning of object key string"
    } else if text.starts_with("trailing characters") {
        "after top-level value"
    } else if text.starts_with("expected `:`") {
        "after object key"
    } else if text.starts_with("expected `,` or `}`") {
        "after object key:value pair"
    } else if text.starts_with("expected `,` or `]`") {
        "after array element"
    } else if text.starts_with("invalid number") {
        "in numeric literal"
    } else if text.starts_with("invalid escape") {
        "in string escape code"
    } else if text.starts_with("control character") {
        "in string literal"
    } else {
        "looking for beginning of value"
    };
    format!("invalid character {} {context}", quote_char(c))
}

/// Go's `json: cannot unmarshal <type> into Go value of type <target>` for a
/// body that is JSON but of the wrong type.
pub fn type_error(v: &serde_json::Value, target: &str) -> String {
    let found = match v {
        serde_json::Value::Array(_) => "array",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Object(_) => "object",
        serde_json::Value::Null => "null",
    };
    format!("json: cannot unmarshal {found} into Go value of type {target}")
}

/// The struct upstream decodes `apiVersion` and `kind` into first.
pub const KIND_FINDER: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// Upstream's `summarizeData(body, 30)`.
pub fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// The byte offset of serde_json's (1-based line, 1-based column) position.
fn offset(body: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match body[start..].iter().position(|b| *b == b'\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(body.len())
}

/// A byte as Go's `%q` of a rune quotes it: `'x'`, `'\n'`, `'"'`.
fn quote_char(c: u8) -> String {
    match c {
        b'\n' => r"'\n'".to_owned(),
        b'\t' => r"'\t'".to_owned(),
        b'\r' => r"'\r'".to_owned(),
        b'\'' => r"'\''".to_owned(),
        b'\\' => r"'\\'".to_owned(),
        c if c.is_ascii_graphic() || c == b' ' => format!("'{}'", c as char),
        c => format!("'\\x{c:02x}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(body: &str) -> String {
        let e = serde_json::from_str::<serde_json::Value>(body).unwrap_err();
        syntax_error(&e, body.as_bytes())
    }

    #[test]
    fn syntax_errors_read_as_gos() {
        assert_eq!(go(r#"{"apiVersion":"#), "unexpected end of JSON input");
        assert_eq!(go(""), "unexpected end of JSON input");
        assert_eq!(
            go("hello"),
            "invalid character 'h' looking for beginning of value"
        );
        assert_eq!(
            go(r#"{"apiVersion":"v1",x}"#),
            "invalid character 'x' looking for beginning of object key string"
        );
        assert_eq!(
            go(r#"{"a":1} x"#),
            "invalid character 'x' after top-level value"
        );
        assert_eq!(go(r#"{"a" 1}"#), "invalid character '1' after object key");
        assert_eq!(
            go(r#"{"a":1 "b"}"#),
            "invalid character '\"' after object key:value pair"
        );
        assert_eq!(go("[1 2]"), "invalid character '2' after array element");
    }

    #[test]
    fn summaries_are_upstreams() {
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"[]"), "5b5d");
        assert_eq!(summarize(b"hello"), "68656c6c6f");
        assert_eq!(
            summarize(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#),
            r#"{"apiVersion":"v1","kind":"Con ..."#
        );
        assert_eq!(
            summarize(b"hello this is a long body that goes on and on"),
            "68656c6c6f20746869732069732061206c6f6e6720626f64792074686174 ..."
        );
    }
}
