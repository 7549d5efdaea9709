//! Remote group-versions in discovery, as kube-aggregator's `/apis` handler
//! and aggregated discovery manager: every remote APIService's group appears
//! in the legacy `APIGroupList` (versions by `versionPriority`, then
//! Kubernetes version order; groups by `groupPriorityMinimum`, then name,
//! after the local ones) and `/apis/<group>`; the aggregated document carries
//! the resources fetched from the remote server (`available.rs`), with
//! `freshness: Stale` while the server is unavailable — reported, not dropped.

use std::cmp::Reverse;

use serde_json::{json, Value};

use super::Remote;
use crate::Aggregator;
use kapi_registry::apis::version_priority;

pub const GROUP: &str = kapi_resources::apiregistration::GROUP;

/// Remote APIServices grouped by group, groups and versions in discovery order.
fn remote_groups(agg: &Aggregator) -> Vec<(String, Vec<Remote>)> {
    let mut groups: Vec<(String, Vec<Remote>)> = Vec::new();
    for r in agg.remotes() {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, vs)) => vs.push(r),
            None => groups.push((r.group.clone(), vec![r])),
        }
    }
    for (_, vs) in &mut groups {
        vs.sort_by_key(|r| {
            (
                Reverse(r.version_priority),
                Reverse(version_priority(&r.version)),
            )
        });
    }
    let prio = |vs: &[Remote]| vs.iter().map(|r| r.group_priority).max().unwrap_or(0);
    groups.sort_by(|(a, va), (b, vb)| prio(vb).cmp(&prio(va)).then_with(|| a.cmp(b)));
    groups
}

fn version_json(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// `/apis/<group>` for a group only remote servers serve.
pub fn remote_group(agg: &Aggregator, group: &str) -> Option<Value> {
    let (_, versions) = remote_groups(agg).into_iter().find(|(g, _)| g == group)?;
    let vs: Vec<Value> = versions
        .iter()
        .map(|r| version_json(group, &r.version))
        .collect();
    Some(
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": group,
                "versions": vs, "preferredVersion": vs[0].clone()}),
    )
}

/// Add remote groups and versions to the legacy `/apis` group list.
pub fn extend_group_list(agg: &Aggregator, groups: &mut Vec<Value>) {
    for (group, versions) in remote_groups(agg) {
        let existing = groups
            .iter_mut()
            .find(|g| g.get("name").and_then(Value::as_str) == Some(group.as_str()));
        match existing {
            Some(g) => {
                if let Some(vs) = g.get_mut("versions").and_then(Value::as_array_mut) {
                    for r in &versions {
                        if !vs.iter().any(|v| v["version"] == r.version.as_str()) {
                            vs.push(version_json(&group, &r.version));
                        }
                    }
                }
            }
            None => {
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|r| version_json(&group, &r.version))
                    .collect();
                groups.push(
                    json!({"name": group, "versions": vs, "preferredVersion": vs[0].clone()}),
                );
            }
        }
    }
}

/// Add remote groups to an aggregated `APIGroupDiscoveryList`'s items.
pub fn extend_aggregated(agg: &Aggregator, items: &mut Vec<Value>) {
    for (group, versions) in remote_groups(agg) {
        let vs: Vec<Value> = versions.iter().map(version_discovery).collect();
        let existing = items
            .iter_mut()
            .find(|i| i.pointer("/metadata/name").and_then(Value::as_str) == Some(group.as_str()));
        match existing {
            Some(item) => {
                if let Some(list) = item.get_mut("versions").and_then(Value::as_array_mut) {
                    list.retain(|v| !vs.iter().any(|n| n["version"] == v["version"]));
                    list.extend(vs);
                }
            }
            None => items.push(
                json!({"metadata": {"name": group, "creationTimestamp": null},
                                      "versions": vs}),
            ),
        }
    }
}

/// One `APIVersionDiscovery` from the fetched `APIResourceList`.
fn version_discovery(r: &Remote) -> Value {
    let resources = r
        .discovery
        .as_deref()
        .map(|list| from_resource_list(list, &r.group, &r.version))
        .unwrap_or_default();
    let freshness = if r.available { "Current" } else { "Stale" };
    json!({"version": r.version, "resources": resources, "freshness": freshness})
}

/// Convert legacy discovery resources (`things`, `things/status`) into
/// aggregated ones (subresources nested under their resource).
pub fn from_resource_list(list: &Value, group: &str, version: &str) -> Vec<Value> {
    let items = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let kind_of = |r: &Value| {
        json!({
            "group": r.get("group").and_then(Value::as_str).unwrap_or(group),
            "version": r.get("version").and_then(Value::as_str).unwrap_or(version),
            "kind": r.get("kind").and_then(Value::as_str).unwrap_or(""),
        })
    };
    let mut out: Vec<Value> = Vec::new();
    for r in items.iter().filter(|r| !name_of(r).contains('/')) {
        let mut d = json!({
            "resource": name_of(r),
            "responseKind": kind_of(r),
            "scope": if r.get("namespaced").and_then(Value::as_bool) == Some(true) { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").and_then(Value::as_str).unwrap_or(""),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(key)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                d[key] = v.clone();
            }
        }
        out.push(d);
    }
    for r in items.iter() {
        let Some((parent, sub)) = name_of(r).split_once('/') else {
            continue;
        };
        let Some(p) = out.iter_mut().find(|d| d["resource"] == parent) else {
            continue;
        };
        let entry = json!({"subresource": sub, "responseKind": kind_of(r),
                           "verbs": r.get("verbs").cloned().unwrap_or(json!([]))});
        match p.get_mut("subresources").and_then(Value::as_array_mut) {
            Some(list) => list.push(entry),
            None => p["subresources"] = json!([entry]),
        }
    }
    out
}

fn name_of(r: &Value) -> &str {
    r.get("name").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_resources_become_aggregated() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1",
            "resources": [
                {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get", "list", "watch"], "shortNames": ["fl"]},
                {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder",
                 "verbs": ["get"]}]});
        let got = from_resource_list(&list, "wardle.example.com", "v1");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["scope"], "Namespaced");
        assert_eq!(got[0]["shortNames"], json!(["fl"]));
        assert_eq!(got[0]["responseKind"]["group"], "wardle.example.com");
        assert_eq!(got[0]["subresources"][0]["subresource"], "status");
    }
}
