//! Merge and compare: one walk over two objects of the same type.
//!
//! Merge (`live` ← `config`) keeps the right side at every leaf, unions map
//! entries and merges list elements by their path element; shared list elements
//! come out in the right side's order, elements only the left side has stay where
//! they were. Compare records, at every leaf, whether the right side added,
//! removed or changed it, and at every map and list element (not struct fields of
//! a present parent) whether it was added or removed as a whole. Empty or absent
//! containers on both sides count as leaves, which keeps `{}` apart from absent.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{at_path, Node, Typed, TypedError};
use crate::fieldpath::{Path, PathElement, Set};
use crate::schema::ListType;

/// What changed from the left object to the right one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub removed: Set,
    pub modified: Set,
    pub added: Set,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.removed.is_empty() && self.modified.is_empty() && self.added.is_empty()
    }

    /// Drop `ignored` (and everything below its members) from all three sets.
    pub fn exclude(&mut self, ignored: &Set) {
        if ignored.is_empty() {
            return;
        }
        self.removed = self.removed.recursive_difference(ignored);
        self.modified = self.modified.recursive_difference(ignored);
        self.added = self.added.recursive_difference(ignored);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Map,
    List,
    Scalar,
}

pub(super) fn kind(v: Option<&Value>) -> Option<Kind> {
    match v? {
        Value::Null => None,
        Value::Object(_) => Some(Kind::Map),
        Value::Array(_) => Some(Kind::List),
        _ => Some(Kind::Scalar),
    }
}

struct Walk<'a> {
    typed: Typed<'a>,
    cmp: Option<Comparison>,
}

type Out = Result<Option<Value>, TypedError>;

impl<'a> Typed<'a> {
    /// `lhs` with `rhs` merged in (see the module doc).
    pub fn merge(&self, lhs: &Value, rhs: &Value) -> Result<Value, TypedError> {
        let mut w = Walk {
            typed: *self,
            cmp: None,
        };
        let out = w.walk(Some(lhs), Some(rhs), &self.root_node(), &mut Vec::new())?;
        Ok(out.unwrap_or_else(|| Value::Object(Map::new())))
    }

    /// What `rhs` added, removed and changed relative to `lhs`.
    pub fn compare(&self, lhs: &Value, rhs: &Value) -> Result<Comparison, TypedError> {
        let mut w = Walk {
            typed: *self,
            cmp: Some(Comparison::default()),
        };
        w.walk(Some(lhs), Some(rhs), &self.root_node(), &mut Vec::new())?;
        Ok(w.cmp.unwrap_or_default())
    }
}

