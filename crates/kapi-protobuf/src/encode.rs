//! JSON → protobuf: walk a JSON value with a message descriptor and write the
//! wire bytes. Absent and `null` fields are not written (but for
//! `ObjectMeta.creationTimestamp`, which Go always writes, empty when zero,
//! and a `null` plain struct, written empty as Go writes its zero value);
//! present ones are, even when zero, so an explicit `replicas: 0` survives. JSON keys the message does
//! not have are skipped, as upstream drops them when decoding into its types;
//! `apiVersion`/`kind` travel in the envelope instead.

use base64::Engine as _;
use serde_json::Value;

use crate::schema::{always_written, FieldDesc, Label, MessageDesc, Schema, Special, Ty};
use crate::special;
use crate::wire::{self, put_bytes, put_key, put_nested, put_varint};
use crate::Error;

/// Write the fields of message `idx` for `value` into `out`.
pub fn message(idx: usize, value: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    let msg = Schema::get().message(idx);
    if msg.special != Special::None {
        return special::encode(msg.special, value, out);
    }
    let obj = value.as_object().ok_or_else(|| {
        Error::Malformed(format!(
            "{}: expected an object, got {value}",
            msg.desc.kind
        ))
    })?;
    // Fields in tag order, as Go writes them. An object names a few of a
    // message's fields (ObjectMeta has 17): its members are placed by name
    // and sorted, rather than every field looked up in the object. Members
    // that are no field are skipped, as Go's decoder drops them.
    let mut members: Vec<(u16, Option<&Value>)> = Vec::with_capacity(obj.len() + msg.unnamed.len());
    members.extend(
        obj.iter()
            .filter_map(|(k, v)| msg.rank_by_json(k).map(|p| (p, Some(v)))),
    );
    members.extend(msg.unnamed.iter().map(|p| (*p, None)));
    // A field both named and visited anyway keeps its value.
    members.sort_unstable_by_key(|(p, v)| (*p, v.is_none()));
    members.dedup_by_key(|(p, _)| *p);
    for (place, v) in members {
        let f = &msg.desc.fields[msg.tag_order[usize::from(place)]];
        if let (true, Ty::Message(inner)) = (f.inline, f.ty) {
            put_nested(out, f.tag, |out| message(inner, value, out))?;
            continue;
        }
        let v = match v {
            Some(v) if !v.is_null() => v,
            // `null` for a struct that is not a pointer: Go decodes it as the
            // zero struct and writes that (a zero `Time` is empty bytes).
            Some(_) if struct_field(msg.desc, f) => {
                put_bytes(out, f.tag, &[]);
                continue;
            }
            _ if always_written(msg.desc.kind, f.json) => {
                put_bytes(out, f.tag, &[]);
                continue;
            }
            _ => continue,
        };
        field(f, v, out).map_err(|e| e.within(f.json))?;
    }
    Ok(())
}

/// A message-typed field that is a plain Go struct, not a pointer.
fn struct_field(msg: &MessageDesc, f: &FieldDesc) -> bool {
    msg.go_facts && f.label == Label::Optional && matches!(f.ty, Ty::Message(_)) && !f.pointer
}

fn field(f: &FieldDesc, v: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    match f.label {
        Label::Optional => single(f.tag, f.ty, v, out),
        Label::Repeated => {
            let items = v
                .as_array()
                .ok_or_else(|| Error::Malformed(format!("expected an array, got {v}")))?;
            for item in items {
                single(f.tag, f.ty, item, out)?;
            }
            Ok(())
        }
        Label::Map => {
            let entries = v
                .as_object()
                .ok_or_else(|| Error::Malformed(format!("expected an object, got {v}")))?;
            let entry = |out: &mut Vec<u8>, k: &String, item: &Value| {
                put_nested(out, f.tag, |out| {
                    put_bytes(out, 1, k.as_bytes());
                    if !item.is_null() {
                        single(2, f.ty, item, out)?;
                    }
                    Ok(())
                })
            };
            // In key order, as Go's generated marshalers write a map (so a
            // read gives its keys sorted, as Go's JSON writes them).
            if entries.keys().is_sorted() {
                for (k, item) in entries {
                    entry(out, k, item)?;
                }
            } else {
                let mut sorted: Vec<(&String, &Value)> = entries.iter().collect();
                sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (k, item) in sorted {
                    entry(out, k, item)?;
                }
            }
            Ok(())
        }
    }
}

fn single(tag: u32, ty: Ty, v: &Value, out: &mut Vec<u8>) -> Result<(), Error> {
    match ty {
        Ty::String => {
            let s = v
                .as_str()
                .ok_or_else(|| Error::Malformed(format!("expected a string, got {v}")))?;
            put_bytes(out, tag, s.as_bytes());
        }
        Ty::Bool => {
            let b = v
                .as_bool()
                .ok_or_else(|| Error::Malformed(format!("expected a boolean, got {v}")))?;
            put_key(out, tag, wire::VARINT);
            put_varint(out, u64::from(b));
        }
        Ty::Int32 | Ty::Int64 => {
            let n = integer(v)?;
            if ty == Ty::Int32 && i32::try_from(n).is_err() {
                return Err(Error::Malformed(format!("{n} does not fit in int32")));
            }
            put_key(out, tag, wire::VARINT);
            put_varint(out, n as u64);
        }
        Ty::Double => {
            let d = v
                .as_f64()
                .ok_or_else(|| Error::Malformed(format!("expected a number, got {v}")))?;
            put_key(out, tag, wire::FIXED64);
            out.extend_from_slice(&d.to_le_bytes());
        }
        Ty::Bytes => {
            let s = v
                .as_str()
                .ok_or_else(|| Error::Malformed(format!("expected base64 data, got {v}")))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| Error::Malformed(format!("illegal base64 data: {e}")))?;
            put_bytes(out, tag, &bytes);
        }
        Ty::Message(idx) => put_nested(out, tag, |out| message(idx, v, out))?,
    }
    Ok(())
}

fn integer(v: &Value) -> Result<i64, Error> {
    if let Some(n) = v.as_i64() {
        return Ok(n);
    }
    match v.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
        _ => Err(Error::Malformed(format!("expected an integer, got {v}"))),
    }
}
