//! One cached object: the backend's [`KeyValue`] plus what readers derive from it,
//! computed at most once and shared by every reader — its label and field sets
//! (for selectors) and where its top-level `metadata` object opens and its leading
//! `kind` and `apiVersion` end (so its JSON can be written with `resourceVersion`
//! spliced in, whole or as a typed list's item, without decoding or re-encoding),
//! and its other encodings (protobuf), kept once asked for (`encoded.rs`).
//!
//! Invariant: a `CachedObject` never changes after it is built; a write to the key
//! replaces the whole `Arc` in the cache.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use kapi_storage::{KeyValue, Revision};

use super::encoded::{Encoded, Form};
use crate::json_scan::{item_layout, metadata_open_brace};

/// Ask the CPU to start loading every cache line of the first
/// [`PREFETCH_BYTES`] of `bytes`. A hint only: it changes no state and cannot fault.
pub fn prefetch_bytes(bytes: &[u8]) {
    for at in (0..bytes.len().min(PREFETCH_BYTES)).step_by(64) {
        mem_prefetch::prefetch_read_data::<_, 3>(&bytes[at]);
    }
}

/// How much of an object [`CachedObject::prefetch_value`] asks for. Loading
/// the whole of a 1.5 KB object ahead (with its header) took the server's CPU
/// per LIST of 300,000 from a median of 0.42 to 0.36 CPU-s; the first 512
/// bytes only made no measurable difference.
pub const PREFETCH_BYTES: usize = 4096;

/// The label and field sets selectors are evaluated against (upstream's
/// `labels.Set` / `fields.Set` kept by the cacher).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pub labels: Set,
    pub fields: Set,
}

/// A small string map kept for every cached object: one sorted slice instead of
/// a tree (a `BTreeMap` node costs ~0.5 KB even for two entries, and every
/// cached object of a resource read with a selector keeps two of these).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set(Box<[(Box<str>, Box<str>)]>);

