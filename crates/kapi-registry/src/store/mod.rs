//! The generic registry store: one implementation of create, get, list, update,
//! delete and watch for every resource, parameterised by its [`ResourceDef`] and
//! strategy. Objects are JSON; storage holds them encoded by the server's
//! [`StorageCodec`] (protobuf, JSON or YAML, read whatever was written), at the
//! storage version and without `resourceVersion`, which is filled from the
//! storage revision on the way out, as upstream's etcd3 store does.
//!
//! One verb per file: `create.rs`, `update.rs`, `delete.rs`, `list.rs`,
//! `watch.rs`. Where to look next: `kapi-storage` below, the handlers in
//! `kapi-server` above.

mod admitted;
mod cached;
mod create;
mod delete;
pub mod gc_finalizers;
mod kept;
mod list;
mod object_identity;
pub mod options;
mod update;
mod watch;
mod watch_cached;

use std::sync::Arc;

use bytes::Bytes;
use kapi_machinery::schema::{NoSchema, SchemaNav, TypeRef};
use kapi_machinery::status::ApiError;
use kapi_storage::{Backend, KeyValue, Revision, StorageError};
use serde_json::Value;

use crate::codec::{sniff, MediaType, Sniffed, StorageCodec};
use crate::meta;
use crate::resource::ResourceDef;

pub use cached::CachedList;
pub use delete::DeleteOutcome;
pub use kept::KeptList;
pub use list::ListResult;
pub use object_identity::ObjectIdentity;
pub use update::UpdateTarget;
pub use watch::{CachedSource, WatchEvent, WatchEventType, WatchReceiver};

/// A written object, with its JSON when the store has it at hand. The object
/// itself ([`Store::written_object`]) is decoded from what was stored only
/// when asked for: a client answered in JSON needs just the JSON.
pub struct Written {
    object: WrittenObject,
    pub json: Option<WrittenJson>,
}

enum WrittenObject {
    /// Decoded (or, in a dry run, as it would have been stored), as served.
    Served(Value),
    /// Not decoded yet: what storage returned.
    Stored(KeyValue),
}

impl Written {
    pub(crate) fn served(obj: Value) -> Written {
        Written {
            object: WrittenObject::Served(obj),
            json: None,
        }
    }

    /// The object, when it has been decoded.
    pub fn decoded(&self) -> Option<&Value> {
        match &self.object {
            WrittenObject::Served(v) => Some(v),
            WrittenObject::Stored(_) => None,
        }
    }

    /// What storage returned, when the object was not decoded and its
    /// JSON is at hand: the stored bytes (protobuf) read as they are stored
    /// and are what is served, so an answer may be made from them.
    pub fn stored(&self) -> Option<&KeyValue> {
        match &self.object {
            WrittenObject::Stored(kv) if self.json.is_some() => Some(kv),
            _ => None,
        }
    }
}

/// What [`Store::decode_ahead`] prepared: the decoded object when it was
/// decoded, and the JSON.
pub(crate) type Ahead = (Option<Value>, Bytes);

/// The Go-style JSON of a written object as stored, which lacks only its
/// `resourceVersion` (`cache::write_json_with_rv` adds it): the JSON the watch
/// cache keeps of it.
pub struct WrittenJson {
    pub json: Bytes,
    pub revision: Revision,
}

/// The generic store of one resource.
#[derive(Clone)]
pub struct Store {
    pub def: Arc<ResourceDef>,
    backend: Arc<dyn Backend>,
    /// The schema of the objects, for `managedFields` (unknown: fields are leaves).
    schema: Arc<dyn SchemaNav>,
    root: TypeRef,
    /// The watch cache reads and watches go through, once installed.
    cache: Option<crate::cache::CachedBackend>,
    /// How objects are written to and read from the backend.
    codec: StorageCodec,
    /// Deletes add and honour the garbage collector's finalizers
    /// (`--enable-garbage-collector`, on by default).
    garbage_collection: bool,
    /// What the resource's storage does beyond the store (`crate::hooks`).
    hooks: Option<Arc<dyn crate::hooks::StoreHooks>>,
    /// The key of this resource's label and field sets in cached objects
    /// (another resource on the same prefix may select on other fields).
    attrs_key: crate::cache::AttrsKey,
    /// `def.list_prefix(None)`, which every kept list's read looks up.
    all_prefix: String,
}

