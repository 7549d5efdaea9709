//! The strategy: every per-resource policy the generic store consults.
//!
//! A resource contributes only what varies — defaulting, validation, what clients
//! may not set, immutable fields, field selectors, table columns. Every method
//! has the upstream-generic default, so a strategy overrides just its own rules.
//! Strategies are pure: no I/O, no storage access (allocation of cluster IPs and
//! similar side effects belong to admission, see `admission.rs`).

use kapi_machinery::validation::{name_is_dns_subdomain, ErrorList, ValidateNameFn};
use serde_json::Value;

/// One column of the server-side table (`as=Table`), as `metav1.TableColumnDefinition`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0: always shown; 1: only with `-o wide`.
    pub priority: i32,
}

impl Column {
    pub const fn new(name: &'static str, type_: &'static str, description: &'static str) -> Self {
        Column {
            name,
            type_,
            format: "",
            description,
            priority: 0,
        }
    }

    pub const fn format(mut self, format: &'static str) -> Self {
        self.format = format;
        self
    }

    pub const fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }
}

/// The generic table: what upstream's default table convertor shows.
pub fn default_columns() -> Vec<Column> {
    vec![
        Column::new("Name", "string", "Name must be unique within a namespace.").format("name"),
        Column::new(
            "Created At",
            "date",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
        ),
    ]
}

/// The cells of the generic table for one object.
pub fn default_cells(obj: &Value) -> Vec<Value> {
    vec![
        obj.pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null),
        obj.pointer("/metadata/creationTimestamp")
            .cloned()
            .unwrap_or(Value::Null),
    ]
}

/// What a delete does to an object's dependents when the client does not say
/// (upstream's `rest.GarbageCollectionPolicy`, per resource and version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GcPolicy {
    /// Dependents are collected in the background: no finalizer is added.
    #[default]
    DeleteDependents,
    /// Dependents are orphaned: the `orphan` finalizer is added (upstream's
    /// choice for some legacy group-versions, e.g. core/v1 replicationcontrollers
    /// and batch/v1 jobs).
    OrphanDependents,
    /// The resource takes no part in garbage collection: delete options never
    /// add GC finalizers (upstream: events).
    Unsupported,
}

/// What a write through the `status` subresource takes from the client's
/// metadata (upstream: each kind's status strategy `PrepareForUpdate`). Every
/// other part of the object but `status` stays as stored either way, and the
/// fields only the server sets (uid, creationTimestamp, ...) are the store's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMetadata {
    /// The client's metadata, but for these fields, which stay as stored
    /// (most built-in kinds: none; deployments: `labels`; pods: `ownerReferences`).
    ClientExcept(&'static [&'static str]),
    /// The stored metadata, but for `managedFields` (custom resources, flow
    /// control objects).
    Stored,
}

/// The fields upstream's `metav1.ResetObjectMetaForStatus` keeps as stored
/// (besides deletionTimestamp and generation, which no update changes).
pub const RESET_FOR_STATUS: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

