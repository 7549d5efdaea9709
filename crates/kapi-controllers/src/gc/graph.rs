//! The ownership graph, as upstream's GraphBuilder keeps it: one node per uid,
//! with the owner references the object carries and the dependents that point
//! at it. An owner known only from a dependent's reference is a *virtual* node
//! until its object is observed (or found not to exist).
//!
//! Applying a change returns the work it implies — which nodes the collector
//! must look at (`attemptToDelete`) and which owners wait for their dependents
//! to be orphaned (`attemptToOrphan`). Pure data: no I/O, no locks.

use std::collections::hash_map::Entry;
use std::collections::BTreeSet;

/// Keyed by uid; hashed with foldhash (SipHash was a tenth of the start-up
/// cost of a 300k store's graph).
type HashMap<K, V> = foldhash::HashMap<K, V>;

use kapi_machinery::member::Members;
use kapi_registry::store::gc_finalizers::{FOREGROUND, ORPHAN};
use serde_json::Value;

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block: bool,
}

impl OwnerRef {
    pub fn parse_all(obj: &Value) -> Vec<OwnerRef> {
        let refs = obj
            .member_at(&["metadata", "ownerReferences"])
            .and_then(Value::as_array);
        Self::parse(refs.map_or(&[], Vec::as_slice))
    }

    /// The `ownerReferences` items `refs` that name an owner by uid.
    pub fn parse(refs: &[Value]) -> Vec<OwnerRef> {
        let s = |r: &Value, k: &str| r.member_str(k).unwrap_or("").to_owned();
        refs.iter()
            .map(|r| OwnerRef {
                api_version: s(r, "apiVersion"),
                kind: s(r, "kind"),
                name: s(r, "name"),
                uid: s(r, "uid"),
                block: r.member("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
            })
            .filter(|r| !r.uid.is_empty())
            .collect()
    }
}

/// Where an object lives: its kind and coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    /// The dependent's namespace for a virtual node (upstream's guess, too).
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
}

/// What the graph knows of one object.
#[derive(Debug, Clone)]
pub struct Observed {
    pub id: Identity,
    pub owners: Vec<OwnerRef>,
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

impl Observed {
    fn has(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    fn deleting_with(&self, finalizer: &str) -> bool {
        self.deleting && self.has(finalizer)
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub obj: Observed,
    pub virtual_: bool,
    pub dependents: BTreeSet<String>,
}

impl Node {
    /// Deleting, with the dependents to be deleted first.
    pub fn deleting_dependents(&self) -> bool {
        self.obj.deleting_with(FOREGROUND)
    }

    pub fn being_deleted(&self) -> bool {
        self.obj.deleting
    }
}

/// Work a change implies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// Look at this node: collect it, or finish its foreground deletion.
    Delete(String),
    /// Orphan this owner's dependents, then drop its `orphan` finalizer.
    Orphan(String),
}

#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
}

impl Graph {
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Dependents whose reference to `owner` blocks its deletion.
    pub fn blocking_dependents(&self, owner: &str) -> Vec<&Node> {
        let Some(n) = self.nodes.get(owner) else {
            return Vec::new();
        };
        n.dependents
            .iter()
            .filter_map(|d| self.nodes.get(d))
            .filter(|d| d.obj.owners.iter().any(|r| r.uid == owner && r.block))
            .collect()
    }