impl Set {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl From<BTreeMap<String, String>> for Set {
    fn from(map: BTreeMap<String, String>) -> Set {
        Set(map.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

impl FromIterator<(String, String)> for Set {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Set {
        iter.into_iter().collect::<BTreeMap<_, _>>().into()
    }
}

/// Which reader's attribute sets: resources on one prefix whose field sets
/// differ (core and events.k8s.io events) compute different sets from one
/// object ([`attrs_key`]).
pub type AttrsKey = u64;

/// The key of the attribute sets of `group`'s `kind` with these selectable
/// fields.
pub fn attrs_key(group: &str, kind: &str, fields: &[String]) -> AttrsKey {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (group, kind, fields).hash(&mut h);
    h.finish()
}

#[derive(Debug)]
pub struct CachedObject {
    pub kv: KeyValue,
    /// The attribute sets of the first reader to ask, under its key.
    attrs: OnceLock<(AttrsKey, Option<Attrs>)>,
    /// Where the stored JSON is cut to splice in the `resourceVersion` and to
    /// leave out the leading `kind` and `apiVersion` ([`Cut`]).
    cut: OnceLock<Option<Cut>>,
    encoded: Encoded,
}

/// Offsets into a cached object's JSON ([`item_layout`]), as `u32` to keep
/// the cache entry small (an object is far below 4 GiB).
#[derive(Debug, Clone, Copy)]
struct Cut {
    /// The first member after the leading `kind` and `apiVersion`;
    /// [`Cut::NO_BODY`] when the object cannot be cut there.
    body: u32,
    /// Where the top-level `metadata` object opens.
    metadata: u32,
}

impl Cut {
    const NO_BODY: u32 = u32::MAX;

    fn of(bytes: &[u8]) -> Option<Cut> {
        let l = item_layout(bytes)?;
        let body = l.body.and_then(|b| u32::try_from(b).ok());
        Some(Cut {
            body: body.unwrap_or(Self::NO_BODY),
            metadata: u32::try_from(l.metadata).ok()?,
        })
    }
}

/// Whether JSON written from the cache keeps the object's `kind` and
/// `apiVersion`: an object on its own (a GET, a watch event, an unstructured
/// list's item) does; an item of a typed `<Kind>List` does not, as upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeMeta {
    Keep,
    Omit,
}

impl CachedObject {
    pub fn new(kv: KeyValue) -> Arc<Self> {
        Arc::new(CachedObject {
            kv,
            attrs: OnceLock::new(),
            cut: OnceLock::new(),
            encoded: Encoded::default(),
        })
    }

    /// `f` of the object's attributes as the reader of key `key` computes
    /// them with `compute`: kept for the first reader's key, computed afresh
    /// for another's. `None` when the value cannot be decoded (such an object
    /// matches no selector).
    pub fn with_attrs<R>(
        &self,
        key: AttrsKey,
        compute: impl FnOnce(&KeyValue) -> Option<Attrs>,
        f: impl FnOnce(Option<&Attrs>) -> R,
    ) -> R {
        let mut compute = Some(compute);
        let (k, attrs) = self.attrs.get_or_init(|| {
            let c = compute.take().expect("unused");
            (key, c(&self.kv))
        });
        if *k == key {
            return f(attrs.as_ref());
        }
        let c = compute
            .take()
            .expect("unused when another key holds the memo");
        f(c(&self.kv).as_ref())
    }

    /// The object in encoding `form` (at its `mod_revision`), computed by
    /// `compute` on first use and shared afterwards (`encoded.rs`).
    pub fn encoded(
        &self,
        form: Form,
        compute: impl FnOnce(&KeyValue) -> Option<Bytes>,
    ) -> Option<Bytes> {
        self.encoded.get_or_compute(form, || compute(&self.kv))
    }

    /// The bytes of `form` kept so far, if any.
    pub fn kept(&self, form: Form) -> Option<Bytes> {
        self.encoded.get(form)
    }

    /// Ask the CPU to start loading what [`Self::write_json`] reads first of this
    /// object: its header (the value's pointer and length, where its metadata
    /// opens). A hint only: it changes no state and cannot fault.
    pub fn prefetch_header(&self) {
        mem_prefetch::prefetch_read_data::<_, 3>(&self.kv);
        mem_prefetch::prefetch_read_data::<_, 3>(&self.cut);
    }

    /// Ask the CPU to start loading the stored bytes, every cache line of the
    /// first [`PREFETCH_BYTES`] (the hardware streams the rest of a larger
    /// object). Reads the header, so prefetch that first.
    pub fn prefetch_value(&self) {
        prefetch_bytes(&self.kv.value);
    }

    /// Append the object's JSON with `metadata.resourceVersion` set to `rv`,
    /// with or without its leading `kind` and `apiVersion` (`type_meta`).
    /// Returns `false` (and appends nothing) when the value is not a JSON
    /// object with a `metadata` object, or when it is to be written without
    /// its type and has a `kind` or `apiVersion` after another member.
    pub fn write_json(&self, rv: Revision, type_meta: TypeMeta, out: &mut Vec<u8>) -> bool {
        let bytes = &self.kv.value[..];
        let Some(cut) = *self.cut.get_or_init(|| Cut::of(bytes)) else {
            return false;
        };
        let brace = cut.metadata as usize;
        match type_meta {
            TypeMeta::Keep => splice_resource_version(bytes, brace, rv, out),
            TypeMeta::Omit if cut.body == Cut::NO_BODY => return false,
            TypeMeta::Omit => {
                // `{`, then the object from its first other member on.
                let body = cut.body as usize;
                out.push(b'{');
                splice_resource_version(&bytes[body..], brace - body, rv, out);
            }
        }
        true
    }
}

/// Append the JSON object `bytes` with `metadata.resourceVersion` set to `rv`
/// ([`CachedObject::write_json`] for bytes not cached); `false` (nothing
/// appended) when they are not an object with a `metadata` object.
pub fn write_json_with_rv(bytes: &[u8], rv: Revision, out: &mut Vec<u8>) -> bool {
    match metadata_open_brace(bytes) {
        Some(brace) => {
            splice_resource_version(bytes, brace, rv, out);
            true
        }
        None => false,
    }
}

/// `bytes` with `"resourceVersion":"<rv>"` as the first member of the object
/// opening at `brace` (the top-level `metadata`), which holds none.
fn splice_resource_version(bytes: &[u8], brace: usize, rv: Revision, out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 40);
    out.extend_from_slice(&bytes[..=brace]);
    out.extend_from_slice(b"\"resourceVersion\":\"");
    out.extend_from_slice(itoa::Buffer::new().format(rv).as_bytes());
    out.push(b'"');
    let rest = &bytes[brace + 1..];
    if rest.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'}') {
        out.push(b',');
    }
    out.extend_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn obj(json: &str) -> Arc<CachedObject> {
        CachedObject::new(KeyValue {
            key: "/k".into(),
            value: Bytes::copy_from_slice(json.as_bytes()),
            create_revision: 1,
            mod_revision: 1,
            version: 1,
        })
    }

