//! What a write owns when nobody owned anything before it (a create): the
//! paths [`Typed::compare`] records as added or modified from `lhs` to `rhs`,
//! without the ignored paths (and everything below them) and without the
//! stripped members, written straight as `FieldsV1` in upstream's order — no
//! [`Set`] is built and no path is copied on the way.
//!
//! The walk follows `rhs`: what only `lhs` has is removed, never written, so
//! it is not visited — a malformed list element only `lhs` holds below a map
//! goes unseen here, where `compare` would fail on it. The registry asks this
//! only of an empty object (the kind's zero value).

use serde_json::{Map, Value};

use super::merge::{kind, Kind};
use super::{Node, Typed, TypedError};
use crate::fieldpath::{element_key, field_key, path_string, PathElement, Set};
use crate::schema::ListType;

/// Where the walk stands in the ignored and stripped sets.
#[derive(Clone, Copy)]
struct Within<'s> {
    ignored: Option<&'s Set>,
    strip: Option<&'s Set>,
}

impl<'s> Within<'s> {
    fn field(&self, name: &str) -> Within<'s> {
        Within {
            ignored: self.ignored.and_then(|s| s.field_child(name)),
            strip: self.strip.and_then(|s| s.field_child(name)),
        }
    }

    fn element(&self, pe: &PathElement) -> Within<'s> {
        Within {
            ignored: self.ignored.and_then(|s| s.child(pe)),
            strip: self.strip.and_then(|s| s.child(pe)),
        }
    }
}

/// A failure below some node: its message, and the path from that node down
/// to where it happened, last element first (filled in as the walk unwinds).
struct Failed {
    message: String,
    path: Vec<PathElement>,
}

impl Failed {
    fn at(mut self, pe: impl FnOnce() -> PathElement) -> Failed {
        self.path.push(pe());
        self
    }
}

/// A node's `FieldsV1` value: `None` when nothing at or below it is written.
type Out = Result<Option<Map<String, Value>>, Failed>;

/// How one node is walked.
#[derive(Clone, Copy)]
struct Walk {
    at_root: bool,
    /// The node itself is kept out (not what is below it).
    stripped: bool,
    /// The node lies in an ignored subtree: it is walked only for what
    /// fails (nothing is built, the answer is `None`).
    discard: bool,
}

impl Walk {
    fn below(self, stripped: bool, ignored: bool) -> Walk {
        Walk {
            at_root: false,
            stripped,
            discard: self.discard || ignored,
        }
    }
}

