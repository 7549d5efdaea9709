//! Schema navigation: the facts about a field that patching and merging need.
//!
//! Strategic merge patch (and later server-side apply) walk an object and, at each
//! field, ask what kind of field it is: which type its value has, whether a list is
//! merged by a key or replaced, whether a map is atomic. Those facts live in
//! upstream's OpenAPI extensions (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`,
//! `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`). This module defines the
//! question; `kapi-resources` answers it for built-in kinds from its schema tables,
//! and `kapi-apiextensions` for custom resources from their structural schemas.
//!
//! A type is named by an opaque `TypeRef` (for built-ins the OpenAPI definition name,
//! e.g. `io.k8s.api.core.v1.PodSpec`). `TypeRef::UNKNOWN` means "no schema known":
//! lists are then replaced atomically and maps merged, which is what upstream does
//! for unstructured data.

/// An opaque reference to a type in some schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TypeRef(pub String);

impl TypeRef {
    pub const UNKNOWN: TypeRef = TypeRef(String::new());

    pub fn new(name: impl Into<String>) -> Self {
        TypeRef(name.into())
    }

    pub fn is_unknown(&self) -> bool {
        self.0.is_empty()
    }
}

/// How a list field behaves under merges (`x-kubernetes-list-type`, plus the older
/// `x-kubernetes-patch-strategy: merge` with a merge key).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ListType {
    /// Replaced as a whole (the default for lists without metadata).
    #[default]
    Atomic,
    /// A set of scalars: merged by value.
    Set,
    /// A list of objects merged by the given key fields.
    Map(Vec<String>),
}

/// How a map (object) field behaves under merges (`x-kubernetes-map-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MapType {
    #[default]
    Granular,
    Atomic,
}

/// Everything known about one field of an object type.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldInfo {
    /// The type of the value; for lists and maps, the type of each element.
    pub elem: TypeRef,
    /// `x-kubernetes-patch-strategy` split on commas: `merge`, `replace`, `retainKeys`.
    pub patch_strategies: Vec<String>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<String>,
    /// Server-side apply list semantics.
    pub list_type: ListType,
    /// Server-side apply map semantics (for the field's own value when it is a map).
    pub map_type: MapType,
}

impl FieldInfo {
    pub fn has_strategy(&self, s: &str) -> bool {
        self.patch_strategies.iter().any(|x| x == s)
    }
}

/// Answers questions about fields of types. Implemented by the resource tables.
pub trait SchemaNav: Send + Sync {
    /// The field `name` of an object of type `ty`; `None` when the type or field is
    /// unknown (callers then treat the value as unstructured).
    fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>>;

    /// Whether `ty` is an object type with a fixed set of properties (so a field
    /// `field` does not know is an unknown field, not free-form data).
    fn is_struct(&self, _ty: &TypeRef) -> bool {
        false
    }

    /// The element type of a map-valued type (`additionalProperties`), if `ty` is a map.
    fn map_value(&self, _ty: &TypeRef) -> Option<TypeRef> {
        None
    }

    /// How objects of type `ty` merge wherever they appear (a struct marked
    /// `x-kubernetes-map-type: atomic` on its definition, upstream's
    /// `+structType=atomic`), e.g. the elements of a list.
    fn type_map_type(&self, _ty: &TypeRef) -> MapType {
        MapType::Granular
    }

    /// The default of key field `key` of list-map elements of type `ty`, used when
    /// an element omits it (e.g. a container port's `protocol` is `TCP`).
    fn key_default(&self, _ty: &TypeRef, _key: &str) -> Option<serde_json::Value> {
        None
    }

    /// The object a new object of root type `ty` is compared with when its
    /// creation is recorded in managedFields: upstream's empty object of the kind.
    /// For built-in kinds that is the Go zero value as it serializes (nested
    /// non-pointer structs present, e.g. a Deployment's `spec.template`); `None`
    /// means an object with nothing set, as for custom resources.
    fn zero_value(&self, _ty: &TypeRef) -> Option<std::sync::Arc<serde_json::Value>> {
        None
    }
}

/// A navigator that knows nothing: every value is unstructured.
pub struct NoSchema;

impl SchemaNav for NoSchema {
    fn field(&self, _ty: &TypeRef, _name: &str) -> Option<std::sync::Arc<FieldInfo>> {
        None
    }
}
