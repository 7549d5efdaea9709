//! Writing enveloped objects, lists and watch frames from message bytes encoded
//! earlier, so a caller that keeps each object's message bytes (the watch
//! cache) can answer a GET, a LIST or a watch event by concatenation instead of
//! encoding the object again. `encode_object` and `encode_watch_frame` are built
//! from the same pieces, so both paths write the same bytes by construction.
//!
//! A list is `envelope(list message)`, and the list message is its `metadata`
//! field followed by one `items` field per item (Go writes fields in tag order,
//! and every built-in `…List` has `metadata` = 1 before `items` = 2), so it can
//! be streamed: [`envelope_head`] with the total length, the list head, each
//! item with [`put_item_key`], then [`ENVELOPE_TAIL`].

use serde_json::Value;

use crate::wire::{self, put_bytes, put_key, put_varint, Raw, Reader};
use crate::{encode_message, lookup, Error, MAGIC};

/// What follows the raw message in every envelope: empty `contentEncoding`
/// (field 3) and `contentType` (field 4), as upstream writes them.
pub const ENVELOPE_TAIL: &[u8] = &[0x1a, 0x00, 0x22, 0x00];

/// Everything of an envelope before the `raw_len` bytes of the message.
pub fn envelope_head(api_version: &str, kind: &str, raw_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(api_version.len() + kind.len() + 24);
    out.extend_from_slice(MAGIC);
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    put_bytes(&mut out, 1, &type_meta);
    put_key(&mut out, 2, wire::LEN);
    put_varint(&mut out, raw_len as u64);
    out
}

/// The fields of a `runtime.Unknown` envelope (after the magic), borrowed
/// from its bytes: the object's message is a slice, never a copy.
#[derive(Debug, Default)]
pub(crate) struct Envelope<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub raw: &'a [u8],
    pub content_encoding: &'a str,
    pub content_type: &'a str,
}

/// Read an envelope as the descriptor walk would (`decode.rs`: unknown field
/// numbers and mismatched wire types are errors, a repeated field's last
/// occurrence wins), without building a JSON value of it.
pub(crate) fn read_envelope(bytes: &[u8]) -> Result<Envelope<'_>, Error> {
    let mut env = Envelope::default();
    let mut r = Reader::new(bytes);
    while !r.done() {
        let (tag, raw) = r.field()?;
        let field = match tag {
            1 => "typeMeta",
            2 => "raw",
            3 => "contentEncoding",
            4 => "contentType",
            _ => {
                return Err(Error::Malformed(format!(
                    "Unknown: unknown field number {tag}"
                )))
            }
        };
        let bytes = length_delimited(raw).map_err(|e| e.within(field))?;
        match tag {
            1 => {
                (env.api_version, env.kind) = ("", "");
                let mut tm = Reader::new(bytes);
                while !tm.done() {
                    let (tag, raw) = tm.field().map_err(|e| e.within(field))?;
                    let (name, slot) = match tag {
                        1 => ("apiVersion", &mut env.api_version),
                        2 => ("kind", &mut env.kind),
                        _ => {
                            return Err(Error::Malformed(format!(
                                "TypeMeta: unknown field number {tag}"
                            ))
                            .within(field))
                        }
                    };
                    *slot = string(raw)
                        .map_err(|e| e.within(name))
                        .map_err(|e| e.within(field))?;
                }
            }
            2 => env.raw = bytes,
            3 => env.content_encoding = utf8(bytes).map_err(|e| e.within(field))?,
            _ => env.content_type = utf8(bytes).map_err(|e| e.within(field))?,
        }
    }
    Ok(env)
}

fn length_delimited(raw: Raw<'_>) -> Result<&[u8], Error> {
    match raw {
        Raw::Bytes(b) => Ok(b),
        _ => Err(Error::Malformed(
            "wire type does not match the field".into(),
        )),
    }
}

fn string(raw: Raw<'_>) -> Result<&str, Error> {
    utf8(length_delimited(raw)?)
}

fn utf8(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::Malformed("string is not valid UTF-8".into()))
}

/// An enveloped object from its message bytes.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = envelope_head(api_version, kind, raw.len());
    out.reserve(raw.len() + ENVELOPE_TAIL.len());
    out.extend_from_slice(raw);
    out.extend_from_slice(ENVELOPE_TAIL);
    out
}