impl Typed<'_> {
    /// The `FieldsV1` of what `rhs` adds or changes relative to `lhs`, less
    /// `ignored` (with everything below its members) and less the members of
    /// `strip` (those exact paths only); `None` when nothing is left. Equal to
    /// encoding `compare(lhs, rhs)`'s added ∪ modified after the same
    /// removals.
    pub fn written_fields_v1(
        &self,
        lhs: &Value,
        rhs: &Value,
        ignored: &Set,
        strip: &Set,
    ) -> Result<Option<Value>, TypedError> {
        let within = Within {
            ignored: Some(ignored),
            strip: Some(strip),
        };
        let root = Walk {
            at_root: true,
            stripped: true,
            discard: false,
        };
        match self.written(Some(lhs), rhs, &self.root_node(), within, root) {
            Ok(Some(m)) if !m.is_empty() => Ok(Some(Value::Object(m))),
            Ok(_) => Ok(None),
            Err(f) => {
                let mut path = f.path;
                path.reverse();
                Err(TypedError(format!("{}: {}", path_string(&path), f.message)))
            }
        }
    }

    /// The `FieldsV1` value of one node, walked as `walk` says.
    fn written(
        &self,
        lhs: Option<&Value>,
        rhs: &Value,
        node: &Node,
        within: Within,
        walk: Walk,
    ) -> Out {
        let Walk {
            at_root,
            stripped,
            discard,
        } = walk;
        let leaf = || {
            let member = !discard && lhs.is_none_or(|l| l != rhs);
            Ok((member && !stripped).then(Map::new))
        };
        let k = match (kind(lhs), kind(Some(rhs))) {
            (Some(a), Some(b)) if a != b => return leaf(),
            (_, Some(k)) | (Some(k), None) => k,
            (None, None) => return leaf(),
        };
        // A container is a member when it is new; what is below it follows
        // (made only once the value is known to be walked as a container).
        let container = || {
            let mut out = Map::new();
            if lhs.is_none() && !stripped && !discard {
                out.insert(".".into(), Value::Object(Map::new()));
            }
            out
        };
        let out = match k {
            Kind::Map => {
                let lm = lhs.and_then(Value::as_object);
                let rm = rhs.as_object();
                let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
                if node.atomic_map || (empty(lm) && empty(rm)) {
                    return leaf();
                }
                let mut out = container();
                let mut below = Vec::new();
                for (name, r) in rm.into_iter().flatten() {
                    let l = lm.and_then(|m| crate::member::get(m, name));
                    let (cn, _) = self.field_node(node, at_root, name);
                    let stripped = within.strip.is_some_and(|s| s.has_field(name));
                    // Ignored fields are walked all the same (a malformed
                    // value there fails the comparison too), building nothing.
                    let ignored = within.ignored.is_some_and(|s| s.has_field(name));
                    let v = self
                        .written(l, r, &cn, within.field(name), walk.below(stripped, ignored))
                        .map_err(|f| f.at(|| PathElement::Field(name.clone())))?;
                    if ignored || discard {
                        continue;
                    }
                    below.extend(v.map(|v| (name, v)));
                }
                below.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (name, v) in below {
                    out.insert(field_key(name), Value::Object(v));
                }
                out
            }
            Kind::List => {
                let ll = lhs.and_then(Value::as_array);
                let rl = rhs.as_array();
                let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
                if *node.list() == ListType::Atomic || (empty(ll) && empty(rl)) {
                    return leaf();
                }
                let mut out = container();
                let lefts = self.elements(ll, node)?;
                let rights = self.elements(rl, node)?;
                let en = self.elem_node(node);
                for (pe, r) in rights {
                    let l = lefts
                        .binary_search_by(|(p, _)| p.cmp(&pe))
                        .ok()
                        .map(|i| lefts[i].1);
                    let one = std::slice::from_ref(&pe);
                    let stripped = within.strip.is_some_and(|s| s.has(one));
                    let ignored = within.ignored.is_some_and(|s| s.has(one));
                    let v = self
                        .written(
                            l,
                            r,
                            &en,
                            within.element(&pe),
                            walk.below(stripped, ignored),
                        )
                        .map_err(|f| f.at(|| pe.clone()))?;
                    if ignored || discard {
                        continue;
                    }
                    if let Some(v) = v {
                        out.insert(element_key(&pe), Value::Object(v));
                    }
                }
                out
            }
            Kind::Scalar => return leaf(),
        };
        Ok(match out.len() {
            0 => None,
            1 if out.contains_key(".") => Some(Map::new()),
            _ => Some(out),
        })
    }

    /// A list's elements named by their path elements, in element order; of
    /// elements with the same name the first counts (as `compare` reads them).
    fn elements<'v>(
        &self,
        items: Option<&'v Vec<Value>>,
        node: &Node,
    ) -> Result<Vec<(PathElement, &'v Value)>, Failed> {
        let mut out = Vec::with_capacity(items.map_or(0, Vec::len));
        for (i, item) in items.into_iter().flatten().enumerate() {
            let pe = self.item_element(node, i, item).map_err(|e| Failed {
                message: e.0,
                path: Vec::new(),
            })?;
            out.push((pe, item));
        }
        // Stable: of equal elements the earliest stays first and is kept.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|later, first| later.0 == first.0);
        Ok(out)
    }
}
