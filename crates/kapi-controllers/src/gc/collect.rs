//! What the collector's workers do, as upstream's `attemptToDeleteItem` and
//! `attemptToOrphanWorker`:
//!
//! - a node being deleted in the foreground waits for its blocking dependents
//!   (`blockOwnerDeletion: true`), queues them, and loses its
//!   `foregroundDeletion` finalizer when none is left;
//! - any other node's owner references are classified against the live owners:
//!   *solid* (exists, same uid), *dangling* (gone, or recreated with another
//!   uid), *waiting* (deleting in the foreground). With a solid owner, dangling
//!   and waiting references are removed; without, the object is deleted —
//!   in the foreground when an owner waits for it and it has dependents itself,
//!   otherwise with the policy its own finalizers ask for;
//! - an owner deleted with the `orphan` finalizer has its reference removed from
//!   every dependent, then loses the finalizer.
//!
//! Deletes carry the uid and resourceVersion the decision was made on, so a
//! recreated or changed object is never collected by mistake.

use kapi_registry::store::options::WriteOptions;
use std::sync::Arc;

use futures::StreamExt;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::gc_finalizers::{FOREGROUND, ORPHAN};
use kapi_registry::store::options::{DeleteOptions, Preconditions, Propagation};
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use super::graph::{Identity, OwnerRef, Work};
use super::Collector;
use crate::CONTROLLER_MANAGER;
use kapi_registry::apis::Entry;

/// Dependents of one owner orphaned at the same time.
const ORPHAN_CONCURRENCY: usize = 16;

/// How one owner reference stands.
enum Owner {
    Solid,
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
}

/// The item the worker looks at, copied out of the graph.
struct Item {
    id: Identity,
    being_deleted: bool,
    deleting_dependents: bool,
    has_dependents: bool,
}

impl Collector {
    fn item(&self, uid: &str) -> Option<Item> {
        let g = self.graph.lock().expect("graph lock");
        let n = g.node(uid)?;
        Some(Item {
            id: n.obj.id.clone(),
            being_deleted: n.being_deleted(),
            deleting_dependents: n.deleting_dependents(),
            has_dependents: !n.dependents.is_empty(),
        })
    }

    fn entry(&self, api_version: &str, kind: &str) -> Result<Arc<Entry>, ApiError> {
        self.cx.apis.resolve_kind(api_version, kind).ok_or_else(|| {
            ApiError::internal(format!(
                "unable to get REST mapping for {api_version}/{kind}"
            ))
        })
    }

    fn virtual_delete(&self, uid: &str) {
        let work = self.graph.lock().expect("graph lock").virtual_delete(uid);
        self.schedule(work);
    }

    pub(super) async fn attempt_to_delete(&self, uid: &str) -> Result<(), ApiError> {
        let Some(item) = self.item(uid) else {
            return Ok(());
        };
        if item.being_deleted && !item.deleting_dependents {
            return Ok(());
        }
        let entry = self.entry(&item.id.api_version, &item.id.kind)?;
        let ns = if entry.def.namespaced {
            item.id.namespace.as_deref()
        } else {
            None
        };
        let latest = match entry.store.get(ns, &item.id.name, None).await {
            Err(e) if e.is_not_found() => {
                self.virtual_delete(uid);
                return Ok(());
            }
            other => other?,
        };
        if meta::uid(&latest) != Some(uid) {
            self.virtual_delete(uid);
            return Ok(());
        }
        if item.deleting_dependents {
            return self.process_deleting_dependents(&entry, &latest).await;
        }
        let refs = OwnerRef::parse_all(&latest);
        if refs.is_empty() {
            return Ok(());
        }
        let mut solid = 0;
        let mut drop_uids = Vec::new();
        let mut waiting = 0;
        for r in &refs {
            match self.classify(&latest, r).await? {
                Some(Owner::Solid) => solid += 1,
                Some(Owner::Dangling) => drop_uids.push(r.uid.clone()),
                Some(Owner::Waiting) => {
                    waiting += 1;
                    drop_uids.push(r.uid.clone());
                }
                // A cluster-scoped object with a namespaced owner: never resolves.
                None => return Ok(()),
            }
        }
        if solid > 0 {
            if drop_uids.is_empty() {
                return Ok(());
            }
            return self
                .edit(&entry, &latest, |obj| remove_owner_refs(obj, &drop_uids))
                .await;
        }
        let policy = if waiting > 0 && item.has_dependents {
            if self.has_foreground_dependent(uid) {
                // Break a possible cycle of foreground deletions, as upstream.
                self.edit(&entry, &latest, unblock_owner_refs).await?;
            }
            Propagation::Foreground
        } else {
            let f = meta::finalizers(&latest);
            if f.iter().any(|x| x == ORPHAN) {
                Propagation::Orphan
            } else if f.iter().any(|x| x == FOREGROUND) {
                Propagation::Foreground
            } else {
                Propagation::Background
            }
        };
        self.delete(&entry, &latest, policy).await
    }

    fn has_foreground_dependent(&self, uid: &str) -> bool {
        let g = self.graph.lock().expect("graph lock");
        g.dependents(uid).iter().any(|d| d.deleting_dependents())
    }

    /// `None` when the reference can never resolve (a namespaced owner of a
    /// cluster-scoped object).
    async fn classify(&self, item: &Value, r: &OwnerRef) -> Result<Option<Owner>, ApiError> {
        let entry = self.entry(&r.api_version, &r.kind)?;
        let ns = match (entry.def.namespaced, meta::namespace(item)) {
            (true, None) => return Ok(None),
            (true, Some(ns)) => Some(ns),
            (false, _) => None,
        };
        let owner = match entry.store.get(ns, &r.name, None).await {
            Err(e) if e.is_not_found() => return Ok(Some(Owner::Dangling)),
            other => other?,
        };
        if meta::uid(&owner) != Some(r.uid.as_str()) {
            return Ok(Some(Owner::Dangling));
        }
        let foreground = meta::finalizers(&owner).iter().any(|f| f == FOREGROUND);
        Ok(Some(if meta::is_deleting(&owner) && foreground {
            Owner::Waiting
        } else {
            Owner::Solid
        }))
    }

