//! The storage codec: objects (the JSON model every layer uses) to the bytes a
//! backend keeps, and back — kube-apiserver's storage serializer.
//!
//! Writing follows upstream: built-in kinds in `--storage-media-type`
//! ([`MediaType`]; Kubernetes protobuf by default: `k8s\0` and a
//! `runtime.Unknown` naming the object's `apiVersion`/`kind`), custom
//! resources and what upstream's apiextensions and aggregator servers store
//! (CustomResourceDefinitions, APIServices) as JSON ([`Origin`]). JSON is
//! written as Go's encoder writes it (`gojson.rs`: `<`, `>`, `&` escaped, a
//! final newline), so an object upstream stored as JSON and kapi rewrote
//! unchanged keeps its bytes.
//!
//! Reading accepts every encoding whatever the write setting — protobuf,
//! JSON, YAML, told apart by their first bytes (`sniff.rs`) — so a store can
//! change format object by object. As upstream's decoder, a read also brings
//! an object stored at an older version of its kind to today's storage
//! version and applies today's defaults ([`OnRead`], which `kapi-resources`
//! implements: it knows which versions 1.33 still reads, and every kind's
//! defaults). One exception keeps LISTs fast: JSON already at today's version
//! is taken as stored (the watch cache streams those bytes as they are), so
//! it is not defaulted again; kapi wrote it with today's defaults, or
//! kube-apiserver did with `--storage-media-type=application/json`.
//!
//! Invariants: decoding is self-describing (it needs no resource: the bytes
//! name their type), so the watch cache transcodes what enters it without
//! knowing the resource ([`StorageCodec::to_json`]); encoding never stores
//! `resourceVersion` (the store removes it; it is the backend's revision).
//! Bytes in, bytes out: encryption at rest, a transformer over these bytes, is
//! not this module's concern.
//!
//! Where to look next: `store/mod.rs` (the store's encode and decode),
//! `cache/reflector.rs` (what enters the cache), `kapi-protobuf` (the wire
//! format).

mod gojson;
mod goyaml;
mod sniff;

use std::sync::Arc;

use bytes::Bytes;
use kapi_machinery::member::Members;
use serde_json::Value;

pub use gojson::{to_go_json, write_go_json, GoSpelling};
pub use goyaml::to_go_yaml;
pub use sniff::{sniff, type_meta, Sniffed};

/// `--storage-media-type`: how built-in kinds are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MediaType {
    /// `application/vnd.kubernetes.protobuf`, upstream's default.
    #[default]
    Protobuf,
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
}

impl MediaType {
    /// Every value the flag accepts, as upstream lists them.
    pub const ALL: [MediaType; 3] = [MediaType::Json, MediaType::Yaml, MediaType::Protobuf];

    pub fn parse(s: &str) -> Option<MediaType> {
        MediaType::ALL.into_iter().find(|m| m.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MediaType::Protobuf => kapi_protobuf::MEDIA_TYPE,
            MediaType::Json => "application/json",
            MediaType::Yaml => "application/yaml",
        }
    }
}

/// Which server a resource belongs to upstream, which decides how its objects
/// are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// A kind built into kube-apiserver's own server: `--storage-media-type`.
    #[default]
    Builtin,
    /// A kind of upstream's apiextensions or aggregator server
    /// (CustomResourceDefinitions, APIServices): always JSON.
    BuiltinJson,
    /// A custom resource: always JSON.
    Custom,
}

/// What a read does to a decoded object, as upstream's decoder: older
/// versions brought to today's, today's defaults applied.
pub trait OnRead: Send + Sync + 'static {
    /// Whether an object of `kind` stored at `api_version` is at an older
    /// version than its kind's storage version today.
    fn is_older(&self, api_version: &str, kind: &str) -> bool;

    /// `obj` (stored at an older version, naming it) at today's storage version.
    fn upgrade(&self, obj: Value) -> Value;

    /// Apply today's defaults of `obj`'s kind (at its storage version), e.g.
    /// to fields added since it was written.
    fn default(&self, obj: &mut Value);

    /// Whether a read of an object of `kind` stored at `api_version` changes
    /// nothing (not older, no defaults): the stored object is what a read
    /// gives, so its JSON can be written straight from the stored bytes.
    fn reads_as_stored(&self, _api_version: &str, _kind: &str) -> bool {
        false
    }
}