    pub fn dependents(&self, owner: &str) -> Vec<&Node> {
        self.nodes
            .get(owner)
            .map(|n| {
                n.dependents
                    .iter()
                    .filter_map(|d| self.nodes.get(d))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// An object was created or changed.
    pub fn upsert(&mut self, obj: Observed) -> Vec<Work> {
        let mut work = Vec::new();
        let uid = obj.id.uid.clone();
        let before = self
            .nodes
            .get(&uid)
            .filter(|n| !n.virtual_)
            .map(|n| n.obj.clone());
        let old_owners = before
            .as_ref()
            .map(|o| o.owners.clone())
            .unwrap_or_default();
        for r in &old_owners {
            match obj.owners.iter().find(|n| n.uid == r.uid) {
                // A removed or no longer blocking reference may unblock its owner.
                None => self.unblocked(&r.uid, &uid, true, &mut work),
                Some(n) if n.block != r.block => self.unblocked(&r.uid, &uid, false, &mut work),
                Some(_) => {}
            }
        }
        for r in &obj.owners {
            if !old_owners.iter().any(|o| o.uid == r.uid) {
                self.add_dependent(r, &obj, &mut work);
            }
        }
        let starts_orphan =
            obj.deleting_with(ORPHAN) && !before.as_ref().is_some_and(|b| b.deleting_with(ORPHAN));
        let starts_foreground = obj.deleting_with(FOREGROUND)
            && !before.as_ref().is_some_and(|b| b.deleting_with(FOREGROUND));
        let node = match self.nodes.entry(uid.clone()) {
            Entry::Occupied(e) => {
                let node = e.into_mut();
                node.obj = obj;
                node.virtual_ = false;
                node
            }
            Entry::Vacant(e) => e.insert(Node {
                obj,
                virtual_: false,
                dependents: BTreeSet::new(),
            }),
        };
        if starts_orphan {
            work.push(Work::Orphan(uid));
        } else if starts_foreground {
            work.extend(node.dependents.iter().cloned().map(Work::Delete));
            work.push(Work::Delete(uid));
        }
        work
    }

    /// When `dependent` stops blocking `owner` (or leaves it), a foreground
    /// deletion may finish.
    fn unblocked(&mut self, owner: &str, dependent: &str, removed: bool, work: &mut Vec<Work>) {
        if let Some(o) = self.nodes.get_mut(owner) {
            if removed {
                o.dependents.remove(dependent);
            }
            if o.deleting_dependents() {
                work.push(Work::Delete(owner.to_owned()));
            }
        }
    }

    fn add_dependent(&mut self, r: &OwnerRef, dependent: &Observed, work: &mut Vec<Work>) {
        let node = self.nodes.entry(r.uid.clone()).or_insert_with(|| {
            // Not seen yet: verify it exists (the worker GETs it).
            work.push(Work::Delete(r.uid.clone()));
            Node {
                obj: Observed {
                    id: Identity {
                        api_version: r.api_version.clone(),
                        kind: r.kind.clone(),
                        namespace: dependent.id.namespace.clone(),
                        name: r.name.clone(),
                        uid: r.uid.clone(),
                    },
                    owners: Vec::new(),
                    deleting: false,
                    finalizers: Vec::new(),
                },
                virtual_: true,
                dependents: BTreeSet::new(),
            }
        });
        node.dependents.insert(dependent.id.uid.clone());
    }

    /// An object was deleted: its dependents must be looked at, and owners
    /// waiting for it may finish.
    pub fn delete(&mut self, uid: &str) -> Vec<Work> {
        let Some(node) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        let mut work: Vec<Work> = node.dependents.iter().cloned().map(Work::Delete).collect();
        for r in &node.obj.owners {
            if let Some(owner) = self.nodes.get_mut(&r.uid) {
                owner.dependents.remove(uid);
                if owner.deleting_dependents() {
                    work.push(Work::Delete(r.uid.clone()));
                }
            }
        }
        work
    }

    /// The collector found that a node's object does not exist (or has another
    /// uid): a virtual node goes; an observed one stays until its watch says
    /// so, but its dependents are looked at again either way.
    pub fn virtual_delete(&mut self, uid: &str) -> Vec<Work> {
        match self.nodes.get(uid) {
            Some(n) if n.virtual_ => self.delete(uid),
            Some(n) => n.dependents.iter().cloned().map(Work::Delete).collect(),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(uid: &str, owners: &[(&str, bool)]) -> Observed {
        Observed {
            id: Identity {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("ns".into()),
                name: format!("n-{uid}"),
                uid: uid.into(),
            },
            owners: owners
                .iter()
                .map(|(u, block)| OwnerRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: format!("n-{u}"),
                    uid: u.to_string(),
                    block: *block,
                })
                .collect(),
            deleting: false,
            finalizers: Vec::new(),
        }
    }

    #[test]
    fn unseen_owner_is_virtual_and_verified() {
        let mut g = Graph::default();
        let work = g.upsert(obj("child", &[("owner", false)]));
        assert_eq!(work, vec![Work::Delete("owner".into())]);
        assert!(g.node("owner").unwrap().virtual_);
        let work = g.upsert(obj("owner", &[]));
        assert!(work.is_empty());
        assert!(!g.node("owner").unwrap().virtual_);
        assert_eq!(g.dependents("owner").len(), 1);
    }

    #[test]
    fn owner_deletion_queues_dependents() {
        let mut g = Graph::default();
        g.upsert(obj("owner", &[]));
        g.upsert(obj("child", &[("owner", false)]));
        assert_eq!(g.delete("owner"), vec![Work::Delete("child".into())]);
        assert!(g.node("owner").is_none());
    }

    #[test]
    fn foreground_and_orphan_transitions() {
        let mut g = Graph::default();
        g.upsert(obj("owner", &[]));
        g.upsert(obj("child", &[("owner", true)]));
        let mut fg = obj("owner", &[]);
        fg.deleting = true;
        fg.finalizers = vec![FOREGROUND.into()];
        let work = g.upsert(fg.clone());
        assert_eq!(
            work,
            vec![Work::Delete("child".into()), Work::Delete("owner".into())]
        );
        assert_eq!(g.blocking_dependents("owner").len(), 1);
        // The same state again is no new transition.
        assert!(g.upsert(fg).is_empty());
        // The child going away wakes the owner.
        assert_eq!(g.delete("child"), vec![Work::Delete("owner".into())]);

        let mut g = Graph::default();
        let mut orphan = obj("owner", &[]);
        orphan.deleting = true;
        orphan.finalizers = vec![ORPHAN.into()];
        assert_eq!(g.upsert(orphan), vec![Work::Orphan("owner".into())]);
    }

    #[test]
    fn dropping_a_blocking_reference_wakes_a_foreground_owner() {
        let mut g = Graph::default();
        let mut fg = obj("owner", &[]);
        fg.deleting = true;
        fg.finalizers = vec![FOREGROUND.into()];
        g.upsert(fg);
        g.upsert(obj("child", &[("owner", true)]));
        let work = g.upsert(obj("child", &[("owner", false)]));
        assert_eq!(work, vec![Work::Delete("owner".into())]);
        assert!(g.blocking_dependents("owner").is_empty());
    }
}