    async fn process_deleting_dependents(
        &self,
        entry: &Entry,
        latest: &Value,
    ) -> Result<(), ApiError> {
        let uid = meta::uid(latest).unwrap_or("");
        let blocking: Vec<(String, bool)> = {
            let g = self.graph.lock().expect("graph lock");
            g.blocking_dependents(uid)
                .iter()
                .map(|d| (d.obj.id.uid.clone(), d.deleting_dependents()))
                .collect()
        };
        if blocking.is_empty() {
            return self
                .edit(entry, latest, |obj| meta::remove_finalizer(obj, FOREGROUND))
                .await;
        }
        let work = blocking
            .into_iter()
            .filter(|(_, fg)| !fg)
            .map(|(d, _)| Work::Delete(d))
            .collect();
        self.schedule(work);
        Ok(())
    }

    pub(super) async fn attempt_to_orphan(&self, uid: &str) -> Result<(), ApiError> {
        let Some(owner) = self.item(uid) else {
            return Ok(());
        };
        let dependents: Vec<Identity> = {
            let g = self.graph.lock().expect("graph lock");
            g.dependents(uid).iter().map(|d| d.obj.id.clone()).collect()
        };
        let uids = vec![uid.to_owned()];
        // Dependents are independent of each other: patch several at once.
        let results: Vec<Result<(), ApiError>> = futures::stream::iter(dependents)
            .map(|d| self.orphan_one(d, &uids))
            .buffer_unordered(ORPHAN_CONCURRENCY)
            .collect()
            .await;
        results.into_iter().collect::<Result<(), ApiError>>()?;
        let entry = self.entry(&owner.id.api_version, &owner.id.kind)?;
        let ns = owner
            .id
            .namespace
            .as_deref()
            .filter(|_| entry.def.namespaced);
        let current = match entry.store.get(ns, &owner.id.name, None).await {
            Err(e) if e.is_not_found() => return Ok(()),
            other => other?,
        };
        if meta::uid(&current) != Some(uid) {
            return Ok(());
        }
        self.edit(&entry, &current, |o| meta::remove_finalizer(o, ORPHAN))
            .await
    }

    /// Remove the references to `uids` from one dependent, if it still exists.
    async fn orphan_one(&self, d: Identity, uids: &[String]) -> Result<(), ApiError> {
        let entry = self.entry(&d.api_version, &d.kind)?;
        let ns = d.namespace.as_deref().filter(|_| entry.def.namespaced);
        let current = match entry.store.get(ns, &d.name, None).await {
            Err(e) if e.is_not_found() => return Ok(()),
            other => other?,
        };
        if meta::uid(&current) != Some(d.uid.as_str()) {
            return Ok(());
        }
        match self
            .edit(&entry, &current, |o| remove_owner_refs(o, uids))
            .await
        {
            Err(e) if e.is_not_found() => Ok(()),
            other => other,
        }
    }

    async fn delete(
        &self,
        entry: &Entry,
        obj: &Value,
        policy: Propagation,
    ) -> Result<(), ApiError> {
        let opts = DeleteOptions {
            propagation: Some(policy),
            preconditions: Preconditions {
                uid: meta::uid(obj).map(str::to_owned),
                resource_version: meta::resource_version(obj).map(str::to_owned),
            },
            ..Default::default()
        };
        match entry
            .store
            .delete(meta::namespace(obj), meta::name(obj), &opts)
            .await
        {
            Err(e) if e.is_not_found() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Change `obj` in place through the store; `change` returns false for "nothing to do".
    async fn edit<F>(&self, entry: &Entry, obj: &Value, change: F) -> Result<(), ApiError>
    where
        F: Fn(&mut Value) -> bool + Send + Sync,
    {
        let uid = meta::uid(obj).unwrap_or("").to_owned();
        let opts = WriteOptions::for_manager(CONTROLLER_MANAGER);
        let result = entry
            .store
            .update_with(
                meta::namespace(obj),
                meta::name(obj),
                UpdateTarget::Main,
                &opts,
                false,
                |current| {
                    let mut next = current.cloned().ok_or_else(|| ApiError::internal("gone"))?;
                    if meta::uid(&next) != Some(uid.as_str()) {
                        return Err(ApiError::not_found(
                            entry.def.group_resource(),
                            meta::name(obj),
                        ));
                    }
                    change(&mut next);
                    Ok(next)
                },
            )
            .await;
        match result {
            Err(e) if e.is_not_found() => Ok(()),
            other => other.map(|_| ()),
        }
    }
}

fn remove_owner_refs(obj: &mut Value, uids: &[String]) -> bool {
    let m = meta::meta_mut(obj);
    let Some(refs) = m.get_mut("ownerReferences").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| {
        !uids
            .iter()
            .any(|u| r.get("uid").and_then(Value::as_str) == Some(u))
    });
    let changed = refs.len() != before;
    if refs.is_empty() {
        m.remove("ownerReferences");
    }
    changed
}

fn unblock_owner_refs(obj: &mut Value) -> bool {
    let mut changed = false;
    if let Some(refs) = meta::meta_mut(obj)
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for r in refs.iter_mut().filter_map(Value::as_object_mut) {
            if r.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                r.insert("blockOwnerDeletion".into(), Value::Bool(false));
                changed = true;
            }
        }
    }
    changed
}
