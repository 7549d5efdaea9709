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

use crate::wire::{self, put_bytes, put_key, put_varint};
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
