//! Rendering documents to bytes without copying their definitions: a document
//! is a tree of [`Part`]s whose definition maps are views (a set of names plus
//! where to find each definition), serialized straight from the shared base.
//!
//! Invariants: map keys are written in the order given (definitions sorted by
//! name), so equal inputs give equal bytes and hashes.
//! Where to look next: `mod.rs` (which document holds what).

use std::collections::BTreeSet;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::defs::Defs;

/// Where definitions are looked up: `extra` (per build) first, then `base`.
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    pub extra: &'a Defs,
    pub base: &'a Defs,
}

impl<'a> Sources<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.extra.get(name).or_else(|| self.base.get(name))
    }
}

/// A piece of a document.
pub enum Part<'a> {
    Value(Value),
    /// A definitions map: these names, resolved in these sources.
    Defs(&'a BTreeSet<String>, Sources<'a>),
    Map(Vec<(&'static str, Part<'a>)>),
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Value(v) => v.serialize(serializer),
            Part::Defs(names, sources) => {
                let mut map = serializer.serialize_map(None)?;
                for name in names.iter() {
                    if let Some(def) = sources.get(name) {
                        map.serialize_entry(name, def)?;
                    }
                }
                map.end()
            }
            Part::Map(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}
