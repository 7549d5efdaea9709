//! [`StructuralNav`]: the [`SchemaNav`] of a custom resource version, so strategic
//! merge and server-side apply merge custom objects by their schema's
//! `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` / `x-kubernetes-map-type`.
//!
//! A `TypeRef` names a schema node by its path from the root, JSON-pointer style:
//! `crd:` is the root, `crd:/properties/spec/properties/ports/items` a list's item
//! schema (`~` and `/` in property names escaped as `~0` and `~1`). Arrays without a
//! list type are atomic and objects are granular unless `x-kubernetes-map-type:
//! atomic`, as upstream's CRD schemas convert for structured merge.
//!
//! `metadata` of the root and of embedded resources is ObjectMeta: its type is the
//! built-in definition name, answered by the optional fallback navigator (the
//! built-in schema), so finalizers merge as a set and owner references by uid.

use std::sync::Arc;

use kapi_machinery::schema::{FieldInfo, ListType, MapType, SchemaNav, TypeRef};
use serde_json::Value;

use super::{Node, Structural};

const PREFIX: &str = "crd:";
/// The built-in definition of ObjectMeta (answered by the fallback navigator).
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Navigates one structural schema; other type names go to `fallback`.
#[derive(Clone)]
pub struct StructuralNav {
    schema: Arc<Structural>,
    fallback: Option<Arc<dyn SchemaNav>>,
}

impl StructuralNav {
    pub fn new(schema: Arc<Structural>) -> Self {
        StructuralNav {
            schema,
            fallback: None,
        }
    }

    /// Answer non-custom types (ObjectMeta) with `fallback`, e.g. the built-in schema.
    pub fn with_fallback(schema: Arc<Structural>, fallback: Arc<dyn SchemaNav>) -> Self {
        StructuralNav {
            schema,
            fallback: Some(fallback),
        }
    }

    /// The type of a custom object (its root schema).
    pub fn root_type() -> TypeRef {
        TypeRef::new(PREFIX)
    }

    fn node(&self, ty: &TypeRef) -> Option<&Node> {
        let rest = ty.0.strip_prefix(PREFIX)?;
        let mut node = &self.schema.root;
        let mut segs = rest.split('/').skip(1);
        while let Some(seg) = segs.next() {
            node = match seg {
                "properties" => {
                    let name = unescape(segs.next()?);
                    node.properties.get(&name)?
                }
                "items" => node.items.as_deref()?,
                "additionalProperties" => node.additional_schema()?,
                _ => return None,
            };
        }
        Some(node)
    }
}

fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn unescape(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

fn child_ref(ty: &TypeRef, seg: &str) -> TypeRef {
    TypeRef::new(format!("{}/{seg}", ty.0))
}

fn list_type(n: &Node) -> ListType {
    match n.x_list_type.as_deref() {
        Some("set") => ListType::Set,
        Some("map") => ListType::Map(n.x_list_map_keys.clone()),
        _ => ListType::Atomic,
    }
}

fn map_type(n: &Node) -> MapType {
    if n.x_map_type.as_deref() == Some("atomic") {
        MapType::Atomic
    } else {
        MapType::Granular
    }
}

impl SchemaNav for StructuralNav {
    fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>> {
        let Some(node) = self.node(ty) else {
            return self.fallback.as_ref()?.field(ty, name);
        };
        let is_resource = ty.0 == PREFIX || node.x_embedded_resource;
        if is_resource && name == "metadata" {
            return Some(std::sync::Arc::new(FieldInfo {
                elem: TypeRef::new(OBJECT_META),
                ..FieldInfo::default()
            }));
        }
        let prop_ref = child_ref(ty, &format!("properties/{}", escape(name)));
        let prop = node.properties.get(name)?;
        let (elem, list_type) = match prop.items.as_deref() {
            Some(_) => (child_ref(&prop_ref, "items"), list_type(prop)),
            None => (prop_ref, ListType::Atomic),
        };
        Some(std::sync::Arc::new(FieldInfo {
            elem,
            patch_strategies: Vec::new(),
            patch_merge_key: None,
            list_type,
            map_type: map_type(prop),
        }))
    }

    fn is_struct(&self, ty: &TypeRef) -> bool {
        match self.node(ty) {
            Some(n) => {
                !n.properties.is_empty()
                    && n.additional_properties.is_none()
                    && !n.x_preserve_unknown_fields
            }
            None => self.fallback.as_ref().is_some_and(|f| f.is_struct(ty)),
        }
    }

    fn map_value(&self, ty: &TypeRef) -> Option<TypeRef> {
        match self.node(ty) {
            Some(n) => n
                .additional_schema()
                .map(|_| child_ref(ty, "additionalProperties")),
            None => self.fallback.as_ref()?.map_value(ty),
        }
    }

    fn type_map_type(&self, ty: &TypeRef) -> MapType {
        match self.node(ty) {
            Some(n) => map_type(n),
            None => self
                .fallback
                .as_ref()
                .map_or(MapType::Granular, |f| f.type_map_type(ty)),
        }
    }

    fn key_default(&self, ty: &TypeRef, key: &str) -> Option<Value> {
        match self.node(ty) {
            Some(n) => n.properties.get(key)?.default.clone(),
            None => self.fallback.as_ref()?.key_default(ty, key),
        }
    }
}
