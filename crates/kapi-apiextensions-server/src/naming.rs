//! Upstream's naming and establishing controllers in one step: a definition's
//! requested names are accepted one by one unless another definition of the
//! same group (or a built-in resource of that group) already uses them; the
//! `NamesAccepted` condition reports the last conflict with upstream's reasons
//! (`PluralConflict`, `SingularConflict`, `ShortNamesConflict`, `KindConflict`,
//! `ListKindConflict`); `Established` turns true once the names are accepted
//! and stays true.

use std::collections::BTreeSet;

use kapi_apiextensions::crd::types::Names;
use kapi_apiextensions::crd::Crd;
use kapi_registry::Origin;

use crate::Context;

/// One condition to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    pub status: &'static str,
    pub reason: String,
    pub message: String,
}

/// What the naming pass decided.
pub struct Decision {
    pub names: Names,
    pub accepted: Cond,
    pub established: Cond,
}

/// Names used by others: (plural, singular and short names; kinds and list kinds).
fn used_names(cx: &Context, crd: &Crd, others: &[Crd]) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut resources, mut kinds) = (BTreeSet::new(), BTreeSet::new());
    for o in others {
        if o.spec.group != crd.spec.group || o.metadata.name == crd.metadata.name {
            continue;
        }
        let n = &o.status.accepted_names;
        resources.extend([n.plural.clone(), n.singular.clone()]);
        resources.extend(n.short_names.iter().cloned());
        kinds.extend([n.kind.clone(), n.list_kind.clone()]);
    }
    for e in cx.apis.all() {
        let d = &e.def;
        if d.group != crd.spec.group || d.origin == Origin::Custom {
            continue;
        }
        resources.extend([d.resource.clone(), d.singular.clone()]);
        resources.extend(d.short_names.iter().cloned());
        kinds.extend([d.kind.clone(), d.list_kind.clone()]);
    }
    resources.remove("");
    kinds.remove("");
    (resources, kinds)
}

fn fresh(requested: &str, accepted: &str, used: &BTreeSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// Upstream's `calculateNamesAndConditions`.
pub fn decide(cx: &Context, crd: &Crd, others: &[Crd]) -> Decision {
    let (resources, kinds) = used_names(cx, crd, others);
    let requested = &crd.spec.names;
    let accepted = &crd.status.accepted_names;
    let mut names = accepted.clone();
    let mut cond: Option<Cond> = None;
    let mut conflict = |reason: &'static str, message: String| {
        cond = Some(Cond {
            status: "False",
            reason: reason.to_owned(),
            message,
        })
    };
    match fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(m) => conflict("PluralConflict", m),
    }
    match fresh(&requested.singular, &accepted.singular, &resources) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(m) => conflict("SingularConflict", m),
    }
    if requested.short_names != accepted.short_names {
        let errs: Vec<String> = requested
            .short_names
            .iter()
            .filter(|s| !accepted.short_names.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        match errs.len() {
            0 => names.short_names = requested.short_names.clone(),
            1 => conflict("ShortNamesConflict", errs[0].clone()),
            _ => conflict("ShortNamesConflict", format!("[{}]", errs.join(", "))),
        }
    }
    match fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(m) => conflict("KindConflict", m),
    }
    match fresh(&requested.list_kind, &accepted.list_kind, &kinds) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(m) => conflict("ListKindConflict", m),
    }
    names.categories = requested.categories.clone();
    let accepted_cond = cond.unwrap_or(Cond {
        status: "True",
        reason: "NoConflicts".into(),
        message: "no conflicts found".into(),
    });
    let established = match crd.condition("Established") {
        Some(c) if c.status == "True" => Cond {
            status: "True",
            reason: c.reason.clone(),
            message: c.message.clone(),
        },
        _ if accepted_cond.status == "True" => Cond {
            status: "True",
            reason: "InitialNamesAccepted".into(),
            message: "the initial names have been accepted".into(),
        },
        _ => Cond {
            status: "False",
            reason: "NotAccepted".into(),
            message: "not all names are accepted".into(),
        },
    };
    Decision {
        names,
        accepted: accepted_cond,
        established,
    }
}