/// One watch stream frame from an enveloped object.
pub fn watch_frame(event_type: &str, enveloped: &[u8]) -> Vec<u8> {
    let mut raw_ext = Vec::with_capacity(enveloped.len() + 6);
    put_bytes(&mut raw_ext, 1, enveloped);
    let mut ev = Vec::with_capacity(raw_ext.len() + event_type.len() + 8);
    put_bytes(&mut ev, 1, event_type.as_bytes());
    put_bytes(&mut ev, 2, &raw_ext);
    let mut out = Vec::with_capacity(ev.len() + 4);
    out.extend_from_slice(&(ev.len() as u32).to_be_bytes());
    out.extend_from_slice(&ev);
    out
}

/// How a list message of `api_version`/`list_kind` is laid out.
#[derive(Debug, Clone)]
pub struct ListParts {
    /// The list message with its `metadata` and no items.
    pub head: Vec<u8>,
    /// The tag of `items`.
    pub items_tag: u32,
}

/// The head of a list message with `metadata` = `list_meta`; an error when the
/// kind is unknown or its `items` do not follow `metadata` in tag order.
pub fn list_parts(
    api_version: &str,
    list_kind: &str,
    list_meta: &Value,
) -> Result<ListParts, Error> {
    let msg = crate::Schema::get().message(lookup(api_version, list_kind)?);
    let tag = |name: &str| msg.field_by_json(name).map(|f| f.tag);
    let (Some(meta_tag), Some(items_tag)) = (tag("metadata"), tag("items")) else {
        return Err(Error::Malformed(format!("{list_kind} is not a list")));
    };
    if items_tag < meta_tag || msg.desc.fields.iter().any(|f| f.tag > items_tag) {
        return Err(Error::Malformed(format!(
            "{list_kind}: items are not its last field"
        )));
    }
    let head = encode_message(
        api_version,
        list_kind,
        &serde_json::json!({"metadata": list_meta}),
    )?;
    Ok(ListParts { head, items_tag })
}

/// The key and length of one list item of `len` message bytes.
pub fn put_item_key(out: &mut Vec<u8>, items_tag: u32, len: usize) {
    put_key(out, items_tag, wire::LEN);
    put_varint(out, len as u64);
}

