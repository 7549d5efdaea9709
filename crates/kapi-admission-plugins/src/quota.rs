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
//!
//! Limited resources (`quota_config.rs`, from the admission configuration
//! file) need a covering quota: without one the write is refused with 403
//! `insufficient quota to consume: <names>`, or (a limited scope no quota's
//! requirement of that scope matches) with upstream's unclassified 500
//! `insufficient quota to match these scopes: [...]`.

use std::collections::BTreeSet;

use async_trait::async_trait;
use kapi_machinery::status::{ApiError, Reason};
use kapi_registry::meta;
use kapi_registry::store::options::WriteOptions;
use kapi_registry::store::UpdateTarget;
use serde_json::Value;

use crate::Context;
use kapi_admission::{Attributes, Operation, Plugin};
use kapi_machinery::quantity::{self, List};
use kapi_resources::core::quota_usage as usage;

pub struct ResourceQuota {
    pub(crate) cx: Context,
    pub(crate) config: std::sync::Arc<crate::quota_config::QuotaConfig>,
    /// The quotas of the namespaces written to last, while none changes.
    pub(crate) quotas: kapi_registry::store::KeptList,
}

/// What the configured limited resources require of the quotas for one object.
#[derive(Default)]
struct Limited {
    /// Usage names that must be in a covering quota's `status.hard`.
    names: BTreeSet<String>,
    /// Scope requirements that must be covered by a quota's scope of that name.
    scopes: Vec<(String, String, Vec<String>)>,
}

impl Limited {
    fn of(config: &crate::quota_config::QuotaConfig, a: &Attributes, obj: &Value) -> Limited {
        let mut out = Limited::default();
        let mut limits = config.for_resource(&a.group, &a.resource).peekable();
        // The usage is worked out only for a resource the configuration limits.
        if limits.peek().is_none() {
            return out;
        }
        let used = usage::usage(&a.group, &a.resource, obj);
        for l in limits {
            for (name, qty) in &used {
                if qty.milli > 0 && l.match_contains.iter().any(|m| name.contains(m.as_str())) {
                    out.names.insert(name.clone());
                }
            }
            // Only pods have scopes (other evaluators match none).
            let scoped = if a.is("", "pods") {
                &l.match_scopes[..]
            } else {
                &[]
            };
            for (scope, op, values) in scoped {
                let vals: Vec<&str> = values.iter().map(String::as_str).collect();
                if usage::scope_matches(scope, op, &vals, obj) {
                    out.scopes.push((scope.clone(), op.clone(), values.clone()));
                }
            }
        }
        out
    }

    fn is_empty(&self) -> bool {
        self.names.is_empty() && self.scopes.is_empty()
    }

    /// Refuse what no quota covered: `names` of the quotas' `status.hard`,
    /// `scopes` of their scope names.
    fn check(
        &self,
        a: &Attributes,
        names: &BTreeSet<String>,
        scopes: &BTreeSet<String>,
    ) -> Result<(), ApiError> {
        let missing: Vec<&str> = self
            .names
            .iter()
            .filter(|n| !names.contains(*n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(a.forbidden(format!(
                "insufficient quota to consume: {}",
                missing.join(",")
            )));
        }
        let uncovered: Vec<String> = self
            .scopes
            .iter()
            .filter(|(s, _, _)| !scopes.contains(s))
            .map(|(s, op, v)| format!("{{{s} {op} [{}]}}", v.join(" ")))
            .collect();
        if !uncovered.is_empty() {
            // Upstream returns a plain error here, not a Forbidden one: a 500
            // whose reason is unknown.
            return Err(ApiError::new(
                500,
                Reason::Unknown,
                format!(
                    "insufficient quota to match these scopes: [{}]",
                    uncovered.join(" ")
                ),
            ));
        }
        Ok(())
    }
}

/// The scope names of a quota's requirements (`spec.scopes`, as `Exists`,
/// and its scope selector) that pod `obj` matches — upstream's
/// `MatchingScopes`, which covers limited scopes whether or not the quota as
/// a whole matches the pod.
fn matched_scope_names(q: &Value, obj: &Value) -> Vec<String> {
    let simple = q
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|s| usage::scope_matches(s, "Exists", &[], obj));
    let exprs = q
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| {
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let name = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
            usage::scope_matches(name, op, &values, obj)
        })
        .filter_map(|e| e.get("scopeName").and_then(Value::as_str));
    simple.chain(exprs).map(str::to_owned).collect()
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
        let obj = a
            .object
            .as_ref()
            .expect("creates and updates carry an object");
        let limited = Limited::of(&self.config, a, obj);
        let listed = quotas
            .store
            .list_kept(Some(&a.namespace), &self.quotas)
            .await?;
        if listed.is_empty() && limited.is_empty() {
            return Ok(());
        }
        let delta = Self::delta(a);
        let mut interesting = Vec::new();
        let (mut covered_names, mut covered_scopes) = (BTreeSet::new(), BTreeSet::new());
        for q in listed.iter() {
            if a.is("", "pods") {
                covered_scopes.extend(matched_scope_names(q, obj));
            }
            if !usage::quota_matches(q, &a.group, &a.resource, obj) {
                continue;
            }
            covered_names.extend(quantity::list(q.pointer("/status/hard")).into_keys());
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
        limited.check(a, &covered_names, &covered_scopes)?;
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