impl Walk<'_> {
    fn walk(
        &mut self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        node: &Node,
        path: &mut Path,
    ) -> Out {
        let (lk, rk) = (kind(lhs), kind(rhs));
        let k = match (lk, rk) {
            (Some(a), Some(b)) if a != b => return Ok(self.leaf(lhs, rhs, path)),
            (_, Some(k)) | (Some(k), None) => k,
            (None, None) => return Ok(self.leaf(lhs, rhs, path)),
        };
        match k {
            Kind::Map => {
                let lm = lhs.and_then(Value::as_object);
                let rm = rhs.and_then(Value::as_object);
                let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
                if node.atomic_map || (empty(lm) && empty(rm)) {
                    return Ok(self.leaf(lhs, rhs, path));
                }
                let out = self.map(lm, rm, node, path)?;
                self.post_item(lhs, rhs, path);
                Ok(out)
            }
            Kind::List => {
                let ll = lhs.and_then(Value::as_array);
                let rl = rhs.and_then(Value::as_array);
                let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
                if *node.list() == ListType::Atomic || (empty(ll) && empty(rl)) {
                    return Ok(self.leaf(lhs, rhs, path));
                }
                let out = self.list(ll, rl, node, path)?;
                self.post_item(lhs, rhs, path);
                Ok(out)
            }
            Kind::Scalar => Ok(self.leaf(lhs, rhs, path)),
        }
    }

    /// The merged leaf; a comparison records the change and builds nothing
    /// (so its maps and lists stay empty: no values or keys are copied).
    fn leaf(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, path: &Path) -> Option<Value> {
        if let Some(c) = &mut self.cmp {
            match (lhs, rhs) {
                (None, Some(_)) => c.added.insert(path),
                (Some(_), None) => c.removed.insert(path),
                (Some(a), Some(b)) if a != b => c.modified.insert(path),
                _ => {}
            }
            return None;
        }
        rhs.or(lhs).cloned()
    }

    fn post_item(&mut self, lhs: Option<&Value>, rhs: Option<&Value>, path: &Path) {
        if let Some(c) = &mut self.cmp {
            if lhs.is_none() {
                c.added.insert(path);
            } else if rhs.is_none() {
                c.removed.insert(path);
            }
        }
    }

    fn map(
        &mut self,
        lm: Option<&Map<String, Value>>,
        rm: Option<&Map<String, Value>>,
        node: &Node,
        path: &mut Path,
    ) -> Out {
        let at_root = path.is_empty();
        let mut out = Map::new();
        let mut visit = |w: &mut Self, k: &String, l: Option<&Value>, r: Option<&Value>| {
            let (cn, _) = w.typed.field_node(node, at_root, k);
            path.push(PathElement::Field(k.clone()));
            let res = w.walk(l, r, &cn, path);
            path.pop();
            if let Some(v) = res? {
                out.insert(k.clone(), v);
            }
            Ok::<(), TypedError>(())
        };
        // Members are found by `member::get` (a scan of a small map, not a
        // hash of the key).
        for (k, l) in lm.into_iter().flatten() {
            visit(self, k, Some(l), rm.and_then(|m| crate::member::get(m, k)))?;
        }
        for (k, r) in rm.into_iter().flatten() {
            if lm.is_none_or(|m| crate::member::get(m, k).is_none()) {
                visit(self, k, None, Some(r))?;
            }
        }
        Ok((!out.is_empty()).then_some(Value::Object(out)))
    }

    /// The elements of a list in order, each named by its path element (later
    /// duplicates ignored).
    fn index<'v>(
        &self,
        items: Option<&'v Vec<Value>>,
        node: &Node,
        path: &Path,
    ) -> Result<(Vec<PathElement>, BTreeMap<PathElement, &'v Value>), TypedError> {
        let mut order = Vec::new();
        let mut seen = BTreeMap::new();
        for (i, item) in items.into_iter().flatten().enumerate() {
            let pe = self
                .typed
                .item_element(node, i, item)
                .map_err(|e| at_path(path, e))?;
            if seen.contains_key(&pe) {
                continue;
            }
            seen.insert(pe.clone(), item);
            order.push(pe);
        }
        Ok((order, seen))
    }

    fn list(
        &mut self,
        ll: Option<&Vec<Value>>,
        rl: Option<&Vec<Value>>,
        node: &Node,
        path: &mut Path,
    ) -> Out {
        let (lorder, lseen) = self.index(ll, node, path)?;
        let (rorder, rseen) = self.index(rl, node, path)?;
        let mut shared = rorder.iter().filter(|pe| lseen.contains_key(pe));
        let mut next_shared = shared.next();
        let en = self.typed.elem_node(node);
        let mut out = Vec::new();
        let mut item = |w: &mut Self, pe: &PathElement| -> Result<(), TypedError> {
            path.push(pe.clone());
            let res = w.walk(lseen.get(pe).copied(), rseen.get(pe).copied(), &en, path);
            path.pop();
            out.extend(res?);
            Ok(())
        };
        let (mut li, mut ri) = (0, 0);
        while li < lorder.len() || ri < rorder.len() {
            if li < lorder.len() && ri < rorder.len() {
                let pe = &lorder[li];
                if *pe == rorder[ri] {
                    item(self, pe)?;
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if rseen.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    // A shared element the right side puts later: emit it there.
                    li += 1;
                    continue;
                }
            }
            if li < lorder.len() && !rseen.contains_key(&lorder[li]) {
                item(self, &lorder[li])?;
                li += 1;
                continue;
            }
            if ri < rorder.len() {
                let pe = &rorder[ri];
                item(self, pe)?;
                ri += 1;
                if next_shared == Some(pe) {
                    next_shared = shared.next();
                }
                continue;
            }
            // Only shared left-side elements already emitted remain.
            li += 1;
        }
        Ok((!out.is_empty()).then_some(Value::Array(out)))
    }
}
