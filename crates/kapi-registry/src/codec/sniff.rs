//! Telling stored encodings apart by their first bytes, as upstream's
//! recognizing decoder does (protobuf by its `k8s\0` magic, JSON by an opening
//! brace, anything else is tried as YAML), and reading a JSON object's
//! `apiVersion` and `kind` without parsing the rest.

use crate::json_scan::{members, skip_value};

/// What stored bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    Protobuf,
    Json,
    /// Neither: YAML, or not an object at all.
    Other,
}

pub fn sniff(bytes: &[u8]) -> Sniffed {
    if bytes.starts_with(kapi_protobuf::MAGIC) {
        return Sniffed::Protobuf;
    }
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => Sniffed::Json,
        _ => Sniffed::Other,
    }
}

/// The top-level `apiVersion` and `kind` of a JSON object, found by skipping
/// over the other values. `None` when either is missing, is not a plain string
/// (escapes are not decoded here), or the bytes are not an object.
pub fn type_meta(b: &[u8]) -> Option<(String, String)> {
    let (mut av, mut kind) = (None, None);
    for (key, start) in members(b) {
        let slot = match key {
            b"\"apiVersion\"" => &mut av,
            b"\"kind\"" => &mut kind,
            _ => continue,
        };
        *slot = Some(plain_string(&b[start..skip_value(b, start)?])?);
        if av.is_some() && kind.is_some() {
            break;
        }
    }
    Some((av?, kind?))
}

/// A JSON string without escapes, unquoted.
fn plain_string(v: &[u8]) -> Option<String> {
    let inner = v.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.contains(&b'\\') {
        return None;
    }
    String::from_utf8(inner.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_by_their_first_bytes() {
        assert_eq!(sniff(b"k8s\0\x0a\x00"), Sniffed::Protobuf);
        assert_eq!(sniff(b" \n{\"a\":1}"), Sniffed::Json);
        assert_eq!(sniff(b"apiVersion: v1\nkind: Pod\n"), Sniffed::Other);
        assert_eq!(sniff(b""), Sniffed::Other);
    }

    #[test]
    fn type_meta_skips_other_values() {
        let tm = |s: &str| type_meta(s.as_bytes());
        let both = Some(("a/v1".to_owned(), "K".to_owned()));
        assert_eq!(
            tm(r#"{"metadata":{"kind":"x","apiVersion":"y"},"kind":"K","apiVersion":"a/v1"}"#),
            both
        );
        assert_eq!(
            tm(r#" { "spec" : [1, {"a":"}"}] , "apiVersion" : "a/v1", "kind":"K" }"#),
            both
        );
        assert_eq!(tm(r#"{"kind":"K"}"#), None);
        assert_eq!(tm(r#"{"kind":"K","apiVersion":"a\/v1"}"#), None);
        assert_eq!(tm("[1]"), None);
        assert_eq!(tm(r#"{"kind":"K","apiVersion":"#), None);
    }
}
