//! Reading the top level of a JSON object without parsing it: the keys, and
//! where each value starts, found by skipping over the values. Used where one
//! or two members of a stored object are wanted from its bytes (its
//! `apiVersion`/`kind`, where its `metadata` opens) and a full parse would cost
//! far more than the answer.
//!
//! Invariant: nothing here decodes escapes or validates the JSON beyond what
//! skipping needs; malformed input ends the walk (`None`), it never panics.

/// Where the value of the top-level `"metadata"` key of the object in `b`
/// opens, if it is an object.
pub(crate) fn metadata_open_brace(b: &[u8]) -> Option<usize> {
    let (_, start) = members(b).find(|(key, _)| *key == b"\"metadata\"")?;
    (b.get(start) == Some(&b'{')).then_some(start)
}

/// Where the object in `b` is cut to write it as an item of a typed list:
/// `metadata` is where the value of its top-level `"metadata"` key opens (if
/// that is an object); `body`, where its first member other than a leading
/// `kind` or `apiVersion` starts (its key's quote), so that `{` followed by
/// `b[body..]` is the object without them. `body` is `None` when a `kind` or
/// `apiVersion` member comes after another member (bytes not written by kapi,
/// say from YAML storage, whose keys are sorted): such an object cannot be
/// cut and is written the long way.
pub(crate) fn item_layout(b: &[u8]) -> Option<ItemLayout> {
    let is_type = |key: &[u8]| key == b"\"kind\"" || key == b"\"apiVersion\"";
    let mut body = None;
    let mut metadata = None;
    let mut stray = false;
    let mut walk = members(b);
    for (key, start) in walk.by_ref() {
        match body {
            // `key` is a slice of `b`: its offset is where the member starts.
            None if !is_type(key) => body = Some(key.as_ptr() as usize - b.as_ptr() as usize),
            Some(_) if is_type(key) => stray = true,
            _ => {}
        }
        if key == b"\"metadata\"" {
            metadata = Some(start).filter(|&at| b.get(at) == Some(&b'{'));
        }
    }
    Some(ItemLayout {
        body: body.filter(|_| !stray && walk.closed()),
        metadata: metadata?,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ItemLayout {
    pub body: Option<usize>,
    pub metadata: usize,
}

/// The members of the JSON object in `b`, in order: each key (with its quotes,
/// escapes undecoded) and the index where its value starts. The walk skips a
/// value only when the next member is asked for, so a caller that stops early
/// reads no further. Ends at the closing brace, or at anything malformed
/// (including bytes that are not an object).
pub(crate) fn members(b: &[u8]) -> Members<'_> {
    let i = skip_ws(b, 0);
    let open = b.get(i) == Some(&b'{');
    Members {
        b,
        i: i + 1,
        value: None,
        done: !open,
        closed: false,
    }
}

pub(crate) struct Members<'a> {
    b: &'a [u8],
    /// Where the walk is.
    i: usize,
    /// The start of the value last yielded, still to be skipped.
    value: Option<usize>,
    done: bool,
    /// The walk reached the object's closing brace.
    closed: bool,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a [u8], usize);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        self.done = item.is_none();
        item
    }
}

impl<'a> Members<'a> {
    /// Whether the walk ended at the object's closing brace (every member
    /// was yielded), not at something malformed or the end of the bytes.
    pub(crate) fn closed(&self) -> bool {
        self.closed
    }

    fn step(&mut self) -> Option<(&'a [u8], usize)> {
        let b = self.b;
        let mut i = match self.value.take() {
            Some(start) => skip_value(b, start)?,
            None => self.i,
        };
        loop {
            i = skip_ws(b, i);
            match *b.get(i)? {
                b',' => i += 1,
                b'"' => break,
                b'}' => {
                    self.closed = true;
                    return None;
                }
                _ => return None,
            }
        }
        let key_end = end_of_string(b, i)?;
        let key = &b[i..key_end];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        self.value = Some(start);
        Some((key, start))
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Index just past the string starting at `i` (which is a `"`): the next
/// quote or backslash found by a vectorized search, an escape stepped over.
fn end_of_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        i += 2;
    }
}

