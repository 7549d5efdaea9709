//! What one object counts against a ResourceQuota (upstream's quota
//! evaluators, `pkg/quota/v1/evaluator/core` and the generic object count):
//! `count/<resource>[.<group>]` for every object; the legacy names (`pods`,
//! `services`, `configmaps`, `secrets`, `persistentvolumeclaims`,
//! `replicationcontrollers`, `resourcequotas`); a live pod's compute requests
//! and limits (`requests.cpu` = `cpu`, `limits.memory`, ...); a service's
//! node ports and load balancers; a claim's storage request, also per storage
//! class. And which pods a scoped quota covers (`Terminating`,
//! `NotTerminating`, `BestEffort`, `NotBestEffort`, `PriorityClass`).

use serde_json::Value;

use kapi_machinery::quantity::{self, List, Qty};

/// The object-count name of a resource.
pub fn count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The resource a quota name counts (`(group, resource)`).
pub fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(rest) = name.strip_prefix("count/") {
        return Some(match rest.split_once('.') {
            Some((r, g)) => (g.to_owned(), r.to_owned()),
            None => (String::new(), rest.to_owned()),
        });
    }
    let core = |r: &str| Some((String::new(), r.to_owned()));
    match name {
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        n if n.starts_with("requests.") && n != "requests.storage" => core("pods"),
        n if n.starts_with("limits.") || n.starts_with("hugepages-") => core("pods"),
        "services" | "services.nodeports" | "services.loadbalancers" => core("services"),
        "persistentvolumeclaims" | "requests.storage" => core("persistentvolumeclaims"),
        n if n.contains(".storageclass.storage.k8s.io/") => core("persistentvolumeclaims"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(name),
        _ => None,
    }
}

const LEGACY_COUNTS: &[&str] = &[
    "services",
    "configmaps",
    "secrets",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

fn one() -> Qty {
    Qty::from_count(1)
}

/// Whether a pod still counts for compute quota (not finished, not past its
/// deletion grace period).
fn pod_live(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    !matches!(phase, Some("Succeeded") | Some("Failed"))
}

fn pod_total(pod: &Value, field: &str) -> List {
    let containers = |list: &str| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut sum = List::new();
    for c in containers("containers") {
        for (k, v) in quantity::list(c.pointer(&format!("/resources/{field}"))) {
            let e = sum.entry(k).or_default();
            *e = e.plus(v);
        }
    }
    for c in containers("initContainers") {
        for (k, v) in quantity::list(c.pointer(&format!("/resources/{field}"))) {
            let e = sum.entry(k).or_default();
            if v.milli > e.milli {
                *e = v;
            }
        }
    }
    for (k, v) in quantity::list(pod.pointer("/spec/overhead")) {
        let e = sum.entry(k).or_default();
        *e = e.plus(v);
    }
    sum
}

fn pod_usage(pod: &Value, out: &mut List) {
    if !pod_live(pod) {
        return;
    }
    out.insert("pods".into(), one());
    for (k, v) in pod_total(pod, "requests") {
        match k.as_str() {
            "cpu" | "memory" | "ephemeral-storage" => {
                out.insert(k.clone(), v);
                out.insert(format!("requests.{k}"), v);
            }
            _ => {
                out.insert(format!("requests.{k}"), v);
            }
        }
    }
    for (k, v) in pod_total(pod, "limits") {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            out.insert(format!("limits.{k}"), v);
        }
    }
}

fn service_usage(svc: &Value, out: &mut List) {
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match svc.pointer("/spec/type").and_then(Value::as_str) {
        Some("NodePort") => {
            out.insert(
                "services.nodeports".into(),
                Qty::from_count(ports.len() as i64),
            );
        }
        Some("LoadBalancer") => {
            let allocate = svc
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                .unwrap_or(true);
            let n = if allocate {
                ports.len()
            } else {
                ports.iter().filter(|p| p.get("nodePort").is_some()).count()
            };
            out.insert("services.nodeports".into(), Qty::from_count(n as i64));
            out.insert("services.loadbalancers".into(), one());
        }
        _ => {}
    }
}

fn claim_usage(pvc: &Value, out: &mut List) {
    let class = pvc
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let storage = quantity::list(pvc.pointer("/spec/resources/requests"))
        .get("storage")
        .copied();
    if !class.is_empty() {
        out.insert(
            format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
            one(),
        );
    }
    if let Some(s) = storage {
        out.insert("requests.storage".into(), s);
        if !class.is_empty() {
            out.insert(
                format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                s,
            );
        }
    }
}

/// Everything `obj` (of `group`/`resource`) counts.
pub fn usage(group: &str, resource: &str, obj: &Value) -> List {
    let mut out = List::new();
    out.insert(count_name(group, resource), one());
    if group.is_empty() {
        if LEGACY_COUNTS.contains(&resource) {
            out.insert(resource.to_owned(), one());
        }
        match resource {
            "pods" => pod_usage(obj, &mut out),
            "services" => service_usage(obj, &mut out),
            "persistentvolumeclaims" => claim_usage(obj, &mut out),
            _ => {}
        }
    }
    out
}

fn best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().all(|list| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .all(|c| {
                ["requests", "limits"].iter().all(|f| {
                    let l = quantity::list(c.pointer(&format!("/resources/{f}")));
                    !l.contains_key("cpu") && !l.contains_key("memory")
                })
            })
    })
}

/// Whether a pod matches one scope requirement (`scopeName`, `operator`, `values`).
pub fn scope_matches(scope: &str, op: &str, values: &[&str], obj: &Value) -> bool {
    let terminating = obj
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null());
    let class = obj
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str);
    let base = match scope {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(obj),
        "NotBestEffort" => !best_effort(obj),
        "PriorityClass" => {
            return match op {
                "Exists" => class.is_some_and(|c| !c.is_empty()),
                "DoesNotExist" => class.is_none_or(str::is_empty),
                "In" => class.is_some_and(|c| values.contains(&c)),
                "NotIn" => !class.is_some_and(|c| values.contains(&c)),
                _ => false,
            }
        }
        _ => false,
    };
    match op {
        "DoesNotExist" => !base,
        _ => base,
    }
}

/// Whether `quota` covers `obj` of `resource`: an unscoped quota covers every
/// object; a scoped one only pods matching all of its scopes.
pub fn quota_matches(quota: &Value, group: &str, resource: &str, obj: &Value) -> bool {
    let scopes: Vec<&str> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let exprs: Vec<&Value> = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if scopes.is_empty() && exprs.is_empty() {
        return true;
    }
    if !(group.is_empty() && resource == "pods") {
        return false;
    }
    let simple = scopes.iter().all(|s| scope_matches(s, "Exists", &[], obj));
    let selected = exprs.iter().all(|e| {
        let name = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        scope_matches(name, op, &values, obj)
    });
    simple && selected
}
