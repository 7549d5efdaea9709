//! Field ownership: who manages which fields, how an update moves ownership,
//! and how an apply merges a configuration, detects conflicts and removes what
//! its manager stopped applying. The model is upstream's
//! `structured-merge-diff` `merge.Updater`.
//!
//! Managers are named by opaque identifiers (the layer above encodes manager
//! name, operation, apiVersion and subresource in them). Every write:
//! - compares the live object with the new one; the fields it added or changed
//!   are taken from every other manager (an apply without `force` fails with
//!   one conflict per such field instead), and removed fields leave every set;
//! - an update then owns what it had, minus what was removed, plus what it
//!   added or changed;
//! - an apply owns exactly the fields of its configuration. Fields it applied
//!   last time but not now are removed from the object unless some manager
//!   still owns them.
//!
//! `ignored` fields (reset by the strategy, e.g. `status` on the main resource)
//! are never owned or in conflict.
//!
//! Where to look next: `kapi-registry`'s `managed` module (the wire format of
//! `managedFields`, manager identifiers, timestamps).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::fieldpath::{Path, Set};
use crate::typed::{Comparison, Typed, TypedError};

/// The fields one manager owns, at an API version, and whether by apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedSet {
    pub set: Set,
    pub api_version: String,
    pub applied: bool,
}

/// Every manager's fields, by manager identifier.
pub type ManagedFields = BTreeMap<String, VersionedSet>;

/// A field an apply would take from another manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    pub path: Path,
}

/// Why an apply did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{} conflict(s)", .0.len())]
    Conflicts(Vec<Conflict>),
    #[error(transparent)]
    Typed(#[from] TypedError),
}

/// The result of an apply: the new object (`None` when the apply changes
/// nothing) and the new ownership.
pub type Applied = (Option<Value>, ManagedFields);

/// Ownership rules over objects of one type.
pub struct Updater<'a> {
    pub typed: Typed<'a>,
    pub ignored: Set,
}

impl Updater<'_> {
    /// Move ownership for a write from `old` to `new` by `workflow`; the
    /// comparison it was based on is returned. Other managers lose the fields
    /// written (unless `force` is false: then those are the conflicts) and the
    /// fields removed.
    fn take_ownership(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut ManagedFields,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, ApplyError> {
        let mut cmp = self.typed.compare(old, new)?;
        cmp.exclude(&self.ignored);
        if managers.keys().all(|m| m == workflow) {
            // No one else owns anything (a create): nothing to take.
            managers.retain(|_, vs| !vs.set.is_empty());
            return Ok(cmp);
        }
        let written = cmp.modified.union(&cmp.added);
        let mut conflicts = Vec::new();
        let mut taken: BTreeMap<String, Set> = BTreeMap::new();
        for (manager, vs) in managers.iter() {
            if manager == workflow {
                continue;
            }
            let clash = vs.set.intersection(&written);
            if !clash.is_empty() {
                conflicts.extend(clash.paths().into_iter().map(|path| Conflict {
                    manager: manager.clone(),
                    path,
                }));
                taken.insert(manager.clone(), clash);
            }
        }
        if !force && !conflicts.is_empty() {
            return Err(ApplyError::Conflicts(conflicts));
        }
        for (manager, vs) in managers.iter_mut() {
            if manager == workflow {
                continue;
            }
            if let Some(clash) = taken.get(manager) {
                vs.set.subtract(clash);
            }
            if !cmp.removed.is_empty() {
                vs.set.subtract(&cmp.removed);
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(cmp)
    }

    /// Ownership after `manager` (not an applier) changed `live` into `new`.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        api_version: &str,
        mut managers: ManagedFields,
        manager: &str,
    ) -> Result<ManagedFields, TypedError> {
        let cmp = match self.take_ownership(live, new, &mut managers, manager, true) {
            Ok(c) => c,
            Err(ApplyError::Typed(e)) => return Err(e),
            Err(ApplyError::Conflicts(_)) => unreachable!("forced updates have no conflicts"),
        };
        let previous = managers
            .remove(manager)
            .map(|vs| vs.set)
            .unwrap_or_default();
        let set = if previous.is_empty() && cmp.modified.is_empty() {
            // What a create writes: only what it added (already without the
            // ignored fields).
            cmp.added
        } else {
            previous
                .difference(&cmp.removed)
                .union(&cmp.modified)
                .union(&cmp.added)
                .recursive_difference(&self.ignored)
        };
        if !set.is_empty() {
            let vs = VersionedSet {
                set,
                api_version: api_version.to_string(),
                applied: false,
            };
            managers.insert(manager.to_string(), vs);
        }
        Ok(managers)
    }

    /// Merge `config` into `live` as `manager`'s applied configuration.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        api_version: &str,
        mut managers: ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<Applied, ApplyError> {
        self.typed.validate(config)?;
        let merged = self.typed.merge(live, config)?;
        let last = managers.get(manager).map(|vs| vs.set.clone());
        let set = self.typed.to_field_set(config, false)?;
        managers.insert(
            manager.to_string(),
            VersionedSet {
                set: set.recursive_difference(&self.ignored),
                api_version: api_version.to_string(),
                applied: true,
            },
        );
        let merged = match last {
            Some(last) if !last.is_empty() => self.prune(&merged, &managers, &last)?,
            _ => merged,
        };
        self.take_ownership(live, &merged, &mut managers, manager, force)?;
        let changed = merged != *live;
        Ok((changed.then_some(merged), managers))
    }

    /// Remove from `merged` what the applier owned last time (`last`) and no
    /// manager owns now.
    fn prune(
        &self,
        merged: &Value,
        managers: &ManagedFields,
        last: &Set,
    ) -> Result<Value, TypedError> {
        let t = &self.typed;
        let last = t.ensure_named_fields_are_members(last);
        let pruned = t.remove_items(merged, &last);
        // Add back what anyone (including the applier's new configuration) owns.
        let owned = managers
            .values()
            .fold(Set::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = t.ensure_named_fields_are_members(&t.to_field_set(merged, true)?);
        let pruned_set = t.ensure_named_fields_are_members(&t.to_field_set(&pruned, true)?);
        let keep = pruned_set.union(&t.ensure_named_fields_are_members(&owned));
        let pruned = t.remove_items(merged, &merged_set.difference(&keep));
        // Only what the applier owned before may go.
        let pruned_set = t.ensure_named_fields_are_members(&t.to_field_set(&pruned, true)?);
        let gone = merged_set.difference(&pruned_set).intersection(&last);
        Ok(t.remove_items(merged, &gone))
    }
}
