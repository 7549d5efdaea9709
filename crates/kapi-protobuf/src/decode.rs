//! Protobuf → JSON: read wire bytes with a message descriptor into the JSON
//! object model. Unknown field numbers and wire types that contradict the
//! descriptor are errors (the request gets a 400, nothing is stored) — except
//! in a lenient read ([`message_lenient`], for what storage holds), which
//! skips unknown field numbers as Go's generated code does, so an object a
//! newer kube-apiserver stored still reads (without the fields it added).
//!
//! Go clients write every non-pointer field, zero or not, and Go's JSON omits
//! those zeros (`omitempty`), so a zero scalar, an empty list and an empty map
//! decode to an absent field — except in pointer fields, where an explicit zero
//! means something (`replicas: 0`), and in fields without `omitempty`. Which
//! fields are pointers is a fact of the Go types no schema carries: it comes
//! from `go_fields.tsv` (see `scripts/go-field-facts`). Messages always decode (an
//! empty `status` stays `{}`, as Go's JSON keeps empty structs); a zero `Time`
//! is absent.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::schema::{FieldDesc, Label, MessageDesc, Schema, Special, Ty};
use crate::special;
use crate::wire::{Raw, Reader};
use crate::Error;

/// Nesting deeper than this is refused, so a hostile body cannot exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 100;

pub fn message(idx: usize, bytes: &[u8]) -> Result<Value, Error> {
    message_at(idx, bytes, At::default())
}

/// As [`message`], skipping field numbers the descriptor does not know.
pub fn message_lenient(idx: usize, bytes: &[u8]) -> Result<Value, Error> {
    let at = At {
        depth: 0,
        lenient: true,
    };
    message_at(idx, bytes, at)
}

/// Where a walk is: how deep, and whether unknown fields are skipped.
#[derive(Debug, Clone, Copy, Default)]
struct At {
    depth: usize,
    lenient: bool,
}

impl At {
    fn deeper(self) -> At {
        At {
            depth: self.depth + 1,
            ..self
        }
    }
}