/// Why stored bytes could not be read or an object not written.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("{0}")]
    Protobuf(#[from] kapi_protobuf::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Yaml(String),
    #[error("the stored value is not an object")]
    NotAnObject,
}

/// How one server reads and writes objects in storage. Cheap to clone.
#[derive(Clone, Default)]
pub struct StorageCodec {
    media: MediaType,
    on_read: Option<Arc<dyn OnRead>>,
}

impl std::fmt::Debug for StorageCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StorageCodec({})", self.media.as_str())
    }
}

impl StorageCodec {
    /// Built-in kinds written in `media`; older versions read as stored.
    pub fn new(media: MediaType) -> StorageCodec {
        StorageCodec {
            media,
            on_read: None,
        }
    }

    /// Upgrade and default what is read with `on_read`.
    pub fn with_on_read(mut self, on_read: Arc<dyn OnRead>) -> StorageCodec {
        self.on_read = Some(on_read);
        self
    }

    pub fn media_type(&self) -> MediaType {
        self.media
    }

    /// How objects of `origin` are written.
    pub fn media_for(&self, origin: Origin) -> MediaType {
        match origin {
            Origin::Builtin => self.media,
            Origin::BuiltinJson | Origin::Custom => MediaType::Json,
        }
    }

    /// The bytes storage keeps for `obj`, an object of `origin` at its storage
    /// version (naming it) without `resourceVersion`. A built-in kind without
    /// a protobuf message is written as JSON.
    pub fn encode(&self, origin: Origin, obj: &Value) -> Result<Bytes, CodecError> {
        let mut bytes = match self.media_for(origin) {
            MediaType::Protobuf => match kapi_protobuf::encode_object(obj) {
                Ok(b) => b,
                Err(kapi_protobuf::Error::UnknownKind { .. }) => go_json_line(obj),
                Err(e) => return Err(e.into()),
            },
            MediaType::Json => go_json_line(obj),
            MediaType::Yaml => yaml(obj)?,
        };
        // The value lives in the backend for as long as the object: without
        // this it keeps the writer's doubled capacity too.
        bytes.shrink_to_fit();
        Ok(Bytes::from(bytes))
    }

    /// Stored bytes, in any encoding, as the object at today's storage version
    /// (upgraded and defaulted unless it is JSON at today's version).
    pub fn decode(&self, bytes: &[u8]) -> Result<Value, CodecError> {
        let (obj, as_stored) = match sniff(bytes) {
            Sniffed::Protobuf => (kapi_protobuf::decode_stored(bytes)?, false),
            Sniffed::Json => (serde_json::from_slice::<Value>(bytes)?, true),
            Sniffed::Other => (from_yaml(bytes)?, false),
        };
        if !obj.is_object() {
            return Err(CodecError::NotAnObject);
        }
        Ok(self.read(obj, as_stored))
    }

    /// Stored bytes as JSON at today's storage version (no final newline): what
    /// the watch cache keeps and streams. JSON already at today's version is
    /// returned as is (a slice of the same buffer, no copy). `None` when the
    /// bytes are not an object in any encoding (kept as they are by the caller).
    pub fn to_json(&self, bytes: &Bytes) -> Option<Bytes> {
        match sniff(bytes) {
            Sniffed::Json => {
                let current = match type_meta(bytes) {
                    Some((av, kind)) => !self.is_older(&av, &kind),
                    None => true,
                };
                if current {
                    return Some(bytes.slice(..trimmed_len(bytes)));
                }
            }
            Sniffed::Protobuf => {
                if let Some(json) = self.protobuf_json(bytes) {
                    return Some(json);
                }
            }
            Sniffed::Other if !looks_like_yaml_object(bytes) => return None,
            Sniffed::Other => {}
        }
        let obj = self.decode(bytes).ok()?;
        Some(decoded_json(&obj, bytes.len()))
    }

