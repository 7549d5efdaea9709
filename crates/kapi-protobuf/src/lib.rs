//! The Kubernetes protobuf wire format, as a translation between protobuf bytes
//! and the JSON object model every other layer uses. There is no per-kind code:
//! `build.rs` derives a descriptor table (messages, field numbers, wire types,
//! JSON names) from the `k8s-pb` and `k8s-openapi` sources, and one walker
//! encodes and decodes any message with it (`encode.rs`, `decode.rs`), with
//! upstream's custom representations for a few meta types (`special.rs`).
//!
//! The envelope is upstream's: the magic `k8s\0`, then a `runtime.Unknown`
//! (`typeMeta {apiVersion, kind}`, `raw` = the message, `contentEncoding`,
//! `contentType`). Watch streams frame each `WatchEvent` (itself not enveloped,
//! its object enveloped) with a 4-byte big-endian length.
//!
//! `parts.rs` writes envelopes, lists and frames from message bytes encoded
//! earlier (the watch cache keeps them per object).
//!
//! Where to look next: `schema.rs` for the table and the kind lookup;
//! `kapi-server/src/negotiate.rs` for where HTTP bodies meet this crate.

mod decode;
mod encode;
pub mod list_docs;
mod parts;
mod schema;
mod special;
mod transcode;
mod wire;

use serde_json::{Map, Value};

pub use parts::{
    envelope, envelope_head, item_key_len, list_parts, put_item_key, watch_frame,
    with_resource_version, ListParts, ENVELOPE_TAIL,
};
pub use schema::{
    split_api_version, FieldDesc, Label, MessageDesc, MessageIndex, Schema, Special, Ty,
};
pub use transcode::{stored_to_json, Spelling};

/// The four bytes every enveloped protobuf object starts with.
pub const MAGIC: &[u8] = b"k8s\0";
/// The media type of protobuf objects.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of protobuf watch streams.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

const WATCH_EVENT: &str = "apimachinery.pkg.apis.meta.v1.WatchEvent";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("provided object is not a protobuf message: missing the \"k8s\\x00\" prefix")]
    Magic,
    #[error("unexpected end of protobuf data (truncated)")]
    Truncated,
    #[error("{0}")]
    Malformed(String),
    #[error("no kind {kind:?} is registered for version {api_version:?} in the protobuf scheme")]
    UnknownKind { api_version: String, kind: String },
    #[error("object has no apiVersion/kind to encode it by")]
    NoKind,
}

impl Error {
    /// Prefix a malformed-field error with the field it happened in.
    fn within(self, field: &str) -> Error {
        match self {
            Error::Malformed(m) => Error::Malformed(format!("{field}: {m}")),
            other => other,
        }
    }
}

/// Whether the kind has a protobuf message (built-in kinds; never custom resources).
pub fn supports(group: &str, version: &str, kind: &str) -> bool {
    Schema::get().by_gvk(group, version, kind).is_some()
}

/// The message bytes (no envelope) of `value` as message `api_version`/`kind`.
pub fn encode_message(api_version: &str, kind: &str, value: &Value) -> Result<Vec<u8>, Error> {
    let idx = lookup(api_version, kind)?;
    let mut out = Vec::with_capacity(256);
    encode::message(idx, value, &mut out)?;
    Ok(out)
}

/// Decode message bytes (no envelope) as `api_version`/`kind`, without
/// adding `apiVersion`/`kind` to the result.
pub fn decode_message(api_version: &str, kind: &str, bytes: &[u8]) -> Result<Value, Error> {
    decode::message(lookup(api_version, kind)?, bytes)
}

fn lookup(api_version: &str, kind: &str) -> Result<usize, Error> {
    Schema::get()
        .by_api_version(api_version, kind)
        .ok_or_else(|| Error::UnknownKind {
            api_version: api_version.into(),
            kind: kind.into(),
        })
}