fn message_at(idx: usize, bytes: &[u8], at: At) -> Result<Value, Error> {
    let depth = at.depth;
    if depth > MAX_DEPTH {
        return Err(Error::Malformed(format!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let msg = Schema::get().message(idx);
    if msg.special != Special::None {
        return special::decode(msg.special, bytes);
    }
    // Values per field, in descriptor order.
    let mut values: Vec<Option<Value>> = vec![None; msg.desc.fields.len()];
    let mut r = Reader::new(bytes);
    while !r.done() {
        let (tag, raw) = r.field()?;
        let slot = match msg.slot_of_tag(tag) {
            Some(slot) => slot,
            None if at.lenient => continue,
            None => {
                return Err(Error::Malformed(format!(
                    "{}: unknown field number {tag}",
                    msg.desc.kind
                )))
            }
        };
        let f = &msg.desc.fields[slot];
        let ctx = |e: Error| e.within(f.json);
        match f.label {
            Label::Optional => values[slot] = Some(single(f, raw, at).map_err(ctx)?),
            Label::Repeated => {
                let arr = values[slot].get_or_insert_with(|| Value::Array(Vec::new()));
                let arr = arr.as_array_mut().expect("array");
                match (f.ty, raw) {
                    // Packed scalars (accepted though k8s writes them unpacked).
                    (Ty::Int32 | Ty::Int64 | Ty::Bool, Raw::Bytes(b)) => {
                        for v in Reader::packed_varints(b).map_err(ctx)? {
                            arr.push(varint(f.ty, v));
                        }
                    }
                    (_, raw) => arr.push(single(f, raw, at).map_err(ctx)?),
                }
            }
            Label::Map => {
                let Raw::Bytes(entry) = raw else {
                    return Err(ctx(Error::Malformed(
                        "map entry is not length-delimited".into(),
                    )));
                };
                let (k, v) = map_entry(f, entry, at).map_err(ctx)?;
                let map = values[slot].get_or_insert_with(|| Value::Object(Map::new()));
                map.as_object_mut().expect("object").insert(k, v);
            }
        }
    }
    // Sized for the fields on the wire (an inlined message's may add a few).
    let mut out = Map::with_capacity(values.iter().filter(|v| v.is_some()).count());
    for (f, v) in msg.desc.fields.iter().zip(values) {
        let Some(v) = v else {
            if null_when_absent(msg.desc, f) {
                out.insert(f.json.to_string(), Value::Null);
            }
            continue;
        };
        if f.inline {
            if let Value::Object(fields) = v {
                out.extend(fields);
            }
            continue;
        }
        if omitted(msg.desc, f, &v) {
            continue;
        }
        out.insert(f.json.to_string(), v);
    }
    Ok(Value::Object(out))
}

/// Whether Go's JSON would leave this decoded value out.
pub(crate) fn omitted(msg: &MessageDesc, f: &FieldDesc, v: &Value) -> bool {
    match v {
        // A zero `Time` (or empty `RawExtension`) in a struct field that is not
        // a pointer: Go writes it, as `null` (`creationTimestamp: null` in a
        // pod template, `lastProbeTime: null` in a pod condition).
        Value::Null => !(msg.go_facts && matches!(f.ty, Ty::Message(_)) && !f.pointer),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) if f.label == Label::Map => o.is_empty(),
        Value::String(s) if matches!(f.ty, Ty::String | Ty::Bytes) => {
            s.is_empty() && !keeps_zero(f)
        }
        Value::Bool(b) => !*b && !keeps_zero(f),
        Value::Number(n) if !matches!(f.ty, Ty::Message(_)) => {
            n.as_f64() == Some(0.0) && !keeps_zero(f)
        }
        _ => false,
    }
}

/// A zero that shows in Go's JSON: a pointer field that is set (`replicas: 0`,
/// `storageClassName: ""`), or a field without `omitempty`
/// (`PriorityClass.value`, `ContainerPort.containerPort`).
pub(crate) fn keeps_zero(f: &FieldDesc) -> bool {
    f.pointer || !f.omitempty
}

/// A list or map field Go writes without `omitempty` reads as `null` when the
/// wire has no entry (`"endpoints": null`, `"rules": null`), as Go's JSON
/// writes a nil slice. Only where the Go struct is known.
pub(crate) fn null_when_absent(msg: &MessageDesc, f: &FieldDesc) -> bool {
    msg.go_facts
        && !f.inline
        && !f.pointer
        && !f.omitempty
        && matches!(f.label, Label::Repeated | Label::Map)
}

fn varint(ty: Ty, v: u64) -> Value {
    match ty {
        Ty::Bool => Value::Bool(v != 0),
        Ty::Int32 => Value::from(v as i64 as i32),
        _ => Value::from(v as i64),
    }
}

fn single(f: &FieldDesc, raw: Raw<'_>, at: At) -> Result<Value, Error> {
    value(f.ty, raw, at)
}

fn value(ty: Ty, raw: Raw<'_>, at: At) -> Result<Value, Error> {
    Ok(match (ty, raw) {
        (Ty::Bool | Ty::Int32 | Ty::Int64, Raw::Varint(v)) => varint(ty, v),
        (Ty::Double, Raw::Fixed64(v)) => serde_json::Number::from_f64(f64::from_bits(v))
            .map(Value::Number)
            .ok_or_else(|| Error::Malformed("not a finite number".into()))?,
        (Ty::String, Raw::Bytes(b)) => Value::String(
            std::str::from_utf8(b)
                .map_err(|_| Error::Malformed("string is not valid UTF-8".into()))?
                .to_owned(),
        ),
        (Ty::Bytes, Raw::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Ty::Message(idx), Raw::Bytes(b)) => message_at(idx, b, at.deeper())?,
        _ => {
            return Err(Error::Malformed(
                "wire type does not match the field".into(),
            ))
        }
    })
}

fn map_entry(f: &FieldDesc, entry: &[u8], at: At) -> Result<(String, Value), Error> {
    let mut key = String::new();
    let mut val = None;
    let mut r = Reader::new(entry);
    while !r.done() {
        match r.field()? {
            (1, Raw::Bytes(b)) => {
                key = std::str::from_utf8(b)
                    .map_err(|_| Error::Malformed("map key is not valid UTF-8".into()))?
                    .to_owned()
            }
            (2, raw) => val = Some(value(f.ty, raw, at)?),
            (tag, _) => {
                return Err(Error::Malformed(format!(
                    "map entry: unknown field number {tag}"
                )))
            }
        }
    }
    // An entry without a value holds the value type's zero.
    let val = match val {
        Some(v) => v,
        None => match f.ty {
            Ty::String | Ty::Bytes => Value::String(String::new()),
            Ty::Bool => Value::Bool(false),
            Ty::Double | Ty::Int32 | Ty::Int64 => Value::from(0),
            Ty::Message(idx) => message_at(idx, &[], at.deeper())?,
        },
    };
    Ok((key, val))
}
