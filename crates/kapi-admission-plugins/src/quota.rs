//! ResourceQuota (upstream `k8s.io/apiserver/pkg/admission/plugin/resourcequota`):
//! a write that would raise the namespace's usage past a quota's `status.hard`
//! is refused with 403 `exceeded quota: <name>, requested: ..., used: ...,
//! limited: ...`; an accepted one is charged to every quota covering it by a
//! compare-and-swap update of the quota's `status.used`, re-checked on each
//! retry, so concurrent creates can never take usage past the limit. Dry-run
//! requests are checked but never charged. A quota the controller has not
//! yet filled in (`status.hard` missing what the object uses) refuses writes
//! (`status unknown for quota`), as upstream.
//!
//! Creates of every resource count (`count/<resource>.<group>`); updates count
//! what they add to a pod, service or claim. The quota controller
//! (`controllers/resourcequota.rs`) keeps `status.hard` and `status.used`
//! current when objects go away or quotas change; it shares `kapi_resources::core::quota_usage`.

use std::collections::BTreeSet;

use async_trait::async_trait;
use kapi_machinery::status::ApiError;
use kapi_registry::meta;
use kapi_registry::store::options::{ListOptions, WriteOptions};
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};
use kapi_machinery::quantity::{self, List};
use kapi_resources::core::quota_usage as usage;

pub struct ResourceQuota {
    pub(crate) cx: Context,
}

/// Pods must state requests / limits for the compute resources quota limits
/// (upstream's `podEvaluator.Constraints`).
const VALIDATION_SET: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

fn pod_constraints(pod: &Value, hard: &List) -> Option<String> {
    let required: Vec<&str> = VALIDATION_SET
        .iter()
        .copied()
        .filter(|r| hard.contains_key(*r))
        .collect();
    let mut missing: std::collections::BTreeMap<&str, BTreeSet<String>> = Default::default();
    for list in ["containers", "initContainers"] {
        for c in pod
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let req = quantity::list(c.pointer("/resources/requests"));
            let lim = quantity::list(c.pointer("/resources/limits"));
            for r in &required {
                let ok = match r.split_once('.') {
                    Some(("limits", res)) => lim.contains_key(res),
                    Some((_, res)) => req.contains_key(res),
                    None => req.contains_key(*r),
                };
                if !ok {
                    missing.entry(r).or_default().insert(name.clone());
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Some(format!("must specify {}", parts.join("; ")))
}

/// `used + requested` fits `hard`; else the error naming what does not.
fn check_fits(quota: &Value, delta: &List, a: &Attributes) -> Result<List, ApiError> {
    let hard = quantity::list(quota.pointer("/status/hard"));
    let used = quantity::list(quota.pointer("/status/used"));
    let requested: List = delta
        .iter()
        .filter(|(k, _)| hard.contains_key(*k))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let mut new_used = used.clone();
    let mut exceeded = Vec::new();
    for (k, v) in &requested {
        let total = used.get(k).copied().unwrap_or_default().plus(*v);
        if total.milli > hard[k].milli {
            exceeded.push(k.clone());
        }
        new_used.insert(k.clone(), total);
    }
    if !exceeded.is_empty() {
        let only = |l: &List| -> List {
            exceeded
                .iter()
                .map(|k| (k.clone(), l.get(k).copied().unwrap_or_default()))
                .collect()
        };
        return Err(a.forbidden(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            meta::name(quota),
            quantity::pretty(&only(&requested)),
            quantity::pretty(&only(&used)),
            quantity::pretty(&only(&hard)),
        )));
    }
    Ok(new_used)
}

impl ResourceQuota {
    /// What the write adds: the new object's usage less the old one's (never
    /// below zero per resource).
    fn delta(a: &Attributes) -> List {
        let Some(obj) = &a.object else {
            return List::new();
        };
        let new = usage::usage(&a.group, &a.resource, obj);
        let old = a
            .old_object
            .as_ref()
            .map(|o| usage::usage(&a.group, &a.resource, o))
            .unwrap_or_default();
        new.into_iter()
            .filter_map(|(k, v)| {
                let d = v.minus(old.get(&k).copied().unwrap_or_default());
                (d.milli > 0).then_some((k, d))
            })
            .collect()
    }

    fn counts_update(a: &Attributes) -> bool {
        a.group.is_empty()
            && matches!(
                a.resource.as_str(),
                "pods" | "services" | "persistentvolumeclaims"
            )
    }
}

#[async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn mutating(&self) -> bool {
        false
    }
    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        let cx = &self.cx;
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        if a.operation == Operation::Update && !Self::counts_update(a) {
            return Ok(());
        }
        let Some(quotas) = cx.apis.lookup("", "v1", "resourcequotas") else {
            return Ok(());
        };
        let listed = quotas
            .store
            .list(Some(&a.namespace), &ListOptions::default())
            .await?;
        if listed.items.is_empty() {
            return Ok(());
        }
        let delta = Self::delta(a);
        let obj = a
            .object
            .as_ref()
            .expect("creates and updates carry an object");
        let mut interesting = Vec::new();
        for q in &listed.items {
            if !usage::quota_matches(q, &a.group, &a.resource, obj) {
                continue;
            }
            let spec_hard = quantity::list(q.pointer("/spec/hard"));
            // What this quota limits of this resource (upstream's evaluator
            // `MatchingResources`), whether or not the object uses it.
            let gr = (a.group.clone(), a.resource.clone());
            let restricted: Vec<&String> = spec_hard
                .keys()
                .filter(|k| usage::counted_resource(k).as_ref() == Some(&gr))
                .collect();
            if restricted.is_empty() {
                continue;
            }
            if a.is("", "pods") {
                if let Some(msg) = pod_constraints(obj, &spec_hard) {
                    return Err(a.forbidden(format!("failed quota: {}: {msg}", meta::name(q))));
                }
            }
            let status_hard = quantity::list(q.pointer("/status/hard"));
            let used = quantity::list(q.pointer("/status/used"));
            let unknown: Vec<&str> = restricted
                .iter()
                .filter(|r| !status_hard.contains_key(r.as_str()) || !used.contains_key(r.as_str()))
                .map(|r| r.as_str())
                .collect();
            if !unknown.is_empty() {
                let mut names: Vec<&str> = restricted.iter().map(|r| r.as_str()).collect();
                names.sort();
                return Err(a.forbidden(format!(
                    "status unknown for quota: {}, resources: {}",
                    meta::name(q),
                    names.join(",")
                )));
            }
            interesting.push(q);
        }
        if interesting.is_empty() || delta.is_empty() {
            return Ok(());
        }
        // Check every quota first, so a refused write charges none.
        for q in &interesting {
            check_fits(q, &delta, a)?;
        }
        if a.dry_run {
            return Ok(());
        }
        let opts = WriteOptions::default();
        for q in interesting {
            quotas
                .store
                .update_with(
                    Some(&a.namespace),
                    meta::name(q),
                    UpdateTarget::Status,
                    &opts,
                    false,
                    |cur| {
                        let cur = cur.expect("updates never create");
                        let used = check_fits(cur, &delta, a)?;
                        let mut next = cur.clone();
                        next["status"]["used"] = quantity::to_json(&used);
                        Ok(next)
                    },
                )
                .await?;
        }
        Ok(())
    }
}
