//! Strategic merge patch (`application/strategic-merge-patch+json`): applying a
//! patch to an object, following upstream `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (`StrategicMergeMapPatch` → `mergeMap` / `mergeSlice`), server-side flavour
//! (parallel lists are merged, unmatched `null`s are dropped).
//!
//! What this module owns:
//! - maps merge recursively; `null` deletes a key; `$patch: replace|delete|merge`
//!   on a map; `$retainKeys` clears original keys not listed;
//! - lists with patch strategy `merge`: by merge key for objects (with
//!   `$patch: delete|replace` list elements), by value (union) for scalars, plus
//!   `$deleteFromPrimitiveList/<f>` and `$setElementOrder/<f>` parallel lists;
//! - every other list is replaced by the patch list.
//!
//! Invariants: the inputs are never mutated; directive keys (`$patch`,
//! `$retainKeys`, `$setElementOrder/…`, `$deleteFromPrimitiveList/…`) never appear
//! in the result, even inside values that are added wholesale (those are merged
//! into an empty value, which also drops their `null`s). List order follows
//! upstream `normalizeElementOrder`: `$setElementOrder` first, then patch order,
//! then live order — so without `$setElementOrder`, new items land *before* the
//! live items they cannot be ordered against, exactly as upstream does.
//!
//! Deliberate differences from upstream, which leans on typed decoding to clean up:
//! `$patch: delete` on a nested map removes the key (upstream leaves `{}`),
//! `$patch: merge` on a map is accepted as the default (upstream rejects it), and a
//! deletion list for an absent field is a no-op (upstream stores the list).
//!
//! Field facts (strategy, merge key, element type) come from [`SchemaNav`]; an
//! unknown type means maps merge and lists are replaced. Every [`PatchError`] is a
//! client error (400 BadRequest upstream). Where to look next: `schema.rs` (the
//! questions asked), `kapi-resources` (the answers for built-in kinds).
//!
//! Layout: this file merges maps and lists; `directives.rs` applies
//! `$retainKeys` and deletion lists, `order.rs` orders merged lists,
//! `errors.rs` words the errors; `tests/` (maps, lists, whole objects).

mod directives;
mod errors;
mod order;

use serde_json::{Map, Value};

use crate::schema::{SchemaNav, TypeRef};

use directives::*;
use errors::*;
use order::*;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PRIMITIVE_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ORDER_PREFIX: &str = "$setElementOrder";

/// Why a strategic merge patch could not be applied; all are client errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    #[error("invalid {what}: expected a JSON object, but received {kind}")]
    NotAnObject {
        what: &'static str,
        kind: &'static str,
    },
    /// A `$patch` value that is not understood in its position.
    #[error("unknown patch type: {directive} in map: {map}")]
    BadPatchType { directive: String, map: String },
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey { map: String, key: String },
    #[error("merging lists cannot yet be specified in the patch")]
    MergeInList,
    #[error("invalid patch format of primitive list")]
    BadPrimitiveList,
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// A malformed `$retainKeys` directive, or a patch key missing from it.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// The patch list's order contradicts its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch { patch: String, order: String },
    #[error("lists of lists are not supported")]
    ListOfLists,
    #[error("list element types are not identical: {0}")]
    MixedElements(String),
    /// A merge-strategy list of objects whose field declares no merge key.
    #[error("cannot merge lists without merge key for type {0}")]
    NoMergeKeyDeclared(String),
    /// The schema declares a strategy combination upstream does not know.
    #[error("unexpected patch strategy: {0:?}")]
    BadStrategy(Vec<String>),
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        expected: &'static str,
        actual: &'static str,
    },
}

/// Applies the strategic merge patch `patch` to `original` (an object of type
/// `root`), returning the patched object. Neither input is modified.
pub fn apply(
    original: &Value,
    patch: &Value,
    schema: &dyn SchemaNav,
    root: &TypeRef,
) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::NotAnObject {
            what: "patch",
            kind: kind_name(patch),
        });
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::NotAnObject {
                what: "original",
                kind: kind_name(other),
            })
        }
    };
    let merged = Merger { schema }.merge_map(original, patch, root)?;
    Ok(Value::Object(merged.unwrap_or_default()))
}

/// How a field's value merges, resolved from the schema.
#[derive(Debug, Default)]
struct Field {
    elem: TypeRef,
    merge: bool,
    replace: bool,
    merge_key: Option<String>,
}

