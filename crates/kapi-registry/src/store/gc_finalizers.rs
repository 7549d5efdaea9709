//! The finalizers a delete adds or removes for the garbage collector, as
//! upstream's registry store does (`deletionFinalizersForGarbageCollection`):
//! `orphan` when dependents are to be orphaned, `foregroundDeletion` when they
//! are to be deleted before the owner. An explicit `orphanDependents` wins over
//! `propagationPolicy`, which wins over GC finalizers already on the object,
//! which win over the resource's default policy. Resources whose policy is
//! `Unsupported` never get either.
//!
//! Pure functions; `delete.rs` applies the result.

use super::options::{DeleteOptions, Propagation};
use crate::strategy::GcPolicy;

/// `metav1.FinalizerOrphanDependents`.
pub const ORPHAN: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`.
pub const FOREGROUND: &str = "foregroundDeletion";

fn should_orphan(policy: GcPolicy, finalizers: &[String], opts: &DeleteOptions) -> bool {
    if policy == GcPolicy::Unsupported {
        return false;
    }
    if let Some(orphan) = opts.orphan_dependents {
        return orphan;
    }
    if let Some(p) = opts.propagation {
        return p == Propagation::Orphan;
    }
    for f in finalizers {
        match f.as_str() {
            ORPHAN => return true,
            FOREGROUND => return false,
            _ => {}
        }
    }
    policy == GcPolicy::OrphanDependents
}

fn should_delete_dependents(policy: GcPolicy, finalizers: &[String], opts: &DeleteOptions) -> bool {
    if policy == GcPolicy::Unsupported || opts.orphan_dependents.is_some() {
        return false;
    }
    if let Some(p) = opts.propagation {
        return p == Propagation::Foreground;
    }
    for f in finalizers {
        match f.as_str() {
            FOREGROUND => return true,
            ORPHAN => return false,
            _ => {}
        }
    }
    false
}

/// The finalizers after this delete, when they differ (as sets) from `current`.
pub fn for_delete(
    policy: GcPolicy,
    current: &[String],
    opts: &DeleteOptions,
) -> Option<Vec<String>> {
    let orphan = should_orphan(policy, current, opts);
    let foreground = should_delete_dependents(policy, current, opts);
    let mut out: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN.to_owned());
    }
    if foreground {
        out.push(FOREGROUND.to_owned());
    }
    let set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    (set(&out) != set(current)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(p: Option<Propagation>, orphan: Option<bool>) -> DeleteOptions {
        DeleteOptions {
            propagation: p,
            orphan_dependents: orphan,
            ..Default::default()
        }
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn propagation_policy_picks_the_finalizer() {
        let d = GcPolicy::DeleteDependents;
        let none = Vec::new();
        let orphan = for_delete(d, &none, &opts(Some(Propagation::Orphan), None));
        assert_eq!(orphan, Some(strs(&["orphan"])));
        let fg = for_delete(d, &none, &opts(Some(Propagation::Foreground), None));
        assert_eq!(fg, Some(strs(&["foregroundDeletion"])));
        assert_eq!(
            for_delete(d, &none, &opts(Some(Propagation::Background), None)),
            None
        );
        assert_eq!(for_delete(d, &none, &opts(None, None)), None);
    }

    #[test]
    fn explicit_options_replace_existing_gc_finalizers() {
        let d = GcPolicy::DeleteDependents;
        let cur = strs(&["example.com/keep", "orphan"]);
        let fg = for_delete(d, &cur, &opts(Some(Propagation::Foreground), None));
        assert_eq!(fg, Some(strs(&["example.com/keep", "foregroundDeletion"])));
        let bg = for_delete(d, &cur, &opts(Some(Propagation::Background), None));
        assert_eq!(bg, Some(strs(&["example.com/keep"])));
        // No option: the finalizer already there decides, nothing changes.
        assert_eq!(for_delete(d, &cur, &opts(None, None)), None);
    }

    #[test]
    fn orphan_dependents_flag_wins() {
        let d = GcPolicy::DeleteDependents;
        let cur = strs(&["foregroundDeletion"]);
        assert_eq!(
            for_delete(d, &cur, &opts(None, Some(true))),
            Some(strs(&["orphan"]))
        );
        assert_eq!(
            for_delete(d, &cur, &opts(None, Some(false))),
            Some(Vec::new())
        );
    }

    #[test]
    fn resource_defaults() {
        let none = Vec::new();
        let legacy = for_delete(GcPolicy::OrphanDependents, &none, &opts(None, None));
        assert_eq!(legacy, Some(strs(&["orphan"])));
        let bg = opts(Some(Propagation::Background), None);
        assert_eq!(for_delete(GcPolicy::OrphanDependents, &none, &bg), None);
        let fg = opts(Some(Propagation::Foreground), None);
        assert_eq!(for_delete(GcPolicy::Unsupported, &none, &fg), None);
    }
}
