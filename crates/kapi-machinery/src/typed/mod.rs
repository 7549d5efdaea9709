//! Objects seen through their schema, as server-side apply needs them: the field
//! set of an object, removing the items of a set from an object, and (in
//! `merge.rs`) merging and comparing two objects. The model is upstream's
//! `structured-merge-diff` `typed` package.
//!
//! The schema comes from a [`SchemaNav`]: at each value the walk knows the
//! value's type and, from the field that holds it, its list type
//! (`atomic`/`set`/`map` with keys) and map type (`atomic`/`granular`). A key the
//! type does not declare is a map entry (labels, data, free-form objects). With
//! no schema (`TypeRef::UNKNOWN`) every object is a granular map and every list
//! atomic — upstream's "deduced" type.
//!
//! In a field set, scalars, nulls, empty maps, atomic lists and atomic maps
//! are leaves; list elements and map entries are members themselves (so an
//! element owned as a whole shows as `.` on the wire); declared struct fields
//! are not.
//!
//! Where to look next: `crate::fieldpath` (the sets), `crate::apply` (ownership).

mod merge;
#[cfg(test)]
mod tests;
mod validate;
mod written;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::fieldpath::{Path, PathElement, Set};
use crate::schema::{FieldInfo, ListType, MapType, SchemaNav, TypeRef};

pub use merge::Comparison;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A value that does not fit its schema (a list-map element without its keys,
/// duplicate elements where they are not allowed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypedError(pub String);

/// What the schema says about one value.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    decl: Declared,
    /// The value is an element of the declared list (so not itself a list
    /// with the field's semantics).
    element: bool,
    atomic_map: bool,
}

/// Where a value's type comes from: the field that declares it (shared with
/// the schema's answer, not copied), or a type of its own (the root, a map
/// entry).
#[derive(Debug, Clone)]
enum Declared {
    Field(Arc<FieldInfo>),
    Type(TypeRef),
}

impl Node {
    fn of_type(ty: TypeRef, atomic_map: bool) -> Node {
        Node {
            decl: Declared::Type(ty),
            element: false,
            atomic_map,
        }
    }

    /// The value's type (a list's or map's elements' for a field holding one).
    pub(crate) fn ty(&self) -> &TypeRef {
        match &self.decl {
            Declared::Field(fi) => &fi.elem,
            Declared::Type(ty) => ty,
        }
    }

    /// The value's list semantics: a declared field's own; atomic otherwise.
    pub(crate) fn list(&self) -> &ListType {
        const ATOMIC: &ListType = &ListType::Atomic;
        match &self.decl {
            Declared::Field(fi) if !self.element => &fi.list_type,
            _ => ATOMIC,
        }
    }
}

/// Objects of one root type in one schema.
#[derive(Clone, Copy)]
pub struct Typed<'a> {
    pub schema: &'a dyn SchemaNav,
    pub root: &'a TypeRef,
}

impl<'a> Typed<'a> {
    pub fn new(schema: &'a dyn SchemaNav, root: &'a TypeRef) -> Self {
        Typed { schema, root }
    }

    pub(crate) fn root_node(&self) -> Node {
        Node::of_type(self.root.clone(), false)
    }

    /// The node of field `name` in an object of node `parent`, and whether the
    /// type declares it (a struct field) or it is a map entry.
    pub(crate) fn field_node(&self, parent: &Node, at_root: bool, name: &str) -> (Node, bool) {
        let parent_ty = parent.ty();
        if at_root && parent_ty.is_unknown() && name == "metadata" {
            return (Node::of_type(TypeRef::new(OBJECT_META), false), true);
        }
        match self.schema.field(parent_ty, name) {
            Some(fi) => {
                let atomic_map = fi.map_type == MapType::Atomic
                    || self.schema.type_map_type(&fi.elem) == MapType::Atomic;
                let node = Node {
                    decl: Declared::Field(fi),
                    element: false,
                    atomic_map,
                };
                (node, true)
            }
            None => {
                let ty = self.schema.map_value(parent_ty).unwrap_or_default();
                let atomic_map = self.schema.type_map_type(&ty) == MapType::Atomic;
                (Node::of_type(ty, atomic_map), false)
            }
        }
    }

    /// The node of the elements of a list of node `list`.
    pub(crate) fn elem_node(&self, list: &Node) -> Node {
        Node {
            decl: list.decl.clone(),
            element: true,
            atomic_map: self.schema.type_map_type(list.ty()) == MapType::Atomic,
        }
    }

    /// The path element naming `item`, the `index`th element of a list of `list`.
    pub(crate) fn item_element(
        &self,
        list: &Node,
        index: usize,
        item: &Value,
    ) -> Result<PathElement, TypedError> {
        match list.list() {
            ListType::Map(keys) => {
                let mut fields = Vec::with_capacity(keys.len());
                for k in keys {
                    let v = item
                        .get(k)
                        .filter(|v| !v.is_null())
                        .cloned()
                        .or_else(|| self.schema.key_default(list.ty(), k));
                    match v {
                        Some(v) => fields.push((k.clone(), v)),
                        None => {
                            return Err(TypedError(format!(
                                "element {index}: associative list with keys has an element that omits key field {k:?} (and doesn't have default value)"
                            )))
                        }
                    }
                }
                Ok(PathElement::key(fields))
            }
            ListType::Set => Ok(PathElement::Value(item.clone())),
            ListType::Atomic => Ok(PathElement::Index(index)),
        }
    }

