//! Protobuf → JSON text without the object model: the JSON that
//! [`crate::decode_stored`] would give, written straight from the wire bytes,
//! for a writer that needs only the text (the watch cache keeps each written
//! object's JSON). The rules are `decode.rs`'s, field by field: descriptor
//! order, the last occurrence of a singular field, Go's omitted zeros, `null`
//! for absent lists Go writes without `omitempty`, messages always written,
//! map entries in wire order; the special messages (`special.rs`) go through
//! their `Value`. How strings and those values are spelled is the caller's
//! ([`Spelling`]: Go's escapes live with the storage codec).
//!
//! What this walk does not reproduce exactly, it refuses (`None`) and the
//! caller decodes instead: an inlined struct (merged into its parent), a map
//! key given twice, a top-level field named `kind` or `apiVersion`, and
//! anything `decode.rs` would refuse.

use std::collections::HashSet;

use base64::Engine as _;
use serde_json::Value;

use crate::decode::{keeps_zero, null_when_absent, omitted, MAX_DEPTH};
use crate::schema::{FieldDesc, Label, Schema, Special, Ty};
use crate::special;
use crate::wire::{Raw, Reader};

/// How JSON strings and whole values are written.
pub trait Spelling {
    /// A JSON string, quoted and escaped. A string of printable ASCII other
    /// than `<`, `>` and `&` must come out between quotes with only `"` and
    /// `\` escaped, as `\"` and `\\` (raw JSON already spelled so is copied
    /// as it is).
    fn string(&self, s: &str, out: &mut Vec<u8>);
    /// Any JSON value.
    fn value(&self, v: &Value, out: &mut Vec<u8>);
}

/// Stored bytes (`k8s\0` envelope) as the JSON of [`crate::decode_stored`]'s
/// object, appended to `out`, when `wanted` accepts the object's `apiVersion`
/// and `kind`; `None` (and `out` as it was) where it does not, or where the
/// walk cannot promise the same text.
pub fn stored_to_json(
    bytes: &[u8],
    wanted: impl FnOnce(&str, &str) -> bool,
    sp: &dyn Spelling,
    out: &mut Vec<u8>,
) -> Option<()> {
    let (av, kind, raw) = crate::stored_parts(bytes).ok()?;
    if !wanted(av, kind) {
        return None;
    }
    let idx = crate::lookup(av, kind).ok()?;
    let msg = Schema::get().message(idx);
    if msg.special != Special::None
        || msg
            .desc
            .fields
            .iter()
            .any(|f| matches!(f.json, "kind" | "apiVersion"))
    {
        return None;
    }
    let start = out.len();
    out.extend_from_slice(b"{\"kind\":");
    sp.string(kind, out);
    out.extend_from_slice(b",\"apiVersion\":");
    sp.string(av, out);
    let written = members(idx, raw, 0, sp, out, false);
    if written.is_none() {
        out.truncate(start);
        return None;
    }
    out.push(b'}');
    Some(())
}

/// The fields of message `idx` as JSON members (no braces), each after a
/// comma unless `first` and nothing was written yet.
fn members(
    idx: usize,
    bytes: &[u8],
    depth: usize,
    sp: &dyn Spelling,
    out: &mut Vec<u8>,
    mut first: bool,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let msg = Schema::get().message(idx);
    // Each known field's occurrences, by slot (storage reads skip unknown numbers).
    let mut seen: Vec<(usize, Raw<'_>)> = Vec::with_capacity(8);
    let mut r = Reader::new(bytes);
    while !r.done() {
        let (tag, raw) = r.field().ok()?;
        if let Some(slot) = msg.slot_of_tag(tag) {
            seen.push((slot, raw));
        }
    }
    seen.sort_by_key(|(slot, _)| *slot);
    let mut at = 0;
    for (slot, f) in msg.desc.fields.iter().enumerate() {
        let from = at;
        while at < seen.len() && seen[at].0 == slot {
            at += 1;
        }
        let raws = &seen[from..at];
        if raws.is_empty() {
            if null_when_absent(msg.desc, f) {
                key(f, sp, out, &mut first);
                out.extend_from_slice(b"null");
            }
            continue;
        }
        if f.inline {
            return None;
        }
        let mark = (out.len(), first);
        key(f, sp, out, &mut first);
        let kept = match f.label {
            Label::Optional => single(msg.desc, f, raws[raws.len() - 1].1, depth, sp, out)?,
            Label::Repeated => repeated(f, raws, depth, sp, out)?,
            Label::Map => map(f, raws, depth, sp, out)?,
        };
        if !kept {
            out.truncate(mark.0);
            first = mark.1;
        }
    }
    Some(())
}

fn key(f: &FieldDesc, sp: &dyn Spelling, out: &mut Vec<u8>, first: &mut bool) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    sp.string(f.json, out);
    out.push(b':');
}