impl Store {
    pub fn new(def: Arc<ResourceDef>, backend: Arc<dyn Backend>) -> Self {
        let fields = def.strategy.selectable_field_names();
        let attrs_key = crate::cache::attrs_key(&def.group, &def.kind, &fields);
        Store {
            attrs_key,
            all_prefix: def.list_prefix(None),
            def,
            backend,
            schema: Arc::new(NoSchema),
            root: TypeRef::UNKNOWN,
            cache: None,
            codec: StorageCodec::default(),
            garbage_collection: true,
            hooks: None,
        }
    }

    /// Encode and decode objects with `codec` (the default: protobuf, no
    /// older versions to upgrade).
    pub fn with_codec(mut self, codec: StorageCodec) -> Self {
        self.codec = codec;
        self
    }

    pub fn codec(&self) -> &StorageCodec {
        &self.codec
    }

    /// Call `hooks` around this store's writes.
    pub fn with_hooks(mut self, hooks: Arc<dyn crate::hooks::StoreHooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Tell the hooks `obj` is gone from storage.
    pub(crate) async fn removed(&self, obj: &Value) {
        if let Some(h) = &self.hooks {
            h.deleted(obj).await;
        }
    }

    /// With `on` false, deletes neither add nor act on the garbage
    /// collector's `orphan` / `foregroundDeletion` finalizers and ignore
    /// `propagationPolicy`, as upstream's store with garbage collection off.
    pub fn with_garbage_collection(mut self, on: bool) -> Self {
        self.garbage_collection = on;
        self
    }

    /// Use `schema` (with objects of type `root`) to compute field sets.
    pub fn with_schema(mut self, schema: Arc<dyn SchemaNav>, root: TypeRef) -> Self {
        self.schema = schema;
        self.root = root;
        self
    }

    /// The field manager for writes to this resource (`Some("status")` through
    /// the status subresource).
    pub fn field_manager<'a>(
        &'a self,
        api_version: &'a str,
        subresource: Option<&'a str>,
    ) -> crate::managed::FieldManager<'a> {
        crate::managed::FieldManager {
            schema: self.schema.as_ref(),
            root: &self.root,
            api_version,
            kind: &self.def.kind,
            subresource,
            has_status: self.def.has_status(),
        }
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// One object; `resource_version` other than unset/"0" reads at that revision.
    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
        resource_version: Option<&str>,
    ) -> Result<Value, ApiError> {
        let key = self.def.key(namespace, name);
        if let Some(rv) = resource_version.filter(|rv| !rv.is_empty()) {
            if let Some(obj) = self.get_cached(&key, name, rv).await? {
                return Ok(obj);
            }
        }
        let at = match resource_version {
            None | Some("") | Some("0") => None,
            Some(rv) => Some(parse_rv(rv)?),
        };
        match self.backend.get(&key, at).await {
            Ok(Some(kv)) => self.decode(&kv),
            Ok(None) => Err(self.not_found(name)),
            Err(e) => Err(self.storage_error(e, name)),
        }
    }

    pub(crate) fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(self.def.group_resource(), name)
    }

    /// Storage bytes to an object, with `resourceVersion` from the revision.
    pub fn decode_value(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        self.decode(kv)
    }

    /// Storage bytes to an object, with `resourceVersion` from the revision.
    pub(crate) fn decode(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        self.def.to_served(self.decode_stored(kv)?)
    }

    /// Before writing `stored` under `key`: its JSON as a read of it would
    /// give (without `resourceVersion`), with the object decoded from it when
    /// the JSON came from decoding it, when the watch cache transcodes it as
    /// this store's codec does. The JSON is offered to the cache, so one
    /// decode serves both the write's answer and the cache; or none, for a
    /// caller answering in JSON (`json_only`): `StorageCodec::protobuf_json`
    /// writes the JSON of a kind that reads as stored straight from the bytes.
    pub(crate) fn decode_ahead(&self, key: &str, stored: &Bytes, json_only: bool) -> Option<Ahead> {
        let cache = self
            .cache
            .as_ref()
            .filter(|c| c.transcodes_like(&self.codec))?;
        let walked = if json_only {
            self.codec.protobuf_json(stored)
        } else {
            None
        };
        let ahead = match walked {
            Some(json) => (None, json),
            None => {
                let (obj, json) = self.codec.decode_with_json(stored)?;
                (Some(obj), json)
            }
        };
        cache.offer_json(key, stored, ahead.1.clone());
        Some(ahead)
    }

    /// The write [`Store::decode_ahead`] prepared failed.
    pub(crate) fn withdraw_ahead(&self, key: &str, stored: &Bytes, offered: bool) {
        if let Some(cache) = self.cache.as_ref().filter(|_| offered) {
            cache.withdraw_json(key, stored);
        }
    }

    /// The written object as [`Store::decode`] reads it from `kv` (decoded
    /// now only when [`Store::decode_ahead`] decoded it), with its JSON
    /// (without `resourceVersion`) when that is also the served object's (the
    /// resource has no conversion).
    pub(crate) fn answer(&self, ahead: Option<Ahead>, kv: KeyValue) -> Result<Written, ApiError> {
        let Some((obj, json)) = ahead else {
            return Ok(Written::served(self.decode(&kv)?));
        };
        let json = self.def.conversion.is_none().then_some(WrittenJson {
            json,
            revision: kv.mod_revision,
        });
        let object = match obj {
            Some(mut obj) => {
                meta::set_str(&mut obj, "resourceVersion", &kv.mod_revision.to_string());
                WrittenObject::Served(self.def.to_served(obj)?)
            }
            None if json.is_some() => WrittenObject::Stored(kv),
            None => WrittenObject::Served(self.decode(&kv)?),
        };
        Ok(Written { object, json })
    }

    /// The written object as served, decoded now if it was not yet.
    pub fn written_object(&self, written: Written) -> Result<Value, ApiError> {
        match written.object {
            WrittenObject::Served(v) => Ok(v),
            WrittenObject::Stored(kv) => self.decode(&kv),
        }
    }

    /// Decode the written object in place, for a caller that needs it.
    pub(crate) fn decode_written(&self, written: &mut Written) -> Result<(), ApiError> {
        if let WrittenObject::Stored(kv) = &written.object {
            written.object = WrittenObject::Served(self.decode(kv)?);
        }
        Ok(())
    }

    /// Storage bytes of several objects at the served version (one conversion
    /// batch), for callers holding cached objects.
    pub fn decode_values<'a>(
        &self,
        kvs: impl IntoIterator<Item = &'a KeyValue>,
    ) -> Result<Vec<Value>, ApiError> {
        self.decode_all(kvs)
    }

    /// Storage bytes of several objects, converted to the served version in
    /// one batch (a list page).
    pub(crate) fn decode_all<'a>(
        &self,
        kvs: impl IntoIterator<Item = &'a KeyValue>,
    ) -> Result<Vec<Value>, ApiError> {
        let stored = kvs
            .into_iter()
            .map(|kv| self.decode_stored(kv))
            .collect::<Result<Vec<_>, _>>()?;
        self.def.to_served_all(stored)
    }

    /// Storage bytes to the object's metadata only (as a
    /// `PartialObjectMetadata`-shaped value: `apiVersion`, `kind` and `metadata`
    /// with `resourceVersion`), for readers that need nothing else, such as the
    /// garbage collector's monitors. The parser skips every other field without
    /// allocating, so this costs a fraction of [`Store::decode_value`]; with
    /// `managed_fields` false, `metadata.managedFields` (often most of the
    /// metadata) is skipped too. No conversion runs: a conversion may change
    /// only labels and annotations, and callers of this read neither.
    pub fn decode_metadata(&self, kv: &KeyValue, managed_fields: bool) -> Result<Value, ApiError> {
        let metadata = if managed_fields {
            Self::stored_metadata(kv)?
        } else {
            Self::stored_metadata_without_managed_fields(kv)?
        };
        Ok(self.metadata_object(kv, metadata))
    }

    /// As [`Store::decode_metadata`], keeping of `metadata` only what
    /// identifies the object and its place in the ownership graph: name,
    /// namespace, uid, ownerReferences, finalizers and the deletion fields
    /// (with `resourceVersion`). Labels, annotations and the rest are skipped
    /// unallocated: the garbage collector's read of every object.
    pub fn decode_identity(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        self.decode_identity_at(kv, kv.mod_revision)
    }

    /// [`Store::decode_identity`] with `revision` as its `resourceVersion`
    /// (a watch event's, which for a deletion is the deletion's).
    pub fn decode_identity_at(&self, kv: &KeyValue, revision: i64) -> Result<Value, ApiError> {
        let metadata = picked_metadata::<metadata_only::Identity>(kv)?;
        Ok(self.metadata_object_at(revision, metadata))
    }

    /// [`Store::decode_identity_at`] typed: the same fields, read by the same
    /// scan, without building a JSON object (the garbage collector's
    /// informers read one per event of every resource).
    pub fn identity_at(&self, kv: &KeyValue, revision: i64) -> Result<ObjectIdentity, ApiError> {
        let mut id =
            picked_into::<metadata_only::Identity, _>(kv, ObjectIdentity::default, |id, k, v| {
                id.set(k, v)
            })?;
        id.resource_version = Some(itoa::Buffer::new().format(revision).to_owned());
        Ok(id)
    }

    /// `{apiVersion, kind, metadata}` around `metadata` read from `kv`, with
    /// its `resourceVersion`.
    fn metadata_object(&self, kv: &KeyValue, metadata: serde_json::Map<String, Value>) -> Value {
        self.metadata_object_at(kv.mod_revision, metadata)
    }

    /// `{apiVersion, kind, metadata}` around `metadata`, with `revision` as
    /// its `resourceVersion`. Built in place: `json!` would serialize a copy.
    fn metadata_object_at(
        &self,
        revision: i64,
        mut metadata: serde_json::Map<String, Value>,
    ) -> Value {
        let rv = itoa::Buffer::new().format(revision).to_owned();
        metadata.insert("resourceVersion".into(), rv.into());
        Value::Object(serde_json::Map::from_iter([
            ("apiVersion".to_owned(), self.def.api_version().into()),
            ("kind".to_owned(), self.def.kind.clone().into()),
            ("metadata".to_owned(), Value::Object(metadata)),
        ]))
    }

    /// [`Store::stored_metadata`] without `managedFields`, which the parser skips.
    pub(crate) fn stored_metadata_without_managed_fields(
        kv: &KeyValue,
    ) -> Result<serde_json::Map<String, Value>, ApiError> {
        picked_metadata::<metadata_only::AllButManagedFields>(kv)
    }

    /// The stored object's `metadata` object, parsed alone.
    pub(crate) fn stored_metadata(
        kv: &KeyValue,
    ) -> Result<serde_json::Map<String, Value>, ApiError> {
        metadata_only::<serde_json::Map<String, Value>>(kv)
    }

    /// Storage bytes to the object at its storage version, with `resourceVersion`.
    fn decode_stored(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        let mut obj = self
            .codec
            .decode(&kv.value)
            .map_err(|e| ApiError::internal(format!("decoding {}: {e}", kv.key)))?;
        meta::set_str(&mut obj, "resourceVersion", &kv.mod_revision.to_string());
        Ok(obj)
    }

    /// The stored form of `obj`: at the storage version, without
    /// `resourceVersion`, encoded as the codec writes the resource's kind.
    pub(crate) fn encode(&self, obj: &Value) -> Result<Bytes, ApiError> {
        if self.def.is_at_storage_version(obj)
            && meta::meta(obj).is_none_or(|m| !m.contains_key("resourceVersion"))
        {
            // Already what is stored (a create's object): encoded as it is.
            return self
                .codec
                .encode(self.def.origin, obj)
                .map_err(|e| self.unencodable(e));
        }
        let mut copy = self.def.to_storage(obj.clone())?;
        meta::remove(&mut copy, "resourceVersion");
        self.codec
            .encode(self.def.origin, &copy)
            .map_err(|e| self.unencodable(e))
    }

    /// `obj` as storage will give it back — the client's object read into
    /// upstream's types, in effect: when the kind is stored as protobuf,
    /// through the codec and back, keeping only what the message holds (no
    /// keys the kind lacks, no `null`s, no zeros of Go's non-pointer fields).
    /// An update compares this with the stored object, so an update that
    /// changes nothing upstream would store is seen as one (no new revision,
    /// no generation bump).
    pub(crate) fn normalize(&self, obj: Value) -> Result<Value, ApiError> {
        if self.codec.media_for(self.def.origin) != MediaType::Protobuf {
            return Ok(obj);
        }
        let stored = self.def.to_storage(obj)?;
        let bytes = self
            .codec
            .encode(self.def.origin, &stored)
            .map_err(|e| self.unencodable(e))?;
        let back = self
            .codec
            .decode(&bytes)
            .map_err(|e| ApiError::internal(format!("decoding {}: {e}", self.def.kind)))?;
        self.def.to_served(back)
    }

    /// An object that does not fit its kind's types: upstream fails to decode
    /// the request body into them, a 400.
    fn unencodable(&self, e: crate::codec::CodecError) -> ApiError {
        let kind = &self.def.kind;
        ApiError::bad_request(format!(
            "{kind} in version {:?} cannot be handled as a {kind}: {e}",
            self.def.version
        ))
    }

    /// A storage failure as the client sees it.
    pub(crate) fn storage_error(&self, e: StorageError, name: &str) -> ApiError {
        let gr = self.def.group_resource();
        match e {
            StorageError::NotFound { .. } => ApiError::not_found(gr, name),
            StorageError::AlreadyExists { .. } => ApiError::already_exists(gr, name),
            StorageError::Conflict { .. } => ApiError::optimistic_lock_conflict(gr, name),
            StorageError::Compacted { .. } => ApiError::resource_expired(
                "The resourceVersion for the provided list is too old.".to_string(),
            ),
            StorageError::FutureRevision { requested, current } => ApiError::timeout(
                format!("Too large resource version: {requested}, current: {current}"),
                1,
            ),
            StorageError::Unavailable(msg) => {
                tracing::warn!(error = %msg, "storage unavailable");
                ApiError::service_unavailable(format!("storage is unavailable: {msg}"))
            }
            StorageError::Internal(msg) => ApiError::internal(msg),
        }
    }
}

