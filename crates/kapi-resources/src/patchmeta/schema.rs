//! [`BuiltinSchema`]: the [`SchemaNav`] answering strategic-merge and apply
//! questions from the built-in definitions (into which `openapi::defs` wrote
//! the facts of the parent module), each field's answer kept once read.

use std::sync::{Arc, LazyLock, OnceLock, RwLock};

use kapi_machinery::member::Members;
use kapi_machinery::schema::{FieldInfo, ListType, MapType, SchemaNav, TypeRef};
use serde_json::{Map, Value};

use super::KEY_DEFAULTS;

const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// Field navigation over the built-in definitions (with the table applied).
#[derive(Clone)]
pub struct BuiltinSchema;

/// [`SchemaNav::field`]'s answers by type, then field name. Reading one from
/// the definitions takes a dozen map look-ups and a few allocations, and every
/// write asks again for the same few hundred (pruning, type checks,
/// managedFields). Only fields that exist are kept: the memo is bounded by the
/// definitions, whatever names clients send. Keys are our own type names and
/// schema-checked field names, so a fast hash without a random seed is enough.
type FieldMemo = foldhash::HashMap<Box<str>, foldhash::HashMap<Box<str>, Arc<FieldInfo>>>;
static FIELDS: LazyLock<RwLock<FieldMemo>> = LazyLock::new(Default::default);

impl BuiltinSchema {
    /// The process-wide navigator over every built-in definition.
    pub fn shared() -> Arc<BuiltinSchema> {
        static SHARED: OnceLock<Arc<BuiltinSchema>> = OnceLock::new();
        SHARED.get_or_init(|| Arc::new(BuiltinSchema)).clone()
    }

    fn def(&self, name: &str) -> Option<&Map<String, Value>> {
        crate::openapi::defs::definition(name)?.as_object()
    }

    /// [`SchemaNav::field`] read from the definitions.
    fn field_info(&self, ty: &TypeRef, name: &str) -> Option<FieldInfo> {
        let prop = self.def(&ty.0)?.get("properties")?.get(name)?;
        let elem = elem_type(prop);
        let patch_strategies: Vec<String> = str_ext(prop, "x-kubernetes-patch-strategy")
            .map(|s| s.split(',').map(str::to_string).collect())
            .unwrap_or_default();
        let patch_merge_key = str_ext(prop, "x-kubernetes-patch-merge-key").map(str::to_string);
        let is_list = prop.get("items").is_some();
        let list_type = if is_list {
            list_type(prop, &patch_strategies, patch_merge_key.as_deref())
        } else {
            ListType::Atomic
        };
        // A RawExtension (an embedded object of any kind) is one value to the
        // field manager, as upstream's untyped schema makes it.
        let struct_atomic = !is_list
            && (elem.0 == RAW_EXTENSION
                || self
                    .def(&elem.0)
                    .and_then(|d| d.get("x-kubernetes-map-type"))
                    .is_some());
        let map_type = match str_ext(prop, "x-kubernetes-map-type") {
            Some("atomic") => MapType::Atomic,
            _ if struct_atomic => MapType::Atomic,
            _ => MapType::Granular,
        };
        Some(FieldInfo {
            elem,
            patch_strategies,
            patch_merge_key,
            list_type,
            map_type,
        })
    }
}

const MAP_PREFIX: &str = "map[";

/// The definition a `{"$ref": "#/definitions/X"}` points at.
fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.rsplit('/').next()
}

/// The type of a property's value, or of its elements when it is a list or map.
fn elem_type(prop: &Value) -> TypeRef {
    if let Some(name) = ref_name(prop) {
        return TypeRef::new(name);
    }
    if let Some(items) = prop.get("items") {
        return ref_name(items).map(TypeRef::new).unwrap_or_default();
    }
    match prop.get("additionalProperties").and_then(ref_name) {
        Some(name) => TypeRef::new(format!("{MAP_PREFIX}{name}]")),
        None => TypeRef::UNKNOWN,
    }
}

fn str_ext<'a>(prop: &'a Value, key: &str) -> Option<&'a str> {
    prop.get(key)?.as_str()
}