/// A singular field's value; `false` when Go's JSON leaves it out.
fn single(
    desc: &crate::schema::MessageDesc,
    f: &FieldDesc,
    raw: Raw<'_>,
    depth: usize,
    sp: &dyn Spelling,
    out: &mut Vec<u8>,
) -> Option<bool> {
    let zero = match (f.ty, raw) {
        (Ty::Bool | Ty::Int32 | Ty::Int64, Raw::Varint(v)) => v_is_zero(f.ty, v),
        (Ty::Double, Raw::Fixed64(v)) => f64::from_bits(v) == 0.0,
        (Ty::String | Ty::Bytes, Raw::Bytes(b)) => b.is_empty(),
        (Ty::Message(idx), Raw::Bytes(b)) => {
            let special = Schema::get().message(idx).special;
            // A special message's value may be one Go leaves out (a zero
            // `Time` is `null`); an object, a raw JSON one too, never is.
            if special != Special::None && !(special == Special::RawJson && raw_object(b).is_some())
            {
                if depth + 1 > MAX_DEPTH {
                    return None;
                }
                let v = special::decode(special, b).ok()?;
                if omitted(desc, f, &v) {
                    return Some(false);
                }
                sp.value(&v, out);
                return Some(true);
            }
            false
        }
        _ => return None,
    };
    if zero && !keeps_zero(f) {
        return Some(false);
    }
    item(f.ty, raw, depth, sp, out)?;
    Some(true)
}

/// One value of a list or a map, never left out.
fn item(ty: Ty, raw: Raw<'_>, depth: usize, sp: &dyn Spelling, out: &mut Vec<u8>) -> Option<()> {
    match (ty, raw) {
        (Ty::Bool | Ty::Int32 | Ty::Int64, Raw::Varint(v)) => varint(ty, v, out),
        (Ty::Double, Raw::Fixed64(v)) => {
            let n = serde_json::Number::from_f64(f64::from_bits(v))?;
            sp.value(&Value::Number(n), out);
        }
        (Ty::String, Raw::Bytes(b)) => sp.string(std::str::from_utf8(b).ok()?, out),
        (Ty::Bytes, Raw::Bytes(b)) => {
            sp.string(&base64::engine::general_purpose::STANDARD.encode(b), out)
        }
        (Ty::Message(idx), Raw::Bytes(b)) => message(idx, b, depth + 1, sp, out)?,
        _ => return None,
    }
    Some(())
}

/// A message as JSON: a special one through its value, else an object of its fields.
fn message(idx: usize, b: &[u8], depth: usize, sp: &dyn Spelling, out: &mut Vec<u8>) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let special = Schema::get().message(idx).special;
    if special == Special::RawJson {
        if let Some(json) = raw_object(b) {
            if raw_json::plain(json) {
                out.extend_from_slice(json);
                return Some(());
            }
            return raw_json::write(json, sp, out);
        }
    }
    if special != Special::None {
        sp.value(&special::decode(special, b).ok()?, out);
        return Some(());
    }
    out.push(b'{');
    members(idx, b, depth, sp, out, true)?;
    out.push(b'}');
    Some(())
}