pub(crate) fn parse_rv(rv: &str) -> Result<i64, ApiError> {
    rv.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| {
            // Upstream's storage refuses it with a plain error (500).
            ApiError::new(
                500,
                kapi_machinery::status::Reason::Unknown,
                format!("resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"),
            )
        })
}

use metadata_only::Picked;

/// Parse only the top-level `metadata` of stored bytes, as an `M`.
fn metadata_only<M: serde::de::DeserializeOwned + Default>(kv: &KeyValue) -> Result<M, ApiError> {
    let json = json_of(kv)?;
    metadata_in(kv, &json, crate::json_scan::metadata_open_brace(&json))
}

/// [`metadata_only`] of `json` (`kv`'s value as JSON), whose `metadata`
/// object opens at `start` when the scan found it.
fn metadata_in<M: serde::de::DeserializeOwned + Default>(
    kv: &KeyValue,
    json: &[u8],
    start: Option<usize>,
) -> Result<M, ApiError> {
    #[derive(serde::Deserialize)]
    struct MetadataOnly<M> {
        #[serde(default = "Option::default")]
        metadata: Option<M>,
    }
    let err = |e: serde_json::Error| ApiError::internal(format!("decoding {}: {e}", kv.key));
    // Only the `metadata` member is parsed: the members before it are
    // skipped by a scan, and those after it (often most of the object, such
    // as a ConfigMap's data) are never read.
    if let Some(start) = start {
        let mut de = serde_json::Deserializer::from_slice(&json[start..]);
        return M::deserialize(&mut de).map_err(err);
    }
    let m: MetadataOnly<M> = serde_json::from_slice(json).map_err(err)?;
    Ok(m.metadata.unwrap_or_default())
}