    /// Every field of `obj` (see the module doc for what counts as a member).
    /// `allow_duplicates` is false for applied configurations: two elements with
    /// the same key are an error there.
    pub fn to_field_set(&self, obj: &Value, allow_duplicates: bool) -> Result<Set, TypedError> {
        let mut out = Set::new();
        let mut path = Vec::new();
        self.collect(
            obj,
            &self.root_node(),
            &mut path,
            &mut out,
            allow_duplicates,
        )?;
        Ok(out)
    }

    fn collect(
        &self,
        v: &Value,
        node: &Node,
        path: &mut Path,
        out: &mut Set,
        allow_duplicates: bool,
    ) -> Result<(), TypedError> {
        match v {
            Value::Object(m) => {
                // An empty map is a leaf (upstream keeps `{}` apart from absent).
                if node.atomic_map || m.is_empty() {
                    out.insert(path);
                    return Ok(());
                }
                for (k, child) in m {
                    let (cn, named) = self.field_node(node, path.is_empty(), k);
                    path.push(PathElement::Field(k.clone()));
                    self.collect(child, &cn, path, out, allow_duplicates)?;
                    if !named {
                        out.insert(path);
                    }
                    path.pop();
                }
            }
            Value::Array(items) if *node.list() != ListType::Atomic => {
                let en = self.elem_node(node);
                let mut seen = Set::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = self
                        .item_element(node, i, item)
                        .map_err(|e| at_path(path, e))?;
                    let one = [pe.clone()];
                    if seen.has(&one) {
                        if allow_duplicates {
                            continue;
                        }
                        let e = TypedError(format!("duplicate entries for key {pe}"));
                        return Err(at_path(path, e));
                    }
                    seen.insert(&one);
                    path.push(pe.clone());
                    self.collect(item, &en, path, out, allow_duplicates)?;
                    out.insert(path);
                    path.pop();
                }
            }
            _ => out.insert(path),
        }
        Ok(())
    }

    /// `set` with every declared struct field that has paths below it also a
    /// member, so removing the set's items removes such fields as a whole.
    pub fn ensure_named_fields_are_members(&self, set: &Set) -> Set {
        self.ensure_at(set, &self.root_node(), true)
    }

    fn ensure_at(&self, set: &Set, node: &Node, at_root: bool) -> Set {
        let mut out = Set::new();
        for m in set.members() {
            out.insert_member(m.clone());
        }
        for (pe, child) in set.children() {
            let cn = match pe {
                PathElement::Field(name) => {
                    let (cn, named) = self.field_node(node, at_root, name);
                    if named {
                        out.insert_member(pe.clone());
                    }
                    cn
                }
                _ => self.elem_node(node),
            };
            out.set_child(pe.clone(), self.ensure_at(child, &cn, false));
        }
        out
    }

    /// `obj` without the items of `set` (fields, map entries, list elements).
    /// Containers left empty disappear.
    pub fn remove_items(&self, obj: &Value, set: &Set) -> Value {
        self.remove_at(obj, set, &self.root_node(), true)
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    fn remove_at(&self, v: &Value, set: &Set, node: &Node, at_root: bool) -> Option<Value> {
        match v {
            Value::Object(m) => {
                if m.is_empty() || node.atomic_map {
                    return None;
                }
                let mut out = Map::new();
                for (k, child) in m {
                    let pe = PathElement::Field(k.clone());
                    if set.has(std::slice::from_ref(&pe)) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) => {
                            let (cn, _) = self.field_node(node, at_root, k);
                            if let Some(kept) = self.remove_at(child, sub, &cn, false) {
                                out.insert(k.clone(), kept);
                            }
                        }
                        None => {
                            out.insert(k.clone(), child.clone());
                        }
                    }
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
            Value::Array(items) => {
                if items.is_empty() || *node.list() == ListType::Atomic {
                    return None;
                }
                let en = self.elem_node(node);
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let Ok(pe) = self.item_element(node, i, item) else {
                        out.push(item.clone());
                        continue;
                    };
                    if set.has(std::slice::from_ref(&pe)) {
                        continue;
                    }
                    match set.child(&pe) {
                        Some(sub) => out.extend(self.remove_at(item, sub, &en, false)),
                        None => out.push(item.clone()),
                    }
                }
                (!out.is_empty()).then_some(Value::Array(out))
            }
            other => Some(other.clone()),
        }
    }
}

/// `e` located at `path`, as upstream words it (`.spec.containers: element 0: …`).
pub(crate) fn at_path(path: &[PathElement], e: TypedError) -> TypedError {
    TypedError(format!("{}: {}", crate::fieldpath::path_string(path), e.0))
}