/// Index just past the JSON value starting at `i`.
pub(crate) fn skip_value(b: &[u8], i: usize) -> Option<usize> {
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

    fn keys(s: &str) -> Vec<String> {
        members(s.as_bytes())
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect()
    }

    #[test]
    fn walks_the_top_level_only() {
        assert_eq!(
            keys(r#" { "a" : [1, {"b":"}"}] , "c":{"d":1},"e":"x\"y" } "#),
            [r#""a""#, r#""c""#, r#""e""#]
        );
        assert_eq!(keys("{}"), Vec::<String>::new());
        assert_eq!(keys("[1]"), Vec::<String>::new());
        let b = br#"{"a":{"x":1},"b":2}"#;
        let starts: Vec<usize> = members(b).map(|(_, s)| s).collect();
        assert_eq!(starts, [5, 17]);
    }

    #[test]
    fn strings_end_at_their_closing_quote_whatever_their_length() {
        for n in [0, 1, 14, 15, 16, 17, 31, 32, 33, 100] {
            for (what, body) in [
                ("plain", "x".repeat(n)),
                ("escape last", format!("{}\\\"", "x".repeat(n))),
                (
                    "escape mid-way",
                    format!("{}\\\\{}", "x".repeat(15), "y".repeat(n)),
                ),
            ] {
                let json = format!("{{\"k\":\"{body}\",\"z\":1}}");
                assert_eq!(keys(&json), [r#""k""#, r#""z""#], "{what} {n}: {json}");
                let cut = format!("{{\"k\":\"{body}");
                assert_eq!(keys(&cut), [r#""k""#], "{what} {n}, unterminated");
                assert_eq!(skip_value(cut.as_bytes(), 5), None, "{what} {n}");
            }
        }
    }

    #[test]
    fn an_item_is_cut_after_its_leading_type_members() {
        let cut = |s: &str| {
            item_layout(s.as_bytes()).map(|l| {
                (
                    l.body.map(|body| format!("{{{}", &s[body..])),
                    s[l.metadata..].chars().next().unwrap(),
                )
            })
        };
        let typed = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{}}"#;
        assert_eq!(
            cut(typed),
            Some((Some(r#"{"metadata":{"name":"a"},"data":{}}"#.into()), '{'))
        );
        let l = item_layout(typed.as_bytes()).unwrap();
        assert_eq!(&typed[l.metadata..l.metadata + 10], r#"{"name":"a"#);
        // Either order, with whitespace; nested kinds are not the object's.
        assert_eq!(
            cut(r#"{ "apiVersion" : "v1" , "kind":"X", "spec":{"kind":1}, "metadata":{}}"#),
            Some((Some(r#"{"spec":{"kind":1}, "metadata":{}}"#.into()), '{'))
        );
        // Nothing to leave out: the whole object.
        assert_eq!(
            cut(r#"{"metadata":{},"data":{}}"#),
            Some((Some(r#"{"metadata":{},"data":{}}"#.into()), '{'))
        );
        // A type member after another member: not cut (metadata still found).
        assert_eq!(
            cut(r#"{"data":{},"kind":"X","metadata":{}}"#),
            Some((None, '{'))
        );
        assert_eq!(
            cut(r#"{"kind":"X","metadata":{},"apiVersion":"v1"}"#),
            Some((None, '{'))
        );
        // Malformed after the metadata: not cut.
        assert_eq!(cut(r#"{"kind":"X","metadata":{},"x":"#), Some((None, '{')));
        assert_eq!(cut(r#"{"kind":"X","metadata":"m"}"#), None);
        assert_eq!(cut(r#"{"kind":"X","spec":{}}"#), None);
    }

    #[test]
    fn malformed_input_ends_the_walk() {
        assert_eq!(keys(r#"{"a":1,"b""#), [r#""a""#]);
        assert_eq!(keys(r#"{"a" 1}"#), Vec::<String>::new());
        assert_eq!(keys(r#"{"a":[1,"#), [r#""a""#]);
    }
}
