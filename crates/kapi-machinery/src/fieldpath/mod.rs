//! Field paths and field sets, as server-side apply tracks ownership: the model of
//! upstream's `sigs.k8s.io/structured-merge-diff` `fieldpath` package.
//!
//! A path is a list of [`PathElement`]s: a struct or map field (`f:`), a list-map
//! element named by its key fields (`k:`), a set element named by its value
//! (`v:`), or a list position (`i:`). A [`Set`] is a tree of such paths: at each
//! node, `members` are the paths that end there and `children` lead further down.
//! A path can be both a member and a prefix of other members (a list-map element
//! owned as a whole and also field by field); on the wire that is the `.` entry.
//!
//! Invariants: children sets are never empty (every operation prunes them), and
//! elements are ordered as upstream orders them (fields, then keys, then values,
//! then indexes; values by [`compare_values`]), so iteration and the encoded
//! `FieldsV1` come out in upstream's order.
//!
//! Where to look next: `fieldsv1.rs` (the wire format), `crate::typed` (sets of
//! objects, merge and compare driven by the schema), `crate::apply` (ownership).

mod fieldsv1;
#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

pub use fieldsv1::{element_key, field_key, from_fields_v1, to_fields_v1, FieldsV1Error};

/// One step of a path.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of a struct or a key of a map.
    Field(String),
    /// A list-map element: its key fields and their values, sorted by name.
    Key(Vec<(String, Value)>),
    /// A set element: its value.
    Value(Value),
    /// A position in a list without keys.
    Index(usize),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// A key element from key fields in any order.
    pub fn key(mut fields: Vec<(String, Value)>) -> PathElement {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    pub fn field(name: impl Into<String>) -> PathElement {
        PathElement::Field(name.into())
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Upstream's total order of values: numbers (numerically), strings, booleans,
/// lists, maps, null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<_> = x.iter().collect();
            let mut ys: Vec<_> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

impl fmt::Display for PathElement {
    /// As upstream prints paths in conflict messages: `.name`, `[name="x"]`,
    /// `[="v"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={v}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

/// A path in upstream's printed form (`.spec.containers[name="x"].image`).
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// The first of `items` (in element order) that is field `name`.
fn field_scan<'a, T: FieldItem + 'a>(items: impl Iterator<Item = T>, name: &str) -> Option<T> {
    for item in items {
        match item.element() {
            PathElement::Field(n) if n == name => return Some(item),
            PathElement::Field(n) if n.as_str() > name => return None,
            PathElement::Field(_) => {}
            _ => return None,
        }
    }
    None
}

/// A set's member or child, seen by its element.
trait FieldItem {
    fn element(&self) -> &PathElement;
}

impl FieldItem for &PathElement {
    fn element(&self) -> &PathElement {
        self
    }
}

impl FieldItem for (&PathElement, &Set) {
    fn element(&self) -> &PathElement {
        self.0
    }
}

/// A set of paths, as a tree (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// The set holding exactly these paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Set {
        let mut s = Set::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// The paths below `pe`, without the `pe` prefix (empty when there are none).
    pub fn with_prefix(&self, pe: &PathElement) -> Set {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    /// Whether field `name` is a member, found without building its element
    /// (fields sort first, so the scan stops at the first element of another
    /// kind; the sets asked this way are small).
    pub fn has_field(&self, name: &str) -> bool {
        field_scan(self.members.iter(), name).is_some()
    }

    /// The paths below field `name`, found as [`Set::has_field`] finds a member.
    pub fn field_child(&self, name: &str) -> Option<&Set> {
        field_scan(self.children.iter(), name).map(|(_, c)| c)
    }

    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    pub(crate) fn set_child(&mut self, pe: PathElement, child: Set) {
        if child.is_empty() {
            self.children.remove(&pe);
        } else {
            self.children.insert(pe, child);
        }
    }

    pub fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    pub fn intersection(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.intersection(&other.members).cloned().collect();
        for (pe, c) in &self.children {
            if let Some(oc) = other.children.get(pe) {
                out.set_child(pe.clone(), c.intersection(oc));
            }
        }
        out
    }

    /// The paths of `self` that are not in `other` (a member of `other` removes
    /// only that exact path, not the paths below it).
    pub fn difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (pe, c) in &self.children {
            match other.children.get(pe) {
                Some(oc) => out.set_child(pe.clone(), c.difference(oc)),
                None => out.set_child(pe.clone(), c.clone()),
            }
        }
        out
    }

    /// [`Set::difference`] in place: what stays is not copied.
    pub fn subtract(&mut self, other: &Set) {
        if !other.members.is_empty() {
            self.members.retain(|m| !other.members.contains(m));
        }
        self.children.retain(|pe, c| {
            if let Some(oc) = other.children.get(pe) {
                c.subtract(oc);
            }
            !c.is_empty()
        });
    }

    /// Like [`Set::difference`], but a member of `other` also removes every path
    /// below it.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        out.members = self.members.difference(&other.members).cloned().collect();
        for (pe, c) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            match other.children.get(pe) {
                Some(oc) => out.set_child(pe.clone(), c.recursive_difference(oc)),
                None => out.set_child(pe.clone(), c.clone()),
            }
        }
        out
    }

    /// Every path, members of a node before its children, in element order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The number of paths in the set.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(Set::len).sum::<usize>()
    }
}