pub trait Strategy: Send + Sync + 'static {
    /// Upstream defaulting; runs on every create and update (and patch result).
    fn default(&self, _obj: &mut Value) {}

    /// Whether [`Strategy::default`] may change an object. A strategy that
    /// keeps the no-op above says `false`: a stored object of its kind then
    /// reads as stored, so the JSON of a written one is made from its stored
    /// bytes without decoding them (`codec::StorageCodec::protobuf_json`).
    fn has_defaults(&self) -> bool {
        true
    }

    /// Clear what a client may not set on create (beyond the generic metadata
    /// reset the store does itself; status is dropped generically when the
    /// resource has a status subresource).
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Carry over or clear fields on update of the main resource.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Carry over or fill fields on update of a subresource (`status`,
    /// `approval`), after the store kept only what that subresource may change.
    fn prepare_for_subresource_update(&self, _sub: &str, _new: &mut Value, _old: &Value) {}

    /// What a `status` write keeps of the client's metadata.
    fn status_metadata(&self) -> StatusMetadata {
        StatusMetadata::ClientExcept(&[])
    }

    /// Validation of an update through a subresource.
    fn validate_subresource_update(&self, _sub: &str, new: &Value, old: &Value) -> ErrorList {
        self.validate_update(new, old)
    }

    /// Validation of a new object (metadata is validated generically).
    fn validate(&self, _obj: &Value) -> ErrorList {
        Vec::new()
    }

    /// Validation of an update, including immutable fields.
    fn validate_update(&self, new: &Value, _old: &Value) -> ErrorList {
        self.validate(new)
    }

    /// The warnings a create sends back (upstream's `WarningsOnCreate`), on
    /// the object as validated: what is accepted but likely a mistake.
    fn warnings_on_create(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }

    /// The warnings an update of the main resource sends back (upstream's
    /// `WarningsOnUpdate`), on the object as validated.
    fn warnings_on_update(&self, _new: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Whether a built-in kind's metadata gets kube-apiserver's core checks on
    /// top of the generic ones (unqualified finalizer names refused). Most kinds
    /// do; a few are validated with the generic `ObjectMeta` checks alone
    /// upstream. Custom resources and CRDs never get them.
    fn core_object_meta(&self) -> bool {
        true
    }

    /// How names are checked (`metadata.name`, `generateName`).
    fn name_rule(&self) -> ValidateNameFn {
        name_is_dns_subdomain
    }

    /// The order of a list's table rows, when the printer sorts them
    /// (upstream's flow schema printer does); as listed otherwise.
    fn sort_table_rows(&self, _items: &mut [&Value]) {}

    /// Whether `metadata.generation` counts spec changes.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether an update moves `metadata.generation` (when it is tracked):
    /// a change outside metadata and status, for most kinds.
    fn generation_moves(&self, new: &Value, old: &Value) -> bool {
        crate::meta::spec_part(new) != crate::meta::spec_part(old)
    }

    /// Whether PUT to a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether PUT without `metadata.resourceVersion` is allowed.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Field selector fields beyond `metadata.name` and `metadata.namespace`.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// Every selectable field, owned: [`Self::selectable_fields`] unless the
    /// fields are only known at run time (a custom resource's `selectableFields`).
    fn selectable_field_names(&self) -> Vec<String> {
        self.selectable_fields()
            .iter()
            .map(|f| (*f).to_owned())
            .collect()
    }

    /// How a field selector on a field this resource does not select on is
    /// refused: in the words of the kind's field label conversion function
    /// upstream (kinds with selectable fields of their own), or of the
    /// default one (metadata only).
    fn field_label_error(&self, label: &str) -> String {
        if self.selectable_field_names().is_empty() {
            format!(
                "\"{label}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )
        } else {
            format!("field label not supported: {label}")
        }
    }

    /// Selectable fields the watch cache keeps an index of (upstream's cacher
    /// `Indexers`: pods by `spec.nodeName`), so `field=value` lists visit only
    /// the objects with that value.
    fn indexed_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// The value of a selectable field of `obj` (called only for listed fields).
    fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        let pointer = format!("/{}", field.replace('.', "/"));
        obj.pointer(&pointer).map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// Upstream's `CheckGracefulDelete`: `None` for a resource without
    /// graceful deletion (the default); else the grace period, in seconds, a
    /// delete of `obj` asking for `requested` (negative asks already made 1)
    /// waits before the object goes — 0 for at once.
    fn graceful_delete(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// Called when a delete finds no finalizers: return true to mark the object
    /// deleting (after changing it, e.g. a namespace's phase) instead of removing
    /// it — for objects some controller must finish, like namespaces.
    fn begin_delete(&self, _obj: &mut Value) -> bool {
        false
    }

    /// The garbage-collection policy a delete without propagation applies.
    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::DeleteDependents
    }

    /// Table columns for `as=Table`.
    fn columns(&self) -> Vec<Column> {
        default_columns()
    }

    /// Table cells of one object, in `columns()` order.
    fn cells(&self, obj: &Value) -> Vec<Value> {
        default_cells(obj)
    }

    /// The table's `columnDefinitions`: [`Self::columns`] unless the columns are
    /// only known at run time (a custom resource's `additionalPrinterColumns`).
    fn column_definitions(&self) -> Vec<Value> {
        self.columns()
            .iter()
            .map(|c| {
                serde_json::json!({"name": c.name, "type": c.type_, "format": c.format,
                       "description": c.description, "priority": c.priority})
            })
            .collect()
    }

    /// Fields of `obj` the resource does not know, as dotted paths, when the
    /// strategy knows its schema (custom resources: what pruning would drop);
    /// `None` leaves the question to the built-in schemas.
    fn unknown_fields(&self, _obj: &Value) -> Option<Vec<String>> {
        None
    }

    /// Why creates are refused for now, if they are (a custom resource whose
    /// definition is being deleted); answered with 405 as upstream.
    fn refuses_create(&self) -> Option<String> {
        None
    }

    /// The `Warning` every response for this resource carries (a deprecated
    /// custom resource version).
    fn deprecation_warning(&self) -> Option<String> {
        None
    }

    /// How long an object lives after each create or update (upstream's TTL
    /// function of a registry store: events get `--event-ttl`); the store
    /// writes it with that TTL and the backend deletes it when it runs out.
    /// `None`: objects live until deleted.
    fn ttl(&self) -> Option<std::time::Duration> {
        None
    }
}

/// The strategy of a resource with no rules of its own.
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}