/// A repeated field's items; `false` when there are none (a packed field
/// holding no values).
fn repeated(
    f: &FieldDesc,
    raws: &[(usize, Raw<'_>)],
    depth: usize,
    sp: &dyn Spelling,
    out: &mut Vec<u8>,
) -> Option<bool> {
    out.push(b'[');
    let mut n = 0;
    for (_, raw) in raws {
        match (f.ty, raw) {
            (Ty::Int32 | Ty::Int64 | Ty::Bool, Raw::Bytes(b)) => {
                for v in Reader::packed_varints(b).ok()? {
                    if n > 0 {
                        out.push(b',');
                    }
                    varint(f.ty, v, out);
                    n += 1;
                }
            }
            (ty, raw) => {
                if n > 0 {
                    out.push(b',');
                }
                item(ty, *raw, depth, sp, out)?;
                n += 1;
            }
        }
    }
    out.push(b']');
    Some(n > 0)
}

/// A map field's entries in wire order; a key given twice is refused (the
/// object model keeps the first position with the last value).
fn map(
    f: &FieldDesc,
    raws: &[(usize, Raw<'_>)],
    depth: usize,
    sp: &dyn Spelling,
    out: &mut Vec<u8>,
) -> Option<bool> {
    let mut keys: HashSet<&str, foldhash::fast::RandomState> =
        HashSet::with_capacity_and_hasher(raws.len(), Default::default());
    out.push(b'{');
    for (i, (_, raw)) in raws.iter().enumerate() {
        let Raw::Bytes(entry) = raw else {
            return None;
        };
        let mut k = "";
        let mut val = None;
        let mut r = Reader::new(entry);
        while !r.done() {
            match r.field().ok()? {
                (1, Raw::Bytes(b)) => k = std::str::from_utf8(b).ok()?,
                (2, raw) => val = Some(raw),
                _ => return None,
            }
        }
        if !keys.insert(k) {
            return None;
        }
        if i > 0 {
            out.push(b',');
        }
        sp.string(k, out);
        out.push(b':');
        match val {
            Some(raw) => item(f.ty, raw, depth, sp, out)?,
            // An entry without a value holds the value type's zero.
            None => match f.ty {
                Ty::String | Ty::Bytes => out.extend_from_slice(b"\"\""),
                Ty::Bool => out.extend_from_slice(b"false"),
                Ty::Double | Ty::Int32 | Ty::Int64 => out.push(b'0'),
                Ty::Message(idx) => message(idx, &[], depth + 1, sp, out)?,
            },
        }
    }
    out.push(b'}');
    Some(true)
}

fn v_is_zero(ty: Ty, v: u64) -> bool {
    match ty {
        Ty::Int32 => v as i64 as i32 == 0,
        _ => v == 0,
    }
}

fn varint(ty: Ty, v: u64, out: &mut Vec<u8>) {
    let mut buf = itoa::Buffer::new();
    match ty {
        Ty::Bool => out.extend_from_slice(if v != 0 { b"true" } else { b"false" }),
        Ty::Int32 => out.extend_from_slice(buf.format(v as i64 as i32).as_bytes()),
        _ => out.extend_from_slice(buf.format(v as i64).as_bytes()),
    }
}

/// The JSON bytes of a raw JSON message (`RawExtension`, `FieldsV1`) when
/// they hold an object, which [`raw_json::write`] spells without building it
/// (a `managedFields` entry's `fieldsV1`); anything else goes through its value.
fn raw_object(b: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(b);
    let mut json = None;
    while !r.done() {
        match r.field().ok()? {
            (1, Raw::Bytes(j)) => json = Some(j),
            _ => return None,
        }
    }
    let json = json?;
    let first = json.iter().find(|c| !c.is_ascii_whitespace())?;
    (*first == b'{').then_some(json)
}

/// JSON text re-spelled as it is parsed, with no object built: the text the
/// parsed value's spelling would give, or `None` where they could differ (a
/// key given twice in one object, which a parsed object keeps once) or the
/// text is not JSON.
mod raw_json {
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
}

#[cfg(test)]
mod tests {
    use super::raw_json::plain;

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
