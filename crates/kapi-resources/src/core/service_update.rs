//! Service updates as upstream's service REST storage and strategy handle them:
//! `patchAllocatedValues` (a write that omits allocated values keeps them),
//! `normalizeClusterIPs` (an old client's `clusterIP` edit carries into `clusterIPs`),
//! `dropTypeDependentFields` (switching type drops unchanged values that no longer
//! apply: cluster IPs for ExternalName, node ports, `allocateLoadBalancerNodePorts`,
//! `externalTrafficPolicy`), the immutability of the primary cluster IP, and the
//! cluster-IP / port / traffic-policy rules `ValidateService` checks on every write.
//!
//! Invariant: `prepare` runs before validation, so the rules here see what the user
//! meant, not the stale values a merge patch leaves behind.
//!
//! Where to look next: `service.rs` (defaults, the rest of validation, table).

use std::collections::BTreeSet;

use kapi_machinery::validation::{ErrorList, FieldError, FieldPath};
use serde_json::{json, Value};

use super::externally_accessible;
use crate::core::util::{arr_at, for_each_item, i64_at, present, str_at};

fn type_of(svc: &Value) -> &str {
    str_at(svc, "/spec/type")
}

fn needs_cluster_ip(svc: &Value) -> bool {
    type_of(svc) != "ExternalName"
}