    fn spliced(json: &str, rv: Revision) -> Option<serde_json::Value> {
        let mut out = Vec::new();
        obj(json)
            .write_json(rv, TypeMeta::Keep, &mut out)
            .then(|| serde_json::from_slice(&out).expect("valid JSON"))
    }

    #[test]
    fn splices_resource_version_into_top_level_metadata() {
        let v = spliced(
            r#"{"spec":{"template":{"metadata":{"name":"inner"}}},"metadata":{"name":"a","x":"}\"{"}}"#,
            42,
        )
        .unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["metadata"]["x"], "}\"{");
        assert!(v["spec"]["template"]["metadata"]
            .get("resourceVersion")
            .is_none());
        let v = spliced(r#"{ "a" : [1, {"b": "]"}], "metadata" : { } }"#, 7).unwrap();
        assert_eq!(v["metadata"], serde_json::json!({"resourceVersion": "7"}));
    }

    #[test]
    fn a_typed_list_item_leaves_out_the_leading_kind_and_api_version() {
        let json =
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}"#;
        let o = obj(json);
        let mut item = Vec::new();
        assert!(o.write_json(9, TypeMeta::Omit, &mut item));
        assert_eq!(
            String::from_utf8(item).unwrap(),
            r#"{"metadata":{"resourceVersion":"9","name":"a"},"data":{"k":"v"}}"#
        );
        // The same cached object still answers a GET whole.
        let mut whole = Vec::new();
        assert!(o.write_json(9, TypeMeta::Keep, &mut whole));
        assert_eq!(
            String::from_utf8(whole).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","name":"a"},"data":{"k":"v"}}"#
        );
        // Type members after others (YAML storage's sorted keys): the long way.
        let sorted = obj(r#"{"data":{},"kind":"ConfigMap","metadata":{}}"#);
        assert!(!sorted.write_json(3, TypeMeta::Omit, &mut Vec::new()));
        assert!(sorted.write_json(3, TypeMeta::Keep, &mut Vec::new()));
        // Without type members, or with empty metadata, nothing else changes.
        let mut out = Vec::new();
        assert!(obj(r#"{"metadata":{}}"#).write_json(3, TypeMeta::Omit, &mut out));
        assert_eq!(out, br#"{"metadata":{"resourceVersion":"3"}}"#);
    }

    #[test]
    fn not_an_object_with_metadata() {
        assert!(spliced("1", 1).is_none());
        assert!(spliced(r#"{"metadata":"x"}"#, 1).is_none());
        assert!(spliced(r#"{"spec":{}}"#, 1).is_none());
        assert!(spliced(r#"{"spec":{"#, 1).is_none());
    }

    #[test]
    fn prefetching_any_value_is_harmless() {
        for len in [0, 1, 63, 64, 65, PREFETCH_BYTES + 100] {
            let o = obj(&" ".repeat(len));
            o.prefetch_header();
            o.prefetch_value();
            assert_eq!(o.kv.value.len(), len);
        }
    }
}
