//! Telling stored encodings apart by their first bytes, as upstream's
//! recognizing decoder does (protobuf by its `k8s\0` magic, JSON by an opening
//! brace, anything else is tried as YAML), and reading a JSON object's
//! `apiVersion` and `kind` without parsing the rest.

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
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let (mut av, mut kind) = (None, None);
    loop {
        i = skip_ws(b, i);
        match *b.get(i)? {
            b',' => {
                i += 1;
                continue;
            }
            b'}' => break,
            b'"' => {}
            _ => return None,
        }
        let key_end = end_of_string(b, i)?;
        let key = &b[i..key_end];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let end = skip_value(b, i)?;
        let slot = match key {
            b"\"apiVersion\"" => Some(&mut av),
            b"\"kind\"" => Some(&mut kind),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = Some(plain_string(&b[i..end])?);
        }
        if av.is_some() && kind.is_some() {
            break;
        }
        i = end;
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

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i` (which is a `"`).
fn end_of_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Index just past the JSON value starting at `i`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => end_of_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = end_of_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') {
                j += 1;
            }
            Some(j)
        }
    }
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