struct Merger<'a> {
    schema: &'a dyn SchemaNav,
}

impl Merger<'_> {
    /// Looks up field `name` of type `ty`; unknown types and fields are unstructured.
    fn field(&self, ty: &TypeRef, name: &str) -> Result<Field, PatchError> {
        if ty.is_unknown() {
            return Ok(Field::default());
        }
        let Some(info) = self.schema.field(ty, name) else {
            let elem = self.schema.map_value(ty).unwrap_or_default();
            return Ok(Field {
                elem,
                ..Field::default()
            });
        };
        let others: Vec<&String> = info
            .patch_strategies
            .iter()
            .filter(|s| *s != "retainKeys")
            .collect();
        if others.len() > 1 {
            return Err(PatchError::BadStrategy(info.patch_strategies.clone()));
        }
        let strategy = others.first().map(|s| s.as_str()).unwrap_or("");
        Ok(Field {
            elem: info.elem.clone(),
            merge: strategy == "merge",
            replace: strategy == "replace",
            merge_key: info.patch_merge_key.clone().filter(|k| !k.is_empty()),
        })
    }

    /// Merges `patch` into `original`; `None` means the map was deleted.
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        patch: &Map<String, Value>,
        ty: &TypeRef,
    ) -> Result<Option<Map<String, Value>>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            match directive.as_str() {
                Some("replace") => original = Map::new(),
                Some("delete") => return Ok(None),
                Some("merge") => {}
                _ => return Err(bad_patch_type(directive, patch)),
            }
        }
        apply_retain_keys(&mut original, patch)?;
        let mut ordered: Vec<&str> = Vec::new();
        for (key, value) in patch {
            if key.starts_with(SET_ORDER_PREFIX) {
                if let Some(done) = self.set_element_order(&mut original, patch, key, value, ty)? {
                    ordered.push(done);
                }
            }
        }
        for (key, value) in patch {
            if key == DIRECTIVE || key == RETAIN_KEYS || key.starts_with(SET_ORDER_PREFIX) {
                continue;
            }
            if key.starts_with(DELETE_PRIMITIVE_PREFIX) {
                delete_from_primitive_list(&mut original, key, value)?;
            } else if !ordered.contains(&key.as_str()) {
                self.merge_field(&mut original, key, value, ty)?;
            }
        }
        Ok(Some(original))
    }

    /// Merges one patch entry `key: value` into `original`.
    fn merge_field(
        &self,
        original: &mut Map<String, Value>,
        key: &str,
        value: &Value,
        ty: &TypeRef,
    ) -> Result<(), PatchError> {
        if value.is_null() {
            original.shift_remove(key);
            return Ok(());
        }
        let field = self.field(ty, key)?;
        let current = original.get_mut(key).map(Value::take);
        let merged = match (current, value) {
            (Some(Value::Object(o)), Value::Object(p)) if !field.replace => {
                self.merge_map(o, p, &field.elem)?.map(Value::Object)
            }
            (Some(Value::Array(o)), Value::Array(p)) if field.merge => {
                Some(Value::Array(self.merge_list(o, p, &field)?))
            }
            _ => self.fresh(value, &field)?,
        };
        if let Some(v) = merged {
            original.insert(key.to_string(), v);
        } else {
            original.shift_remove(key);
        }
        Ok(())
    }

    /// A patch value taken as-is (nothing to merge with), with directives applied
    /// against an empty value; `None` when it deletes itself.
    fn fresh(&self, value: &Value, field: &Field) -> Result<Option<Value>, PatchError> {
        Ok(match value {
            Value::Object(p) => self
                .merge_map(Map::new(), p, &field.elem)?
                .map(Value::Object),
            Value::Array(p) => Some(Value::Array(self.fresh_list(p, field)?)),
            other => Some(other.clone()),
        })
    }

    /// A patch list with no live list to merge into.
    fn fresh_list(&self, patch: &[Value], field: &Field) -> Result<Vec<Value>, PatchError> {
        if field.merge {
            self.merge_list(Vec::new(), patch, field)
        } else {
            self.replace_list(patch, &field.elem)
        }
    }

    /// The elements of a list that replaces the original one, objects cleaned.
    fn replace_list(&self, patch: &[Value], elem: &TypeRef) -> Result<Vec<Value>, PatchError> {
        let mut out = Vec::with_capacity(patch.len());
        for item in patch {
            match item {
                Value::Object(m) => {
                    if let Some(m) = self.merge_map(Map::new(), m, elem)? {
                        out.push(Value::Object(m));
                    }
                }
                other => out.push(other.clone()),
            }
        }
        Ok(out)
    }

    /// Upstream `mergeSlice`: merges a list with patch strategy `merge`.
    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: &[Value],
        field: &Field,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        if elem_kind(&original, patch)? != "map" {
            let mut merged = original.clone();
            for item in patch {
                if !merged.iter().any(|m| same(m, item)) {
                    merged.push(item.clone());
                }
            }
            return order_items(merged, patch, &original, None);
        }
        let key = field
            .merge_key
            .as_deref()
            .ok_or_else(|| PatchError::NoMergeKeyDeclared(field.elem.0.clone()))?;
        let (base, items) = self.special_elements(original, patch, key, &field.elem)?;
        let server_order = base.clone();
        let merged = self.merge_keyed(base, &items, key, &field.elem)?;
        order_items(merged, &items, &server_order, Some(key))
    }

    /// Handles list elements carrying `$patch`; returns the remaining original
    /// elements and the plain patch elements still to merge.
    fn special_elements(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
        elem: &TypeRef,
    ) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
        let mut plain = Vec::new();
        let mut replace = false;
        for item in patch {
            let map = as_object(item)?;
            let Some(directive) = map.get(DIRECTIVE) else {
                plain.push(item.clone());
                continue;
            };
            match directive.as_str() {
                Some("delete") => {
                    let wanted = map.get(key).ok_or_else(|| no_merge_key(item, key))?;
                    original.retain(|e| !e.get(key).is_some_and(|v| same(v, wanted)));
                }
                Some("replace") => replace = true,
                Some("merge") => return Err(PatchError::MergeInList),
                _ => return Err(bad_patch_type(directive, map)),
            }
        }
        if replace {
            return Ok((self.replace_list(&plain, elem)?, Vec::new()));
        }
        Ok((original, plain))
    }

    /// Merges plain patch elements into the original by merge key; unmatched ones
    /// are appended (ordering happens afterwards).
    fn merge_keyed(
        &self,
        mut original: Vec<Value>,
        items: &[Value],
        key: &str,
        elem: &TypeRef,
    ) -> Result<Vec<Value>, PatchError> {
        for item in items {
            let patch = as_object(item)?;
            let wanted = patch.get(key).ok_or_else(|| no_merge_key(item, key))?;
            let found = original
                .iter()
                .position(|e| e.get(key).is_some_and(|v| same(v, wanted)));
            let base = match found {
                Some(i) => match original[i].take() {
                    Value::Object(m) => m,
                    _ => return Err(bad_arg("map", &original[i])),
                },
                None => Map::new(),
            };
            let merged = Value::Object(self.merge_map(base, patch, elem)?.unwrap_or_default());
            match found {
                Some(i) => original[i] = merged,
                None => original.push(merged),
            }
        }
        Ok(original)
    }

    /// Upstream `mergePatchIntoOriginal` for one `$setElementOrder/<field>`:
    /// merges the field's list and orders it; returns the field when handled.
    fn set_element_order<'p>(
        &self,
        original: &mut Map<String, Value>,
        patch: &'p Map<String, Value>,
        directive: &'p str,
        order: &Value,
        ty: &TypeRef,
    ) -> Result<Option<&'p str>, PatchError> {
        let name =
            strip_directive(directive, SET_ORDER_PREFIX).ok_or(PatchError::BadSetElementOrder)?;
        let order = order.as_array().ok_or(PatchError::BadSetElementOrder)?;
        let field = self.field(ty, name)?;
        let key = field.merge_key.as_deref().filter(|_| field.merge);
        let live = match original.get(name) {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg("list", other)),
        };
        let merged = match (live.clone(), patch.get(name)) {
            (None, None) => return Ok(None),
            (_, Some(Value::Null)) => return Ok(None),
            (Some(live), None) => live,
            (live, Some(Value::Array(p))) => {
                validate_order(p, order, key)?;
                match live {
                    Some(live) if field.merge => self.merge_list(live, p, &field)?,
                    _ => self.fresh_list(p, &field)?,
                }
            }
            (_, Some(other)) => return Err(bad_arg("list", other)),
        };
        let ordered = order_items(merged, order, &live.unwrap_or_default(), key)?;
        original.insert(name.to_string(), Value::Array(ordered));
        Ok(Some(name))
    }
}

#[cfg(test)]
mod tests;