/// An object with its envelope, typed by its own `apiVersion` and `kind`.
pub fn encode_object(value: &Value) -> Result<Vec<u8>, Error> {
    // The top level of an object has a few members: found by a scan, as
    // the map's own lookup hashes the key.
    let top = |key: &str| {
        value
            .as_object()?
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .and_then(|(_, v)| v.as_str())
    };
    let av = top("apiVersion").ok_or(Error::NoKind)?;
    let kind = top("kind").ok_or(Error::NoKind)?;
    let raw = encode_message(av, kind, value)?;
    Ok(envelope(av, kind, &raw))
}

/// Decode an enveloped object into JSON with `apiVersion` and `kind` first.
/// `default` (apiVersion, kind) types a body whose envelope leaves them empty.
pub fn decode_object(bytes: &[u8], default: Option<(&str, &str)>) -> Result<Value, Error> {
    decode_enveloped(bytes, default, false)
}

/// Decode an object as storage holds it: enveloped, typed by its envelope,
/// field numbers this schema does not know skipped (a newer writer's fields).
pub fn decode_stored(bytes: &[u8]) -> Result<Value, Error> {
    decode_enveloped(bytes, None, true)
}

/// The stored object's `apiVersion`, `kind` and message bytes, from its
/// envelope, as [`decode_stored`] reads them.
fn stored_parts(bytes: &[u8]) -> Result<(&str, &str, &[u8]), Error> {
    enveloped_parts(bytes, None)
}

/// An envelope's type and message bytes, checked as every decode checks them.
fn enveloped_parts<'a>(
    bytes: &'a [u8],
    default: Option<(&'a str, &'a str)>,
) -> Result<(&'a str, &'a str, &'a [u8]), Error> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(Error::Magic)?;
    let env = parts::read_envelope(rest)?;
    let (mut av, mut kind) = (env.api_version, env.kind);
    if let (true, Some((dav, dkind))) = (kind.is_empty(), default) {
        (av, kind) = (dav, dkind);
    }
    if kind.is_empty() {
        return Err(Error::Malformed(
            "the protobuf envelope names no kind".into(),
        ));
    }
    if !env.content_encoding.is_empty() {
        return Err(Error::Malformed(format!(
            "unsupported content encoding {:?}",
            env.content_encoding
        )));
    }
    if !env.content_type.is_empty() && env.content_type != MEDIA_TYPE {
        return Err(Error::Malformed(format!(
            "unsupported content type {:?}",
            env.content_type
        )));
    }
    Ok((av, kind, env.raw))
}

fn decode_enveloped(
    bytes: &[u8],
    default: Option<(&str, &str)>,
    lenient: bool,
) -> Result<Value, Error> {
    let (av, kind, raw) = enveloped_parts(bytes, default)?;
    let idx = lookup(av, kind)?;
    let body = if lenient {
        decode::message_lenient(idx, raw)?
    } else {
        decode::message(idx, raw)?
    };
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(kind.to_owned()));
    out.insert("apiVersion".into(), Value::String(av.to_owned()));
    if let Value::Object(fields) = body {
        out.extend(fields);
    }
    Ok(Value::Object(out))
}

/// One watch stream frame: length, then a `WatchEvent` whose object is enveloped.
pub fn encode_watch_frame(event_type: &str, object: &Value) -> Result<Vec<u8>, Error> {
    Ok(watch_frame(event_type, &encode_object(object)?))
}

/// One decoded watch event: its `type` and its object.
pub type WatchFrame = (String, Value);

/// Split one frame off a watch stream: `(type, object)` and the bytes left,
/// or `None` when the buffer does not hold a whole frame yet.
pub fn decode_watch_frame(buf: &[u8]) -> Result<Option<(WatchFrame, &[u8])>, Error> {
    let Some(len) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize;
    let Some(frame) = buf.get(4..4 + len) else {
        return Ok(None);
    };
    let idx = Schema::get()
        .by_path(WATCH_EVENT)
        .expect("WatchEvent is in k8s-pb");
    let ev = decode::message(idx, frame)?;
    let ty = ev
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let object = ev.get("object").cloned().unwrap_or(Value::Null);
    Ok(Some(((ty, object), &buf[4 + len..])))
}
