//! JSON text re-spelled as it is parsed, with no object built: the text the
//! parsed value's spelling would give, or `None` where they could differ (a
//! key given twice in one object, which a parsed object keeps once) or the
//! text is not JSON. Text already spelled as that would give it ([`plain`])
//! is copied as it is, unparsed.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::Spelling;

/// Keys of one object compared one by one; more go through a set.
const FEW_KEYS: usize = 16;

/// Keys of one object [`plain`] compares; an object with more is re-spelled.
const PLAIN_KEYS: usize = 32;

/// How deep [`plain`] follows containers; deeper JSON is re-spelled.
const PLAIN_DEPTH: usize = 32;

/// Whether `json` is already spelled as [`write`] would spell its parse,
/// so it can be copied as it is: compact (no whitespace), made of objects
/// that repeat no key, arrays, strings of printable ASCII other than `<`,
/// `>` and `&` whose only escapes are `\"` and `\\`, and `true`, `false`
/// and `null` — no number (Go re-spells `1.0` as `1`). A `managedFields`
/// entry's `fieldsV1` as this project and upstream write it. With those
/// escapes alone, keys with the same bytes are the same key.
pub(super) fn plain(json: &[u8]) -> bool {
    value(json, 0, 0) == Some(json.len())
}

/// Index just past the plain value starting at `i`.
fn value(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string(b, i),
        b'{' if depth < PLAIN_DEPTH => object(b, i, depth + 1),
        b'[' if depth < PLAIN_DEPTH => array(b, i, depth + 1),
        b't' => literal(b, i, b"true"),
        b'f' => literal(b, i, b"false"),
        b'n' => literal(b, i, b"null"),
        _ => None,
    }
}

fn object(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    let mut keys = [(0, 0); PLAIN_KEYS];
    let mut n = 0;
    loop {
        if b.get(j) != Some(&b'"') || n == PLAIN_KEYS {
            return None;
        }
        let end = string(b, j)?;
        if keys[..n].iter().any(|&(s, e)| b[s..e] == b[j..end]) {
            return None;
        }
        keys[n] = (j, end);
        n += 1;
        if b.get(end) != Some(&b':') {
            return None;
        }
        j = value(b, end + 1, depth)?;
        match *b.get(j)? {
            b',' => j += 1,
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn array(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    loop {
        j = value(b, j, depth)?;
        match *b.get(j)? {
            b',' => j += 1,
            b']' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' if matches!(b.get(j + 1), Some(b'"' | b'\\')) => j += 2,
            b'\\' | b'<' | b'>' | b'&' | ..=0x1F | 0x7F.. => return None,
            _ => j += 1,
        }
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

pub(super) fn write(json: &[u8], sp: &dyn Spelling, out: &mut Vec<u8>) -> Option<()> {
    let mut de = serde_json::Deserializer::from_slice(json);
    Spelled::value(sp, out).deserialize(&mut de).ok()?;
    de.end().ok()
}

/// A value (or, `key`, a map key: a string) spelled into `out` as it is parsed.
struct Spelled<'a> {
    sp: &'a dyn Spelling,
    out: &'a mut Vec<u8>,
    key: bool,
}

impl<'a> Spelled<'a> {
    fn value(sp: &'a dyn Spelling, out: &'a mut Vec<u8>) -> Self {
        Spelled {
            sp,
            out,
            key: false,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Spelled<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        if self.key {
            d.deserialize_str(self)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Spelled<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        self.sp.value(&Value::from(v), self.out);
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.sp.string(v, self.out);
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Spelled { sp, out, .. } = self;
        out.push(b'[');
        let mut first = true;
        loop {
            let comma = out.len();
            if !std::mem::take(&mut first) {
                out.push(b',');
            }
            if seq
                .next_element_seed(Spelled::value(sp, &mut *out))?
                .is_none()
            {
                out.truncate(comma);
                break;
            }
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Spelled { sp, out, .. } = self;
        out.push(b'{');
        // Where each key's spelling sits in `out`: spellings are one to
        // one with keys, so a key given twice spells the same bytes.
        let mut keys: Vec<(usize, usize)> = Vec::new();
        // Past a few keys, each one's bytes are also kept in a set.
        let mut many: HashSet<Vec<u8>, foldhash::fast::RandomState> = HashSet::default();
        loop {
            let comma = out.len();
            if !keys.is_empty() {
                out.push(b',');
            }
            let start = out.len();
            if map
                .next_key_seed(Spelled {
                    sp,
                    out: &mut *out,
                    key: true,
                })?
                .is_none()
            {
                out.truncate(comma);
                break;
            }
            let end = out.len();
            let twice = if keys.len() < FEW_KEYS {
                keys.iter().any(|&(s, e)| out[s..e] == out[start..end])
            } else {
                if many.is_empty() {
                    many.extend(keys.iter().map(|&(s, e)| out[s..e].to_vec()));
                }
                !many.insert(out[start..end].to_vec())
            };
            if twice {
                return Err(serde::de::Error::custom("a key given twice"));
            }
            keys.push((start, end));
            out.push(b':');
            map.next_value_seed(Spelled::value(sp, &mut *out))?;
        }
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn plain_raw_json_is_what_needs_no_respelling() {
        for json in [
            r#"{}"#,
            r#"{"f:data":{".":{},"f:payload":{}}}"#,
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{}}}}}"#,
            r#"{"a":[],"b":[true,false,null,"s",{},[]],"c\\d":"e"}"#,
            r#"{"a":{"a":{}},"b":{"a":{}}}"#,
        ] {
            assert!(plain(json.as_bytes()), "{json}");
        }
        let keys = |n: usize| (0..n).map(|i| format!("\"k{i}\":{{}}")).collect::<Vec<_>>();
        assert!(plain(format!("{{{}}}", keys(32).join(",")).as_bytes()));
        assert!(!plain(format!("{{{}}}", keys(33).join(",")).as_bytes()));
        let deep = |n: usize| format!("{}{}", "{\"a\":".repeat(n) + "{}", "}".repeat(n));
        assert!(plain(deep(31).as_bytes()));
        assert!(!plain(deep(32).as_bytes()));
        for json in [
            r#"{"a":{},"a":{}}"#,
            r#"{"a":1}"#,
            r#"{"a":-1}"#,
            r#" {}"#,
            r#"{} "#,
            r#"{"a": {}}"#,
            r#"{"a":"<"}"#,
            r#"{"&":{}}"#,
            r#"{"a":"é"}"#,
            "{\"a\":\"\u{1}\"}",
            "{\"a\":\"\u{7f}\"}",
            r#"{"a":"\n"}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"x\"}"#,
            r#"{"a":tru}"#,
            r#"{"a":{}"#,
            r#"{"a":{}}}"#,
            r#"{"a"}"#,
            r#"[1]"#,
        ] {
            assert!(!plain(json.as_bytes()), "{json}");
        }
    }
}