/// Bytes [`put_item_key`] writes for an item of `len` bytes.
pub fn item_key_len(items_tag: u32, len: usize) -> usize {
    varint_len((u64::from(items_tag) << 3) | u64::from(wire::LEN)) + varint_len(len as u64)
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// `ObjectMeta.resourceVersion`'s field number.
const RESOURCE_VERSION: u32 = 6;

/// A stored object (`k8s\0` envelope) as answered with `resource_version`
/// set: the envelope rebuilt around its message with the field spliced into
/// the message's `metadata` (field 1, an `ObjectMeta`, which the encoder
/// writes first), in tag order. The bytes that encoding the decoded object with that
/// `resourceVersion` would give, for a message this encoder wrote (fields in
/// tag order, none unknown) — without decoding it. `None` where the walk
/// cannot promise that: not a well-formed envelope, a kind without an
/// `ObjectMeta` as field 1 (a list), a message not starting with it, its metadata fields out of order or already holding a
/// `resourceVersion`.
pub fn with_resource_version(stored: &[u8], resource_version: &str) -> Option<Vec<u8>> {
    let (av, kind, raw) = crate::stored_parts(stored).ok()?;
    // An object whose field 1 is its `ObjectMeta` (a list's is `ListMeta`).
    let schema = crate::Schema::get();
    let msg = schema.message(crate::lookup(av, kind).ok()?);
    let meta_field = msg.desc.fields.iter().find(|f| f.tag == 1)?;
    match meta_field.ty {
        crate::Ty::Message(idx) if schema.message(idx).desc.kind == "ObjectMeta" => {}
        _ => return None,
    }
    let mut r = Reader::new(raw);
    let (1, Raw::Bytes(meta)) = r.field().ok()? else {
        return None;
    };
    let rest = &raw[r.position()..];
    // Where the field goes: before the first field numbered above it.
    let mut m = Reader::new(meta);
    let mut at = meta.len();
    let mut last = 0;
    while !m.done() {
        let before = m.position();
        let (tag, _) = m.field().ok()?;
        if tag < last || tag == RESOURCE_VERSION {
            return None;
        }
        if tag > RESOURCE_VERSION && at == meta.len() {
            at = before;
        }
        last = tag;
    }
    let mut new_meta = Vec::with_capacity(meta.len() + resource_version.len() + 3);
    new_meta.extend_from_slice(&meta[..at]);
    put_bytes(&mut new_meta, RESOURCE_VERSION, resource_version.as_bytes());
    new_meta.extend_from_slice(&meta[at..]);
    let mut new_raw = Vec::with_capacity(new_meta.len() + rest.len() + 6);
    put_bytes(&mut new_raw, 1, &new_meta);
    new_raw.extend_from_slice(rest);
    Some(envelope(av, kind, &new_raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    /// What the descriptor walk reads from envelope bytes, as [`Envelope`]'s
    /// fields (`raw` base64-decoded).
    fn walked(bytes: &[u8]) -> Result<(String, String, Vec<u8>, String, String), Error> {
        use base64::Engine as _;
        let idx = Schema::get()
            .by_path("apimachinery.pkg.runtime.Unknown")
            .expect("runtime.Unknown is in k8s-pb");
        let env = crate::decode::message(idx, bytes)?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let tm = env.get("typeMeta").cloned().unwrap_or(Value::Null);
        let raw = base64::engine::general_purpose::STANDARD
            .decode(s(&env, "raw"))
            .expect("base64");
        Ok((
            s(&tm, "apiVersion"),
            s(&tm, "kind"),
            raw,
            s(&env, "contentEncoding"),
            s(&env, "contentType"),
        ))
    }

    fn read(bytes: &[u8]) -> Result<(String, String, Vec<u8>, String, String), Error> {
        let e = read_envelope(bytes)?;
        Ok((
            e.api_version.to_owned(),
            e.kind.to_owned(),
            e.raw.to_vec(),
            e.content_encoding.to_owned(),
            e.content_type.to_owned(),
        ))
    }

    #[test]
    fn the_envelope_reads_as_the_descriptor_walk_reads_it() {
        let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v"}});
        let whole = crate::encode_object(&cm).unwrap();
        let body = &whole[MAGIC.len()..];
        let mut cases: Vec<Vec<u8>> = vec![body.to_vec(), Vec::new()];
        // Every cut, and every single byte changed to a few others.
        for cut in 0..body.len() {
            cases.push(body[..cut].to_vec());
            for b in [0x00, 0x08, 0x0a, 0x12, 0x2a, 0x7f, 0xff] {
                let mut c = body.to_vec();
                c[cut] = b;
                cases.push(c);
            }
        }
        // Content fields set, a field repeated, invalid UTF-8, unknown fields.
        let mut tm = Vec::new();
        put_bytes(&mut tm, 1, b"apps/v1");
        put_bytes(&mut tm, 2, b"Deployment");
        let mut e = Vec::new();
        put_bytes(&mut e, 1, &tm);
        put_bytes(&mut e, 2, b"\x0a\x00");
        put_bytes(&mut e, 3, b"gzip");
        put_bytes(&mut e, 4, b"application/json");
        cases.push(e.clone());
        let mut twice = e.clone();
        put_bytes(&mut twice, 2, b"second");
        put_bytes(&mut twice, 1, &tm[..9]);
        cases.push(twice);
        let mut bad_utf8 = Vec::new();
        put_bytes(&mut bad_utf8, 4, &[0xc3, 0x28]);
        cases.push(bad_utf8);
        let mut bad_tm = Vec::new();
        put_bytes(&mut bad_tm, 1, &[0x1a, 0x01, b'x']);
        cases.push(bad_tm);
        let mut varint_tm = Vec::new();
        put_bytes(&mut varint_tm, 1, &[0x08, 0x01]);
        cases.push(varint_tm);
        cases.push(vec![0x28, 0x01]);
        cases.push(vec![0x10, 0x01]);
        for c in &cases {
            assert_eq!(read(c), walked(c), "{c:02x?}");
        }
    }
}