fn needs_node_port(svc: &Value) -> bool {
    match type_of(svc) {
        "NodePort" => true,
        "LoadBalancer" => svc.pointer("/spec/allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

fn cluster_ips(svc: &Value) -> &[Value] {
    arr_at(svc, "/spec/clusterIPs")
}

fn node_ports(svc: &Value) -> BTreeSet<i64> {
    arr_at(svc, "/spec/ports")
        .iter()
        .filter_map(|p| i64_at(p, "/nodePort"))
        .filter(|n| *n != 0)
        .collect()
}

/// Everything upstream does to a service update before validating it.
pub fn prepare(new: &mut Value, old: &Value) {
    if !new.get("spec").is_some_and(Value::is_object) {
        return;
    }
    patch_allocated_values(new, old);
    normalize_cluster_ips(new, old);
    drop_type_dependent_fields(new, old);
}

fn patch_allocated_values(new: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(new) {
        let spec = &mut new["spec"];
        if str_at(spec, "/clusterIP").is_empty() {
            if let Some(ip) = old.pointer("/spec/clusterIP") {
                spec["clusterIP"] = ip.clone();
            }
        }
        if arr_at(spec, "/clusterIPs").is_empty() && !cluster_ips(old).is_empty() {
            spec["clusterIPs"] = json!(cluster_ips(old));
        }
    }
    if needs_node_port(old) && needs_node_port(new) {
        let used: BTreeSet<i64> = node_ports(old)
            .intersection(&node_ports(new))
            .copied()
            .collect();
        let old_ports = arr_at(old, "/spec/ports");
        for_each_item(&mut new["spec"], "ports", |p| {
            if i64_at(p, "/nodePort").unwrap_or(0) != 0 {
                return;
            }
            let by_name = old_ports
                .iter()
                .find(|o| str_at(o, "/name") == str_at(p, "/name"));
            let old_value = by_name.and_then(|o| i64_at(o, "/nodePort")).unwrap_or(0);
            if old_value != 0 && !used.contains(&old_value) {
                p["nodePort"] = json!(old_value);
            }
        });
    }
    let needs_hc = |s: &Value| {
        type_of(s) == "LoadBalancer" && str_at(s, "/spec/externalTrafficPolicy") == "Local"
    };
    if needs_hc(old) && needs_hc(new) && i64_at(new, "/spec/healthCheckNodePort").unwrap_or(0) == 0
    {
        if let Some(v) = old.pointer("/spec/healthCheckNodePort") {
            new["spec"]["healthCheckNodePort"] = v.clone();
        }
    }
}

fn normalize_cluster_ips(new: &mut Value, old: &Value) {
    let old_ip = str_at(old, "/spec/clusterIP").to_string();
    let new_ip = str_at(new, "/spec/clusterIP").to_string();
    let spec = &mut new["spec"];
    if !cluster_ips(old).is_empty() && arr_at(spec, "/clusterIPs").is_empty() && old_ip == new_ip {
        spec["clusterIPs"] = json!(cluster_ips(old));
    }
    if old_ip == new_ip {
        return;
    }
    let same = arr_at(spec, "/clusterIPs") == cluster_ips(old);
    if !old_ip.is_empty() && new_ip.is_empty() && same {
        remove(spec, "clusterIPs");
        return;
    }
    if same {
        spec["clusterIPs"] = json!([new_ip]);
    }
}

fn remove(spec: &mut Value, key: &str) {
    if let Some(m) = spec.as_object_mut() {
        m.remove(key);
    }
}

fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let same = |key: &str, new: &Value| {
        new.pointer(&format!("/spec/{key}")) == old.pointer(&format!("/spec/{key}"))
    };
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        let same_ips = same("clusterIPs", new);
        let same_families = same("ipFamilies", new);
        let same_policy = same("ipFamilyPolicy", new);
        let spec = &mut new["spec"];
        if same_ips {
            remove(spec, "clusterIP");
            remove(spec, "clusterIPs");
        }
        if same_families {
            remove(spec, "ipFamilies");
        }
        if same_policy {
            remove(spec, "ipFamilyPolicy");
        }
    }
    if needs_node_port(old) && !needs_node_port(new) {
        if node_ports(old).is_superset(&node_ports(new)) {
            for_each_item(&mut new["spec"], "ports", |p| remove(p, "nodePort"));
        }
        if same("healthCheckNodePort", new) {
            remove(&mut new["spec"], "healthCheckNodePort");
        }
    }
    if type_of(old) == "LoadBalancer" && type_of(new) != "LoadBalancer" {
        let (n, o) = (
            new.pointer("/spec/allocateLoadBalancerNodePorts"),
            old.pointer("/spec/allocateLoadBalancerNodePorts"),
        );
        if n.is_some() && o.is_some() && n == o {
            remove(&mut new["spec"], "allocateLoadBalancerNodePorts");
        }
        if same("loadBalancerClass", new) {
            remove(&mut new["spec"], "loadBalancerClass");
        }
    }
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    if externally_accessible(old_spec)
        && !externally_accessible(&new["spec"])
        && same("externalTrafficPolicy", new)
    {
        remove(&mut new["spec"], "externalTrafficPolicy");
    }
}

/// Upstream `ValidateServiceUpdate`'s own rules (before `ValidateService`).
pub fn validate(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if !needs_cluster_ip(new) || !needs_cluster_ip(old) {
        return errs;
    }
    let path = FieldPath::new("spec").child("clusterIPs");
    let (new_ips, old_ips) = (cluster_ips(new), cluster_ips(old));
    let Some(old_first) = old_ips.first() else {
        return errs;
    };
    match new_ips.first() {
        None => errs.push(FieldError::invalid(
            &path.index(0),
            json!(new_ips),
            "primary clusterIP can not be unset",
        )),
        Some(first) if first != old_first => errs.push(FieldError::invalid(
            &path.index(0),
            json!(new_ips),
            "may not change once set",
        )),
        Some(_) => {}
    }
    errs
}

/// Upstream's duplicate checks on (protocol, nodePort) and (protocol, port).
pub fn duplicate_ports(ports: &[Value], path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut node_ports = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let node_port = i64_at(p, "/nodePort").unwrap_or(0);
        if node_port != 0 && !node_ports.insert((str_at(p, "/protocol"), node_port)) {
            errs.push(FieldError::duplicate(
                &path.index(i).child("nodePort"),
                node_port,
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let (protocol, port) = (str_at(p, "/protocol"), i64_at(p, "/port").unwrap_or(0));
        if !seen.insert((protocol, port)) {
            errs.push(FieldError::duplicate(
                &path.index(i),
                json!({"protocol": protocol, "port": port}),
            ));
        }
    }
    errs
}

/// Upstream `validateServiceClusterIPsRelatedFields`: `clusterIPs[0]` mirrors `clusterIP`.
pub fn validate_cluster_ips(spec: &Value, path: &FieldPath) -> ErrorList {
    if str_at(spec, "/type") == "ExternalName" {
        return ErrorList::new();
    }
    let ips = arr_at(spec, "/clusterIPs");
    let ip_path = path.child("clusterIPs");
    match (str_at(spec, "/clusterIP"), ips.first()) {
        ("", None) => Vec::new(),
        ("", Some(_)) => vec![FieldError::invalid(
            &ip_path,
            json!(ips),
            "must be empty when `clusterIP` is not specified",
        )],
        (_, None) => vec![FieldError::required(&ip_path, "")],
        (ip, Some(first)) if first.as_str() != Some(ip) => vec![FieldError::invalid(
            &ip_path,
            json!(ips),
            "first value must match `clusterIP`",
        )],
        _ => Vec::new(),
    }
}

/// Upstream `validateServiceExternalTrafficPolicy`.
pub fn validate_traffic_policy(spec: &Value, path: &FieldPath) -> ErrorList {
    let policy_path = path.child("externalTrafficPolicy");
    let policy = present(spec, "/externalTrafficPolicy").and_then(Value::as_str);
    match (externally_accessible(spec), policy.unwrap_or("")) {
        (false, "") => Vec::new(),
        (false, p) => vec![FieldError::invalid(
            &policy_path,
            p,
            "may only be set for externally-accessible services",
        )],
        (true, "") => vec![FieldError::required(&policy_path, "")],
        (true, "Cluster" | "Local") => Vec::new(),
        (true, p) => vec![FieldError::not_supported(
            &policy_path,
            p,
            &["Cluster", "Local"],
        )],
    }
}