fn list_type(prop: &Value, strategies: &[String], merge_key: Option<&str>) -> ListType {
    match str_ext(prop, "x-kubernetes-list-type") {
        Some("map") => {
            let keys = prop
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array);
            let keys = keys.into_iter().flatten().filter_map(Value::as_str);
            ListType::Map(keys.map(str::to_string).collect())
        }
        Some("set") => ListType::Set,
        Some(_) => ListType::Atomic,
        None if strategies.iter().any(|s| s == "merge") => match merge_key {
            Some(key) => ListType::Map(vec![key.to_string()]),
            None => ListType::Set,
        },
        None => ListType::Atomic,
    }
}

impl SchemaNav for BuiltinSchema {
    /// A definition with declared properties and no free-form extras: every key an
    /// object of this type may carry is known.
    fn is_struct(&self, ty: &TypeRef) -> bool {
        self.def(&ty.0).is_some_and(|d| {
            d.member("properties").is_some_and(Value::is_object)
                && d.member("additionalProperties").is_none()
                && d.member("x-kubernetes-preserve-unknown-fields").is_none()
        })
    }

    fn field(&self, ty: &TypeRef, name: &str) -> Option<std::sync::Arc<FieldInfo>> {
        if let Some(info) = FIELDS
            .read()
            .expect("fields lock")
            .get(ty.0.as_str())
            .and_then(|fields| fields.get(name))
        {
            return Some(info.clone());
        }
        let info = Arc::new(self.field_info(ty, name)?);
        FIELDS
            .write()
            .expect("fields lock")
            .entry(ty.0.as_str().into())
            .or_default()
            .insert(name.into(), info.clone());
        Some(info)
    }

    fn type_map_type(&self, ty: &TypeRef) -> MapType {
        let atomic = ty.0 == RAW_EXTENSION
            || self
                .def(&ty.0)
                .and_then(|d| d.member("x-kubernetes-map-type"))
                .and_then(Value::as_str)
                == Some("atomic");
        if atomic {
            MapType::Atomic
        } else {
            MapType::Granular
        }
    }

    fn key_default(&self, ty: &TypeRef, key: &str) -> Option<Value> {
        KEY_DEFAULTS
            .iter()
            .find(|(def, field, _)| *def == ty.0 && *field == key)
            .map(|(_, _, v)| Value::String((*v).to_string()))
    }

    /// Kept once built, per root type (one per kind ever written).
    fn zero_value(&self, ty: &TypeRef) -> Option<Arc<Value>> {
        static ZEROS: LazyLock<RwLock<foldhash::HashMap<Box<str>, Arc<Value>>>> =
            LazyLock::new(Default::default);
        if let Some(zero) = ZEROS.read().expect("zeros lock").get(ty.0.as_str()) {
            return Some(zero.clone());
        }
        self.def(&ty.0)?;
        let zero = Arc::new(crate::zero::zero_object(self, ty));
        ZEROS
            .write()
            .expect("zeros lock")
            .insert(ty.0.as_str().into(), zero.clone());
        Some(zero)
    }

    fn map_value(&self, ty: &TypeRef) -> Option<TypeRef> {
        if let Some(inner) = ty.0.strip_prefix(MAP_PREFIX) {
            return inner.strip_suffix(']').map(TypeRef::new);
        }
        let extra = self.def(&ty.0)?.get("additionalProperties")?;
        ref_name(extra).map(TypeRef::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo answers as the definitions do, and keeps nothing for a name
    /// the type does not have.
    #[test]
    fn remembered_fields_are_the_definitions_answers() {
        let nav = BuiltinSchema::shared();
        let spec = TypeRef::new(core!("PodSpec"));
        for name in ["containers", "volumes", "nodeSelector", "hostNetwork"] {
            let first = nav.field(&spec, name);
            assert!(first.is_some(), "{name}");
            assert_eq!(
                first.as_deref(),
                nav.field_info(&spec, name).as_ref(),
                "{name}"
            );
            assert_eq!(nav.field(&spec, name), first, "{name}");
        }
        assert_eq!(nav.field(&spec, "noSuchField"), None);
        let kept = FIELDS.read().unwrap();
        assert!(kept[spec.0.as_str()].contains_key("containers"));
        assert!(!kept[spec.0.as_str()].contains_key("noSuchField"));
    }
}
