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

/// The text of a raw JSON message: copied when already spelled, else re-spelled.
mod raw_json;