/// The top-level `metadata` of stored bytes cut to what `P` keeps.
fn picked_metadata<P: metadata_only::Pick>(
    kv: &KeyValue,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    // Room for an identity and the `resourceVersion` added to it.
    let new = || serde_json::Map::with_capacity(8);
    picked_into::<P, _>(kv, new, |m, k, v| {
        m.insert(k.to_owned(), v);
    })
}

/// The members of the top-level `metadata` of stored bytes that `P` keeps,
/// each `put` in order into what `new` makes: by a scan of its members
/// ([`metadata_only::scan_kept`]) when it can tell, else parsed (into a
/// fresh one: the scan may have put some before it gave up).
fn picked_into<P: metadata_only::Pick, T>(
    kv: &KeyValue,
    new: impl Fn() -> T,
    mut put: impl FnMut(&mut T, &str, Value),
) -> Result<T, ApiError> {
    let json = json_of(kv)?;
    let start = crate::json_scan::metadata_open_brace(&json);
    let mut out = new();
    let scanned =
        start.and_then(|s| metadata_only::scan_kept::<P>(&json[s..], |k, v| put(&mut out, k, v)));
    if scanned.is_some() {
        return Ok(out);
    }
    let mut out = new();
    for (k, v) in metadata_in::<Picked<P>>(kv, &json, start)?.0 {
        put(&mut out, &k, v);
    }
    Ok(out)
}

/// The stored value as JSON: the bytes themselves when they are JSON (always
/// so for what the watch cache holds), else transcoded. Only for reading
/// metadata and fields, which no version upgrade changes.
pub(crate) fn json_of(kv: &KeyValue) -> Result<std::borrow::Cow<'_, [u8]>, ApiError> {
    if sniff(&kv.value) == Sniffed::Json {
        return Ok(std::borrow::Cow::Borrowed(&kv.value[..]));
    }
    StorageCodec::default()
        .to_json(&kv.value)
        .map(|b| std::borrow::Cow::Owned(b.to_vec()))
        .ok_or_else(|| ApiError::internal(format!("decoding {}: not an object", kv.key)))
}

mod metadata_only;

#[cfg(test)]
mod tests;