    /// Protobuf `bytes` as [`StorageCodec::to_json`] makes them, written
    /// straight from the wire without decoding them into an object, when a
    /// read of their kind changes nothing ([`OnRead::reads_as_stored`]) and
    /// the walk can promise the decode's text (`kapi_protobuf::stored_to_json`).
    pub fn protobuf_json(&self, bytes: &[u8]) -> Option<Bytes> {
        let reads_as_stored = |av: &str, kind: &str| {
            self.on_read
                .as_ref()
                .is_none_or(|hooks| hooks.reads_as_stored(av, kind))
        };
        let mut out = Vec::with_capacity(bytes.len() * 3 / 2 + 128);
        kapi_protobuf::stored_to_json(bytes, reads_as_stored, &gojson::GoSpelling, &mut out)?;
        out.shrink_to_fit();
        Some(Bytes::from(out))
    }

    /// Protobuf `bytes` decoded, with the JSON [`StorageCodec::to_json`] makes
    /// of them, from one decode: for a writer that answers with the object and
    /// hands the watch cache its JSON (`cache::CachedBackend::offer_json`).
    /// `None` for other encodings, whose JSON costs the cache no decode.
    pub fn decode_with_json(&self, bytes: &[u8]) -> Option<(Value, Bytes)> {
        if sniff(bytes) != Sniffed::Protobuf {
            return None;
        }
        let obj = self.decode(bytes).ok()?;
        let json = decoded_json(&obj, bytes.len());
        Some((obj, json))
    }

    /// Whether `other` decodes every value as this codec does (the same
    /// upgrades and defaults on read; the media type only matters to writes).
    pub fn reads_as(&self, other: &StorageCodec) -> bool {
        match (&self.on_read, &other.on_read) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    fn is_older(&self, api_version: &str, kind: &str) -> bool {
        self.on_read
            .as_ref()
            .is_some_and(|u| u.is_older(api_version, kind))
    }

    /// `obj` decoded: upgraded when older, defaulted unless it is JSON at
    /// today's version (`json`, taken as stored).
    fn read(&self, obj: Value, json: bool) -> Value {
        let Some(hooks) = &self.on_read else {
            return obj;
        };
        let av = obj.member_str("apiVersion").unwrap_or("");
        let kind = obj.member_str("kind").unwrap_or("");
        if json && !hooks.is_older(av, kind) {
            return obj;
        }
        let mut obj = if hooks.is_older(av, kind) {
            hooks.upgrade(obj)
        } else {
            obj
        };
        hooks.default(&mut obj);
        obj
    }
}

/// The JSON the cache keeps of `obj`, decoded from `stored_len` bytes: sized
/// from them so the writer seldom grows it (JSON of an object runs about 1.2×
/// its protobuf), and any slack given back, as the cache keeps it.
fn decoded_json(obj: &Value, stored_len: usize) -> Bytes {
    let mut out = Vec::with_capacity(stored_len * 3 / 2 + 128);
    write_go_json(obj, &mut out);
    out.shrink_to_fit();
    Bytes::from(out)
}

/// `obj` as Go's JSON encoder writes it, with its final newline.
fn go_json_line(obj: &Value) -> Vec<u8> {
    let mut out = to_go_json(obj);
    out.push(b'\n');
    out
}

/// Length of `bytes` without trailing whitespace.
fn trimmed_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1)
}

/// YAML as upstream writes it (through JSON, so keys in Go's YAML order).
fn yaml(obj: &Value) -> Result<Vec<u8>, CodecError> {
    if !obj.is_object() {
        return Err(CodecError::NotAnObject);
    }
    to_go_yaml(obj)
        .map(String::into_bytes)
        .map_err(|e| CodecError::Yaml(e.to_string()))
}

fn from_yaml(bytes: &[u8]) -> Result<Value, CodecError> {
    let text = std::str::from_utf8(bytes).map_err(|e| CodecError::Yaml(e.to_string()))?;
    serde_saphyr::from_str::<Value>(text).map_err(|e| CodecError::Yaml(e.to_string()))
}

/// Whether non-JSON, non-protobuf bytes may be a YAML object of a kind: they
/// name `apiVersion:` and `kind:` at the start of a line. Anything else is
/// left alone rather than read as some YAML scalar.
fn looks_like_yaml_object(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let starts = |p: &str| text.starts_with(p) || text.contains(&format!("\n{p}"));
    starts("apiVersion:") && starts("kind:")
}

#[cfg(test)]
mod tests;
